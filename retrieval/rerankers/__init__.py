"""Rerankers by name. Imports are lazy so that ``dsr --help`` does not load torch."""

from __future__ import annotations

from typing import Any

from retrieval.rerankers.base import Reranker
from retrieval.stage import registered

RERANKERS: dict[str, str] = {
    "cross-encoder": "retrieval.rerankers.cross_encoder:CrossEncoderReranker",
    "bi-encoder": "retrieval.rerankers.bi_encoder:BiEncoderReranker",
}


def reranker_class(name: str) -> type[Reranker]:
    return registered(RERANKERS, name, "reranker")


def make_reranker(name: str, **params: Any) -> Reranker:
    return reranker_class(name)(**params)
