"""Judging campaigns: from a pool to a judged collection (``dsr judge``, docs/judging.md).

* :mod:`~eval.judging.guidelines` — the scale and guidelines the organiser edits (YAML);
* :mod:`~eval.judging.honeypots` — known answers: from a judged collection or built
  automatically (the quoted sentence, a sentence of an unrelated document);
* :mod:`~eval.judging.tasks` — tasks (a dialogue's sentences in chunks, honeypots
  planted) and balanced, resumable assignment to k assessors;
* :mod:`~eval.judging.store` — campaigns, assessors, assignments and grades in the
  leaderboard's database (tables in ``eval.board.judging_models``);
* :mod:`~eval.judging.views` — what an assessor sees (blind);
* :mod:`~eval.judging.aggregate` — honeypot verdicts and crowd-kit aggregation;
* :mod:`~eval.judging.agreement` — Krippendorff's alpha, Fleiss' and Cohen's kappa,
  per-assessor figures;
* :mod:`~eval.judging.report` — the whole chain and the judged collection;
* :mod:`~eval.judging.labelstudio`, :mod:`~eval.judging.crowdsourcing` — the same tasks
  for Label Studio and for Mechanical Turk / Prolific, and their results read back.

The judging pages themselves are ``eval.board.judging_routes`` (served by ``dsr serve``).
"""
