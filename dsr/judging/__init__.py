"""Judging campaigns: from a pool to a judged collection (``dsr judge``, docs/judging.md).

Layer 9 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval``,
``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web`` and ``dsr.db``. It
imports nothing of ``dsr.board``, though its layer would allow it.

* :mod:`~dsr.judging.guidelines` — the scale and guidelines the organiser edits (YAML);
* :mod:`~dsr.judging.honeypots` — known answers: from a judged collection or built
  automatically (the quoted sentence, a sentence of an unrelated document);
* :mod:`~dsr.judging.tasks` — tasks (a dialogue's sentences in chunks, honeypots
  planted) and balanced, resumable assignment to k assessors;
* :mod:`~dsr.judging.campaigns` — campaigns, assessors, assignments and grades in the
  leaderboard's database (tables in ``dsr.judging.models``), with its parts
  :mod:`~dsr.judging.assignments` (who grades what) and :mod:`~dsr.judging.reviews` (the review
  queue's decisions);
* :mod:`~dsr.judging.quality` — the campaign's quality-control settings and the time check;
* :mod:`~dsr.judging.views` — what an assessor sees (blind);
* :mod:`~dsr.judging.aggregate` — honeypot verdicts and crowd-kit aggregation;
  :mod:`~dsr.judging.review` — the items to review (uncertain or disputed);
* :mod:`~dsr.judging.assessor_agreement` — Krippendorff's alpha, Fleiss' and Cohen's kappa,
  per-assessor figures;
* :mod:`~dsr.judging.campaign_report` — the whole chain and the judged collection;
* :mod:`~dsr.judging.labelstudio`, :mod:`~dsr.judging.crowdsourcing` — the same tasks
  for Label Studio and for Mechanical Turk / Prolific, and their results read back
  (:mod:`~dsr.judging.exchange`: what an import would change, told before it is stored).

The judging pages themselves are ``dsr.judging.routes`` (served by ``dsr serve``).
"""
