"""Runs and qrels from and to the libraries researchers already use: PyTerrier's frames,
ranx's Run and Qrels, plain dicts; fusion agrees with ranx where both define a method;
dsr.evaluate scores what PyTerrier's pt.Experiment scores, to the last digit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dsr
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.errors import InputError
from dsr.core.fusion import FUSERS
from dsr.core.run import Run, as_run
from tests.support.order import RANX

ranx = pytest.importorskip("ranx")
pytestmark = RANX  # one worker compiles ranx (tests/support/order.py)


@pytest.fixture(scope="module")
def collection():
    return make_collection(n=40, seed=5)


@pytest.fixture(scope="module")
def runs(collection):
    return [make_run(collection, seed=s, quality=q) for s, q in ((1, 0.3), (2, 1.0), (3, 0.6))]


def test_frames_round_trip_in_pyterrier_shape(runs):
    run = runs[0]
    frame = run.to_frame()
    assert list(frame.columns) == ["qid", "docno", "score", "rank"]
    first = frame[frame.qid == run.topics()[0]]
    assert list(first["rank"]) == list(range(len(first)))  # PyTerrier counts from 0
    assert list(first["docno"]) == run.top(run.topics()[0])
    back = Run.from_frame(frame.sample(frac=1.0, random_state=0))  # row order does not matter
    assert back.as_dict() == run.as_dict()
    # rank alone orders when there is no score; a bad frame names the missing column
    by_rank = Run.from_frame(frame.drop(columns=["score"]))
    assert [d for d, _ in by_rank.rankings[run.topics()[0]]] == run.top(run.topics()[0])
    with pytest.raises(InputError) as err:
        Run.from_frame(frame.drop(columns=["docno"]))
    assert err.value.field == "docno"


def test_ranx_runs_and_qrels_round_trip(collection, runs):
    run = runs[1]
    theirs = run.to_ranx()
    assert isinstance(theirs, ranx.Run) and theirs.name == run.tag
    assert Run.from_ranx(theirs).as_dict() == run.as_dict()
    qrels = ranx.Qrels(dsr.qrels(collection))
    from dsr.evaluation.qrels import as_qrels

    assert as_qrels(qrels) == dsr.qrels(collection)


def test_dsr_evaluate_takes_every_shape_and_gives_the_same_numbers(collection, runs, tmp_path):
    path = tmp_path / "a.run"
    runs[0].write(path)
    shapes = {
        "path": str(path),
        "run": runs[0],
        "frame": runs[0].to_frame(),
        "ranx": runs[0].to_ranx(),
        "dict": runs[0].as_dict(),
    }
    results = dsr.evaluate(collection, shapes, measures=["nDCG@5", "RR"], baseline="run")
    table = results.table("all")
    assert (table.nunique() == 1).all(), table  # one run, five shapes, one row of numbers
    # and against qrels alone (ranx Qrels, a frame, a dict): the same per-topic values
    qrels = dsr.qrels(collection)
    frame = pd.DataFrame([(q, d, g) for q, docs in qrels.items() for d, g in docs.items()], columns=["qid", "docno", "label"])
    expected = results.per_topic_frame().query("system == 'run'").set_index("topic")[["nDCG@5", "RR"]]
    for given in (ranx.Qrels(qrels), frame, qrels):
        alone = dsr.evaluate(runs=[runs[0].to_ranx()], qrels=given, measures=["nDCG@5", "RR"])
        got = alone.per_topic_frame().set_index("topic")[["nDCG@5", "RR"]]
        pd.testing.assert_frame_equal(got.loc[expected.index], expected, check_exact=True)
    with pytest.raises(InputError):
        as_run(42, "x")


def test_dsr_evaluate_equals_pyterrier_experiment(collection, runs):
    pt = pytest.importorskip("pyterrier")
    from ir_measures import AP, RR, nDCG

    qrels = dsr.qrels(collection)
    topics = pd.DataFrame({"qid": collection.ids, "query": ["q"] * len(collection)})
    qrels_frame = pd.DataFrame(
        [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()], columns=["qid", "docno", "label"]
    )
    frames = {f"r{k}": run.to_frame() for k, run in enumerate(runs)}
    theirs = pt.Experiment(
        [pt.Transformer.from_df(f) for f in frames.values()],
        topics,
        qrels_frame,
        eval_metrics=[RR, nDCG @ 5, AP],
        names=list(frames),
    )
    ours = dsr.evaluate(collection, frames, measures=["RR", "nDCG@5", "AP"]).table("all")
    for _, row in theirs.iterrows():
        for measure in ("RR", "nDCG@5", "AP"):
            assert ours.loc[row["name"], measure] == pytest.approx(row[measure], abs=1e-12)


#: ranx's name and parameters for each method both define; wsum with min-max
SHARED = {
    "rrf": ("rrf", {}, {}),
    "isr": ("isr", {}, {}),
    "borda": ("bordafuse", {}, {}),
    "combsum": ("sum", {"norm": "minmax"}, {}),
    "combmnz": ("mnz", {"norm": "minmax"}, {}),
    "wsum": ("wsum", {"norm": "minmax", "weights": [0.2, 0.5, 0.3]}, {"weights": [0.2, 0.5, 0.3]}),
}


@pytest.mark.parametrize("method", sorted(SHARED))
def test_fusion_ranks_as_ranx_does(collection, runs, method):
    """Same fused order and scores as ``ranx.fuse`` (runs that miss documents included:
    under min-max a missing document scores 0 in both)."""
    theirs_name, ours_params, ranx_params = SHARED[method]
    assert method in FUSERS
    partial = [
        Run({q: r[: 3 + k % 5] for k, (q, r) in enumerate(run.rankings.items())}, run.tag) for run in runs
    ]  # top-k cuts: documents go missing
    fused = dsr.fuse(partial, method, **ours_params)
    reference = ranx.fuse(
        [r.to_ranx() for r in partial], method=theirs_name, norm="min-max" if "norm" in ours_params else None, params=ranx_params
    ).to_dict()
    for qid, ranked in fused.rankings.items():
        expected = sorted(reference[qid].items(), key=lambda ds: -ds[1])
        ours = dict(ranked)
        assert set(ours) == set(reference[qid])
        for doc, score in expected:
            assert ours[doc] == pytest.approx(np.float32(score), rel=1e-6, abs=1e-7), (qid, doc)
        # the order agrees wherever ranx's scores are not tied
        values = [s for _, s in expected]
        for (doc, score), (nxt, nscore) in zip(expected, expected[1:]):
            if score - nscore > 1e-6:
                assert [d for d, _ in ranked].index(doc) < [d for d, _ in ranked].index(nxt)
        assert len(values) == len(ranked)


def test_tune_auto_groups_runs_in_the_api_as_on_the_command_line(collection, tmp_path, capsys):
    """``tune="auto"`` is dsr.evaluation.grouping's, shared with ``dsr evaluate --tune auto``."""
    import json

    from dsr.cli import main

    paths = []
    for k in range(3):
        run = make_run(collection, seed=20 + k, quality=0.4 * k)
        run.config = {"ranker": "bm25", "params": {"k1": k}}
        run.write(tmp_path / f"bm25_{k}.run")
        paths.append(str(tmp_path / f"bm25_{k}.run"))
    make_run(collection, seed=30).write(tmp_path / "other.run")
    paths.append(str(tmp_path / "other.run"))
    ours = dsr.evaluate(collection, paths, measures=["nDCG@5"], tune="auto", n_splits=5, baseline="other")
    assert ours.systems["bm25"].kind == "tuned" and set(ours.systems) == {"bm25", "other"}
    from dsr.core.data import write_benchmark

    write_benchmark(collection, tmp_path / "c.jsonl")
    assert (
        main(
            [
                "evaluate",
                str(tmp_path / "c.jsonl"),
                *paths,
                "--tune",
                "auto",
                "--n-splits",
                "5",
                "--protocol",
                "official",
                "--measures",
                "nDCG@5",
                "--baseline",
                "other",
                "--json",
                "--quiet",
                "--permutations",
                "0",
            ]
        )
        == 0
    )
    cli = json.loads(capsys.readouterr().out)
    assert cli["systems"]["bm25"]["choice_counts"] == ours.to_json()["systems"]["bm25"]["choice_counts"]
    assert cli["systems"]["bm25"]["test"]["all"]["nDCG@5"]["mean"] == ours.summary("all")["bm25"]["nDCG@5"][0]


def test_a_tune_word_other_than_auto_is_refused_naming_tune(collection, tmp_path):
    """``tune`` is ``"auto"`` or families; any other word is an InputError naming the parameter
    (it was an AttributeError from deep inside: ``'str' object has no attribute 'items'``)."""
    run = make_run(collection, seed=1)
    with pytest.raises(InputError) as err:
        dsr.evaluate(collection, {"one": run}, measures=["nDCG@5"], tune="best")
    assert err.value.field == "tune" and "'auto'" in str(err.value)
