"""Rerankers by name. Imports are lazy so that ``dsr --help`` does not load torch."""

from __future__ import annotations

import importlib
from typing import Any

from retrieval.errors import InputError
from retrieval.rerankers.base import Reranker

RERANKERS: dict[str, str] = {
    "cross-encoder": "retrieval.rerankers.cross_encoder:CrossEncoderReranker",
    "bi-encoder": "retrieval.rerankers.bi_encoder:BiEncoderReranker",
}


def reranker_class(name: str) -> type[Reranker]:
    if name not in RERANKERS:
        raise InputError(f"unknown reranker {name!r}; choose from {', '.join(RERANKERS)}",
                         field="reranker")
    module, _, attr = RERANKERS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def make_reranker(name: str, **params: Any) -> Reranker:
    return reranker_class(name)(**params)
