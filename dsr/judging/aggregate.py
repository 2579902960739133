"""From grades to labels: honeypot checks decide who counts, crowd-kit aggregates the rest.

The grades of a campaign are a table (:data:`COLUMNS`), one row per (item, assessor):
``grade`` is NaN when the assessor said "unsure". :func:`honeypot_checks` gives
each assessor's accuracy on the honeypots they answered, balanced over the relevant
and the not-relevant checks; an assessor counts when they answered at least
``min_checks`` of them and reach ``threshold`` (the SIGIR 2022 rule: only workers who
passed the honeypots were counted).
:func:`aggregate` then combines the counted grades of the pool items into one
label per item with a crowd-kit aggregator (:data:`METHODS`):

* ``mv``: majority vote (``crowdkit.aggregation.MajorityVote``);
* ``ds``: Dawid-Skene (a confusion matrix per assessor, EM);
* ``onecoin-ds``: Dawid-Skene with one accuracy per assessor;
* ``mace``: MACE (Hovy et al. 2013: each assessor is competent or spams);
* ``glad``: GLAD (Whitehill et al. 2009: assessor skill and item difficulty).

Each gives a probability per grade and item (``probas_``); the label is the most
probable grade, and a tie goes to the lowest of the tied grades (crowd-kit's own
``idxmax`` would take whichever grade it happened to list first). Grades are
categories for all of them (none of crowd-kit's classification aggregators is
ordinal); the ordinal agreement is Krippendorff's alpha in
:mod:`dsr.judging.assessor_agreement`. (crowd-kit's ``Wawa`` and ``ZeroBasedSkill`` fail
with scikit-learn 1.9's ``check_is_fitted``, so they are not offered.)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dsr.core.errors import InputError
from dsr.judging.guidelines import Guidelines

#: one row per (item, assessor)
COLUMNS = ("item", "assessor", "grade", "unsure", "seconds", "gold", "planted", "dialogue", "candidate", "task", "created_at")
METHODS = ("mv", "ds", "onecoin-ds", "mace", "glad")


@dataclass
class Check:
    """An assessor's honeypot record and whether their grades count. ``accuracy`` is
    balanced: the mean of the accuracy on the relevant checks and on the not-relevant
    ones (over the kinds they answered), so one grade for everything scores at most 0.5
    however the checks are mixed."""

    assessor: str
    checks: int
    correct: int
    counted: bool
    reason: str
    relevant_checks: int = 0
    relevant_correct: int = 0

    @property
    def accuracy(self) -> float | None:
        if not self.checks:
            return None
        parts = [
            (self.relevant_correct, self.relevant_checks),
            (self.correct - self.relevant_correct, self.checks - self.relevant_checks),
        ]
        return sum(c / n for c, n in parts if n) / sum(1 for _, n in parts if n)


def honeypot_checks(grades: pd.DataFrame, guidelines: Guidelines, threshold: float, min_checks: int) -> dict[str, Check]:
    """Each assessor's answered honeypots (unsure answers count as wrong) and verdict."""
    out = {}
    for assessor, rows in grades.groupby("assessor", sort=True):
        checked = rows[rows["gold"].notna()]
        right = [
            pd.notna(grade) and guidelines.passes(int(grade), int(gold)) for grade, gold in zip(checked["grade"], checked["gold"])
        ]
        relevant = [guidelines.relevant(int(gold)) for gold in checked["gold"]]
        check = Check(
            str(assessor), len(checked), sum(right), False, "", sum(relevant), sum(r and ok for r, ok in zip(relevant, right))
        )
        n = check.checks
        if n < min_checks or n == 0:
            check.counted, check.reason = min_checks == 0, f"{n} honeypot(s) answered, fewer than {min_checks}"
        elif (accuracy := check.accuracy) is not None and accuracy < threshold:
            check.reason = f"honeypot accuracy {accuracy:.3f} below {threshold:g}"
        else:
            check.counted, check.reason = True, f"honeypot accuracy {check.accuracy:.3f}"
        out[str(assessor)] = check
    return out


def counted(grades: pd.DataFrame, checks: dict[str, Check]) -> pd.DataFrame:
    """The grades that make labels: pool items (no planted sentence), counted assessors,
    not unsure."""
    keep = {a for a, c in checks.items() if c.counted}
    rows = grades[~grades["planted"] & grades["grade"].notna() & grades["assessor"].isin(keep)]
    return rows.assign(grade=rows["grade"].astype(int))


def aggregate(grades: pd.DataFrame, method: str = "mv", seed: int = 0) -> pd.Series:
    """One label per item (index: item) from counted grades, by a crowd-kit aggregator."""
    probas = probabilities(grades, method, seed)
    if probas.empty:
        return pd.Series(dtype=int, name="label")
    return probas.idxmax(axis="columns").astype(int).rename("label").sort_index()


def probabilities(grades: pd.DataFrame, method: str = "mv", seed: int = 0) -> pd.DataFrame:
    """Each item's probability of each grade (items x grades, grades ascending), by a
    crowd-kit aggregator (``probas_``); what :func:`aggregate` takes the most probable of."""
    if method not in METHODS:
        raise InputError(f"unknown aggregation {method!r}; choose from {', '.join(METHODS)}", field="method")
    if grades.empty:
        return pd.DataFrame()
    data = pd.DataFrame(
        {
            "task": grades["item"].to_numpy(),
            "worker": grades["assessor"].to_numpy(),
            "label": grades["grade"].astype(int).to_numpy(),
        }
    )
    with warnings.catch_warnings():  # crowd-kit 1.4 uses pandas keywords pandas 3 deprecates
        warnings.filterwarnings("ignore", module=r"crowdkit\.")
        probas = _aggregator(method, seed).fit(data).probas_
    return probas[sorted(probas.columns)].sort_index()  # idxmax keeps the first of a tie: the lowest


def _aggregator(method: str, seed: int) -> Any:
    from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote, OneCoinDawidSkene

    made: dict[str, Callable[[], Any]] = {
        "mv": MajorityVote,
        "ds": lambda: DawidSkene(n_iter=100),
        "onecoin-ds": lambda: OneCoinDawidSkene(n_iter=100),
        "mace": lambda: MACE(random_state=seed),
        "glad": GLAD,
    }
    return made[method]()
