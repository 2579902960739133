"""Rerankers by name (:class:`dsr.core.stage.Registry`: each imported on first use, so that
``dsr --help`` does not load torch).

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.collections``, ``dsr.rankers`` and ``dsr.open_retrieval`` of its own layer where no loop
forms.
"""

from __future__ import annotations

from dsr.core.params import Param
from dsr.core.stage import Registry
from dsr.rerankers.base import Reranker

RERANKERS: Registry[Reranker] = Registry(
    "reranker",
    {
        "cross-encoder": "dsr.rerankers.cross_encoder:CrossEncoderReranker",
        "bi-encoder": "dsr.rerankers.bi_encoder:BiEncoderReranker",
    },
)
#: the class registered as a name; a reranker built with its parameters
reranker_class, make_reranker = RERANKERS.lookup, RERANKERS.make

#: ``dsr rerank --reranker``: the reranker by name (the registry refuses an unknown one, with the
#: message ``dsr.reranker(name)`` gives)
RERANKER = Param("reranker", "cross-encoder", "str", f"one of {', '.join(RERANKERS)} (default: cross-encoder)", metavar="NAME")
