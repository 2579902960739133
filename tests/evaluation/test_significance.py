"""Significance: Holm on a known example, the randomisation test against scipy, sensible outcomes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dsr.collections.synthetic import make_collection, make_run
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import generate_splits
from dsr.evaluation.significance import compare, holm, paired_t, randomisation


def test_holm_on_a_known_example():
    # m = 4: sorted 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    got = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, 0.02])
    # clipping at 1 and NaN left out of m
    np.testing.assert_allclose(holm([0.5, np.nan, 0.4]), [0.8, np.nan, 0.8])
    assert holm([0.9, 0.8])[0] == 1.0


def test_holm_is_never_below_raw_and_never_above_bonferroni():
    p = np.random.default_rng(0).uniform(0, 0.2, size=30)
    adjusted = holm(p)
    assert np.all(adjusted >= p) and np.all(adjusted <= np.minimum(1, p * len(p)) + 1e-15)
    assert np.all(np.diff(adjusted[np.argsort(p)]) >= 0)  # monotone in the raw order


def test_randomisation_equals_scipy_permutation_test_when_exact():
    rng = np.random.default_rng(1)
    a = rng.uniform(size=(11, 3))
    b = a - rng.normal(0.1, 0.2, size=(11, 3))
    got = randomisation(a, b, n_resamples=5000)  # 2**11 = 2048 patterns: exact
    for j in range(3):
        expected = stats.permutation_test(
            (a[:, j] - b[:, j],), np.mean, permutation_type="samples", n_resamples=5000, vectorized=False
        ).pvalue
        assert got[j] == pytest.approx(expected, abs=1e-12)


def test_randomisation_close_to_scipy_when_sampled():
    rng = np.random.default_rng(2)
    d = rng.normal(0.05, 0.3, size=300)
    got = randomisation(d[:, None], np.zeros((300, 1)), n_resamples=20000, seed=3)[0]
    expected = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=20000, vectorized=True, rng=np.random.default_rng(4)
    ).pvalue
    # two Monte Carlo estimates of the same p (~0.004): within a few standard errors
    assert abs(got - expected) < 4 * np.sqrt(expected * (1 - expected) / 20000) + 1e-3
    assert got == randomisation(d[:, None], np.zeros((300, 1)), n_resamples=20000, seed=3)[0]


def test_paired_t_matches_scipy_and_identical_gives_one():
    rng = np.random.default_rng(3)
    a, b = rng.uniform(size=(50, 2)), rng.uniform(size=(50, 2))
    np.testing.assert_allclose(paired_t(a, b), stats.ttest_rel(a, b).pvalue)
    assert list(paired_t(a, a)) == [1.0, 1.0]


@pytest.fixture(scope="module")
def collection():
    return make_collection(n=200, seed=8)


def test_large_difference_is_significant_and_identical_runs_are_not(collection):
    weak = make_run(collection, seed=1, quality=0.0)
    strong = make_run(collection, seed=2, quality=3.0)
    same = type(weak)(dict(weak.rankings), weak.tag)
    results = evaluate_runs(
        collection,
        {"weak": weak, "strong": strong, "same": same},
        ["RR", "nDCG@5"],
        baseline="weak",
        n_resamples=2000,
        progress=False,
    )
    for subset in ("all", "plain", "grounded"):
        entry = results.significance[subset]
        for m in ("RR", "nDCG@5"):
            assert entry["strong"][m]["t_holm"] < 1e-6 and entry["strong"][m]["perm_holm"] < 0.01
            assert entry["strong"][m]["diff"] > 0.2
            assert entry["same"][m]["t"] == 1.0 and entry["same"][m]["perm"] == 1.0
            assert results.significant(subset, "strong", m) and not results.significant(subset, "same", m)
    assert "weak" not in results.significance["all"]


def test_protocol_pairs_tuned_families_by_topic(collection):
    splits = generate_splits(collection.ids, n=20, seed=0)
    base = make_run(collection, seed=1, quality=0.2)
    family = {"low": make_run(collection, seed=3, quality=0.1), "high": make_run(collection, seed=4, quality=3.0)}
    results = evaluate_runs(
        collection,
        {"base": base},
        ["nDCG@5"],
        splits=splits,
        families={"fam": family},
        baseline="base",
        n_resamples=1000,
        progress=False,
    )
    entry = results.significance["all"]["fam"]["nDCG@5"]
    assert entry["n"] == int((results.systems["fam"].per_topic[:, 0] == results.systems["fam"].per_topic[:, 0]).sum())
    per_topic = {"fam": results.systems["fam"].per_topic, "base": results.systems["base"].per_topic}
    direct = compare(per_topic, "base", ["nDCG@5"], n_resamples=1000)
    assert direct["fam"]["nDCG@5"]["t"] == pytest.approx(entry["t"])
    assert entry["t_holm"] < 1e-6
