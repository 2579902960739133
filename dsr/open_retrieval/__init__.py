"""Open retrieval: dialogues against a whole sentence corpus (no candidate list).

``search`` ranks a ``dsr corpus`` by BM25, dense vectors or both fused; ``pool``
builds candidate pools for dialogues that have none (``dsr pool``).
"""
