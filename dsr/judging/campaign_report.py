"""A campaign's outcome: who counts, the aggregated labels, agreement, and the judged collection.

:func:`outcome` runs the whole chain on the grades stored so far (honeypot checks ->
counted grades -> crowd-kit labels -> agreement and per-assessor figures);
:func:`judged_collection` turns it into a benchmark file's collection: the pool's
dialogues with the aggregated labels, ``meta.judged`` true and, under
``meta.judging``, the campaign, the method, the number of counted grades of each
candidate (in candidate order) and the share of them equal to the label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import numpy as np
import pandas as pd

from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.params import resolve
from dsr.judging.aggregate import Check, aggregate, counted, honeypot_checks
from dsr.judging.assessor_agreement import agreement, assessor_report
from dsr.judging.campaigns import Judging
from dsr.judging.quality import FLAG_PARAMS


@dataclass
class Outcome:
    campaign: Any
    method: str
    grades: pd.DataFrame  # every grade
    counted: pd.DataFrame  # the grades that make labels
    checks: dict[str, Check]
    labels: pd.Series  # item -> label (an adjudicator's grade wins)
    agreement: dict[str, Any]
    assessors: list[dict[str, Any]]
    items: pd.DataFrame  # every item of the campaign
    adjudicated: dict = field(default_factory=dict)  # item -> (grade, by): the latest adjudication
    flags: dict = field(default_factory=dict)  # the thresholds of the assessor flags

    def to_json(self) -> dict[str, Any]:
        pool = self.items[self.items["candidate"].notna()]
        graded = self.counted.groupby("item").size()
        return {
            "campaign": self.campaign.name,
            "method": self.method,
            "settings": {
                "k": self.campaign.k,
                "chunk": self.campaign.chunk,
                "honeypot_rate": self.campaign.honeypot_rate,
                "honeypot_threshold": self.campaign.threshold,
                "min_honeypots": self.campaign.min_checks,
                "flags": self.flags,
            },
            "items": len(pool),
            "planted_honeypots": int(self.items["candidate"].isna().sum()),
            "honeypot_checks": int(self.items["gold"].notna().sum()),
            "grades": len(self.grades),
            "counted_grades": len(self.counted),
            "items_with_k_counted_grades": int((graded >= self.campaign.k).sum()),
            "items_without_counted_grade": int(len(pool) - len(self.labels)),
            "adjudicated": len(self.adjudicated),
            "agreement": self.agreement,
            "assessors": self.assessors,
        }


def outcome(judging: Judging, name: str, method: str = "mv", flags: dict[str, Any] | None = None) -> Outcome:
    """The campaign's outcome; ``flags``: thresholds of ``dsr.judging.quality.FLAG_PARAMS``
    (checked; the defaults where not given)."""
    flags = resolve(flags or {}, FLAG_PARAMS, "the assessor flags")
    campaign = judging.campaign(name)
    rules = judging.guidelines(campaign)
    grades = judging.grades_frame(campaign)
    checks = honeypot_checks(grades, rules, campaign.threshold, campaign.min_checks)
    rows = counted(grades, checks)
    labels = aggregate(rows, method, campaign.seed)
    adjudicated = {
        r["item"]: (r["grade"], r["by"]) for r in judging.reviews.of(campaign) if r["action"] == "adjudicate"
    }  # the latest per item
    if adjudicated:
        labels = pd.concat(
            [labels.drop(list(adjudicated), errors="ignore"), pd.Series({i: g for i, (g, _) in adjudicated.items()}, dtype=int)]
        )
        labels = labels.sort_index().rename("label")
    figures = agreement(rows, rules.grades, rules.relevant_from)
    people = assessor_report(grades, checks, labels, rules.grades, flags)
    return Outcome(
        campaign, method, grades, rows, checks, labels, figures, people, judging.items_frame(campaign), adjudicated, flags
    )


def _without_paths(meta: dict[str, Any]) -> dict[str, Any]:
    """A pool dialogue's ``meta`` as published: ``dsr pool`` records the corpus folder it
    searched (``pool.corpus``); the judged file keeps only the folder's name."""
    pool = meta.get("pool")
    if isinstance(pool, dict) and isinstance(pool.get("corpus"), str):
        return {**meta, "pool": {**pool, "corpus": PurePath(pool["corpus"]).name}}
    return meta


def judged_collection(judging: Judging, result: Outcome, only_relevant: bool = False, partial: bool = False) -> Collection:
    """The pool with the aggregated labels (see the module docstring)."""
    rules = judging.guidelines(result.campaign)
    pool = judging.pool(result.campaign)
    items = result.items[result.items["candidate"].notna()]
    item_of = {(d, c): i for i, d, c in zip(items["item"], items["dialogue"], items["candidate"])}
    per_item = result.counted.groupby("item")["grade"].apply(list).to_dict()
    labels = result.labels.to_dict()
    missing = [d.id for d in pool if any(item_of[d.id, c.id] not in labels for c in d.candidates)]
    if missing and not partial:
        raise InputError(
            f"{len(missing)} of {len(pool)} dialogues have candidates without a counted "
            "grade yet: finish judging, or give `partial` to keep only the fully judged "
            "dialogues",
            field="CAMPAIGN",
        )
    dialogues = []
    for d in pool:
        if d.id in missing:
            continue
        keys = [item_of[d.id, c.id] for c in d.candidates]
        candidates = [Candidate(c.id, c.title, c.body, c.score, int(labels[k])) for c, k in zip(d.candidates, keys)]
        if only_relevant and not any(rules.relevant(c.label) for c in candidates):
            continue
        given = [g for k in keys for g in per_item.get(k, [])]
        same = [g == labels[k] for k in keys for g in per_item.get(k, [])]
        meta = {
            **_without_paths(d.meta),
            "judged": True,
            "judging": {
                "campaign": result.campaign.name,
                "method": result.method,
                "grades": [len(per_item.get(k, [])) for k in keys],
                "agreement": float(np.mean(same)) if given else None,
            },
        }
        dialogues.append(
            Dialogue(
                d.id, d.title, d.context, d.target, candidates, subset=d.subset, subreddit=d.subreddit, source=d.source, meta=meta
            )
        )
    if not dialogues:
        raise InputError("no dialogue left to write (none fully judged, or none with a relevant sentence)", field="CAMPAIGN")
    return Collection(f"{result.campaign.name}-judged", dialogues)
