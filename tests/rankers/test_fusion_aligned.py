"""RRF of runs that rank every candidate of the initial order (dsr reproduce's grid) is
summed in numpy; it must be the very Run the general path (``rrf`` + ``fused_run``)
makes, on real rankings and on rankings full of ties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsr.collections import load_collection
from dsr.core.fusion import _initial_ranks, fuse, fused_run, rrf
from dsr.core.run import Run
from dsr.rankers import make_ranker


def general(runs, k, order, tag):
    return fused_run(rrf(runs, k), tag)


def test_rrf_of_the_sample_collections_bm25_and_random_runs_is_the_general_paths():
    sample = load_collection("sample")
    order = {d.id: sample.candidate_ids(d.id) for d in sample}
    runs = [make_ranker("bm25", query=q).rank(sample) for q in ("last", "all", "weighted")]
    runs.append(make_ranker("random", seed=3).rank(sample))
    for a, b, k in itertools.product(runs, runs, (0, 1, 60)):
        fast = fuse([a, b], "rrf", k=k, initial_order=order, tag="t")
        assert _initial_ranks(a, order) is not None  # the aligned path was taken
        expected = general([a, b], k, order, "t")
        assert fast.rankings == expected.rankings and fast.tag == expected.tag
        assert fast.as_dict() == expected.as_dict()


@st.composite
def aligned_runs(draw):
    """2-3 runs over the same topics and docs, in shuffled orders, with tied scores."""
    n_topics = draw(st.integers(1, 5))
    order = {f"q{t}": [f"d{t}-{i}" for i in range(draw(st.integers(0, 12)))] for t in range(n_topics)}
    runs = []
    for _ in range(draw(st.integers(2, 3))):
        rankings = {}
        for qid, docs in order.items():
            shuffled = draw(st.permutations(docs))
            rankings[qid] = [(d, float(draw(st.integers(0, 2)))) for d in shuffled]
        runs.append(Run(rankings))
    return order, runs


@settings(max_examples=150, deadline=None)
@given(aligned_runs(), st.sampled_from([0, 1, 2.5, 60]))
def test_aligned_rrf_equals_the_general_path_with_ties(case, k):
    order, runs = case
    fast = fuse(runs, "rrf", k=k, initial_order=order, tag="t")
    assert fast.rankings == general(runs, k, order, "t").rankings


def test_runs_that_are_not_aligned_take_the_general_path():
    order = {"q": ["a", "b", "c"]}
    missing = Run({"q": [("a", 1.0), ("b", 0.5)]})  # lacks c
    extra = Run({"q": [("a", 1.0), ("b", 0.5), ("c", 0.2), ("z", 0.1)]})
    other_topics = Run({"q": [("a", 1.0), ("b", 0.5), ("c", 0.2)], "q2": [("x", 1.0)]})
    full = Run({"q": [("c", 3.0), ("a", 2.0), ("b", 1.0)]})
    for run in (missing, extra, other_topics):
        assert _initial_ranks(run, order) is None
        fused = fuse([full, run], "rrf", initial_order=order, tag="t")
        assert fused.rankings == general([full, run], 60, order, "t").rankings
    assert list(_initial_ranks(full, order)) == [1, 2, 0]


def test_a_changed_ranking_is_not_served_from_the_kept_ranks():
    order = {"q": ["a", "b"]}
    run = Run({"q": [("a", 2.0), ("b", 1.0)]})
    assert list(_initial_ranks(run, order)) == [0, 1]
    run.rankings = {"q": [("b", 2.0), ("a", 1.0)]}
    assert list(_initial_ranks(run, order)) == [1, 0]


def test_a_negative_k_is_refused_on_both_paths():
    order = {"q": ["a"]}
    runs = [Run({"q": [("a", 1.0)]}), Run({"q": [("a", 1.0)]})]
    with pytest.raises(Exception, match="k must be >= 0"):
        fuse(runs, "rrf", k=-1, initial_order=order)
    with pytest.raises(Exception, match="k must be >= 0"):
        fuse(runs, "rrf", k=-1)
    assert np.isfinite(fuse(runs, "rrf", k=0, initial_order=order).rankings["q"][0][1])
