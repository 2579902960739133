"""The evaluator's array path (dsr.evaluation.ranked) gives exactly trec_eval's numbers.

Every value of every measure the arrays compute is checked *equal* (the same double, not
close) to ir_measures (pytrec_eval, trec_eval's C code) and to the evaluator's reference
path (``arrays=False``), on random runs with near-ties: scores equal as float32 but not as
float64, equal as float64, a float32 step apart; graded, negative and missing labels;
topics the run lacks, topics the qrels lack, topics with no judgement at all; runs made
every way a Run is made. A plain walk of the written run file (tools/plain_eval.py) checks
the common measures again, independently of both.
"""

from __future__ import annotations

import math

import ir_measures
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsr.core.fusion import fuse
from dsr.core.run import Run, read_trec_run
from dsr.evaluation import ranked
from dsr.evaluation.measures import Evaluator, parse_measures
from tools.plain_eval import plain_measure

#: every kind the arrays compute, with cutoffs, relevance levels and judged-only variants
ARRAY_MEASURES = [
    "RR",
    "nDCG@1",
    "nDCG@3",
    "nDCG@5",
    "nDCG@10",
    "P@1",
    "P@5",
    "AP",
    "R@10",
    "nDCG",
    "AP@5",
    "R@3",
    "P@20",
    "RR(rel=2)",
    "P(rel=2)@3",
    "AP(rel=2)",
    "AP(rel=2)@3",
    "P(judged_only=True)@5",
    "nDCG(judged_only=True)@5",
    "nDCG(judged_only=True)",
    "RR(judged_only=True)",
    "AP(judged_only=True)",
    "NumRet",
    "NumRet(rel=1)",
    "NumRet(rel=2)",
    "NumRel",
    "NumRel(rel=2)",
    "NumQ",
]
#: measures the arrays do not compute: ir_measures computes them, in the same call
OTHER_MEASURES = ["Success@3", "Rprec", "RR@5", "Bpref", "ERR@5", "R(rel=2)@5"]

BASE = [0.0, 1.0, 0.5, -2.5, 3.0, 1e-7]


@st.composite
def near_tie(draw):
    """A score at or next to another: equal, a float32 step apart, equal only as float32."""
    base = draw(st.sampled_from(BASE))
    how = draw(st.sampled_from(["same", "f32 step", "f64 gap", "random"]))
    if how == "same":
        return base
    if how == "f32 step":
        return float(np.nextafter(np.float32(base), np.float32(draw(st.sampled_from([-1, 1])) * np.inf)))
    if how == "f64 gap":  # a different double, the same float32
        return base + draw(st.sampled_from([1e-12, -1e-12, 2e-16])) * max(1.0, abs(base))
    return draw(st.floats(-4, 4, allow_nan=False, width=32))


@st.composite
def cases(draw, grades=(-1, 0, 0, 1, 1, 2, 3)):
    """Qrels and scores over a few topics: grades -1..3, docs the qrels lack, topics either
    side lacks, a topic with no judgement, an empty ranking."""
    n_topics = draw(st.integers(1, 6))
    qrels, scores = {}, {}
    for t in range(n_topics):
        pool = [f"d{i}" for i in range(draw(st.integers(0, 14)))]
        judged = draw(st.lists(st.sampled_from(pool), unique=True)) if pool else []
        qrels[f"q{t}"] = {d: draw(st.sampled_from(grades)) for d in judged}
        if qrels[f"q{t}"] and max(qrels[f"q{t}"].values()) < 0:  # undefined in trec_eval: see below
            qrels[f"q{t}"][judged[0]] = 0
        if draw(st.booleans()) or not pool:
            ranked_docs = draw(st.lists(st.sampled_from(pool), unique=True)) if pool else []
            scores[f"q{t}"] = {d: draw(near_tie()) for d in ranked_docs}
    if draw(st.booleans()):
        scores["stray"] = {"d0": 1.0}  # a topic the qrels do not know
    return qrels, scores


def runs_of(scores: dict, seed: int) -> dict[str, Run]:
    """The same scores as Runs made every way: from_scores (held as arrays), read as lists,
    from_dict (trec_eval's own order), by hand (normalised when measured)."""
    rng = np.random.default_rng(seed)
    initial = {q: list(rng.permutation(list(d))) for q, d in scores.items()}
    lazy = Run.from_scores(scores, initial_order=initial)
    built = Run.from_scores(scores, initial_order=initial)
    assert built.rankings is not None  # its lists built now: the list path
    return {
        "flat": lazy,
        "lists": built,
        "from_dict": Run.from_dict(scores),
        "by hand": Run({q: list(d.items()) for q, d in scores.items()}),
    }


def differences(got, want) -> list[tuple[str, str, float, float]]:
    """The cells where two TopicValues differ: (topic, measure, got, wanted)."""
    return [
        (got.topics[i], got.measures[j], got.values[i, j], want.values[i, j])
        for i, j in np.argwhere(got.values != want.values).tolist()
    ]


#: what ir_measures has no provider for (the reference path, pytrec_eval itself, checks it)
NOT_IN_IR_MEASURES = {"NumRel(rel=2)"}


def reference_values(qrels, run: Run, measures) -> dict[tuple[str, str], float]:
    """ir_measures' value of each measure on each topic it reports: one call for the
    judged-only measures, one for the others (in one call, ir_measures may compute NumRet in
    its judged-only evaluator)."""
    out = {}
    for judged in (False, True):
        asked = [m for m in measures if str(m) not in NOT_IN_IR_MEASURES and bool(m.params.get("judged_only", False)) == judged]
        out.update({(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(asked, qrels, run.as_dict())})
    return out


@settings(max_examples=120, deadline=None)
@given(cases(), st.integers(0, 9))
def test_every_array_value_equals_ir_measures_and_the_reference_path(case, seed):
    qrels, scores = case
    topics = list(qrels)
    measures = parse_measures(ARRAY_MEASURES)
    arrays, reference = Evaluator(qrels, measures, topics), Evaluator(qrels, measures, topics, arrays=False)
    assert len(arrays._specs) == len(measures)  # all of them on the array path
    for how, run in runs_of(scores, seed).items():
        got, want = arrays(run), reference(run)
        assert not differences(got, want), (how, differences(got, want))
        assert (got.missing, got.unknown) == (want.missing, want.unknown)
        names = [str(m) for m in measures]
        for (qid, name), value in reference_values(qrels, run, measures).items():
            if name.startswith(("NumQ", "NumRel")) and not scores.get(qid):
                continue  # ir_measures' own fill for topics a run lacks; dsr's is trec_eval -c
            assert got.values[topics.index(qid), names.index(name)] == value, (how, qid, name)


@settings(max_examples=60, deadline=None)
@given(cases())
def test_measures_the_arrays_do_not_compute_go_to_ir_measures_in_the_same_call(case):
    qrels, scores = case
    topics = list(qrels)
    measures = parse_measures(["nDCG@5", *OTHER_MEASURES, "AP"])
    evaluator = Evaluator(qrels, measures, topics)
    assert [str(measures[j]) for j in evaluator._array_columns] == ["nDCG@5", "AP"]
    run = Run.from_scores(scores)
    got, want = evaluator(run), Evaluator(qrels, measures, topics, arrays=False)(run)
    assert not differences(got, want)


def test_a_topic_judged_only_negatively_is_one_with_nothing_relevant():
    """trec_eval 9.0.8 sizes its array of grade levels 0 for such a topic and reads past it
    (zeros, the counts, or a loop that never ends, by what the process evaluated before:
    pytrec_eval is not called here). The arrays define it: nothing relevant, the documents
    retrieved counted."""
    qrels = {"q": {"a": -1, "b": -2}, "r": {"a": 1}}
    measures = ["RR", "P@1", "AP", "nDCG@5", "nDCG", "NumRet", "NumRet(rel=1)", "NumRel", "NumQ"]
    run = Run.from_scores({"q": {"a": 1.0, "b": 0.5, "c": 0.2}, "r": {"a": 1.0}})
    got = Evaluator(qrels, measures, ["q", "r"])(run)
    assert got.values[0].tolist() == [0, 0, 0, 0, 0, 3, 0, 0, 1]
    assert got.values[1].tolist() == [1, 1, 1, 1, 1, 1, 1, 1, 1]


def test_a_run_naming_a_document_twice_is_scored_by_the_reference_path():
    qrels = {"q": {"a": 1, "b": 0}}
    run = Run({"q": [("b", 3.0), ("a", 2.0), ("b", 1.0)]})
    assert ranked.ranked(run, ranked.Labels(qrels, ["q"])) is None
    got = Evaluator(qrels, ["P@1", "RR"], ["q"])(run)
    assert np.array_equal(got.values, Evaluator(qrels, ["P@1", "RR"], ["q"], arrays=False)(run).values)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_score_that_is_not_finite_is_refused_as_before(bad):
    run = Run({"q": [("a", 1.0), ("b", bad)]})
    with pytest.raises(ValueError, match="score of 'b' is not finite"):
        Evaluator({"q": {"a": 1}}, ["P@1"], ["q"])(run)


@settings(max_examples=40, deadline=None)
@given(case=cases(grades=(0, 0, 1, 2, 3)), k=st.sampled_from([1, 5, 60]))
def test_fused_runs_held_as_arrays_score_as_their_written_files(case, k, tmp_path_factory):
    """A fused run (held as arrays, never as lists) against a plain walk of its written file
    in score order (tools/plain_eval.py, independent of dsr's evaluator; grades >= 0, its
    domain)."""
    qrels, scores = case
    a = Run.from_scores(scores)
    b = Run.from_scores({q: {d: -s for d, s in docs.items()} for q, docs in scores.items()})
    fused = fuse([a, b], "rrf", k=k)
    assert fused.flat_ranking() is not None
    topics = list(qrels)
    measures = ["RR", "AP", "P@1", "P@5", "R@10", "nDCG@3", "nDCG@10"]
    got = Evaluator(qrels, measures, topics)(fused)
    path = tmp_path_factory.mktemp("fused") / "fused.run"
    fused.write(path, sidecar=False)
    walked = read_trec_run(path).rankings if path.stat().st_size else {}
    for i, qid in enumerate(topics):
        ranking = [d for d, _ in walked.get(qid, [])]
        for j, measure in enumerate(measures):
            want = plain_measure(measure, ranking, qrels[qid]) if ranking and qrels[qid] else 0.0
            assert got.values[i, j] == pytest.approx(want, rel=0, abs=1e-12), (qid, measure)
