"""Holm, Bonferroni and the bootstrap intervals come from statsmodels and scipy now; on fixed
inputs they give the values the hand-written versions gave (recorded here from main at
4c83b6f, before the change), and the library calls themselves agree."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from dsr.evaluation.significance import adjust, bonferroni, holm, mean_ci

P = np.array([0.01, 0.04, np.nan, 0.03, 0.2, 0.0005, 0.04])
#: the hand-written holm() and bonferroni() on P (NaN kept, not counted)
HOLM_BEFORE = [0.05, 0.12, np.nan, 0.12, 0.2, 0.003, 0.12]
BONFERRONI_BEFORE = [0.06, 0.24, np.nan, 0.18, 1.0, 0.003, 0.24]
#: the hand-written mean_ci(VALUES, "bootstrap", seed=3) and mean_ci(VALUES, "t", bounded=...)
BOOT_BEFORE = (
    [0.37449083333333333, 0.42322166666666666, 4.0105666666666675],
    [0.5637058333333334, 0.6353241666666666, 5.980408333333334],
)
T_BEFORE = (
    [0.3666581274025682, 0.4147415327549945, 3.900670643340546],
    [0.5659418725974319, 0.6466584672450052, 6.0479960233261165],
)


def values():
    rng = np.random.default_rng(7)
    out = np.round(rng.random((30, 3)), 3)
    out[:, 2] *= 10
    return out


def test_holm_and_bonferroni_equal_the_hand_written_values_and_statsmodels(monkeypatch):
    import gc

    # multipletests(method="holm") runs gc.collect() on every call (the reason dsr does not
    # call it): in a test process holding torch and transformers that is slow, and this test makes
    # many calls; a collection changes no number, so the comparison runs without it
    monkeypatch.setattr(gc, "collect", lambda *args: 0)
    np.testing.assert_array_equal(holm(P), HOLM_BEFORE)
    np.testing.assert_array_equal(bonferroni(P), BONFERRONI_BEFORE)
    valid = ~np.isnan(P)
    for method, ours in (("holm", holm(P)), ("bonferroni", bonferroni(P))):
        np.testing.assert_array_equal(ours[valid], multipletests(P[valid], method=method)[1])
        np.testing.assert_array_equal(adjust(P, method), ours)
    assert np.isnan(holm([np.nan])).all() and holm([]).shape == (0,)
    rng = np.random.default_rng(7)
    for size in (1, 2, 3, 8, 40):
        for _ in range(25):
            p = rng.choice([rng.random(size), np.round(rng.random(size), 1)])  # ties too
            for method, ours in (("holm", holm(p)), ("bonferroni", bonferroni(p))):
                np.testing.assert_allclose(ours, multipletests(p, method=method)[1], rtol=0, atol=1e-15)


def test_bootstrap_interval_equals_the_hand_written_one_and_scipy():
    _, low, high = mean_ci(values(), "bootstrap", seed=3)
    np.testing.assert_allclose(low, BOOT_BEFORE[0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(high, BOOT_BEFORE[1], rtol=0, atol=1e-14)
    res = stats.bootstrap(
        (values(),),
        np.mean,
        n_resamples=2000,
        method="percentile",
        axis=0,
        vectorized=True,
        random_state=np.random.default_rng(3),
    )
    np.testing.assert_array_equal(low, res.confidence_interval.low)


def test_t_interval_is_scipys_t_and_unchanged():
    mean, low, high = mean_ci(values(), "t", bounded=[True, True, False])
    np.testing.assert_allclose(low, T_BEFORE[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(high, T_BEFORE[1], rtol=0, atol=1e-15)
    v = values()
    expected = stats.t.interval(0.95, len(v) - 1, loc=v.mean(axis=0), scale=stats.sem(v, axis=0))
    np.testing.assert_allclose(low, np.clip(expected[0], [0, 0, -np.inf], [1, 1, np.inf]), atol=1e-12)
    np.testing.assert_allclose(high, np.clip(expected[1], [0, 0, -np.inf], [1, 1, np.inf]), atol=1e-12)


@pytest.mark.parametrize("n", [2, 5])
def test_constant_columns_and_few_topics_do_not_fail(n):
    v = np.ones((n, 2))
    mean, low, high = mean_ci(v, "bootstrap")
    assert (low == 1).all() and (high == 1).all()
