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
"""
