"""A sentence corpus for open retrieval, and its sharded indexes.

* :mod:`indexes.corpus.sources` — documents in (Wikipedia XML dump,
  wikiextractor JSON, JSON Lines);
* :mod:`indexes.corpus.sentences` — sentences with SIGIR 2022-style ids;
* :mod:`indexes.corpus.build` — Parquet shards and the manifest;
* :mod:`indexes.corpus.bm25` — bm25s shards scored with global statistics;
* :mod:`indexes.corpus.dense` — vectors per shard, FAISS flat and IVF-PQ;
* :mod:`retrieval.open.search` (the domain layer, because it fuses) — top k over all shards, merged;
* :mod:`indexes.corpus.distributed` — in-process or Ray execution;
* :mod:`indexes.corpus.commands` — ``dsr corpus build|index|search`` and ``dsr pool``.

docs/scale.md explains the design and its measured costs.
"""
