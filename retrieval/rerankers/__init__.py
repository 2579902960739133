"""Rerankers by name (:class:`retrieval.stage.Registry`: each imported on first use, so that
``dsr --help`` does not load torch)."""

from __future__ import annotations

from retrieval.stage import Registry

RERANKERS = Registry("reranker", {
    "cross-encoder": "retrieval.rerankers.cross_encoder:CrossEncoderReranker",
    "bi-encoder": "retrieval.rerankers.bi_encoder:BiEncoderReranker",
})
#: the class registered as a name; a reranker built with its parameters
reranker_class, make_reranker = RERANKERS.lookup, RERANKERS.make
