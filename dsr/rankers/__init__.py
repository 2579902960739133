"""Rankers by name (:class:`dsr.core.stage.Registry`: each imported on first use, so that
``dsr --help`` does not load torch).

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.collections``, ``dsr.rerankers`` and ``dsr.open_retrieval`` of its own layer where no
loop forms.
"""

from __future__ import annotations

from dsr.core.registry import register
from dsr.core.stage import Registry
from dsr.rankers.base import Ranker

# dsr's own rankers, each imported on first use (another package's come from its entry points
# in the group ``dsr.rankers``: docs/plugins.md)
for _name, _where in {
    "initial": "dsr.rankers.initial:InitialRanker",
    "bm25": "dsr.rankers.bm25:BM25Ranker",
    "dense": "dsr.rankers.dense:DenseRanker",
    "random": "dsr.rankers.random:RandomRanker",
    "fusion": "dsr.rankers.fusion:FusionRanker",
    "open": "dsr.rankers.open:OpenRanker",
}.items():
    register("ranker", _name, _where)

RANKERS: Registry[Ranker] = Registry("ranker")
#: the class registered as a name; a ranker built with its parameters
ranker_class, make_ranker = RANKERS.lookup, RANKERS.make
