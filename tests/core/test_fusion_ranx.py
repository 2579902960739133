"""One fusion tie rule on every path, and the same run as ``ranx.fuse``: run files with
heavy ties are written to disk, fused by dsr (the library, ``dsr.fuse``, ``dsr fuse`` with
and without ``--collection``) and by ranx (``Run.from_file``, ``fuse``, ``Run.save``), and
both fused files are read back in trec_eval's order and scored: the same order and the same
numbers, topic by topic."""

from __future__ import annotations

import json

import ir_measures
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsr
from dsr.cli import main
from dsr.core.fusion import TIE_RULE, fuse
from dsr.core.run import Run, load_run
from dsr.rankers.fusion import Fusion
from tests.support.order import RANX

ranx = pytest.importorskip("ranx")
pytestmark = RANX  # one worker compiles ranx (tests/support/order.py)

#: dsr method -> (ranx method, dsr params, ranx params); score-based ones under min-max
SHARED = {
    "rrf": ("rrf", {"k": 60}, {"k": 60}),
    "isr": ("isr", {}, {}),
    "borda": ("bordafuse", {}, {}),
    "combsum": ("sum", {"norm": "minmax"}, {}),
    "combmnz": ("mnz", {"norm": "minmax"}, {}),
    "wsum": ("wsum", {"norm": "minmax", "weights": "0.25,0.5,0.25"}, {"weights": [0.25, 0.5, 0.25]}),
}
RANK_BASED = {"rrf", "isr", "borda"}
MEASURES = [ir_measures.nDCG @ 5, ir_measures.AP, ir_measures.RR, ir_measures.P @ 3]


def write_plain(path, rankings):
    """A plain TREC run as another tool writes it (scores as given, ranks from 1)."""
    with open(path, "w") as f:
        for qid, ranked in rankings.items():
            for rank, (doc, score) in enumerate(ranked, start=1):
                f.write(f"{qid} Q0 {doc} {rank} {score!r} other\n")


def ranx_fused(paths, method, out):
    name, _, params = SHARED[method]
    runs = [ranx.Run.from_file(str(p), kind="trec") for p in paths]
    norm = "min-max" if method not in RANK_BASED else None
    ranx.fuse(runs, method=name, norm=norm, params=params).save(str(out), kind="trec")
    return load_run(out)


def scores(run: Run, qrels):
    return {
        (m, q): v
        for m, q, v in ((str(x.measure), x.query_id, x.value) for x in ir_measures.iter_calc(MEASURES, qrels, run.as_dict()))
    }


@st.composite
def tied_runs(draw, method):
    """3 runs over the same topics; each topic's documents from a small pool (documents go
    missing from some runs); scores from a few values, so fused scores tie everywhere.
    Rank-based methods get scores distinct within a topic (ranx's order of a run's own tied
    scores is whatever its sort leaves: no file holds it), score-based ones ties as well."""
    n_topics = draw(st.integers(1, 4))
    pools = {
        f"q{t}": [f"d{i:02d}" for i in draw(st.lists(st.integers(0, 30), min_size=2, max_size=12, unique=True))]
        for t in range(n_topics)
    }
    runs = []
    for _ in range(3):
        rankings = {}
        for qid, pool in pools.items():
            docs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=len(pool), unique=True))
            if method in RANK_BASED:
                values = draw(st.permutations(range(len(docs))))
                got = [float(v) for v in values]
            else:
                got = [draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.0])) for _ in docs]
            rankings[qid] = sorted(zip(docs, got), key=lambda ds: -ds[1])
        runs.append(rankings)
    qrels = [ir_measures.Qrel(q, d, draw(st.integers(0, 2))) for q, pool in pools.items() for d in pool]
    return runs, qrels


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(SHARED))
def test_fused_runs_equal_ranx_on_files_with_heavy_ties(method, tmp_path_factory):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(tied_runs(method))
    def check(case):
        given_runs, qrels = case
        folder = tmp_path_factory.mktemp(method)
        paths = [folder / f"r{i}.run" for i in range(len(given_runs))]
        for path, rankings in zip(paths, given_runs):
            write_plain(path, rankings)
        _, ours_params, _ = SHARED[method]
        ours = fuse([load_run(p) for p in paths], method, **ours_params)
        ours.write(folder / "dsr.run", sidecar=False)
        ours = load_run(folder / "dsr.run")
        theirs = ranx_fused(paths, method, folder / "ranx.run")
        params = [f"{k}={v}" for k, v in ours_params.items()]
        assert (
            main(
                [
                    "fuse",
                    *map(str, paths),
                    "--method",
                    method,
                    "--out",
                    str(folder / "cli.run"),
                    *(["--param", *params] if params else []),
                ]
            )
            == 0
        )
        assert load_run(folder / "cli.run").rankings == ours.rankings
        assert {q: [d for d, _ in r] for q, r in ours.rankings.items()} == {
            q: [d for d, _ in r] for q, r in theirs.rankings.items()
        }
        assert scores(ours, qrels) == scores(theirs, qrels)

    check()


def test_rrf_of_the_samples_bm25_and_dense_runs_is_one_number_on_every_path(tmp_path, capsys):
    """The issue's case: RRF k=60 of BM25 (all) and dense (last2) on the sample gave nDCG@5
    0.5543 (dsr fuse), 0.5584 (--collection) and 0.5610 (ranx): now 0.5610 everywhere."""
    sample = dsr.load_collection("sample")
    bm25, dense = tmp_path / "bm25.run", tmp_path / "dense.run"
    dsr.ranker("bm25", query="all")(sample).write(bm25)
    dsr.ranker("dense", query="last2")(sample).write(dense)
    qrels = [ir_measures.Qrel(q, d, g) for q, docs in dsr.qrels(sample).items() for d, g in docs.items()]
    values = {}
    for path_name, extra in (("alone", []), ("collection", ["--collection", "sample"])):
        out = tmp_path / f"{path_name}.run"
        assert main(["fuse", str(bm25), str(dense), "--method", "rrf", "--param", "k=60", "--out", str(out), *extra]) == 0
        values[path_name] = load_run(out)
    values["api"] = dsr.fuse([bm25, dense], "rrf", k=60)
    values["api+collection"] = dsr.fuse([bm25, dense], "rrf", k=60, collection=sample)
    for collection in (sample, None):
        values[f"stage {collection is None}"] = Fusion(method="rrf", k=60)(collection, load_run(bm25), load_run(dense))
    values["ranx"] = ranx_fused([bm25, dense], "rrf", tmp_path / "ranx.run")
    ndcg = {
        name: ir_measures.calc_aggregate([ir_measures.nDCG @ 5], qrels, run.as_dict())[ir_measures.nDCG @ 5]
        for name, run in values.items()
    }
    assert round(ndcg["ranx"], 4) == 0.5610
    assert len(set(ndcg.values())) == 1, ndcg
    orders = {name: {q: [d for d, _ in r] for q, r in run.rankings.items()} for name, run in values.items()}
    assert all(order == orders["ranx"] for order in orders.values())
    assert json.loads((tmp_path / "alone.run.json").read_text())["ties"] == TIE_RULE
