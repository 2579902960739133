"""What a hidden phase releases: a Ladder per team and published value, and quotas on by
default (the check that no phase lets a hidden phase's labels be read through it is
:mod:`dsr.board.overlap`).

**The release rule** (after Blum and Hardt, "The Ladder: A Reliable Leaderboard for
Machine Learning Competitions", ICML 2015). A hidden phase publishes, for each team and
each published value (a measure on a published group of dialogues: "all" and the groups
``scoring.publishable_subsets`` keeps), one number: the team's *ladder value*. Runs are
taken in the order they were submitted:

* the team's first run sets the value: its mean, *on the group's grid* (below);
* a later run changes it only when a one-sided paired t-test over that group's
  dialogues finds it better than the team's best run so far on that value (the run that
  last passed), at level ``alpha / total quota`` (Bonferroni over the phase's total
  quota; with no total quota, the k-th test runs at ``alpha * 6 / (pi^2 (k-1)^2)``, which
  sums to ``alpha`` as well); the passing run becomes the best so far and the value is
  its mean on the group's grid (never lower than before).

**The grid of a group** (issue 40). On a group of n dialogues a 0/1 measure (P@1, P@k, R@k
with one relevant sentence) is a count over n: rounded to 0.01, k/24, k/31 and k/36 never
share a grid point, so a group under 100 dialogues published exact counts, and an attacker
with a good guess of the labels fixed 19 of them within the quota. So each group's grid has
cells that hold at least ``min_counts`` counts: its step is the smallest ``1/m`` (m dividing
``1/step``: 0.01, 0.02, 0.04, 0.05, 0.1, 0.2, 0.25, 0.5, 1) with ``n / m >= min_counts``
(:func:`group_step`), the cells are ``[j/m, (j+1)/m)`` with 1 in the top one, and the
published number is the cell's lower edge (:func:`published`): "0.72" on a step of 0.04 reads
"from 0.72 to below 0.76". With the default 2, the judged CMU_DoG set's groups of 115, 36,
31 and 24 dialogues get steps 0.02, 0.1, 0.1 and 0.1. ``min_counts`` 0 is the rule before
issue 40 (the nearest point of ``step``), kept to measure what it gave away.

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
non-decreasing sequence on its group's grid of m cells, so a team's whole transcript on one
value takes at most ``transcripts(q, 1/m)`` forms over q submissions: at most
``log2(transcripts(q, 1/m))`` bits about the labels, whatever the attack (:func:`bound`
sums them over a phase's values); (4) no published value of a group is one exact count of
a 0/1 measure: every cell holds at least ``min_counts`` of them.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.core.errors import InputError
from dsr.core.params import Param, by_name, defaults

if TYPE_CHECKING:  # SQLAlchemy loads with the models: the rule itself is plain arithmetic
    from dsr.board.models import Phase

#: the settings of a hidden phase's release rule and quotas (``add-phase`` flags come from
#: the quota ones; step and alpha are the board's, declared once here)
PARAMS = (
    Param("step", 0.01, "float", "published values of a hidden phase are rounded to this step", above=0, high=0.5),
    Param(
        "alpha",
        0.05,
        "float",
        "a team's published value rises on a run that is no better than its "
        "best so far with at most this chance over the whole quota (the level of the paired tests, "
        "split over the phase's total quota)",
        above=0,
        below=1,
    ),
    Param(
        "min_counts",
        2,
        "int",
        "each published group's grid cells hold at least this many counts of a "
        "0/1 measure: a group of n dialogues gets a step of at least min_counts/n (0: the step alone, "
        "the rule before issue 40)",
        low=0,
        high=1000,
    ),
    Param(
        "noise",
        1.0,
        "float",
        "a team's published value is the cell of its mean plus Laplace noise of "
        "scale noise/n on a group of n dialogues (1: one dialogue's weight; 0: none), so no value is "
        "ever exact (Thresholdout's noise, Dwork et al. 2015)",
        low=0,
        high=10,
    ),
    Param(
        "daily_quota",
        3,
        "int",
        "hidden phases: accepted runs per team per UTC day (all its members together)",
        low=0,
        metavar="N",
    ),
    Param(
        "total_quota",
        20,
        "int",
        "hidden phases: accepted runs per team on the phase (all its members together)",
        low=0,
        metavar="N",
    ),
)
SETTINGS = by_name(PARAMS)
DEFAULTS = defaults(PARAMS)
STEP = DEFAULTS["step"]
ALPHA = DEFAULTS["alpha"]
MIN_COUNTS = DEFAULTS["min_counts"]
NOISE = DEFAULTS["noise"]


def _stats() -> ModuleType:
    """scipy.stats, imported on first use, in this one place."""
    from scipy import stats

    return stats


def warm() -> None:
    """Import scipy.stats now (a noticeable import): a server does it at its
    start, and a submission to a ladder phase before its write transaction, so the first
    ladder test never imports it while holding the database's write lock (which made
    every other submission wait: the board's p95 under 20 clients)."""
    _stats()


def uses_ladder(phase: Phase) -> bool:
    """Whether the phase publishes ladder values (hidden and not a final phase: a final
    phase shows nothing before its freeze and everything after)."""
    return bool(phase.hidden) and not phase.final


def default_quotas(hidden: bool, daily: int | None, total: int | None) -> tuple[int | None, int | None]:
    """A hidden phase's quotas: the given ones, else the declared defaults (checked)."""
    daily = SETTINGS["daily_quota"].check(daily) if daily is not None else None
    total = SETTINGS["total_quota"].check(total) if total is not None else None
    if not hidden:
        return daily, total
    return (DEFAULTS["daily_quota"] if daily is None else daily, DEFAULTS["total_quota"] if total is None else total)


def level(k: int, total_quota: int | None, alpha: float = ALPHA) -> float:
    """The level of the test of a team's ``k``-th run (k >= 2): ``alpha`` split over the
    total quota, or spent as ``alpha * 6 / (pi^2 (k-1)^2)`` when there is none."""
    if total_quota:
        return alpha / max(1, total_quota - 1)
    return alpha * 6 / (math.pi**2 * (k - 1) ** 2)


def _digits(step: float) -> int:
    return max(0, -math.floor(math.log10(step)) + 2)


def rounded(value: float, step: float = STEP) -> float:
    """``value`` on the grid of ``step`` (nearest), as a float printed without noise."""
    return round(round(value / step) * step, _digits(step))


def cells(step: float = STEP) -> int:
    """How many points the grid of ``step`` has on [0, 1] below 1 (``1/step``; the step must
    divide 1, else an InputError naming ``step``)."""
    m = round(1 / step)
    if m < 1 or abs(m * step - 1) > 1e-9:
        raise InputError("the step must divide 1 (0.01, 0.02, 0.05, ...)", field="step")
    return m


def group_step(n: int, step: float = STEP, min_counts: int = MIN_COUNTS) -> float:
    """The grid step of a group of ``n`` dialogues: the smallest ``1/m`` with m dividing
    ``1/step`` whose cells hold at least ``min_counts`` counts (``n / m >= min_counts``)."""
    finest = cells(step)
    if min_counts <= 0:
        return step
    for m in sorted((d for d in range(1, finest + 1) if finest % d == 0), reverse=True):
        if n >= min_counts * m:
            return 1 / m
    return 1.0


def published(value: float, step: float, min_counts: int = MIN_COUNTS) -> float:
    """What a group whose grid has ``step`` publishes of a mean: its cell's lower edge (1 is
    in the top cell); with ``min_counts`` 0, the nearest point of the step (the old rule)."""
    if min_counts <= 0:
        return rounded(value, step)
    m = round(1 / step)
    j = min(m - 1, max(0, math.floor(value * m + 1e-9)))
    return round(j / m, _digits(step))


def cell(value: float, step: float, min_counts: int = MIN_COUNTS) -> tuple[float, float]:
    """The means a published ``value`` stands for: ``[low, high)`` (the top cell holds 1)."""
    if min_counts <= 0:
        return value - step / 2, value + step / 2
    return value, value + step if value + step < 1 - 1e-9 else 1.0 + 1e-12


def on_grid(values: np.ndarray, step: float, min_counts: int = MIN_COUNTS) -> np.ndarray:
    """:func:`published` of each value."""
    return np.array([published(float(v), step, min_counts) for v in np.ravel(values)]).reshape(np.shape(values))


@dataclass
class Ladder:
    """A team's published values after each of its runs (in submission order)."""

    values: list[dict[str, dict[str, float | None]]]  # per run: subset -> measure -> value
    released: list[bool]  # per run: did any published value change


@dataclass(frozen=True)
class Noise:
    """The noise of one team's published values: a standard Laplace draw per run, group and
    measure, made from ``key`` (the board's secret, the phase and the team: never served) and
    the run's id, so every page and answer shows the same value and none can be drawn again."""

    key: bytes
    runs: tuple[int, ...]  # each run's id, in submission order

    def draw(self, k: int, group: str, measure: str) -> float:
        """The draw of the ``k``-th run (from 0) for ``group`` and ``measure``."""
        digest = hmac.new(self.key, f"{self.runs[k]}|{group}|{measure}".encode(), hashlib.sha256).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64 - 0.5  # uniform on (-1/2, 1/2)
        return -math.copysign(math.log1p(-2 * abs(u)), u)


def noise_key(secret: bytes, phase_id: int, team_id: int) -> bytes:
    """The key of a team's noise on a phase, from the board's secret."""
    return hmac.new(secret, f"dsr.release|{phase_id}|{team_id}".encode(), hashlib.sha256).digest()


def ladder(
    matrices: list[np.ndarray],
    subsets: dict[str, np.ndarray],
    measures: list[str],
    total_quota: int | None,
    step: float = STEP,
    alpha: float = ALPHA,
    min_counts: int = MIN_COUNTS,
    noise: Noise | None = None,
    scale: float = NOISE,
) -> Ladder:
    """The ladder values of one team's runs (``matrices``: topics x measures each, in
    submission order) on each published group and measure, each group on its grid
    (:func:`group_step`), with ``noise`` of scale ``scale / n`` on a group of n dialogues
    added to each mean it publishes (None: no noise, as for baseline rows)."""
    step = SETTINGS["step"].check(step)
    alpha = SETTINGS["alpha"].check(alpha)
    min_counts = SETTINGS["min_counts"].check(min_counts)
    scale = SETTINGS["noise"].check(scale)
    steps = {name: group_step(len(idx), step, min_counts) for name, idx in subsets.items()}
    values: list[dict] = []
    released: list[bool] = []
    best: dict[str, np.ndarray] = {}
    shown: dict[str, np.ndarray] = {}

    def publish(k: int, name: str, means: np.ndarray) -> np.ndarray:
        if noise is not None and scale > 0:
            width = scale / len(subsets[name])
            means = means + width * np.array([noise.draw(k, name, m) for m in measures])
        return on_grid(means, steps[name], min_counts)

    for k, matrix in enumerate(matrices, start=1):
        changed = False
        for name, idx in subsets.items():
            current = np.nan_to_num(np.asarray(matrix, dtype=float)[idx], nan=0.0)
            if name not in best:
                best[name] = current.copy()
                shown[name] = publish(k - 1, name, current.mean(axis=0))
                changed = True
                continue
            diff = current - best[name]
            better = _better(diff, level(k, total_quota, alpha))
            if better.any():
                best[name][:, better] = current[:, better]
                new = publish(k - 1, name, current.mean(axis=0))
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


def transcripts(submissions: int, step: float = STEP, min_counts: int = MIN_COUNTS) -> int:
    """How many transcripts one published value can show over ``submissions`` runs on a grid
    of ``step``: a first value (one of ``1/step`` cells, or ``1/step + 1`` points with the old
    rule's rounding, ``min_counts`` 0), then a non-decreasing sequence on it."""
    grid = cells(step) + (min_counts <= 0)
    if submissions <= 0:
        return 1
    # a non-decreasing sequence of length q on g values: C(q + g - 1, q)
    return math.comb(submissions + grid - 1, submissions)


def bits(submissions: int, step: float = STEP, min_counts: int = MIN_COUNTS) -> float:
    """The most a team learns about the labels from one published value over its quota."""
    return math.log2(transcripts(submissions, step, min_counts))


def group_steps(groups: dict[str, int], step: float = STEP, min_counts: int = MIN_COUNTS) -> dict[str, float]:
    """Each published group's grid step (``groups``: name -> dialogues)."""
    return {name: group_step(n, step, min_counts) for name, n in groups.items()}


def bound(groups: dict[str, int], measures: int, submissions: int, step: float = STEP, min_counts: int = MIN_COUNTS) -> float:
    """The most a team learns about the labels over ``submissions`` runs, in bits: the sum of
    :func:`bits` over the phase's published values (``measures`` on each group)."""
    return measures * sum(bits(submissions, s, min_counts) for s in group_steps(groups, step, min_counts).values())


def rule(phase: Phase, groups: dict[str, int] | None = None) -> dict[str, Any]:
    """How a hidden phase's published values are made (``release``), for the API; ``groups``
    (name -> dialogues) adds each group's grid step."""
    out = {
        "rule": "ladder: a team's value changes only when a one-sided paired t-test over the "
        "group's dialogues finds a run better than the team's best so far; each value is "
        "the lower edge of its cell on the group's grid",
        "step": STEP,
        "alpha": ALPHA,
        "min_counts": MIN_COUNTS,
        "noise": NOISE,
        "noise_rule": f"Laplace noise of scale {NOISE:g}/n added to a group of n dialogues' "
        "mean before its cell is taken (drawn once per run and value)",
        "level": level(2, phase.total_quota),
        "daily_quota": phase.daily_quota,
        "total_quota": phase.total_quota,
    }
    if groups is not None:
        out["steps"] = group_steps(groups)
    return out
