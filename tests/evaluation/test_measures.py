"""Measures agree with independent plain-Python implementations of trec_eval's definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dsr.collections.synthetic import make_collection, make_run
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.measures import DEFAULT_MEASURES, Evaluator, parse_measures, split_measure_list
from dsr.evaluation.qrels import qrels_from_collection, read_qrels, write_qrels
from dsr.evaluation.results import write_per_topic
from tools.plain_eval import plain_measure

# --- the reference: trec_eval's definitions, written out -------------------


def trec_order(doc_scores: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, ties by doc id descending."""
    return [d for d, _ in sorted(doc_scores.items(), key=lambda ds: (ds[1], ds[0]), reverse=True)]


def reference(measure: str, qrels: dict[str, int], doc_scores: dict[str, float]) -> float:
    return plain_measure(measure, trec_order(doc_scores), qrels)


def reference_matrix(collection, run: Run, measures, scores=None) -> np.ndarray:
    qrels = qrels_from_collection(collection)
    scores = run.as_dict() if scores is None else scores
    out = np.zeros((len(collection), len(measures)))
    for i, qid in enumerate(collection.ids):
        if qid not in scores:
            continue  # counts 0, as trec_eval -c
        for j, m in enumerate(measures):
            out[i, j] = reference(m, qrels[qid], scores[qid])
    return out


@pytest.fixture(scope="module")
def collection():
    return make_collection(n=80, seed=3)


def test_every_default_measure_equals_the_reference_without_ties(collection):
    evaluator = Evaluator(qrels_from_collection(collection), topics=collection.ids)
    for seed in range(4):
        run = make_run(collection, seed=seed, quality=0.8, drop_topics=seed, drop_docs=0.2)
        got = evaluator(run)
        assert got.measures == list(DEFAULT_MEASURES)
        np.testing.assert_allclose(got.values, reference_matrix(collection, run, DEFAULT_MEASURES), rtol=0, atol=1e-12)
        assert got.missing == seed


def test_tied_scores_are_broken_by_doc_id_descending_as_trec_eval_does(collection, tmp_path):
    run = make_run(collection, seed=11, ties=True, quality=1.0)
    raw = {q: dict(r) for q, r in run.rankings.items()}
    tied = sum(len(r) - len({s for _, s in r}) for r in run.rankings.values())
    assert tied > 1000  # the check below is about ties
    # a user's file with ties (written by hand, not by dsr's writer, which breaks them)
    path = tmp_path / "tied.run"
    path.write_text(
        "".join(f"{q} Q0 {d} {i} {s!r} user\n" for q, r in run.rankings.items() for i, (d, s) in enumerate(r, start=1))
    )
    read = Run.read(path)
    assert len(read.tied_topics()) == sum(1 for r in raw.values() if len(set(r.values())) < len(r))
    expected = reference_matrix(collection, Run({q: list(r.items()) for q, r in raw.items()}), DEFAULT_MEASURES, scores=raw)
    evaluator = Evaluator(qrels_from_collection(collection), topics=collection.ids)
    got = evaluator(read)
    np.testing.assert_allclose(got.values, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(evaluator(raw).values, expected, rtol=0, atol=1e-12)  # a plain dict
    # and the other tie order (doc id ascending) would give different values
    qrels = qrels_from_collection(collection)
    ascending_rr = []
    for q in collection.ids:
        ranked = sorted(raw[q], key=lambda d: (-raw[q][d], d))
        ascending_rr.append(next((1 / (i + 1) for i, d in enumerate(ranked) if qrels[q][d] >= 1), 0.0))
    assert not np.allclose(ascending_rr, got.column("RR"))
    # an in-memory Run is scored in the order it holds (as its written file would be)
    held = evaluator(run)
    held_rr = [next((1 / (i + 1) for i, (d, _) in enumerate(run.rankings[q]) if qrels[q][d] >= 1), 0.0) for q in collection.ids]
    np.testing.assert_allclose(held.column("RR"), held_rr, rtol=0, atol=1e-12)


def test_hand_built_run_has_the_known_mrr_and_ndcg():
    collection = make_collection(ids=["q1", "q2"], candidates=4, grades=(0,))
    # q1: labels a=2, b=0, c=1, d=0 ; q2: only d relevant (1)
    labels = {"q1": [2, 0, 1, 0], "q2": [0, 0, 0, 1]}
    for d in collection.dialogues:
        for c, g in zip(d.candidates, labels[d.id]):
            c.label = g
    ids = {q: collection.candidate_ids(q) for q in ("q1", "q2")}
    run = Run(
        {
            "q1": [(ids["q1"][1], 4.0), (ids["q1"][2], 3.0), (ids["q1"][0], 2.0), (ids["q1"][3], 1.0)],
            "q2": [(ids["q2"][0], 4.0), (ids["q2"][1], 3.0), (ids["q2"][3], 2.0), (ids["q2"][2], 1.0)],
        }
    )
    results = evaluate_runs(collection, {"hand": run}, ["RR", "nDCG@3", "nDCG@1", "P@1", "AP"], progress=False)
    means = results.untuned()["hand"]
    # q1: first relevant at rank 2 (RR 1/2); q2: at rank 3 (RR 1/3)
    assert means["RR"] == pytest.approx((1 / 2 + 1 / 3) / 2, abs=1e-15)
    # q1 nDCG@3: DCG = 0 + 1/log2(3) + 2/log2(4) = 1/log2(3) + 1; IDCG = 2 + 1/log2(3)
    q1 = (1 / math.log2(3) + 1) / (2 + 1 / math.log2(3))
    q2 = (1 / math.log2(4)) / 1.0
    assert means["nDCG@3"] == pytest.approx((q1 + q2) / 2, abs=1e-15)
    assert means["nDCG@1"] == 0.0 and means["P@1"] == 0.0
    # AP q1: relevant at 2 and 3 -> (1/2 + 2/3) / 2 ; q2: 1/3
    assert means["AP"] == pytest.approx(((1 / 2 + 2 / 3) / 2 + 1 / 3) / 2, abs=1e-15)


def test_missing_topics_count_zero_and_unknown_topics_are_ignored(collection):
    run = make_run(collection, seed=1, quality=2.0)
    full = Evaluator(qrels_from_collection(collection), topics=collection.ids)(run)
    partial = dict(run.rankings)
    gone = collection.ids[:5]
    for q in gone:
        del partial[q]
    partial["not-a-dialogue"] = [("x", 1.0)]
    got = Evaluator(qrels_from_collection(collection), topics=collection.ids)(Run(partial))
    assert got.missing == 5 and got.unknown == 1
    assert np.all(got.values[:5] == 0)
    np.testing.assert_array_equal(got.values[5:], full.values[5:])
    assert got.mean()[0] == pytest.approx(full.values[5:, 0].sum() / len(collection))


def test_graded_measure_strings_and_rel_levels(collection):
    run = make_run(collection, seed=5, quality=0.5)
    got = Evaluator(qrels_from_collection(collection), ["RR(rel=2)", "P(rel=2)@5"], collection.ids)(run)
    qrels = qrels_from_collection(collection)
    scores = run.as_dict()
    for i, q in enumerate(collection.ids):
        ranked = trec_order(scores[q])
        rr = next((1 / (r + 1) for r, d in enumerate(ranked) if qrels[q][d] >= 2), 0.0)
        p5 = sum(1 for d in ranked[:5] if qrels[q][d] >= 2) / 5
        assert got.values[i, 0] == pytest.approx(rr, abs=1e-12)
        assert got.values[i, 1] == pytest.approx(p5, abs=1e-12)


@pytest.mark.parametrize("bad", ["nDCG@x", "Foo@3", "nDCG(rel=2)@5", "RR(", ""])
def test_bad_measure_strings_are_input_errors(bad):
    with pytest.raises(InputError) as err:
        parse_measures([bad])
    assert err.value.field == "measures"


def test_measure_lists_split_on_commas_outside_parentheses():
    assert split_measure_list(["RR,nDCG@5", "P(rel=2,judged_only=True)@5"]) == ["RR", "nDCG@5", "P(rel=2,judged_only=True)@5"]
    assert [str(m) for m in parse_measures(["nDCG@5", "nDCG@5", "RR"])] == ["nDCG@5", "RR"]


def test_qrels_round_trip_keeps_grades(tmp_path, collection):
    qrels = qrels_from_collection(collection)
    write_qrels(qrels, tmp_path / "q.txt")
    assert read_qrels(tmp_path / "q.txt") == qrels
    assert {g for docs in qrels.values() for g in docs.values()} == {0, 1, 2}
    (tmp_path / "bad.txt").write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(InputError) as err:
        read_qrels(tmp_path / "bad.txt")
    assert err.value.line == 2 and err.value.field == "grade"
    (tmp_path / "dup.txt").write_text("q1 0 d1 1\nq1 0 d1 0\n")
    with pytest.raises(InputError, match="duplicate") as err:
        read_qrels(tmp_path / "dup.txt")
    assert err.value.line == 2


def test_per_topic_export_tsv_and_jsonl(tmp_path, collection):
    import json

    runs = {"a": make_run(collection, seed=1), "b": make_run(collection, seed=2, quality=1.0)}
    results = evaluate_runs(collection, runs, progress=False)
    write_per_topic(results, tmp_path / "pt.tsv")
    lines = (tmp_path / "pt.tsv").read_text().splitlines()
    assert lines[0].split("\t") == ["system", "kind", "topic", "subset", *DEFAULT_MEASURES]
    assert len(lines) == 1 + 2 * len(collection)
    first = lines[1].split("\t")
    assert first[:4] == ["a", "run", collection.ids[0], collection.dialogues[0].subset]
    assert [float(x) for x in first[4:]] == list(results.runs["a"].values[0])
    write_per_topic(results, tmp_path / "pt.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "pt.jsonl").read_text().splitlines()]
    mean_rr = np.mean([r["values"]["RR"] for r in rows if r["system"] == "b"])
    assert mean_rr == pytest.approx(results.untuned()["b"]["RR"])


def test_fast_path_equals_ir_measures_iter_calc(collection):
    """pytrec_eval called directly (and ir_measures for the rest) gives ir_measures' values."""
    import ir_measures

    measures = [
        *DEFAULT_MEASURES,
        "RR(rel=2)",
        "nDCG@20",
        "P(rel=2)@3",
        "AP@5",
        "nDCG",
        "nDCG(judged_only=True)@5",
        "RR@5",
        "AP(rel=2)",
        "Success@3",
    ]
    qrels = qrels_from_collection(collection)
    run = make_run(collection, seed=21, quality=0.7, drop_topics=3, drop_docs=0.3)
    got = Evaluator(qrels, measures, collection.ids)(run)
    expected = np.zeros_like(got.values)
    parsed = parse_measures(measures)
    for metric in ir_measures.iter_calc(parsed, qrels, run.as_dict()):
        expected[collection.ids.index(metric.query_id), [str(m) for m in parsed].index(str(metric.measure))] = metric.value
    np.testing.assert_array_equal(got.values, expected)
