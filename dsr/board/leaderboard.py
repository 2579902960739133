"""A phase's leaderboard: rows (each team's best, or every run), sorted, with what the
statistics know (public phases, and final phases once frozen); a hidden phase's rows carry
its ladder values only (``dsr.board.release``), and a final phase's rows, before its freeze,
no score and a fixed order (team, then submission time).

* **Marks** against the chosen baseline: each row, per subset and measure, paired
  t-test by topic, Holm-corrected across the rows shown (``scoring.board_results``);
  a value is marked better (▲) or worse (▼) only when the adjusted p is below 0.05,
  and carries no mark otherwise.
* **Rank groups** on the sorted measure (the phase's primary one by default) and the
  chosen subset: every pair of rows is tested (``dsr.evaluation.significance.all_pairs``, paired
  t-test, Holm over the pairs); a row's rank is a range, from 1 + the rows
  significantly above it to N - the rows significantly below it, and rows that share
  a letter are not significantly different (a compact letter display).
* **Intervals**: the sorted measure's mean with its 95% t interval over the topics
  (``dsr.evaluation.significance.mean_ci``), per subset.

Baseline rows: the chosen baseline is always shown, the others on demand
(``baselines="all"``). A final phase shows rows without scores until it is frozen.
For hidden phases only ladder values leave the server.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from dsr.board import release, scoring
from dsr.board.cache import ScoreCache
from dsr.board.models import Phase, Submission, iso
from dsr.board.release import uses_ladder
from dsr.board.settings import SELECT
from dsr.core.errors import InputError
from dsr.evaluation.results import Results
from dsr.evaluation.significance import all_pairs, mean_ci


class Scores(Protocol):
    """What a leaderboard reads of its board (:class:`dsr.board.service.Board` is one): the
    phase's scoring data and rows, each row's per-topic values, a team's release noise and
    the cache that keeps the ladders."""

    cache: ScoreCache

    def phase_data(self, phase: Phase) -> scoring.PhaseData: ...

    def submissions(self, phase: Phase) -> list[Submission]: ...

    def matrix(self, sub: Submission, n_measures: int) -> Any: ...

    def matrix_of(self, submission_id: int, n_measures: int, phase: Phase) -> Any: ...

    def release_noise(self, phase: Phase, team_id: int, runs: list[int]) -> Any: ...


#: a team's runs on a board, in submission order (the ladder of a submit answer; built once:
#: see ``dsr.board.members.IDENTIFY``)
TEAM_RUNS = (
    select(Submission.id)
    .where(Submission.phase_id == bindparam("phase"), Submission.team_id == bindparam("team"), Submission.baseline.is_(False))
    .order_by(Submission.id)
)
BASELINE_VIEWS = ("chosen", "all")


@dataclass
class Entry:
    submission: Submission
    key: str
    means: dict[str, dict[str, float | None]]  # subset -> measure -> mean
    marks: dict[str, dict[str, str]]  # subset -> measure -> better/worse/tie/""
    p: dict[str, dict[str, float | None]]  # subset -> measure -> Holm-adjusted p
    #: subset -> (low, high) of the sorted measure's 95% interval
    ci: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    rank: tuple[int, int] | None = None  # rank range on the sorted measure and subset
    group: str = ""  # compact letter display
    runs: int = 1  # the team's runs on this board


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
    hidden_baselines: int = 0  # baseline rows collapsed
    #: a hidden phase's ladder values are shown (``release``), not means and statistics
    ladder: bool = False
    #: each published group's dialogues (a hidden phase's grid steps follow from them)
    groups: dict[str, int] = field(default_factory=dict)

    @property
    def scores_shown(self) -> bool:
        return self.phase.scores_shown

    @property
    def rule(self) -> dict[str, Any]:
        return release.rule(self.phase, self.groups)

    def to_json(self) -> dict[str, Any]:
        """What ``GET /api/boards/...`` answers: aggregates only, never per-topic values
        (and no score of a final phase before it is frozen)."""
        shown = self.scores_shown
        return {
            "collection": self.phase.collection,
            "phase": self.phase.name,
            "hidden": self.phase.hidden,
            "final": self.phase.final,
            "frozen": iso(self.phase.frozen_at),
            "opens": iso(self.phase.opens_at),
            "closes": iso(self.phase.closes_at),
            "collection_hash": self.phase.collection_hash,
            "measures": self.measures,
            "primary": self.primary,
            "subsets": self.subsets,
            "sort": self.sort,
            "subset": self.subset,
            "select": self.select,
            "topics": len(self.results.topics),
            "scores_published": shown,
            "baseline": self.baseline.id if self.baseline else None,
            **(
                {"release": self.rule}
                if self.ladder
                else {
                    "significance": {
                        "test": "paired t-test by topic, two-sided",
                        "correction": "Holm across the rows shown, per subset and measure",
                        "groups": f"all pairs on {self.sort} ({self.subset}), Holm over the pairs",
                        "interval": "95% t interval of the mean over the topics",
                        "alpha": self.results.alpha,
                    }
                }
            ),
            "rows": [_row_json(i, e, self.sort, shown, self.ladder) for i, e in enumerate(self.entries)],
        }


def _row_json(i: int, e: Entry, sort: str, shown: bool, ladder: bool = False) -> dict[str, Any]:
    sub = e.submission
    row = {
        "position": i + 1,
        "id": sub.id,
        "team": sub.team.name,
        "system": sub.system,
        "baseline": sub.baseline,
        "run_type": sub.run_type,
        "trained_on_collection": sub.trained_on_collection,
        "team_runs": e.runs,
        "submitted": sub.created_at.isoformat() + "Z",
    }
    if ladder:
        row.update({"rank": e.rank[0] if e.rank else None, "means": e.means})
    elif shown:
        row.update(
            {
                "rank": list(e.rank) if e.rank else None,
                "group": e.group,
                "means": e.means,
                "ci": {s: {sort: list(v)} for s, v in e.ci.items()},
                "vs_baseline": e.marks,
                "p_holm": e.p,
            }
        )
    return row


def published_means(sub: Submission, data: scoring.PhaseData) -> dict[str, dict[str, float | None]]:
    """The row's means over the subsets the phase publishes (a hidden phase's small subsets
    are merged or withheld, ``scoring.publishable_subsets``; a row stored before a merge
    shows no value for it until ``dsr board rebuild``)."""
    means = json.loads(sub.means_json)
    return {s: means.get(s, dict.fromkeys(data.measures)) for s in data.subsets}


def row_key(sub: Submission) -> str:
    return f"{sub.team.name} / {sub.system} #{sub.id}"


def build(
    board: Scores,
    phase: Phase,
    *,
    sort: str | None = None,
    select: str = "best",
    baseline_id: int | None = None,
    descending: bool = True,
    subset: str = "all",
    team: str | None = None,
    baselines: str = "chosen",
) -> Leaderboard:
    """The leaderboard of ``phase`` (``board`` is a :class:`dsr.board.service.Board`):
    ``select`` each team's best (by ``sort``), latest or all runs, of one ``team`` when given;
    ``baselines``: the chosen baseline's row only, or all of them.

    A final phase before its freeze lists every run in a fixed order (team, then
    submission time) whatever ``sort``, ``descending`` and ``select`` say; a hidden phase
    (``release.uses_ladder``) shows each team's ladder values, sorted by them, with no
    interval, mark or rank range."""
    data = board.phase_data(phase)
    measures = data.measures
    primary = phase.primary()
    sort = sort or primary
    _check_view(sort, measures, select, subset, data, baselines)
    subs = board.submissions(phase)
    all_baselines = [s for s in subs if s.baseline]
    chosen = baseline_id if baseline_id is not None else phase.baseline_id
    baseline = next((s for s in all_baselines if s.id == chosen), all_baselines[0] if all_baselines else None)
    shown = [s for s in all_baselines if baselines == "all" or s is baseline]
    teams = [s for s in subs if not s.baseline and (team is None or s.team.name == team)]
    counts: dict[int, int] = {}
    for sub in teams:
        counts[sub.team_id] = counts.get(sub.team_id, 0) + 1
    if not phase.scores_shown:  # nothing derived from a score: the order is fixed
        sort, select, descending = primary, "all", True
        shown = sorted(shown + teams, key=lambda s: (s.team.name, s.created_at, s.id))
        return _assemble(board, phase, data, shown, None, counts, baseline, all_baselines, (sort, select, subset, primary, team))
    ladder_values = released_values(board, phase, data, subs) if uses_ladder(phase) else None

    def mean_of(sub: Submission) -> float:
        means = ladder_values[sub.id] if ladder_values is not None else json.loads(sub.means_json)
        value = means.get(subset, {}).get(sort)
        return float("-inf") if value is None else value

    if select == "all":
        shown += teams
    else:
        by_team: dict[int, Submission] = {}
        for sub in teams:  # in id order: "latest" keeps the last, "best" the highest
            best = by_team.get(sub.team_id)
            if best is None or select == "latest" or mean_of(sub) > mean_of(best):
                by_team[sub.team_id] = sub
        shown += list(by_team.values())
    shown.sort(key=lambda s: (mean_of(s) if descending else -mean_of(s), -s.id), reverse=True)
    return _assemble(
        board, phase, data, shown, ladder_values, counts, baseline, all_baselines, (sort, select, subset, primary, team)
    )


def _assemble(
    board: Scores,
    phase: Phase,
    data: scoring.PhaseData,
    shown: list[Submission],
    ladder_values: dict[int, dict] | None,
    counts: dict[int, int],
    baseline: Submission | None,
    all_baselines: list[Submission],
    view: tuple[str, str, str, str, str | None],
) -> Leaderboard:
    """The entries of the rows ``shown`` (in order), with the statistics a phase publishes."""
    sort, select, subset, primary, team = view
    measures = data.measures
    rows = [
        scoring.BoardRow(row_key(s), s.id, s.team.name, s.system, s.baseline, s.created_at, board.matrix(s, len(measures)))
        for s in shown
    ]
    full = phase.scores_shown and ladder_values is None
    results = scoring.board_results(data, phase.name, rows, row_key(baseline) if baseline and full else None)
    entries = [_entry(sub, row, data, results, counts) for sub, row in zip(shown, rows)]
    if full:
        _statistics(entries, rows, data, sort, subset)
    elif ladder_values is not None:
        _ladder_entries(entries, ladder_values, sort, subset)
    lb = Leaderboard(
        phase,
        measures,
        list(data.subsets),
        entries,
        baseline,
        all_baselines,
        results,
        sort,
        select,
        subset,
        primary,
        team,
        len(all_baselines) - sum(s.baseline for s in shown),
    )
    lb.ladder = ladder_values is not None
    lb.groups = {name: len(idx) for name, idx in data.subsets.items()}
    return lb


def _ladder_entries(entries: list[Entry], ladder_values: dict[int, dict], sort: str, subset: str) -> None:
    """A hidden phase's rows: the ladder values, no mark, p-value or interval; the rank is
    1 + the rows with a higher value on the sorted one (no range, no group)."""
    for entry in entries:
        entry.means = ladder_values[entry.submission.id]
        entry.marks = {s: dict.fromkeys(entry.means[s], "") for s in entry.means}
        entry.p = {s: dict.fromkeys(entry.means[s]) for s in entry.means}
        entry.ci = {s: (None, None) for s in entry.means}
    for entry in entries:
        mine = entry.means[subset][sort]
        higher = sum(1 for other in entries if (other.means[subset][sort] or 0) > (mine or 0))
        entry.rank = (1 + higher, 1 + higher)


def released_values(
    board: Scores, phase: Phase, data: scoring.PhaseData, subs: list[Submission]
) -> dict[int, dict[str, dict[str, float | None]]]:
    """Each run's published values on a hidden phase: its team's ladder values after it
    (``release.ladder``, with the team's noise; a baseline row: its own means on the grid, no
    noise: the organisers' runs are not adaptive probes)."""
    by_team: dict[int, list[Submission]] = {}
    for sub in subs:
        by_team.setdefault(-sub.id if sub.baseline else sub.team_id, []).append(sub)
    out = {}
    for runs in by_team.values():
        runs.sort(key=lambda s: s.id)
        # a row never changes once written, so a team's ladder is kept per list of its rows
        key = (phase.id, phase.scores_version, phase.total_quota, id(data), tuple(s.id for s in runs))
        values = board.cache.ladder(key, functools.partial(_ladder, board, phase, data, runs))
        out.update({s.id: v for s, v in zip(runs, values)})
    return out


def _ladder(board: Scores, phase: Phase, data: scoring.PhaseData, runs: list[Submission]) -> list[Any]:
    """A team's ladder values after each of its ``runs`` (a baseline's: without noise)."""
    noise = None if runs[0].baseline else board.release_noise(phase, runs[0].team_id, [s.id for s in runs])
    matrices = [board.matrix(s, len(data.measures)) for s in runs]
    return release.ladder(matrices, data.subsets, data.measures, phase.total_quota, noise=noise).values


def answer_means(
    board: Scores, phase: Phase, row: Submission, session: Session, earlier: list[int] | None = None
) -> dict[str, Any]:
    """What the submit answer says of a new row's scores: nothing on a final phase before its
    freeze, the team's ladder values after it on a hidden phase (with ``released``: whether
    any of them changed), else its means. ``session``: the write transaction (the team's
    earlier rows are read there, by index, before the row is written: all of the team's rows
    on the phase, under the transaction's lock; ``earlier``: their ids, read already)."""
    if not phase.scores_shown:
        return {"means": None}
    if not uses_ladder(phase):
        return {"means": json.loads(row.means_json)}
    data = board.phase_data(phase)
    if row.baseline:
        earlier = []
    elif earlier is None:
        earlier = list(session.scalars(TEAM_RUNS, {"phase": phase.id, "team": row.team_id}))
    matrices = [board.matrix_of(i, len(data.measures), phase) for i in earlier]
    matrices.append(scoring.matrix_from_bytes(row.per_topic, len(data.measures)))
    noise = None if row.baseline else board.release_noise(phase, row.team_id, [*earlier, row.id])
    steps = release.ladder(matrices, data.subsets, data.measures, phase.total_quota, noise=noise)
    return {"means": steps.values[-1], "released": steps.released[-1]}


def _check_view(sort: str, measures: list[str], select: str, subset: str, data: scoring.PhaseData, baselines: str) -> None:
    if sort not in measures:
        raise InputError(f"no measure {sort!r} on this board; it has {', '.join(measures)}", field="sort")
    select = SELECT.check(select)
    if subset not in data.subsets:
        raise InputError(f"no subset {subset!r}; this board has {', '.join(data.subsets)}", field="subset")
    if baselines not in BASELINE_VIEWS:
        raise InputError(f"baselines is one of {', '.join(BASELINE_VIEWS)}", field="baselines")


def _entry(sub: Submission, row: scoring.BoardRow, data: scoring.PhaseData, results: Results, counts: dict[int, int]) -> Entry:
    measures = data.measures
    significance = results.significance or {}
    marks = {subset: {m: scoring.direction(results, subset, row.key, m) for m in measures} for subset in data.subsets}
    p = {
        subset: {m: significance.get(subset, {}).get(row.key, {}).get(m, {}).get("t_holm") for m in measures}
        for subset in data.subsets
    }
    return Entry(sub, row.key, published_means(sub, data), marks, p, runs=counts.get(sub.team_id, 0))


def _statistics(entries: list[Entry], rows: list[scoring.BoardRow], data: scoring.PhaseData, sort: str, subset: str) -> None:
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
