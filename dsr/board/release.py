"""What a hidden phase releases: a Ladder per team and published value, and quotas on by
default (the check that no phase lets a hidden phase's labels be read through it is
:mod:`dsr.board.overlap`).

**The release rule** (after Blum and Hardt, "The Ladder: A Reliable Leaderboard for
Machine Learning Competitions", ICML 2015). A hidden phase publishes, for each team and
each published value (a measure on a published group of dialogues: "all" and the groups
``scoring.publishable_subsets`` keeps), one number: the team's *ladder value*. Runs are
taken in the order they were submitted:

* the team's first run sets the value: its mean, rounded to ``step``;
* a later run changes it only when a one-sided paired t-test over that group's
  dialogues finds it better than the team's best run so far on that value (the run that
  last passed), at level ``alpha / total quota`` (Bonferroni over the phase's total
  quota; with no total quota, the k-th test runs at ``alpha * 6 / (pi^2 (k-1)^2)``, which
  sums to ``alpha`` as well); the passing run becomes the best so far and the value is
  its mean rounded to ``step`` (never lower than before).

Nothing else of a hidden phase's scores leaves the server: no per-topic value, no full
precision mean, no interval, no significance mark or p-value, no rank range or group
(rows are ordered by their ladder values). Organisers' baseline rows each publish their
own rounded means (a run the organisers chose, not an adaptive probe). A final phase
publishes nothing before ``dsr board freeze`` and everything after (the season is
over); the ladder is for the other hidden phases, frozen or not.

**The guarantee** (``docs/board.md``, tested by ``tests/board/test_board_release.py``):
(1) while none of a team's values has moved since its first run, its runs cannot depend on
the labels, and for each published value the chance that it rises on a run no better than
the team's best so far (in expectation over the dialogues) is at most ``alpha`` over the
whole quota (after a change, (3) bounds what the team learnt); (2) a run that differs from the team's best in one dialogue
never changes anything (its paired t statistic is 1 whatever that dialogue's values), so
differencing and peeling by few dialogues read nothing; (3) each published value is a
non-decreasing sequence on the grid of ``step``, so a team's whole transcript on one
value takes at most ``transcripts(q, step)`` forms over q submissions: at most
``log2(transcripts(q, step))`` bits about the labels, whatever the attack.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from dsr.core.params import Param, by_name, defaults

#: the settings of a hidden phase's release rule and quotas (``add-phase`` flags come from
#: the quota ones; step and alpha are the board's, declared once here)
PARAMS = (
    Param("step", 0.01, "float", "published values of a hidden phase are rounded to this step",
          above=0, high=0.5),
    Param("alpha", 0.05, "float", "a team's published value rises on a run that is no better than its "
          "best so far with at most this chance over the whole quota (the level of the paired tests, "
          "split over the phase's total quota)", above=0, below=1),
    Param("daily_quota", 3, "int", "hidden phases: accepted runs per team per UTC day (all its members "
          "together)", low=0, metavar="N"),
    Param("total_quota", 20, "int", "hidden phases: accepted runs per team on the phase (all its members "
          "together)", low=0, metavar="N"),
)
SETTINGS = by_name(PARAMS)
DEFAULTS = defaults(PARAMS)
STEP = DEFAULTS["step"]
ALPHA = DEFAULTS["alpha"]


def _stats():
    """scipy.stats, imported on first use, in this one place."""
    from scipy import stats

    return stats


def warm() -> None:
    """Import scipy.stats now (about 0.4 s on a 2-core machine): a server does it at its
    start, and a submission to a ladder phase before its write transaction, so the first
    ladder test never imports it while holding the database's write lock (which made
    every other submission wait, issue 34's p95)."""
    _stats()


def uses_ladder(phase) -> bool:
    """Whether the phase publishes ladder values (hidden and not a final phase: a final
    phase shows nothing before its freeze and everything after)."""
    return bool(phase.hidden) and not phase.final


def default_quotas(hidden: bool, daily: int | None, total: int | None) -> tuple[int | None, int | None]:
    """A hidden phase's quotas: the given ones, else the declared defaults (checked)."""
    daily = SETTINGS["daily_quota"].check(daily) if daily is not None else None
    total = SETTINGS["total_quota"].check(total) if total is not None else None
    if not hidden:
        return daily, total
    return (DEFAULTS["daily_quota"] if daily is None else daily,
            DEFAULTS["total_quota"] if total is None else total)


def level(k: int, total_quota: int | None, alpha: float = ALPHA) -> float:
    """The level of the test of a team's ``k``-th run (k >= 2): ``alpha`` split over the
    total quota, or spent as ``alpha * 6 / (pi^2 (k-1)^2)`` when there is none."""
    if total_quota:
        return alpha / max(1, total_quota - 1)
    return alpha * 6 / (math.pi ** 2 * (k - 1) ** 2)


def rounded(value: float, step: float = STEP) -> float:
    """``value`` on the grid of ``step`` (nearest), as a float printed without noise."""
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return round(round(value / step) * step, digits)


def on_grid(values: np.ndarray, step: float = STEP) -> np.ndarray:
    """:func:`rounded` of each value."""
    digits = max(0, -math.floor(math.log10(step)) + 2)
    return np.round(np.round(values / step) * step, digits)


@dataclass
class Ladder:
    """A team's published values after each of its runs (in submission order)."""

    values: list[dict[str, dict[str, float | None]]]   # per run: subset -> measure -> value
    released: list[bool]                                # per run: did any published value change


def ladder(matrices: list[np.ndarray], subsets: dict[str, np.ndarray], measures: list[str],
           total_quota: int | None, step: float = STEP, alpha: float = ALPHA) -> Ladder:
    """The ladder values of one team's runs (``matrices``: topics x measures each, in
    submission order) on each published group and measure."""
    step = SETTINGS["step"].check(step)
    alpha = SETTINGS["alpha"].check(alpha)
    values: list[dict] = []
    released: list[bool] = []
    best: dict[str, np.ndarray] = {}
    shown: dict[str, np.ndarray] = {}
    for k, matrix in enumerate(matrices, start=1):
        changed = False
        for name, idx in subsets.items():
            current = np.nan_to_num(np.asarray(matrix, dtype=float)[idx], nan=0.0)
            if name not in best:
                best[name] = current.copy()
                shown[name] = on_grid(current.mean(axis=0), step)
                changed = True
                continue
            diff = current - best[name]
            better = _better(diff, level(k, total_quota, alpha))
            if better.any():
                best[name][:, better] = current[:, better]
                new = on_grid(current.mean(axis=0), step)
                raised = better & (new > shown[name])
                changed |= bool(raised.any())
                shown[name] = np.where(raised, new, shown[name])
        values.append({name: dict(zip(measures, map(float, shown[name]))) for name in subsets})
        released.append(changed)
    return Ladder(values, released)


def _better(diff: np.ndarray, at: float) -> np.ndarray:
    """Per measure (column): whether a one-sided paired t-test finds the run better than the
    best so far at level ``at`` (differences all equal and positive: better)."""
    mean = diff.mean(axis=0)
    if len(diff) < 2:
        return np.zeros(diff.shape[1], dtype=bool)
    sd = diff.std(axis=0, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(sd > 0, mean / (sd / math.sqrt(len(diff))), np.where(mean > 0, np.inf, 0.0))
    return (mean > 0) & (t > critical(at, len(diff) - 1))


@functools.lru_cache(maxsize=1024)
def critical(at: float, df: int) -> float:
    """The one-sided t test's critical value: p < ``at`` exactly when t exceeds it."""
    return float(_stats().t.isf(at, df))


def transcripts(submissions: int, step: float = STEP) -> int:
    """How many transcripts one published value can show over ``submissions`` runs: a first
    value on the grid (1/step + 1 values), then a non-decreasing sequence on it."""
    grid = round(1 / step) + 1
    if submissions <= 0:
        return 1
    # a non-decreasing sequence of length q on g values: C(q + g - 1, q)
    return math.comb(submissions + grid - 1, submissions)


def bits(submissions: int, step: float = STEP) -> float:
    """The most a team learns about the labels from one published value over its quota."""
    return math.log2(transcripts(submissions, step))


def rule(phase) -> dict:
    """How a hidden phase's published values are made (``release``), for the API."""
    return {"rule": "ladder: a team's value changes only when a one-sided paired t-test over the "
                    "group's dialogues finds a run better than the team's best so far",
            "step": STEP, "alpha": ALPHA,
            "level": level(2, phase.total_quota),
            "daily_quota": phase.daily_quota, "total_quota": phase.total_quota}
