"""What is measured and reported: qrels, measures, the split protocol, significance, reports.

Layer 4 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers`` and ``dsr.open_retrieval``.

Modules, one thing each:

* ``dsr.evaluation.registry`` — the measure families dsr knows, each declared once
* ``dsr.evaluation.qrels`` — qrels from a collection's labels; TREC qrels read/write
* ``dsr.evaluation.measures`` — ir_measures strings, per-topic matrices (:class:`Evaluator`)
* ``dsr.evaluation.trec_eval`` — trec_eval's habits for ``--qrels`` (versions, ``-l``, ``-M``)
* ``dsr.evaluation.protocol`` — val/test splits (file, collection's own, seeded generator), tuning
* ``dsr.evaluation.significance`` — paired t-test, randomisation test, Holm correction
* ``dsr.evaluation.grouping`` — run names, ``--tune`` groups and ``--tune auto`` (families by sidecar)
* ``dsr.evaluation.experiment`` — :func:`evaluate_runs`, :func:`tune_and_evaluate`: runs measured,
  families tuned per split, significance
* ``dsr.evaluation.results`` — ``Results``: what an evaluation found
  (``table()``, ``plot()``, frames)
* ``dsr.evaluation.tables`` / ``dsr.evaluation.report`` — text, Markdown, CSV, LaTeX, JSON, Parquet; the short summary
* ``dsr.evaluation.definitions`` — what each row of a table is; ``dsr.evaluation.latex`` — LaTeX
  that plain pdflatex compiles
* ``dsr.evaluation.figures`` — figures for a paper (TrueType fonts, intervals, family hues);
  ``dsr.evaluation.figure_files`` — their PNG and PDF files; ``dsr.evaluation.drawing`` — drawn by
  worker processes while the rest of a report is written
* ``dsr.evaluation.validate`` — ``dsr validate``
* ``dsr.evaluation.decision`` — ``dsr decide``: does a candidate pipeline replace the default?
* ``dsr.evaluation.ordering_agreement`` — ``dsr agreement``: do two label sets rank systems alike?
"""
