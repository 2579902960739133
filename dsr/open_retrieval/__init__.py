"""Open retrieval: dialogues against a whole sentence corpus (no candidate list).

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.collections``, ``dsr.rankers`` and ``dsr.rerankers`` of its own layer where no loop
forms.

``search`` ranks a ``dsr corpus`` by BM25, dense vectors or both fused; ``pool``
builds candidate pools for dialogues that have none (``dsr pool``).
"""
