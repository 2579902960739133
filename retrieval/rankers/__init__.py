"""Rankers by name (:class:`retrieval.stage.Registry`: each imported on first use, so that
``dsr --help`` does not load torch)."""

from __future__ import annotations

from retrieval.stage import Registry

RANKERS = Registry("ranker", {
    "initial": "retrieval.rankers.initial:InitialRanker",
    "bm25": "retrieval.rankers.bm25:BM25Ranker",
    "dense": "retrieval.rankers.dense:DenseRanker",
    "random": "retrieval.rankers.random:RandomRanker",
    "fusion": "retrieval.rankers.fusion:FusionRanker",
    "open": "retrieval.rankers.open:OpenRanker",
})
#: the class registered as a name; a ranker built with its parameters
ranker_class, make_ranker = RANKERS.lookup, RANKERS.make
