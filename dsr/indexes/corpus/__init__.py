"""A sentence corpus for open retrieval, and its sharded indexes.

Part of ``dsr.indexes``, layer 2 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files.

* :mod:`dsr.indexes.corpus.sources` — documents in (Wikipedia XML dump,
  wikiextractor JSON, JSON Lines);
* :mod:`dsr.indexes.corpus.sentences` — sentences with SIGIR 2022-style ids;
* :mod:`dsr.indexes.corpus.build` — Parquet shards and the manifest;
* :mod:`dsr.indexes.corpus.bm25` — bm25s shards scored with global statistics;
* :mod:`dsr.indexes.corpus.dense` — vectors per shard, FAISS flat and IVF-PQ;
* :mod:`dsr.open_retrieval.search` (the domain layer, because it fuses) — top k over all shards, merged;
* :mod:`dsr.indexes.corpus.distributed` — in-process or Ray execution;
* ``dsr corpus build|index|search`` and ``dsr pool`` are :mod:`dsr.cli.corpus`.

docs/scale.md explains the design and its measured costs.
"""
