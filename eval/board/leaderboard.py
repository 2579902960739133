"""A phase's leaderboard: rows (every run, or one per team), sorted, with significance marks.

Baseline rows are always shown. Significance: each row against the chosen
baseline, per subset and measure, paired t-test by topic, Holm-corrected across
the rows shown (``scoring.board_results``); a value is marked better or worse
when the adjusted p is below 0.05 and "tie" otherwise, so statistically tied
systems are visible as ties. For hidden phases only means leave the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from eval.board import scoring
from eval.board.models import Phase, Submission
from eval.results import Results
from retrieval.errors import InputError

SELECTIONS = ("all", "best", "latest")


@dataclass
class Entry:
    submission: Submission
    key: str
    means: dict[str, dict[str, float | None]]          # subset -> measure -> mean
    marks: dict[str, dict[str, str]]                   # subset -> measure -> better/worse/tie/""
    p: dict[str, dict[str, float | None]]              # subset -> measure -> Holm-adjusted p


@dataclass
class Leaderboard:
    phase: Phase
    measures: list[str]
    subsets: list[str]
    entries: list[Entry]
    baseline: Submission | None
    baselines: list[Submission]
    results: Results
    sort: str
    select: str

    def to_json(self) -> dict[str, Any]:
        """What ``GET /api/boards/...`` answers: means and marks, never per-topic values."""
        return {
            "collection": self.phase.collection, "phase": self.phase.name, "hidden": self.phase.hidden,
            "measures": self.measures, "subsets": self.subsets, "sort": self.sort,
            "select": self.select, "topics": len(self.results.topics),
            "baseline": self.baseline.id if self.baseline else None,
            "significance": {"test": "paired t-test by topic, two-sided",
                             "correction": "Holm across the rows shown, per subset and measure",
                             "alpha": self.results.alpha},
            "rows": [{"rank": i + 1, "id": e.submission.id, "team": e.submission.team.name,
                      "system": e.submission.system, "baseline": e.submission.baseline,
                      "run_type": e.submission.run_type,
                      "trained_on_collection": e.submission.trained_on_collection,
                      "submitted": e.submission.created_at.isoformat() + "Z",
                      "means": e.means, "vs_baseline": e.marks, "p_holm": e.p}
                     for i, e in enumerate(self.entries)],
        }


def published_means(sub: Submission, data: scoring.PhaseData) -> dict[str, dict[str, float | None]]:
    """The row's means over the subsets the phase publishes (a hidden phase's small subsets
    are merged or withheld, ``scoring.publishable_subsets``; a row stored before a merge
    shows no value for it until ``dsr board rebuild``)."""
    means = json.loads(sub.means_json)
    return {s: means.get(s, dict.fromkeys(data.measures)) for s in data.subsets}


def row_key(sub: Submission) -> str:
    return f"{sub.team.name} / {sub.system} #{sub.id}"


def build(board, phase: Phase, *, sort: str | None = None, select: str = "all",
          baseline_id: int | None = None, descending: bool = True) -> Leaderboard:
    """The leaderboard of ``phase`` (``board`` is a :class:`eval.board.service.Board`)."""
    data = board.phase_data(phase)
    measures = data.measures
    sort = sort or measures[0]
    if sort not in measures:
        raise InputError(f"no measure {sort!r} on this board; it has {', '.join(measures)}", field="sort")
    if select not in SELECTIONS:
        raise InputError(f"select is one of {', '.join(SELECTIONS)}", field="select")
    subs = board.submissions(phase)
    baselines = [s for s in subs if s.baseline]
    chosen = baseline_id if baseline_id is not None else phase.baseline_id
    baseline = next((s for s in baselines if s.id == chosen), baselines[0] if baselines else None)

    def mean_all(sub: Submission) -> float:
        value = json.loads(sub.means_json)["all"].get(sort)
        return float("-inf") if value is None else value

    shown = [s for s in subs if s.baseline]
    teams = [s for s in subs if not s.baseline]
    if select == "all":
        shown += teams
    else:
        by_team: dict[int, Submission] = {}
        for sub in teams:   # in id order: "latest" keeps the last, "best" the highest
            best = by_team.get(sub.team_id)
            if best is None or select == "latest" or mean_all(sub) > mean_all(best):
                by_team[sub.team_id] = sub
        shown += list(by_team.values())
    shown.sort(key=lambda s: (mean_all(s) if descending else -mean_all(s), -s.id), reverse=True)
    rows = [scoring.BoardRow(row_key(s), s.id, s.team.name, s.system, s.baseline, s.created_at,
                             board.matrix(s, len(measures))) for s in shown]
    results = scoring.board_results(data, phase.name, rows, row_key(baseline) if baseline else None)
    entries = []
    for sub, row in zip(shown, rows):
        means = published_means(sub, data)
        marks = {subset: {m: scoring.direction(results, subset, row.key, m) for m in measures}
                 for subset in data.subsets}
        p = {subset: {m: ((results.significance or {}).get(subset, {}).get(row.key, {})
                          .get(m, {}).get("t_holm")) for m in measures} for subset in data.subsets}
        entries.append(Entry(sub, row.key, means, marks, p))
    return Leaderboard(phase, measures, list(data.subsets), entries, baseline, baselines, results,
                       sort, select)
