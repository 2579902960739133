"""BM25 scores every dialogue in one sparse pass (``BM25Index.pair_scores``) and ranks a grid
of settings with one loaded index (``BM25Ranker.rank_many``): the same floats, bit for bit, as
scoring one dialogue at a time (``row_scores``), on the real CMU_DoG pool."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dsr.collections import load_collection
from dsr.core.queries import STRATEGIES, query_terms
from dsr.rankers.bm25 import BM25Ranker
from tests.support.tiers import slow_fixture


@pytest.fixture(scope="module")
@slow_fixture
def cmu_dog():
    from tests.support.data import SHARED_DATA

    if not (SHARED_DATA / "cmu_dog").is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    return load_collection("cmu_dog", str(SHARED_DATA / "cmu_dog"), "valid")


@pytest.mark.parametrize("variant", ["okapi", "l", "plus"])
@pytest.mark.parametrize("query", ["weighted", "last"])
def test_pair_scores_are_row_scores_bit_for_bit(cmu_dog, variant, query):
    ranker = BM25Ranker(query=query, variant=variant, k1=1.6, b=0.4, stopwords=variant == "l")
    index, row_of = ranker.index(cmu_dog)
    queries = [query_terms(d, query, 0.5, stopwords=variant == "l") for d in cmu_dog]
    rows = [[row_of[d.id, c] for c in cmu_dog.candidate_ids(d.id)] for d in cmu_dog]
    batched = index.pair_scores(queries, rows)
    one_by_one = [index.row_scores(q, r) for q, r in zip(queries, rows)]
    assert len(batched) == len(cmu_dog) and sum(len(s) for s in batched) > 10_000
    assert all(np.array_equal(a, b) for a, b in zip(batched, one_by_one))


def test_a_query_without_pool_terms_scores_zero_on_both_paths(cmu_dog):
    index, row_of = BM25Ranker(variant="plus").index(cmu_dog)
    d = cmu_dog.dialogues[0]
    rows = [[row_of[d.id, c] for c in cmu_dog.candidate_ids(d.id)]] * 2
    got = index.pair_scores([["zzzunknownzzz"], {"zzzunknownzzz": 2.0}], rows)
    assert [list(s) for s in got] == [[0.0] * len(rows[0])] * 2
    assert list(index.row_scores(["zzzunknownzzz"], rows[0])) == [0.0] * len(rows[0])


def test_rank_many_equals_ranking_each_setting_alone(cmu_dog):
    grid = [dict(k1=k1, b=b) for k1, b in itertools.product((0.9, 1.2, 1.6), (0.4, 0.75))]
    rankers = [BM25Ranker(query=q, **params) for q in STRATEGIES[:3] for params in grid]
    rankers.append(BM25Ranker(query="all", variant="plus", stem=True))
    batched = BM25Ranker.rank_many(cmu_dog, rankers)
    for ranker, run in zip(rankers, batched):
        alone = ranker.rank(cmu_dog)
        assert run.rankings == alone.rankings and run.tag == alone.tag and run.config == alone.config
    # the k1 and b of each ranker are its own (the shared index is not left with the last ones)
    assert batched[0].rankings != batched[5].rankings
