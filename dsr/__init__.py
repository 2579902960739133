"""``import dsr``: the Python API in one place, each name loaded on first use so that
``import dsr`` stays fast.

Layer 15 of 15 (dsr/layers.toml), the top: it may import every unit, and nothing imports it.

It re-exports what a notebook needs from the units below it::

    import dsr

    collection = dsr.load_collection("sample")
    pipeline = dsr.ranker("bm25") >> dsr.reranker("bi-encoder", top_k=20)
    runs = {"BM25": dsr.ranker("bm25")(collection), "BM25>>bi-encoder": pipeline(collection)}
    results = dsr.evaluate(collection, runs, measures=["nDCG@5", "RR"], baseline="BM25")
    results.table()             # pandas: systems x (subset, measure), the paper's table
    results.to_frame()          # pandas: system x subset x measure, with Holm-adjusted p
    results.per_topic_frame()   # pandas: one row per system and dialogue
    results.plot("main")        # a matplotlib Figure, one ACM column wide

Runs may be paths, ``Run`` objects, PyTerrier-shaped DataFrames (qid, docno,
score), ``ranx.Run`` objects or dicts; ``dsr.fuse`` fuses any of them.

Why a facade and not one ``dsr.*`` namespace: see docs/architecture.md ("Import names").
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

from dsr.core import __version__  # noqa: F401  (dsr.__version__)
from dsr.core.errors import InputError  # noqa: F401  (dsr.InputError, what every refusal is)

#: public name -> "module:attribute"
_EXPORTS = {
    "register": "dsr.core.registry:register",
    "load_collection": "dsr.collections:load_collection",
    "Collection": "dsr.core.data:Collection",
    "Dialogue": "dsr.core.data:Dialogue",
    "Candidate": "dsr.core.data:Candidate",
    "Turn": "dsr.core.data:Turn",
    "read_benchmark": "dsr.core.data:read_benchmark",
    "write_benchmark": "dsr.core.data:write_benchmark",
    "Run": "dsr.core.run:Run",
    "ranker": "dsr.rankers:make_ranker",
    "reranker": "dsr.rerankers:make_reranker",
    "RANKERS": "dsr.rankers:RANKERS",
    "RERANKERS": "dsr.rerankers:RERANKERS",
    "Fusion": "dsr.rankers.fusion:Fusion",
    "FUSERS": "dsr.core.fusion:FUSERS",
    "as_run": "dsr.core.run:as_run",
    "Pipeline": "dsr.core.stage:Pipeline",
    "Stage": "dsr.core.stage:Stage",
    "Param": "dsr.core.params:Param",
    "query_text": "dsr.core.queries:query_text",
    "STRATEGIES": "dsr.core.queries:STRATEGIES",
    "Evaluator": "dsr.evaluation.measures:Evaluator",
    "evaluate": "dsr.evaluation.evaluate:evaluate",
    "EvaluateSettings": "dsr.evaluation.settings:EvaluateSettings",
    "evaluate_runs": "dsr.evaluation.experiment:evaluate_runs",
    "Results": "dsr.evaluation.results:Results",
    "configs_from_grid": "dsr.evaluation.experiment:configs_from_grid",
    "resolve_splits": "dsr.evaluation.protocol:resolve_splits",
    "qrels": "dsr.evaluation.qrels:qrels_from_collection",
    "validate_run": "dsr.evaluation.validate:validate_run",
    "write_report": "dsr.evaluation.report:write_report",
    "train": "dsr.training.recipe:train",
    "TrainSettings": "dsr.training.settings:TrainSettings",
    "reproduce": "dsr.baselines:reproduce",
}

__all__ = sorted([*_EXPORTS, "fuse"])


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dsr' has no attribute {name!r}")
    module, _, attr = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # once
    return value


def __dir__() -> list[str]:
    return __all__


def fuse(
    runs: Sequence[Any],
    method: str = "rrf",
    *,
    norm: str | None = None,
    k: float | None = None,
    weight: float | None = None,
    weights: Sequence[float] | None = None,
    collection: Any = None,
    qrels: Any = None,
    backend: str = "dsr",
    tag: str | None = None,
    **params: Any,
) -> Any:
    """Fuse runs (paths, Runs, DataFrames, ranx Runs or dicts) into one ``Run``.

    ``method``: one of :data:`dsr.core.fusion.METHODS`, dsr's kernels (rrf, isr, borda,
    combsum, combmnz, wsum, interp) and the rest of ranx's 25 (condorcet, bayesfuse, ...);
    ``norm``: the score normalisation (dsr's minmax, zscore, sum, rank; ranx's
    min-max-inverted, max, zmuv, borda); ``k`` (rrf), ``weight`` (interp), ``weights`` (wsum
    and ranx's weighted methods, one per run); ranx's other parameters by name (``gamma``,
    ``phi``, ``sigma``, ``metric``). A method that learns from labels (bayesfuse, probfuse, ...;
    a weighted one without ``weights``) learns from ``qrels`` (a qrels file's path or a dict
    ``{topic: {doc: grade}}``), else from ``collection``'s labels, as ranx's ``optimize_fusion``
    does; without either it is refused. With labels, rrf's ``k``, wsum's ``weights`` and
    logn_isr's ``sigma`` are learnt too when not given (without: 60, equal, 0.01); the run's
    ``config["fusion_learnt"]`` says what was learnt. A parameter the method does not take is an error. Ties
    are broken as on every other path (:data:`dsr.core.fusion.TIE_RULE`); an input run whose own
    scores tie is ranked as trec_eval ranks it, with a warning on stderr (``backend="ranx"``: as
    ranx ranks it, see :mod:`dsr.core.fusion_ranx`).
    """
    from dsr.core.run import as_run
    from dsr.rankers.fusion import fuse_runs

    params.update(
        {name: value for name, value in (("norm", norm), ("k", k), ("weight", weight), ("weights", weights)) if value is not None}
    )
    if isinstance(collection, (str, os.PathLike)):
        from dsr.collections import load_collection

        collection = load_collection(os.fspath(collection))
    loaded = [as_run(r) for r in runs]
    named = [
        str(r) if isinstance(r, (str, os.PathLike)) else getattr(r, "tag", None) or f"run{i + 1}" for i, r in enumerate(runs)
    ]
    return fuse_runs(loaded, method, params, names=named, collection=collection, labels=_labels(qrels), backend=backend, tag=tag)


def _labels(qrels: Any) -> dict[str, dict[str, int]] | None:
    """Relevance labels to learn from: ``qrels`` (a path or a dict); None: the collection's, if any."""
    if isinstance(qrels, (str, os.PathLike)):
        from dsr.evaluation.qrels import read_qrels

        return read_qrels(os.fspath(qrels))
    if qrels is not None:
        return {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in qrels.items()}
    return None
