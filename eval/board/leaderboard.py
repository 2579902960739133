"""A phase's leaderboard: rows (each team's best, or every run), sorted, with what the
statistics know.

* **Marks** against the chosen baseline: each row, per subset and measure, paired
  t-test by topic, Holm-corrected across the rows shown (``scoring.board_results``);
  a value is marked better (▲) or worse (▼) only when the adjusted p is below 0.05,
  and carries no mark otherwise.
* **Rank groups** on the sorted measure (the phase's primary one by default) and the
  chosen subset: every pair of rows is tested (``eval.significance.all_pairs``, paired
  t-test, Holm over the pairs); a row's rank is a range, from 1 + the rows
  significantly above it to N - the rows significantly below it, and rows that share
  a letter are not significantly different (a compact letter display).
* **Intervals**: the sorted measure's mean with its 95% t interval over the topics
  (``eval.significance.mean_ci``), per subset.

Baseline rows: the chosen baseline is always shown, the others on demand
(``baselines="all"``). A final phase shows rows without scores until it is frozen.
For hidden phases only aggregates leave the server.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eval.board import scoring
from eval.board.models import Phase, Submission, iso
from eval.results import Results
from eval.significance import all_pairs, mean_ci
from retrieval.errors import InputError

SELECTIONS = ("all", "best", "latest")
BASELINE_VIEWS = ("chosen", "all")


@dataclass
class Entry:
    submission: Submission
    key: str
    means: dict[str, dict[str, float | None]]          # subset -> measure -> mean
    marks: dict[str, dict[str, str]]                   # subset -> measure -> better/worse/tie/""
    p: dict[str, dict[str, float | None]]              # subset -> measure -> Holm-adjusted p
    #: subset -> (low, high) of the sorted measure's 95% interval
    ci: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    rank: tuple[int, int] | None = None                # rank range on the sorted measure and subset
    group: str = ""                                    # compact letter display
    runs: int = 1                                      # the team's runs on this board


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
    subset: str = "all"
    primary: str = ""
    team: str | None = None
    hidden_baselines: int = 0                          # baseline rows collapsed

    @property
    def scores_shown(self) -> bool:
        return self.phase.scores_shown

    def to_json(self) -> dict[str, Any]:
        """What ``GET /api/boards/...`` answers: aggregates only, never per-topic values
        (and no score of a final phase before it is frozen)."""
        shown = self.scores_shown
        return {
            "collection": self.phase.collection, "phase": self.phase.name, "hidden": self.phase.hidden,
            "final": self.phase.final, "frozen": iso(self.phase.frozen_at),
            "opens": iso(self.phase.opens_at), "closes": iso(self.phase.closes_at),
            "collection_hash": self.phase.collection_hash,
            "measures": self.measures, "primary": self.primary, "subsets": self.subsets,
            "sort": self.sort, "subset": self.subset, "select": self.select,
            "topics": len(self.results.topics), "scores_published": shown,
            "baseline": self.baseline.id if self.baseline else None,
            "significance": {"test": "paired t-test by topic, two-sided",
                             "correction": "Holm across the rows shown, per subset and measure",
                             "groups": f"all pairs on {self.sort} ({self.subset}), Holm over the pairs",
                             "interval": "95% t interval of the mean over the topics",
                             "alpha": self.results.alpha},
            "rows": [_row_json(i, e, self.sort, shown) for i, e in enumerate(self.entries)],
        }


def _row_json(i: int, e: Entry, sort: str, shown: bool) -> dict[str, Any]:
    sub = e.submission
    row = {"position": i + 1, "id": sub.id, "team": sub.team.name,
           "system": sub.system, "baseline": sub.baseline, "run_type": sub.run_type,
           "trained_on_collection": sub.trained_on_collection, "team_runs": e.runs,
           "submitted": sub.created_at.isoformat() + "Z"}
    if shown:
        row.update({"rank": list(e.rank) if e.rank else None, "group": e.group, "means": e.means,
                    "ci": {s: {sort: list(v)} for s, v in e.ci.items()},
                    "vs_baseline": e.marks, "p_holm": e.p})
    return row


def published_means(sub: Submission, data: scoring.PhaseData) -> dict[str, dict[str, float | None]]:
    """The row's means over the subsets the phase publishes (a hidden phase's small subsets
    are merged or withheld, ``scoring.publishable_subsets``; a row stored before a merge
    shows no value for it until ``dsr board rebuild``)."""
    means = json.loads(sub.means_json)
    return {s: means.get(s, dict.fromkeys(data.measures)) for s in data.subsets}


def row_key(sub: Submission) -> str:
    return f"{sub.team.name} / {sub.system} #{sub.id}"


def build(board, phase: Phase, *, sort: str | None = None, select: str = "best",
          baseline_id: int | None = None, descending: bool = True, subset: str = "all",
          team: str | None = None, baselines: str = "chosen") -> Leaderboard:
    """The leaderboard of ``phase`` (``board`` is a :class:`eval.board.service.Board`):
    ``select`` each team's best (by ``sort``), latest or all runs, of one ``team`` when given;
    ``baselines``: the chosen baseline's row only, or all of them."""
    data = board.phase_data(phase)
    measures = data.measures
    primary = phase.primary()
    sort = sort or primary
    _check_view(sort, measures, select, subset, data, baselines)
    subs = board.submissions(phase)
    all_baselines = [s for s in subs if s.baseline]
    chosen = baseline_id if baseline_id is not None else phase.baseline_id
    baseline = next((s for s in all_baselines if s.id == chosen), all_baselines[0] if all_baselines else None)

    def mean_of(sub: Submission) -> float:
        value = json.loads(sub.means_json).get(subset, {}).get(sort)
        return float("-inf") if value is None else value

    shown = [s for s in all_baselines if baselines == "all" or s is baseline]
    teams = [s for s in subs if not s.baseline and (team is None or s.team.name == team)]
    counts: dict[int, int] = {}
    for sub in teams:
        counts[sub.team_id] = counts.get(sub.team_id, 0) + 1
    if select == "all":
        shown += teams
    else:
        by_team: dict[int, Submission] = {}
        for sub in teams:   # in id order: "latest" keeps the last, "best" the highest
            best = by_team.get(sub.team_id)
            if best is None or select == "latest" or mean_of(sub) > mean_of(best):
                by_team[sub.team_id] = sub
        shown += list(by_team.values())
    shown.sort(key=lambda s: (mean_of(s) if descending else -mean_of(s), -s.id), reverse=True)
    rows = [scoring.BoardRow(row_key(s), s.id, s.team.name, s.system, s.baseline, s.created_at,
                             board.matrix(s, len(measures))) for s in shown]
    results = scoring.board_results(data, phase.name, rows, row_key(baseline) if baseline else None)
    entries = [_entry(sub, row, data, results, counts) for sub, row in zip(shown, rows)]
    _statistics(entries, rows, data, sort, subset)
    return Leaderboard(phase, measures, list(data.subsets), entries, baseline, all_baselines, results,
                       sort, select, subset, primary, team, len(all_baselines) - sum(s.baseline for s in shown))


def _check_view(sort: str, measures: list[str], select: str, subset: str, data, baselines: str) -> None:
    if sort not in measures:
        raise InputError(f"no measure {sort!r} on this board; it has {', '.join(measures)}", field="sort")
    if select not in SELECTIONS:
        raise InputError(f"select is one of {', '.join(SELECTIONS)}", field="select")
    if subset not in data.subsets:
        raise InputError(f"no subset {subset!r}; this board has {', '.join(data.subsets)}", field="subset")
    if baselines not in BASELINE_VIEWS:
        raise InputError(f"baselines is one of {', '.join(BASELINE_VIEWS)}", field="baselines")


def _entry(sub: Submission, row: scoring.BoardRow, data: scoring.PhaseData, results: Results,
           counts: dict[int, int]) -> Entry:
    measures = data.measures
    significance = results.significance or {}
    marks = {subset: {m: scoring.direction(results, subset, row.key, m) for m in measures}
             for subset in data.subsets}
    p = {subset: {m: significance.get(subset, {}).get(row.key, {}).get(m, {}).get("t_holm")
                  for m in measures} for subset in data.subsets}
    return Entry(sub, row.key, published_means(sub, data), marks, p, runs=counts.get(sub.team_id, 0))


def _statistics(entries: list[Entry], rows: list[scoring.BoardRow], data: scoring.PhaseData,
                sort: str, subset: str) -> None:
    """Intervals of ``sort`` per subset, and rank ranges and letter groups on ``subset``."""
    j = data.measures.index(sort)
    for entry, row in zip(entries, rows):
        for name, idx in data.subsets.items():
            _, low, high = mean_ci(row.values[idx, j][:, None], "t")
            entry.ci[name] = (_finite(low[0]), _finite(high[0]))
    if not rows:
        return
    pairs = all_pairs({r.key: r.values[:, [j]] for r in rows}, [sort], index=data.subsets[subset])[sort]
    for entry in entries:
        above = below = 0
        for other in entries:
            p = pairs["p"].get(f"{entry.key}|{other.key}", pairs["p"].get(f"{other.key}|{entry.key}"))
            if other is entry or p is None or not p < scoring.ALPHA:
                continue
            diff = pairs["means"][other.key] - pairs["means"][entry.key]
            above, below = above + (diff > 0), below + (diff < 0)
        entry.rank = (1 + above, len(entries) - below)
        entry.group = pairs["letters"][entry.key]


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
