"""Rerankers by name (:class:`dsr.core.stage.Registry`: each imported on first use, so that
``dsr --help`` does not load torch).

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.collections``, ``dsr.rankers`` and ``dsr.open_retrieval`` of its own layer where no loop
forms.
"""

from __future__ import annotations

from dsr.core.params import Param
from dsr.core.registry import Names, register
from dsr.core.stage import Registry
from dsr.rerankers.base import Reranker

# dsr's own rerankers, each imported on first use (another package's: the group ``dsr.rerankers``)
register("reranker", "cross-encoder", "dsr.rerankers.cross_encoder:CrossEncoderReranker")
register("reranker", "bi-encoder", "dsr.rerankers.bi_encoder:BiEncoderReranker")

RERANKERS: Registry[Reranker] = Registry("reranker")
#: the class registered as a name; a reranker built with its parameters
reranker_class, make_reranker = RERANKERS.lookup, RERANKERS.make


#: ``dsr rerank --reranker``: the reranker by name, one of the registry's (the registry refuses an
#: unknown one, with the message ``dsr.reranker(name)`` gives)
RERANKER = Param(
    "reranker", "cross-encoder", "str", "the reranker (default: cross-encoder)", choices=Names("reranker"), metavar="NAME"
)
