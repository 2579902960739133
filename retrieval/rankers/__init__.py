"""Rankers by name. Imports are lazy so that ``dsr --help`` does not load torch."""

from __future__ import annotations

from typing import Any

from retrieval.rankers.base import Ranker
from retrieval.stage import registered

RANKERS: dict[str, str] = {
    "initial": "retrieval.rankers.initial:InitialRanker",
    "bm25": "retrieval.rankers.bm25:BM25Ranker",
    "dense": "retrieval.rankers.dense:DenseRanker",
    "random": "retrieval.rankers.random:RandomRanker",
    "fusion": "retrieval.rankers.fusion:FusionRanker",
    "open": "retrieval.rankers.open:OpenRanker",
}


def ranker_class(name: str) -> type[Ranker]:
    return registered(RANKERS, name, "ranker")


def make_ranker(name: str, **params: Any) -> Ranker:
    return ranker_class(name)(**params)
