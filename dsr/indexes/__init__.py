"""What is built once and kept: BM25 and FAISS indexes, embeddings, the fast inference
backends, corpus shards.

Layer 2 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files.
"""
