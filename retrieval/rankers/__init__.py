"""Rankers by name. Imports are lazy so that ``dsr --help`` does not load torch."""

from __future__ import annotations

import importlib
from typing import Any

from retrieval.errors import InputError
from retrieval.rankers.base import Ranker

RANKERS: dict[str, str] = {
    "initial": "retrieval.rankers.initial:InitialRanker",
    "bm25": "retrieval.rankers.bm25:BM25Ranker",
    "dense": "retrieval.rankers.dense:DenseRanker",
    "random": "retrieval.rankers.random:RandomRanker",
    "fusion": "retrieval.rankers.fusion:FusionRanker",
    "open": "retrieval.rankers.open:OpenRanker",
}


def ranker_class(name: str) -> type[Ranker]:
    if name not in RANKERS:
        raise InputError(f"unknown ranker {name!r}; choose from {', '.join(RANKERS)}", field="ranker")
    module, _, attr = RANKERS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def make_ranker(name: str, **params: Any) -> Ranker:
    return ranker_class(name)(**params)
