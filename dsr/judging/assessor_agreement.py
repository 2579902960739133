"""Agreement between assessors and per-assessor reports, with the field's libraries.

On the counted grades (:func:`dsr.judging.aggregate.counted`), as a matrix of
assessors x items (NaN where an assessor did not grade an item):

* **Krippendorff's alpha**, ordinal over the scale's grades (``krippendorff.alpha``,
  ``level_of_measurement="ordinal"``, ``value_domain`` = the scale), and nominal on
  relevant vs not relevant; any number of grades per item, missing ones allowed;
* **Fleiss' kappa** (``statsmodels.stats.inter_rater.fleiss_kappa`` on
  ``aggregate_raters``) over the items with the most common number of grades (Fleiss
  needs the same number per item; the report says how many items that is);
* **Cohen's kappa** (``statsmodels.stats.inter_rater.cohens_kappa`` on ``to_table``) for
  every pair of assessors on the items both graded, unweighted and linearly weighted
  (ordinal), and its mean over the pairs.

:func:`assessor_report` adds, per assessor: grades and unsure answers, honeypot
accuracy, agreement with the aggregated labels (share equal and Cohen's kappa), and
the median seconds per grade, the mean Cohen's kappa with each other assessor, the share
of their most common grade, and flags (too fast, one grade for everything, low agreement,
failed honeypots) with the thresholds of :data:`dsr.judging.quality.FLAG_PARAMS`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any, SupportsFloat

import numpy as np
import pandas as pd

from dsr.core.params import defaults
from dsr.judging.aggregate import Check
from dsr.judging.quality import FLAG_PARAMS

#: pairs of assessors sharing fewer items than this get no Cohen's kappa
MIN_SHARED = 2


def rating_matrix(grades: pd.DataFrame) -> tuple[list[str], list[Any], np.ndarray]:
    """(assessors, items, matrix assessors x items of grades with NaN where missing)."""
    table = grades.pivot(index="assessor", columns="item", values="grade")
    table = table.sort_index(axis=0).sort_index(axis=1)
    return [str(a) for a in table.index], list(table.columns), table.to_numpy(dtype=float)


def _number(value: SupportsFloat) -> float | None:
    number = float(value)
    return None if math.isnan(number) else number


def krippendorff_alpha(matrix: np.ndarray, values: list[int], level: str = "ordinal") -> float | None:
    import krippendorff

    pairable = np.sum(~np.isnan(matrix), axis=0) >= 2
    if pairable.sum() == 0 or len(np.unique(matrix[~np.isnan(matrix)])) < 2:
        return None  # no item graded twice, or one grade everywhere: alpha is undefined
    return _number(krippendorff.alpha(reliability_data=matrix, value_domain=values, level_of_measurement=level))  # type: ignore[arg-type]  # the level is checked by its caller


def fleiss(matrix: np.ndarray, values: list[int]) -> dict[str, Any]:
    """Fleiss' kappa over the items with the most common number of grades (at least 2)."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    counts = np.sum(~np.isnan(matrix), axis=0)
    common = [c for c in np.bincount(counts).argsort()[::-1] if c >= 2]
    if not common or not (counts == common[0]).any():
        return {"kappa": None, "items": 0, "raters_per_item": None}
    raters = int(common[0])
    columns = matrix[:, counts == raters].T  # items x assessors
    codes = np.array([[values.index(int(v)) for v in row[~np.isnan(row)]] for row in columns])
    table, _ = aggregate_raters(codes, n_cat=len(values))
    kappa = fleiss_kappa(table, method="fleiss") if len(np.unique(codes)) > 1 else float("nan")
    return {"kappa": _number(kappa), "items": int(columns.shape[0]), "raters_per_item": raters}


def cohen(a: np.ndarray, b: np.ndarray, values: list[int], weighted: bool = False) -> float | None:
    """Cohen's kappa of two graders on the items both graded (None when undefined)."""
    from statsmodels.stats.inter_rater import cohens_kappa, to_table

    both = ~np.isnan(a) & ~np.isnan(b)
    if both.sum() < MIN_SHARED:
        return None
    codes = np.column_stack([[values.index(int(v)) for v in a[both]], [values.index(int(v)) for v in b[both]]])
    table, _ = to_table(codes, bins=len(values))
    chance = float((table.sum(axis=0) * table.sum(axis=1)).sum()) / float(table.sum()) ** 2
    if math.isclose(chance, 1.0):
        return None  # both gave one same grade throughout: kappa is 0/0
    result = cohens_kappa(table, wt="linear" if weighted else None, return_results=False)
    return _number(result)


def agreement(grades: pd.DataFrame, values: list[int], relevant_from: int) -> dict[str, Any]:
    """The campaign's agreement figures on ``grades`` (counted grades of pool items)."""
    assessors, items, matrix = rating_matrix(grades)
    binary = np.where(np.isnan(matrix), np.nan, (matrix >= relevant_from).astype(float))
    pairs: list[dict[str, Any]] = []
    for (i, a), (j, b) in itertools.combinations(enumerate(assessors), 2):
        shared = int(np.sum(~np.isnan(matrix[i]) & ~np.isnan(matrix[j])))
        if shared >= MIN_SHARED:
            pairs.append(
                {
                    "assessors": [a, b],
                    "items": shared,
                    "kappa": cohen(matrix[i], matrix[j], values),
                    "kappa_linear": cohen(matrix[i], matrix[j], values, weighted=True),
                }
            )
    return {
        "assessors": len(assessors),
        "items": len(items),
        "grades": int(np.sum(~np.isnan(matrix))),
        "alpha_ordinal": krippendorff_alpha(matrix, values, "ordinal"),
        "alpha_binary": krippendorff_alpha(binary, [0, 1], "nominal"),
        "fleiss": fleiss(matrix, values),
        "fleiss_binary": fleiss(binary, [0, 1]),
        "cohen_mean": _mean(p["kappa"] for p in pairs),
        "cohen_linear_mean": _mean(p["kappa_linear"] for p in pairs),
        "pairs": pairs,
    }


def twice_graded_kappa(grades: pd.DataFrame, values: list[int] | None = None, relevant_from: int = 1) -> dict[str, Any]:
    """Cohen's kappa on the pool sentences with exactly two counted grades (a campaign's
    ``--overlap`` share graded twice), the two grades as two readings whatever the pair of
    assessors: unweighted on relevant vs not, and linearly weighted on the scale."""
    values = values or [0, 1, 2]
    rows = grades[grades["grade"].notna()]
    if "planted" in rows:
        rows = rows[~rows["planted"]]
    two = rows.groupby("item").filter(lambda g: len(g) == 2).sort_values(["item", "assessor"])
    first = two.groupby("item")["grade"].first().to_numpy(dtype=float)
    second = two.groupby("item")["grade"].last().to_numpy(dtype=float)
    return {
        "items": len(first),
        "exact_agreement": float(np.mean(first == second)) if len(first) else None,
        "kappa_binary": cohen((first >= relevant_from).astype(float), (second >= relevant_from).astype(float), [0, 1]),
        "kappa_weighted": cohen(first, second, values, weighted=True),
        "kappa": cohen(first, second, values),
    }


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None


def assessor_report(
    grades: pd.DataFrame, checks: dict[str, Check], labels: pd.Series, values: list[int], flags: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One row per assessor (all grades, counted or not): checks, agreement, speed, and the
    flags of :func:`assessor_flags` (thresholds: ``dsr.judging.quality.FLAG_PARAMS``)."""
    limits = {**defaults(FLAG_PARAMS), **(flags or {})}
    others = kappa_with_others(grades, checks, values)
    out = []
    for assessor, rows in grades.groupby("assessor", sort=True):
        check = checks[str(assessor)]
        pool = rows[~rows["planted"] & rows["grade"].notna() & rows["item"].isin(labels.index)]
        mine = pool["grade"].to_numpy(dtype=float)
        theirs = labels.reindex(pool["item"]).to_numpy(dtype=float)
        seconds = rows["seconds"].dropna()
        given = rows["grade"].dropna()
        row = {
            "assessor": str(assessor),
            "grades": int(rows["grade"].notna().sum()),
            "unsure": int(rows["unsure"].sum()),
            "honeypots": check.checks,
            "honeypots_correct": check.correct,
            "honeypot_accuracy": check.accuracy,
            "counted": check.counted,
            "reason": check.reason,
            "agreement_with_aggregate": float(np.mean(mine == theirs)) if len(mine) else None,
            "kappa_with_aggregate": cohen(mine, theirs, values) if len(mine) else None,
            "kappa_with_others": others.get(str(assessor)),
            "median_seconds": float(seconds.median()) if len(seconds) else None,
            "top_grade_share": float(given.value_counts(normalize=True).iloc[0]) if len(given) else None,
        }
        row["flags"] = assessor_flags(row, limits)
        out.append(row)
    return out


def kappa_with_others(grades: pd.DataFrame, checks: dict[str, Check], values: list[int]) -> dict[str, float | None]:
    """Each assessor's Cohen's kappa with the majority grade of the *other counted*
    assessors (ties to the lowest grade), on the pool sentences both have: leave-one-out, so
    a counted assessor is not compared with their own votes, and the excluded do not drag
    the others down."""
    rows = grades[~grades["planted"] & grades["grade"].notna()]
    keep = {a for a, c in checks.items() if c.counted}
    out: dict[str, float | None] = {}
    for assessor, mine in rows.groupby("assessor", sort=True):
        others = rows[(rows["assessor"] != assessor) & rows["assessor"].isin(keep)]
        if others.empty:
            out[str(assessor)] = None
            continue
        majority = _majority(others)
        shared = mine[mine["item"].isin(majority.index)]
        out[str(assessor)] = cohen(
            shared["grade"].to_numpy(dtype=float), majority.reindex(shared["item"]).to_numpy(dtype=float), values
        )
    return out


def _majority(rows: pd.DataFrame) -> pd.Series:
    """Each item's most frequent grade, a tie to the lowest (``min(g.mode())`` per item, as
    counts sorted once instead of a Python call per item); index: item."""
    counts = rows.groupby(["item", "grade"], sort=False).size().rename("n").reset_index()
    first = counts.sort_values(["item", "n", "grade"], ascending=[True, False, True], kind="stable").drop_duplicates("item")
    return first.set_index("item")["grade"]


def assessor_flags(row: dict[str, Any], limits: dict[str, Any]) -> list[str]:
    """What is suspicious about an assessor's work (an empty list when nothing is):
    ``too-fast`` (median seconds per sentence below ``min_seconds``), ``one-grade`` (one
    grade on at least ``one_grade_share`` of their sentences), ``low-agreement`` (mean
    kappa with the others below ``min_kappa``), ``failed-honeypots`` (not counted because
    of their honeypot/gold accuracy). Judged once they have ``min_flag_grades`` grades."""
    if row["grades"] < limits["min_flag_grades"]:
        return []
    flags = []
    if row["median_seconds"] is not None and row["median_seconds"] < limits["min_seconds"]:
        flags.append("too-fast")
    if row["top_grade_share"] is not None and row["top_grade_share"] >= limits["one_grade_share"]:
        flags.append("one-grade")
    if row["kappa_with_others"] is not None and row["kappa_with_others"] < limits["min_kappa"]:
        flags.append("low-agreement")
    if not row["counted"] and row["honeypots"] and "accuracy" in row["reason"]:
        flags.append("failed-honeypots")
    return flags
