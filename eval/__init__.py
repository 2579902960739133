"""What is measured and reported: qrels, measures, the split protocol, significance, reports.

Modules, one thing each:

* ``eval.qrels`` — qrels from a collection's labels; TREC qrels read/write
* ``eval.measures`` — ir_measures strings, per-topic matrices (:class:`Evaluator`)
* ``eval.protocol`` — val/test splits (file, collection's own, seeded generator), tuning
* ``eval.significance`` — paired t-test, randomisation test, Holm correction
* ``eval.grouping`` — run names, ``--tune`` groups and ``--tune auto`` (families by sidecar)
* ``eval.results`` — the API: :func:`evaluate_runs`, :func:`tune_and_evaluate`, ``Results``
  (``table()``, ``plot()``, frames)
* ``eval.tables`` / ``eval.report`` — text, Markdown, CSV, LaTeX, JSON, Parquet; the short summary
* ``eval.figures`` — figures for a paper (TrueType fonts, intervals, family hues)
* ``eval.validate`` — ``dsr validate``

The names below are importable from ``eval`` directly; they load on first use
so ``dsr --help`` does not import ir_measures, scipy or matplotlib.
"""

from __future__ import annotations

_EXPORTS = {
    "evaluate_runs": "eval.results", "tune_and_evaluate": "eval.results", "Results": "eval.results",
    "configs_from_grid": "eval.results", "write_per_topic": "eval.results",
    "write_report": "eval.report", "validate_run": "eval.validate",
    "resolve_splits": "eval.protocol", "generate_splits": "eval.protocol", "read_splits": "eval.protocol",
    "Splits": "eval.protocol", "Evaluator": "eval.measures", "DEFAULT_MEASURES": "eval.measures",
    "parse_measures": "eval.measures", "qrels_from_collection": "eval.qrels",
    "read_qrels": "eval.qrels", "write_qrels": "eval.qrels",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'eval' has no attribute {name!r}")
