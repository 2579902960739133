"""What is measured and reported: qrels, measures, the split protocol, significance, reports.

Modules, one thing each:

* ``dsr.evaluation.qrels`` — qrels from a collection's labels; TREC qrels read/write
* ``dsr.evaluation.measures`` — ir_measures strings, per-topic matrices (:class:`Evaluator`)
* ``dsr.evaluation.protocol`` — val/test splits (file, collection's own, seeded generator), tuning
* ``dsr.evaluation.significance`` — paired t-test, randomisation test, Holm correction
* ``dsr.evaluation.grouping`` — run names, ``--tune`` groups and ``--tune auto`` (families by sidecar)
* ``dsr.evaluation.experiment`` — :func:`evaluate_runs`, :func:`tune_and_evaluate`: runs measured,
  families tuned per split, significance
* ``dsr.evaluation.results`` — ``Results``: what an evaluation found
  (``table()``, ``plot()``, frames)
* ``dsr.evaluation.tables`` / ``dsr.evaluation.report`` — text, Markdown, CSV, LaTeX, JSON, Parquet; the short summary
* ``dsr.evaluation.figures`` — figures for a paper (TrueType fonts, intervals, family hues)
* ``dsr.evaluation.validate`` — ``dsr validate``

The names below are importable from ``dsr.evaluation`` directly; they load on first use
so ``dsr --help`` does not import ir_measures, scipy or matplotlib.
"""

from __future__ import annotations

_EXPORTS = {
    "evaluate_runs": "dsr.evaluation.experiment", "tune_and_evaluate": "dsr.evaluation.experiment",
    "Results": "dsr.evaluation.results", "configs_from_grid": "dsr.evaluation.experiment",
    "write_per_topic": "dsr.evaluation.results",
    "write_report": "dsr.evaluation.report", "validate_run": "dsr.evaluation.validate",
    "resolve_splits": "dsr.evaluation.protocol", "generate_splits": "dsr.evaluation.protocol",
    "read_splits": "dsr.evaluation.protocol",
    "Splits": "dsr.evaluation.protocol", "Evaluator": "dsr.evaluation.measures", "DEFAULT_MEASURES": "dsr.evaluation.measures",
    "parse_measures": "dsr.evaluation.measures", "qrels_from_collection": "dsr.evaluation.qrels",
    "read_qrels": "dsr.evaluation.qrels", "write_qrels": "dsr.evaluation.qrels",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'dsr.evaluation' has no attribute {name!r}")
