"""Paired two-sided significance tests against a baseline, Holm-corrected.

Two tests, both paired by topic and two-sided:

* the paired t-test (``scipy.stats.ttest_rel``);
* the randomisation (sign-flip permutation) test: under the null hypothesis
  each topic's difference is as likely to have either sign, so the null
  distribution of the mean difference comes from flipping signs at random.
  This is exactly ``scipy.stats.permutation_test((d,), np.mean,
  permutation_type='samples')`` (same null, same p-value definition, exact
  enumeration when ``2**n <= n_resamples``), computed for all measures at once
  by a matrix product, where scipy's generic version takes one statistic at a time.
  ``tests/evaluation/test_significance.py`` checks it against scipy.

Both p-values are Holm–Bonferroni-adjusted across the runs compared with the
baseline (per measure, per subset, per test): ``holm``. :func:`correct`
adjusts them again over a family the caller chooses (``runs``,
``runs+measures``, ``runs+measures+subsets``) by Holm, Bonferroni or
Benjamini–Hochberg (``scipy.stats.false_discovery_control``), into ``t_adj``
and ``perm_adj``; the default (Holm over runs) gives ``t_holm``'s numbers.

Each comparison also carries what a paper reports beside a p-value: the mean
difference with its 95% t confidence interval (``ci_low``, ``ci_high``), the
paired effect size Cohen's d_z (mean difference / sd of the differences,
ddof 1; NaN when every difference is equal) and win/tie/loss counts (topics
where the system is above, equal to, below the baseline). :func:`mean_ci`
gives each system's mean with a t or bootstrap interval (by default the
bootstrap for measures bounded to [0, 1], whose t interval can pass 1);
:func:`all_pairs` tests every pair and groups the systems that are not
significantly different.

Pairing under the split protocol: systems are compared by **topic** (each
dialogue is one paired observation). A tuned family's value on a topic is the
mean, over the splits whose test half holds that topic, of the configuration
chosen on that split's val half (out of sample; see ``dsr.evaluation.protocol.tune``);
an untuned run's value is its value on the topic. The 50 test-half means are
*not* used as observations: the halves overlap, so they are not independent
and a test over them would overstate significance.

Identical systems (all differences 0) get p = 1 from both tests (the t
statistic is 0/0 there).

Libraries, and what stays hand-written: Holm and Bonferroni are
``statsmodels.stats.multitest.multipletests``, Benjamini–Hochberg
``scipy.stats.false_discovery_control``, the bootstrap intervals
``scipy.stats.bootstrap`` (percentile), the t intervals and tests ``scipy.stats.t`` and
``ttest_rel`` (``tests/evaluation/test_library_statistics.py`` checks them equal to the
values the hand-written versions gave on fixed inputs). The sign-flip test stays
here (the matrix product above, checked against ``scipy.stats.permutation_test``,
which does one measure at a time at ~30x the cost), and so does the compact letter
display of :func:`all_pairs` (no maintained Python library computes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import product
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from dsr.evaluation.measures import nan_to_none

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

DEFAULT_RESAMPLES = 10_000
ALPHA = 0.05
#: the marks tables put after a value significantly better / worse than the baseline's
BETTER, WORSE = "▲", "▼"
CORRECTIONS = ("holm", "bonferroni", "bh")
FAMILIES = ("runs", "runs+measures", "runs+measures+subsets")
CORRECTION_NAMES = {"holm": "Holm-Bonferroni", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg (false discovery rate)"}
FAMILY_NAMES = {
    "runs": "the systems compared, per subset and measure",
    "runs+measures": "the systems compared and the measures, per subset",
    "runs+measures+subsets": "the systems compared, the measures and the subsets",
}
#: differences within this of 0 are ties in win/tie/loss counts (trec_eval values are exact)
TIE_TOLERANCE = 1e-12


def direction(diff: float | None, p: float | None, alpha: float = ALPHA) -> str:
    """``BETTER``, ``WORSE`` or "" for a difference against the baseline and its adjusted p."""
    if diff is None or p is None or p != p or not p < alpha or diff == 0:
        return ""
    return BETTER if diff > 0 else WORSE


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm–Bonferroni adjusted p-values (step-down), in the input order: the i-th smallest
    of m p-values times (m - i + 1), made monotone with a running maximum, clipped at 1. NaN
    p-values are left NaN and do not count in m.

    Equal to ``statsmodels.stats.multitest.multipletests(method="holm")`` (tested on fixed
    and random inputs), which is not called here because it runs ``gc.collect()`` on every
    call, and a leaderboard page makes thousands of calls.
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = ~np.isnan(p)
    m = int(valid.sum())
    if m == 0:
        return out
    order = np.argsort(p[valid], kind="stable")
    ranked = p[valid][order] * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(ranked), 1.0)
    result = np.empty(m)
    result[order] = adjusted
    out[valid] = result
    return out


def bonferroni(pvalues: ArrayLike) -> np.ndarray:
    """Bonferroni: each p times the number of (non-NaN) p-values, clipped at 1 (equal to
    ``multipletests(method="bonferroni")``, tested; see :func:`holm` for why not called)."""
    p = np.asarray(pvalues, dtype=float)
    m = int((~np.isnan(p)).sum())
    return np.minimum(p * m, 1.0)


def _stats() -> ModuleType:
    """scipy.stats, imported on first use, in this one place (``dsr --help`` loads no scipy)."""
    from scipy import stats

    return stats


def benjamini_hochberg(pvalues: ArrayLike) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (``scipy.stats.false_discovery_control``),
    NaN left NaN and not counted."""
    stats = _stats()
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    valid = ~np.isnan(p)
    if valid.any():
        out[valid] = stats.false_discovery_control(p[valid], method="bh")
    return out


def adjust(pvalues: ArrayLike, method: str = "holm") -> np.ndarray:
    """Adjusted p-values by ``method`` (one of :data:`CORRECTIONS`)."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r}: use {', '.join(CORRECTIONS)}")
    return {"holm": holm, "bonferroni": bonferroni, "bh": benjamini_hochberg}[method](pvalues)


def correct(significance: dict, method: str = "holm", family: str = "runs", keys: tuple[str, ...] = ("t", "perm")) -> None:
    """Adjust the raw p-values of ``{subset: {system: {measure: entry}}}`` in place.

    ``family`` decides which p-values are corrected together: ``runs`` (the
    systems, per subset and measure), ``runs+measures`` (per subset) or
    ``runs+measures+subsets`` (all). Writes ``entry[key + "_adj"]``.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}: use {', '.join(FAMILIES)}")
    groups: dict[tuple, list[dict]] = {}
    for subset, by_system in significance.items():
        for by_measure in by_system.values():
            for measure, entry in by_measure.items():
                key = {"runs": (subset, measure), "runs+measures": (subset,), "runs+measures+subsets": ()}[family]
                groups.setdefault(key, []).append(entry)
    for entries in groups.values():
        for k in keys:
            raw = np.array([np.nan if e.get(k) is None else e[k] for e in entries], dtype=float)
            for e, p in zip(entries, adjust(raw, method)):
                e[f"{k}_adj"] = nan_to_none(p)


def paired_effects(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> dict[str, np.ndarray]:
    """Per column of paired (n, m) arrays: mean difference ``a - b``, its t confidence
    interval, Cohen's d_z (mean / sd of the differences, ddof 1) and win/tie/loss counts."""
    stats = _stats()
    d = np.atleast_2d((np.asarray(a, float) - np.asarray(b, float)).T).T
    n = len(d)
    mean = d.mean(axis=0) if n else np.full(d.shape[1], np.nan)
    sd = d.std(axis=0, ddof=1) if n > 1 else np.full(d.shape[1], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n) if n > 1 else sd
        cohen = np.where(sd > 0, mean / np.where(sd > 0, sd, 1), np.nan)
    return {
        "diff": mean,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "d": cohen,
        "wins": (d > TIE_TOLERANCE).sum(axis=0),
        "ties": (np.abs(d) <= TIE_TOLERANCE).sum(axis=0),
        "losses": (d < -TIE_TOLERANCE).sum(axis=0),
    }


#: interval methods of :func:`mean_ci` (``auto``: bootstrap for bounded measures, else t)
INTERVALS = ("auto", "bootstrap", "t")


def mean_ci(
    values: np.ndarray,
    method: str = "t",
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    bounded: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean per column of (n_topics, n_measures) ``values`` with a confidence interval.

    ``t``: mean ± t quantile x sd / sqrt(n). ``bootstrap``: percentile interval
    of the means of ``n_resamples`` resamples of the topics (with replacement),
    drawn from ``numpy.random.default_rng(seed)``. ``auto``: bootstrap for the
    columns ``bounded`` marks (measures in [0, 1], whose t interval can pass 1),
    t for the others. ``bounded`` (one bool per column) also clips a t interval
    of a bounded column to [0, 1]. Rows holding NaN are left out.
    """
    stats = _stats()
    if method not in INTERVALS:
        raise ValueError(f"unknown interval {method!r}: use {', '.join(INTERVALS)}")
    values = np.atleast_2d(np.asarray(values, float).T).T
    values = values[~np.isnan(values).any(axis=1)]
    n, m = values.shape
    bounded = np.zeros(m, bool) if bounded is None else np.asarray(bounded, bool)
    if n == 0:
        nan = np.full(m, np.nan)
        return nan, nan, nan
    mean = values.mean(axis=0)
    if n < 2:
        return mean, mean.copy(), mean.copy()
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * values.std(axis=0, ddof=1) / np.sqrt(n)
    low, high = mean - half, mean + half
    boot = np.full(m, method == "bootstrap") | ((method == "auto") & bounded)
    if boot.any():
        low[boot], high[boot] = _bootstrap(values[:, boot], confidence, n_resamples, seed)
    clip = bounded & ~boot
    low[clip], high[clip] = np.clip(low[clip], 0, 1), np.clip(high[clip], 0, 1)
    return mean, low, high


def _bootstrap(values: np.ndarray, confidence: float, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the column means over ``n_resamples`` resamples of the rows (the
    same resampled topics for every column): ``scipy.stats.bootstrap``, 200 resamples a batch."""
    result = _stats().bootstrap(
        (values,),
        np.mean,
        n_resamples=n_resamples,
        batch=200,
        axis=0,
        vectorized=True,
        confidence_level=confidence,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    return result.confidence_interval.low, result.confidence_interval.high


def all_pairs(
    per_topic: Mapping[str, np.ndarray],
    measures: list[str],
    index: np.ndarray | None = None,
    test: str = "t",
    correction: str = "holm",
    alpha: float = ALPHA,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, dict]:
    """Every pair of systems, per measure: p-values corrected over the pairs, and groups.

    Returns ``{measure: {"order": [systems, best mean first], "means": {...},
    "p": {"A|B": adjusted p}, "letters": {system: "ab"}}}``. Systems that
    share a letter are not significantly different; each letter is a maximal
    run of consecutive systems (by mean) with no significant pair among them,
    so a shared letter always means "not significantly different" (which is not
    "equal": a test that finds no difference has not shown there is none).
    """
    names = list(per_topic)
    rows = None if index is None else np.asarray(index)
    data = {n: (v if rows is None else v[rows]) for n, v in per_topic.items()}
    ok = ~np.any([np.isnan(v).any(axis=1) for v in data.values()], axis=0)
    data = {n: v[ok] for n, v in data.items()}
    pairs = [(x, y) for i, x in enumerate(names) for y in names[i + 1 :]]
    m = len(measures)
    raw = np.full((len(pairs), m), np.nan)
    if pairs:
        a = np.hstack([data[x] for x, _ in pairs])
        b = np.hstack([data[y] for _, y in pairs])
        p = paired_t(a, b) if test == "t" else randomisation(a, b, n_resamples, seed)
        raw = p.reshape(len(pairs), m)
    out = {}
    for j, measure in enumerate(measures):
        adj = adjust(raw[:, j], correction) if pairs else raw[:, j]
        pvalue = {pair: adj[k] for k, pair in enumerate(pairs)}
        means = {n: float(data[n][:, j].mean()) if len(data[n]) else float("nan") for n in names}
        order = sorted(names, key=lambda n: -means[n] if means[n] == means[n] else np.inf)

        letters = _letters(order, pvalue, alpha)
        out[measure] = {
            "order": order,
            "means": means,
            "n": int(ok.sum()),
            "p": {f"{x}|{y}": nan_to_none(pvalue[(x, y)]) for x, y in pairs},
            "letters": letters,
        }
    return out


def _letter(k: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[k] if k < 26 else letters[k // 26 - 1] + letters[k % 26]


def paired_t(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-sided paired t-test p-value per column of (n_topics, n_measures) arrays."""
    stats = _stats()
    a, b = np.atleast_2d(a.T).T, np.atleast_2d(b.T).T
    if len(a) < 2:
        return np.full(a.shape[1], np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.asarray(stats.ttest_rel(a, b, axis=0).pvalue, dtype=float)
    same = np.all(a == b, axis=0)
    # Constant non-zero differences give t = inf and p = 0 from scipy; all-zero ones 0/0.
    return np.where(same, 1.0, p)


def randomisation(
    a: np.ndarray, b: np.ndarray, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, batch: int = 1000
) -> np.ndarray:
    """Two-sided paired sign-flip randomisation test p-value per column.

    Matches ``scipy.stats.permutation_test((a - b,), mean, permutation_type=
    'samples', n_resamples=n_resamples)``: exact when all 2**n sign patterns
    fit in ``n_resamples``, otherwise ``n_resamples`` random patterns drawn
    from ``numpy.random.default_rng(seed)`` and p = 2 min(P(<=), P(>=)) with
    the +1 correction of a random test.
    """
    d = np.atleast_2d((np.asarray(a, float) - np.asarray(b, float)).T).T  # (n, m)
    n, m = d.shape
    if n == 0:
        return np.full(m, np.nan)
    observed = d.mean(axis=0)
    gamma = np.abs(np.finfo(float).eps * 100 * observed)
    less = np.zeros(m)
    greater = np.zeros(m)
    exact = n <= 62 and 2**n <= n_resamples
    if exact:
        total, adjustment = 2**n, 0
        for start in range(0, total, batch):
            codes = np.arange(start, min(start + batch, total), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> np.arange(n)) & 1)
            null = signs @ d / n
            less += np.count_nonzero(null <= observed + gamma, axis=0)
            greater += np.count_nonzero(null >= observed - gamma, axis=0)
    else:
        total, adjustment = n_resamples, 1
        rng = np.random.default_rng(seed)
        for start in range(0, total, batch):
            size = min(batch, total - start)
            signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
            null = signs @ d / n
            less += np.count_nonzero(null <= observed + gamma, axis=0)
            greater += np.count_nonzero(null >= observed - gamma, axis=0)
    p_less = (less + adjustment) / (total + adjustment)
    p_greater = (greater + adjustment) / (total + adjustment)
    return np.clip(2 * np.minimum(p_less, p_greater), 0.0, 1.0)


def _letters(order: list[str], pvalue: Mapping[tuple[str, str], float], alpha: float) -> dict[str, str]:
    """A compact letter display of systems sorted best first: each letter is a maximal run of
    consecutive systems with no significant pair among them."""

    def differs(x: str, y: str) -> bool:
        p = pvalue.get((x, y), pvalue.get((y, x)))
        return p is not None and p == p and p < alpha

    letters = {n: "" for n in order}
    last_end = -1
    code = 0
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and not any(differs(order[end + 1], order[k]) for k in range(start, end + 1)):
            end += 1
        if end <= last_end:
            continue  # inside the group before: no new letter
        letter = _letter(code)
        code += 1
        for k in range(start, end + 1):
            letters[order[k]] += letter
        last_end = end
    return letters


def _effects(effects: Mapping[str, np.ndarray], measures: list[str], n: int) -> dict[str, dict[str, float | None]]:
    """:func:`paired_effects`' arrays as ``{measure: {"diff", "n", "ci_low", ...}}``."""
    return {
        m: {
            "diff": float(effects["diff"][j]),
            "n": n,
            "ci_low": nan_to_none(effects["ci_low"][j]),
            "ci_high": nan_to_none(effects["ci_high"][j]),
            "d": nan_to_none(effects["d"][j]),
            "wins": int(effects["wins"][j]),
            "ties": int(effects["ties"][j]),
            "losses": int(effects["losses"][j]),
        }
        for j, m in enumerate(measures)
    }


def compare(
    per_topic: Mapping[str, np.ndarray],
    baseline: str,
    measures: list[str],
    index: np.ndarray | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, dict[str, dict[str, float | None]]]:
    """Each system against ``baseline`` on the topics at ``index`` (all when None).

    ``per_topic`` maps a system name to its (n_topics, n_measures) values
    (NaN where a system has no value; such topics are left out of that pair).
    Returns ``{system: {measure: {"diff", "t", "t_holm", "perm", "perm_holm",
    "n", "ci_low", "ci_high", "d", "wins", "ties", "losses"}}}`` (see
    :func:`paired_effects`) for every system but the baseline; ``perm`` is NaN when
    ``n_resamples`` is 0. Every comparison uses the same ``seed``, so its
    result does not depend on which other systems are compared.
    """
    base = per_topic[baseline]
    others = [name for name in per_topic if name != baseline]
    rows = np.arange(len(base)) if index is None else np.asarray(index)
    n_m = len(measures)
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    t_p = np.full((len(others), n_m), np.nan)
    r_p = np.full((len(others), n_m), np.nan)
    # Systems with values on the same topics share one randomisation pass (their
    # columns side by side): the same sign patterns, one matrix product.
    groups: dict[bytes, list[int]] = {}
    pairs = []
    for k, name in enumerate(others):
        a, b = per_topic[name][rows], base[rows]
        # A topic without a value in either system (NaN: never in a test half) is left out.
        ok = ~(np.isnan(a).any(axis=1) | np.isnan(b).any(axis=1))
        pairs.append((a, b, ok))
        out[name] = _effects(paired_effects(a[ok], b[ok]), measures, int(ok.sum()))
        t_p[k] = paired_t(a[ok], b[ok])
        groups.setdefault(ok.tobytes(), []).append(k)
    if n_resamples > 0:
        for members in groups.values():
            ok = pairs[members[0]][2]
            a = np.hstack([pairs[k][0][ok] for k in members])
            b = np.hstack([pairs[k][1][ok] for k in members])
            p = randomisation(a, b, n_resamples, seed)
            for g, k in enumerate(members):
                r_p[k] = p[g * n_m : (g + 1) * n_m]
    t_adj = np.column_stack([holm(t_p[:, j]) for j in range(len(measures))]) if others else t_p
    r_adj = np.column_stack([holm(r_p[:, j]) for j in range(len(measures))]) if others else r_p
    for (k, name), (j, measure) in product(enumerate(others), enumerate(measures)):
        out[name][measure].update(
            t=nan_to_none(t_p[k, j]),
            t_holm=nan_to_none(t_adj[k, j]),
            perm=nan_to_none(r_p[k, j]),
            perm_holm=nan_to_none(r_adj[k, j]),
        )
    return out
