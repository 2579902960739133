"""``import dsr``: the Python API in one place.

The code lives in three packages, ``retrieval`` (the domain), ``indexes`` (what
is built and kept) and ``eval`` (what is measured); this module re-exports what a
notebook needs, loaded on first use so ``import dsr`` stays fast::

    import dsr

    collection = dsr.load_collection("sample")
    pipeline = dsr.ranker("bm25") >> dsr.reranker("bi-encoder", top_k=20)
    runs = {"BM25": dsr.ranker("bm25")(collection), "BM25>>bi-encoder": pipeline(collection)}
    results = dsr.evaluate(collection, runs, measures=["nDCG@5", "RR"], baseline="BM25")
    results.to_frame()          # pandas: system x subset x measure, with Holm-adjusted p
    results.per_topic_frame()   # pandas: one row per system and dialogue

Why a facade and not one ``dsr.*`` namespace: see docs/architecture.md ("Import names").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping, Sequence

#: public name -> "module:attribute"
_EXPORTS = {
    "load_collection": "retrieval.collections:load_collection",
    "Collection": "retrieval.data:Collection",
    "Dialogue": "retrieval.data:Dialogue",
    "Candidate": "retrieval.data:Candidate",
    "Turn": "retrieval.data:Turn",
    "read_benchmark": "retrieval.data:read_benchmark",
    "write_benchmark": "retrieval.data:write_benchmark",
    "Run": "retrieval.run:Run",
    "ranker": "retrieval.rankers:make_ranker",
    "reranker": "retrieval.rerankers:make_reranker",
    "RANKERS": "retrieval.rankers:RANKERS",
    "RERANKERS": "retrieval.rerankers:RERANKERS",
    "Fusion": "retrieval.rankers.fusion:Fusion",
    "fuse": "retrieval.rankers.fusion:fuse",
    "Pipeline": "retrieval.stage:Pipeline",
    "Stage": "retrieval.stage:Stage",
    "Param": "retrieval.params:Param",
    "query_text": "retrieval.queries:query_text",
    "STRATEGIES": "retrieval.queries:STRATEGIES",
    "Evaluator": "eval.measures:Evaluator",
    "evaluate_runs": "eval.results:evaluate_runs",
    "Results": "eval.results:Results",
    "configs_from_grid": "eval.results:configs_from_grid",
    "resolve_splits": "eval.protocol:resolve_splits",
    "qrels": "eval.qrels:qrels_from_collection",
    "validate_run": "eval.validate:validate_run",
    "write_report": "eval.report:write_report",
    "train": "dsr.training.recipe:train",
    "reproduce": "dsr.baselines:reproduce",
}

__all__ = sorted([*_EXPORTS, "evaluate"])

if TYPE_CHECKING:  # pragma: no cover
    from eval.results import Results


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dsr' has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value   # once
    return value


def __dir__() -> list[str]:
    return __all__


def evaluate(collection, runs: Mapping[str, Any], measures: Sequence[str] | None = None, *,
             protocol: str = "all", tune: Mapping[str, Mapping[str, Any]] | None = None,
             baseline: str | None = None, splits_file: str | None = None, test: str = "t",
             **kwargs: Any) -> "Results":
    """``dsr evaluate`` as a function: runs (name -> Run) on a collection.

    ``protocol="all"`` scores every dialogue once; ``"official"`` uses the
    collection's val/test splits (or ``splits_file``, else 50 seeded ones) and
    also reports each run on the test halves; ``tune`` (family -> {config name:
    Run}) tunes families per split on val. ``baseline`` names the run every
    other system is tested against (paired, Holm-corrected). Returns
    :class:`eval.results.Results` (``to_frame()``, ``per_topic_frame()``).
    """
    from eval.protocol import resolve_splits
    from eval.results import evaluate_runs
    from retrieval.errors import InputError

    if protocol not in ("all", "official"):
        raise InputError(f"protocol must be 'all' or 'official', got {protocol!r}", field="protocol")
    if tune and protocol != "official":
        raise InputError("tuning families needs protocol='official' (val/test splits)", field="tune")
    splits = resolve_splits(collection, splits_file) if protocol == "official" else None
    return evaluate_runs(collection, dict(runs), measures, splits=splits, families=tune,
                         baseline=baseline, test=test, progress=False, **kwargs)
