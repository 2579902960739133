"""Fusion methods against examples computed by hand, the missing-document rules,
the tie rule, and FusionRanker's plumbing (sub-rankers, pass-through params)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dsr.core import registry
from dsr.core.data import read_benchmark
from dsr.core.errors import InputError
from dsr.core.fusion import combmnz, combsum, fuse, interp, minmax, rrf, wsum, zscore
from dsr.core.run import Run
from dsr.rankers.base import Ranker
from dsr.rankers.fusion import FusionRanker

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs_tiny.jsonl"

# Run A retrieves d1 d2 d3, run B retrieves d2 d3 d4 (d1 and d4 each missing once);
# topic q2 exists only in run A.
A = Run({"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)], "q2": [("x", 1.0), ("y", 0.0)]}, "a")
B = Run({"q1": [("d2", 0.9), ("d3", 0.5), ("d4", 0.1)]}, "b")


def approx(expected: dict[str, dict[str, float]]):
    return {q: pytest.approx(docs, rel=1e-12, abs=1e-12) for q, docs in expected.items()}


def test_rrf_by_hand():
    # k = 1: a document at rank r of a run earns 1 / (1 + r) from that run.
    assert rrf([A, B], k=1) == approx(
        {
            "q1": {"d1": 1 / 2, "d2": 1 / 3 + 1 / 2, "d3": 1 / 4 + 1 / 3, "d4": 1 / 4},
            "q2": {"x": 1 / 2, "y": 1 / 3},
        }
    )
    # the default k = 60 of Cormack et al.
    assert rrf([A, B])["q1"]["d2"] == pytest.approx(1 / 62 + 1 / 61, rel=1e-12)


def test_minmax_and_zscore_by_hand():
    assert minmax({"a": 3.0, "b": 2.0, "c": 1.0}) == pytest.approx({"a": 1.0, "b": 0.5, "c": 0.0})
    # mean 2, population std sqrt(2/3): z = +-sqrt(3/2)
    z = math.sqrt(1.5)
    assert zscore({"a": 3.0, "b": 2.0, "c": 1.0}) == pytest.approx({"a": z, "b": 0.0, "c": -z})
    # all-equal scores carry no ranking information
    assert minmax({"a": 4.0, "b": 4.0}) == {"a": 0.0, "b": 0.0}
    assert zscore({"a": 4.0, "b": 4.0}) == {"a": 0.0, "b": 0.0}


def test_combsum_minmax_by_hand():
    # A -> d1 1, d2 .5, d3 0 (d4 missing: A's floor 0); B -> d2 1, d3 .5, d4 0 (d1: 0)
    assert combsum([A, B], norm="minmax") == approx(
        {
            "q1": {"d1": 1.0, "d2": 1.5, "d3": 0.5, "d4": 0.0},
            "q2": {"x": 1.0, "y": 0.0},
        }
    )


def test_combsum_zscore_uses_the_runs_floor_for_missing_documents():
    z = math.sqrt(1.5)  # both runs' topic q1 normalise to +z, 0, -z
    # d1 is missing from B: it takes B's lowest z (-z), not 0 (B's mean)
    assert combsum([A, B], norm="zscore") == approx(
        {
            "q1": {"d1": z - z, "d2": 0 + z, "d3": -z + 0, "d4": -z - z},
            "q2": {"x": 1.0, "y": -1.0},
        }
    )


def test_combmnz_by_hand():
    # combsum times the number of runs that retrieved the document; d3 is min-max 0
    # in A but A retrieved it, so it counts twice
    assert combmnz([A, B], norm="minmax") == approx(
        {
            "q1": {"d1": 1.0 * 1, "d2": 1.5 * 2, "d3": 0.5 * 2, "d4": 0.0 * 1},
            "q2": {"x": 1.0 * 1, "y": 0.0 * 1},
        }
    )


def test_interp_by_hand():
    assert interp([A, B], weight=0.25, norm="minmax") == approx(
        {
            "q1": {
                "d1": 0.25 * 1 + 0.75 * 0,
                "d2": 0.25 * 0.5 + 0.75 * 1,
                "d3": 0.25 * 0 + 0.75 * 0.5,
                "d4": 0.25 * 0 + 0.75 * 0,
            },
            "q2": {"x": 0.25 * 1, "y": 0.25 * 0},
        }
    )
    # weight 1 is run A alone (with B's documents at A's floor)
    assert interp([A, B], weight=1.0)["q1"] == pytest.approx({"d1": 1, "d2": 0.5, "d3": 0, "d4": 0})


def test_fuse_breaks_ties_by_id_descending_with_or_without_an_initial_order():
    # combmnz gives d1 and d3 the same 1.0: trec_eval's order (id descending) puts d3 first,
    # and an initial order does not change it (it only speeds RRF up)
    by_id = fuse([A, B], "combmnz", norm="minmax")
    assert by_id.top("q1") == ["d2", "d3", "d1", "d4"]
    with_order = fuse([A, B], "combmnz", norm="minmax", initial_order={"q1": ["d1", "d2", "d3", "d4"]})
    assert with_order.rankings == by_id.rankings
    scores = [s for _, s in by_id.rankings["q1"]]
    assert all(a > b for a, b in zip(scores, scores[1:]))
    # the tie is broken by the smallest possible float32 step below 1.0
    assert scores[1] == 1.0 and scores[2] == float(np.nextafter(np.float32(1.0), np.float32(-np.inf)))
    assert fuse([A, B], "rrf", k=1).top("q1") == ["d2", "d3", "d1", "d4"]
    assert fuse([A, B], "interp", weight=0.25).top("q1") == ["d2", "d3", "d1", "d4"]


def test_fused_scores_equal_as_float32_tie():
    # fused scores 0.5 and 0.5 + 2**-40 differ as doubles, not as float32 (as trec_eval 9.0.8
    # reads them): the id decides, descending
    a = Run({"q": [("a", 0.5), ("b", 0.25)]})
    b = Run({"q": [("b", 0.5), ("a", 0.25)]})
    weights = [0.5, 0.5 + 2**-40]
    fused = fuse([a, b], "wsum", weights=weights)
    raw = wsum([a, b], weights=weights)["q"]
    assert raw["a"] != raw["b"] and np.float32(raw["a"]) == np.float32(raw["b"])
    assert fused.top("q") == ["b", "a"]


def test_fuse_tag_names_method_and_params():
    assert fuse([A, B], "rrf", k=10).tag == "fusion-rrf-k=10"
    assert fuse([A, B], "rrf", k=10, tag="mine").tag == "mine"


@pytest.mark.parametrize(
    "runs, method, params, field",
    [
        ([A, B], "no_such_method", {}, "method"),
        ([A], "rrf", {}, "runs"),
        ([A, B, A], "interp", {}, "method"),
        ([A, B], "rrf", {"weight": 0.3}, "params"),
        ([A, B], "interp", {"weight": 1.5}, "weight"),
        ([A, B], "combsum", {"norm": "l2"}, "norm"),
        ([A, B], "rrf", {"k": -1}, "k"),
    ],
)
def test_fuse_rejects_bad_input(runs, method, params, field):
    with pytest.raises(InputError) as err:
        fuse(runs, method, **params)
    assert err.value.field == field


# --- FusionRanker with stand-in sub-rankers -----------------------------------------


class ByScore(Ranker):
    """Stand-in: the candidate's initial score times ``scale``."""

    name = "by_score"
    PARAMS = {"scale": 1.0, "query": "last"}

    def rank(self, collection):
        return Run.from_scores(
            {d.id: {c.id: c.score * self.params["scale"] for c in d.candidates} for d in collection},
            initial_order={d.id: collection.candidate_ids(d.id) for d in collection},
        )


class ByLength(Ranker):
    """Stand-in: shorter sentences first (no query parameter)."""

    name = "by_length"
    PARAMS = {}

    def rank(self, collection):
        return Run.from_scores({d.id: {c.id: -len(c.body) for c in d.candidates} for d in collection})


@pytest.fixture
def stand_ins(monkeypatch):
    """The two stand-ins registered as rankers for the test (and dropped after it)."""
    classes = {"by_score": ByScore, "by_length": ByLength}
    for name, cls in classes.items():
        monkeypatch.setitem(registry._STATE.called["ranker"], name, registry.Entry("ranker", name, cls, "tests"))
    return classes


def test_fusion_ranker_equals_fusing_its_sub_rankers(stand_ins):
    collection = read_benchmark(FIXTURE)
    ranker = FusionRanker(rankers="by_score,by_length", method="rrf", k=1)
    run = ranker.rank(collection)
    order = {d.id: collection.candidate_ids(d.id) for d in collection}
    expected = fuse([ByScore().rank(collection), ByLength().rank(collection)], "rrf", k=1, initial_order=order)
    assert run.rankings == expected.rankings
    assert run.tag == "fusion-rrf-by_score+by_length-k=1"
    # by hand for the chess topic: by_score ranks (three-way tie at 1.0 broken by
    # initial rank) Kings 1, Fischer 2, Engine 3, Gambit 4, Opening 5; by_length
    # (shortest first) ranks Fischer 1, Engine 2, Opening 3, Gambit 4, Kings 5.
    d = collection["t3_c3_q3"]
    assert [len(c.body) for c in d.candidates] == [78, 49, 65, 75, 72]
    assert run.scores("t3_c3_q3") == pytest.approx(
        {
            "Kings_Gambit_17233_2_0_0": 1 / 2 + 1 / 6,
            "Bobby_Fischer_4201_6_2_1": 1 / 3 + 1 / 2,
            "Chess_engine_5609_1_1_0": 1 / 4 + 1 / 3,
            "Gambit_12001_0_0_2": 1 / 5 + 1 / 5,
            "Opening_chess_22987_3_0_1": 1 / 6 + 1 / 4,
        },
        rel=1e-7,
    )  # run scores are float32
    assert run.top("t3_c3_q3") == [
        "Bobby_Fischer_4201_6_2_1",
        "Kings_Gambit_17233_2_0_0",
        "Chess_engine_5609_1_1_0",
        "Opening_chess_22987_3_0_1",
        "Gambit_12001_0_0_2",
    ]


def test_fusion_ranker_passes_parameters_through(stand_ins):
    collection = read_benchmark(FIXTURE)
    ranker = FusionRanker(rankers="by_score,by_length", method="interp", weight=1.0, query="all", **{"by_score.scale": -1.0})
    subs = ranker.sub_rankers()
    assert subs[0].params == {"scale": -1.0, "query": "all"}  # query only where it is taken
    assert subs[1].params == {}
    described = ranker.describe()
    assert described["params"]["by_score.scale"] == -1.0
    assert [r["ranker"] for r in described["rankers"]] == ["by_score", "by_length"]
    # weight 1 keeps the first ranker alone, here scores negated: lowest initial score first
    run = ranker.rank(collection)
    assert run.top("t3_b2_q2")[0] == "Acetone_1364_3_0_0"
    assert ranker.GRID == {"weight": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]}
    assert FusionRanker(rankers="by_score,by_length").GRID == {"k": [1, 10, 30, 60, 100]}


@pytest.mark.parametrize(
    "params, field",
    [
        ({"rankers": "by_score"}, "rankers"),
        ({"rankers": "by_score,nope"}, "rankers"),
        ({"rankers": "by_score,fusion"}, "rankers"),
        ({"rankers": "by_score,by_length", "method": "no_such_method"}, "method"),
        ({"rankers": "by_score,by_length,by_score", "method": "interp"}, "rankers"),
        ({"rankers": "by_score,by_length", "norm": "l2"}, "norm"),
        ({"rankers": "by_score,by_length", "bm25.k1": 1.2}, "params"),
        ({"rankers": "by_score,by_length", "depth": 3}, "params"),
    ],
)
def test_fusion_ranker_rejects_bad_parameters(stand_ins, params, field):
    with pytest.raises(InputError) as err:
        FusionRanker(**params)
    assert err.value.field == field


def test_fusion_ranker_rejects_unknown_sub_parameter_when_building(stand_ins):
    ranker = FusionRanker(rankers="by_score,by_length", **{"by_length.k1": 1.2})
    with pytest.raises(InputError, match="k1"):
        ranker.sub_rankers()
