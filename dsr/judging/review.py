"""The review queue (``dsr judge review``): items whose aggregate is uncertain or whose
assessors disagree, to send back for more judgements or to an adjudicator.

An item is listed when, on its counted grades, the aggregator's posterior probability of
the chosen grade is below ``min_posterior`` (Dawid-Skene by default: its ``probas_``), or
the share of its counted grades equal to the aggregate is below ``min_agreement``
(thresholds: :data:`dsr.judging.quality.REVIEW_PARAMS`). An item an adjudicator has
graded is decided and leaves the queue; one sent back stays listed, marked, until its new
grades settle it. The decisions themselves are :meth:`dsr.judging.campaigns.Judging.adjudicate`
and :meth:`~dsr.judging.campaigns.Judging.send_back`, recorded with who decided; the
adjudicated grade wins in the report and the export (:func:`dsr.judging.campaign_report.outcome`).
"""

from __future__ import annotations

from typing import Any

from dsr.core.params import resolve
from dsr.judging.aggregate import counted, honeypot_checks, probabilities
from dsr.judging.campaigns import Judging
from dsr.judging.quality import REVIEW_PARAMS


def review_queue(
    judging: Judging, name: str, method: str = "ds", thresholds: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The items to review, the least certain first: key, dialogue, candidate, text, the
    counted grades by assessor, the aggregate, its posterior, the agreement, and whether
    the item was sent back already."""
    limits = resolve(thresholds or {}, REVIEW_PARAMS, "dsr judge review")
    campaign = judging.campaign(name)
    rules = judging.guidelines(campaign)
    grades = judging.grades_frame(campaign)
    rows = counted(grades, honeypot_checks(grades, rules, campaign.threshold, campaign.min_checks))
    probas = probabilities(rows, method, campaign.seed)
    if probas.empty:
        return []
    reviews = judging.reviews.of(campaign)
    decided = {r["item"] for r in reviews if r["action"] == "adjudicate"}
    sent = {r["item"] for r in reviews if r["action"] == "more"}
    items = judging.items_frame(campaign).set_index("item")
    by_item = {item: dict(zip(g["assessor"], g["grade"].astype(int))) for item, g in rows.groupby("item")}
    out = []
    for item, row in probas.iterrows():
        if item in decided:
            continue
        label = int(row.idxmax())
        posterior = float(row.max())
        given = by_item.get(item, {})
        agreement = sum(g == label for g in given.values()) / len(given) if given else 0.0
        if posterior >= limits["min_posterior"] and agreement >= limits["min_agreement"]:
            continue
        info = items.loc[item]
        out.append(
            {
                "key": info["key"],
                "dialogue": info["dialogue"],
                "candidate": info["candidate"],
                "text": info["body"],
                "grades": {str(a): int(g) for a, g in sorted(given.items())},
                "aggregate": label,
                "posterior": posterior,
                "agreement": agreement,
                "sent_back": item in sent,
                "why": [
                    w
                    for w, bad in (
                        ("uncertain", posterior < limits["min_posterior"]),
                        ("disagreement", agreement < limits["min_agreement"]),
                    )
                    if bad
                ],
            }
        )
    return sorted(out, key=lambda r: (r["posterior"], r["agreement"], r["key"]))
