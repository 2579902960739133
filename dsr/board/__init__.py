"""The leaderboard server: ``dsr serve``, ``dsr submit`` and ``dsr board ...``.

Layer 8 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval``,
``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web`` and ``dsr.db``. It
imports nothing of ``dsr.judging``, though its layer would allow it.

Evaluation's front door: a submitted run is checked by the same validator as
``dsr validate`` (:func:`dsr.evaluation.validate.validate_run`), scored by the same
evaluator as ``dsr evaluate`` (:class:`dsr.evaluation.measures.Evaluator`) and compared
with a baseline by the same paired tests (:mod:`dsr.evaluation.significance`).

Modules, one thing each:

* ``models`` — the board's tables (SQLAlchemy 2 ORM, on :mod:`dsr.db`: engines, sessions, the
  base, tokens; the one Alembic chain is ``dsr/migrations``)
* ``archive`` — content-addressed run files (sha256), fsynced before the DB commit
* ``settings`` — the board's settings, declared once as ``Param``\\ s
* ``runcheck`` — a submitted run parsed once and validated with numpy
* ``scoring`` — a phase's collection and labels, validation, scores, board tables
* ``workers`` — scoring off the request path, in worker processes
* ``intake`` — what a submission carries, checked before anything is stored
* ``published`` — the sidecar fields a board publishes (an allow-list), text checks
* ``service`` — tokens, quotas and the submission transaction (with ``members`` and ``phases``,
  the parts of :class:`~dsr.board.service.Board`: teams, members and tokens; phases and seasons)
* ``release`` — what a hidden phase releases: ladders, quotas, the differencing check
* ``leaderboard`` — a phase's rows, sorted, with what the statistics know
* ``app`` — the ASGI app: middleware and the routers (FastAPI, Jinja2 templates, no JS)
* ``routes`` — the routers: ``pages``, ``auth``, ``exports``, ``api`` (shared parts in ``deps``)
* ``admin`` — teams, phases, hidden labels, baselines, rebuild, export
* ``client`` — ``dsr submit``
* ``dsr/cli/board.py`` — the argparse glue
"""
