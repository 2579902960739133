"""Judging campaigns: from a pool to a judged collection (``dsr judge``, docs/judging.md).

* :mod:`~dsr.judging.guidelines` — the scale and guidelines the organiser edits (YAML);
* :mod:`~dsr.judging.honeypots` — known answers: from a judged collection or built
  automatically (the quoted sentence, a sentence of an unrelated document);
* :mod:`~dsr.judging.tasks` — tasks (a dialogue's sentences in chunks, honeypots
  planted) and balanced, resumable assignment to k assessors;
* :mod:`~dsr.judging.campaigns` — campaigns, assessors, assignments and grades in the
  leaderboard's database (tables in ``dsr.judging.models``);
* :mod:`~dsr.judging.views` — what an assessor sees (blind);
* :mod:`~dsr.judging.aggregate` — honeypot verdicts and crowd-kit aggregation;
* :mod:`~dsr.judging.assessor_agreement` — Krippendorff's alpha, Fleiss' and Cohen's kappa,
  per-assessor figures;
* :mod:`~dsr.judging.campaign_report` — the whole chain and the judged collection;
* :mod:`~dsr.judging.labelstudio`, :mod:`~dsr.judging.crowdsourcing` — the same tasks
  for Label Studio and for Mechanical Turk / Prolific, and their results read back.

The judging pages themselves are ``dsr.judging.routes`` (served by ``dsr serve``).
"""
