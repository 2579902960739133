"""``dsr run`` / ``dsr rerank`` / ``dsr fuse``: options reach the code, and bad input
exits with 2 and a message naming the file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark
from dsr.core.run import Run

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs_tiny.jsonl"


@pytest.fixture(scope="module")
def collection():
    return read_benchmark(FIXTURE)


@pytest.fixture
def runs(tmp_path):
    """Two runs of the fixture collection, made by `dsr run`."""
    paths = {}
    for name, argv in (("initial", ["--ranker", "initial"]), ("random", ["--ranker", "random", "--param", "seed=1"])):
        paths[name] = tmp_path / f"{name}.run"
        assert main(["run", str(FIXTURE), *argv, "--out", str(paths[name])]) == 0
    return paths


def fails(argv, capsys, *expected: str) -> str:
    """Assert exit code 2 and that stderr holds every expected piece; return stderr."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    for piece in expected:
        assert piece in err, err
    return err


def other_collection(tmp_path: Path) -> Path:
    """The fixture with one candidate text changed: same ids, another content hash."""
    lines = FIXTURE.read_text().splitlines()
    record = json.loads(lines[0])
    record["candidates"][2]["body"] = "The Moon orbits the Earth every 27 days."
    path = tmp_path / "other.jsonl"
    path.write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    return path


# --- dsr run -------------------------------------------------------------------------


def test_run_params_reach_the_ranker(tmp_path, collection):
    from dsr.rankers import make_ranker

    out = tmp_path / "r.run"
    assert main(["run", str(FIXTURE), "--ranker", "random", "--param", "seed=11", "--out", str(out)]) == 0
    assert Run.read(out).rankings == make_ranker("random", seed=11).rank(collection).rankings
    assert Run.read(out).rankings != make_ranker("random", seed=0).rank(collection).rankings
    assert Run.read(out).tag == "random-seed=11"


def test_run_query_option_reaches_fusion_sub_rankers(tmp_path):
    out = tmp_path / "f.run"
    assert main(f"run {FIXTURE} --ranker fusion --query last2 --param rankers=initial,random --out {out}".split()) == 0
    side = json.loads((tmp_path / "f.run.json").read_text())
    assert side["params"]["query"] == "last2"
    assert "--query last2" in side["command_line"]


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--ranker", "bm99"], ["unknown ranker 'bm99'", "--ranker"]),
        (["--ranker", "random", "--param", "sead=1"], ["unknown parameter(s) sead", "random"]),
        (["--ranker", "random", "--param", "seed"], ["expected NAME=VALUE", "--param"]),
        (["--ranker", "initial", "--query", "last"], ["unknown parameter(s) query"]),
        (["--ranker", "fusion", "--param", "rankers=initial,bm99"], ["unknown ranker 'bm99'", "rankers"]),
        (["--ranker", "fusion", "--param", "rankers=initial,random", "bm25.k1=1.2"], ["'bm25.k1' names no ranker"]),
    ],
)
def test_run_bad_ranker_or_parameter(tmp_path, capsys, argv, expected):
    out = tmp_path / "x.run"
    fails(["run", FIXTURE, *argv, "--out", out], capsys, *expected)
    assert not out.exists()


def test_run_bad_collection_and_out(tmp_path, capsys):
    fails(
        ["run", tmp_path / "nope.jsonl", "--ranker", "random", "--out", tmp_path / "x.run"], capsys, "nope.jsonl", "no such file"
    )
    broken = tmp_path / "broken.jsonl"
    broken.write_text(FIXTURE.read_text().splitlines()[0] + "\n{not json\n")
    fails(["run", broken, "--ranker", "random", "--out", tmp_path / "x.run"], capsys, f"{broken}:2", "malformed JSON")
    fails(["run", FIXTURE, "--ranker", "random", "--out", tmp_path], capsys, "is a folder", "--out")


def test_a_run_or_qrels_where_the_collection_goes_is_named_for_what_it_is(tmp_path, capsys):
    """``dsr validate my.run`` (the run alone, taken for the collection): the error says the
    file looks like a TREC run (or qrels) and that the collection comes first; a benchmark file
    broken on its first line keeps the plain JSON error."""
    run = tmp_path / "my.run"
    assert main(["run", str(FIXTURE), "--ranker", "random", "--out", str(run)]) == 0
    capsys.readouterr()
    err = fails(["validate", run], capsys, f"{run}:1: malformed JSON", "looks like a TREC run file", "comes first")
    assert "Traceback" not in err
    qrels = tmp_path / "my.qrels"
    assert main(["qrels", str(FIXTURE), "--out", str(qrels)]) == 0
    capsys.readouterr()
    fails(["evaluate", qrels, run], capsys, f"{qrels}:1: malformed JSON", "looks like a TREC qrels file")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n" + FIXTURE.read_text())
    err = fails(["validate", broken, run], capsys, f"{broken}:1: malformed JSON")
    assert "looks like" not in err


# --- dsr rerank -----------------------------------------------------------------------


def test_rerank_rejects_a_run_made_for_another_collection(tmp_path, capsys, runs):
    other = other_collection(tmp_path)
    fails(
        ["rerank", other, "--run", runs["initial"], "--model", "anything", "--out", tmp_path / "x.run"],
        capsys,
        f"{runs['initial']}.json",
        "field 'collection.hash'",
        "'runs_tiny'",
        "not 'other'",
    )
    assert not (tmp_path / "x.run").exists()


def test_rerank_names_the_line_of_a_foreign_topic_or_sentence(tmp_path, capsys, runs):
    lines = runs["initial"].read_text().splitlines()
    foreign_topic = tmp_path / "topic.run"  # no sidecar: only the lines can tell
    foreign_topic.write_text("\n".join(lines[:7] + ["t3_zz_q9" + lines[7][len("t3_b2_q2") :]] + lines[8:]) + "\n")
    fails(
        ["rerank", FIXTURE, "--run", foreign_topic, "--model", "x", "--out", tmp_path / "o.run"],
        capsys,
        f"{foreign_topic}:8",
        "field 'qid'",
        "'t3_zz_q9'",
    )
    foreign_doc = tmp_path / "doc.run"
    parts = lines[11].split()
    parts[2] = "Checkers_1_0_0_0"
    foreign_doc.write_text("\n".join(lines[:11] + [" ".join(parts)] + lines[12:]) + "\n")
    fails(
        ["rerank", FIXTURE, "--run", foreign_doc, "--model", "x", "--out", tmp_path / "o.run"],
        capsys,
        f"{foreign_doc}:12",
        "field 'docid'",
        "'Checkers_1_0_0_0'",
    )


def test_rerank_accepts_sentences_of_the_pool(tmp_path, runs, collection):
    # open retrieval: a sentence of another dialogue is not foreign to the collection
    from dsr.core.run_checks import check_run

    path = tmp_path / "open.run"
    Run({"t3_a1_q1": [("Moon_19331_1_0_4", 2.0), ("Bread_4023_0_0_1", 1.0)]}, "open").write(path)
    check_run(Run.read(path), path, collection)


@pytest.mark.parametrize(
    "content, sidecar, expected",
    [
        (None, None, ["no such run file"]),
        (b"\xff\xfe\x00garbage\n", None, ["not UTF-8"]),
        (b"t3_a1_q1 Q0 Moon_19331_1_0_4 1 0.5\n", None, [":1", "expected 6 columns"]),
        (b"t3_a1_q1 Q0 Moon_19331_1_0_4 1 high x\n", None, [":1", "field 'score'"]),
        (b"", None, ["the run file is empty"]),
        (b"t3_a1_q1 Q0 Moon_19331_1_0_4 1 0.5 x\n", '{"collection": ', ["in.run.json", "malformed JSON"]),
        (b"t3_a1_q1 Q0 Moon_19331_1_0_4 1 0.5 x\n", "[1, 2]", ["in.run.json", "JSON object"]),
    ],
)
def test_rerank_unreadable_run(tmp_path, capsys, content, sidecar, expected):
    path = tmp_path / "in.run"
    if content is not None:
        path.write_bytes(content)
    if sidecar is not None:
        (tmp_path / "in.run.json").write_text(sidecar)
    fails(["rerank", FIXTURE, "--run", path, "--model", "x", "--out", tmp_path / "o.run"], capsys, str(path), *expected)
    assert not (tmp_path / "o.run").exists()


def test_rerank_run_is_a_folder(tmp_path, capsys):
    fails(["rerank", FIXTURE, "--run", tmp_path, "--model", "x", "--out", tmp_path / "o.run"], capsys, "is a folder")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--reranker", "colbert"], ["unknown reranker 'colbert'", "--reranker"]),
        (["--top-k", "0"], ["--top-k", ">= 1"]),
        (["--batch-size", "0"], ["--batch-size", ">= 1"]),
        (["--query", "first"], ["parameter query of reranker 'cross-encoder' must be one of last", "got 'first'"]),
        (["--param", "temperature=2"], ["unknown parameter(s) temperature", "cross-encoder"]),
        (["--param", "model=other"], ["model given both as --model and as --param"]),
    ],
)
def test_rerank_bad_options(tmp_path, capsys, runs, argv, expected):
    fails(
        ["rerank", FIXTURE, "--run", runs["initial"], "--model", tmp_path / "m", *argv, "--out", tmp_path / "o.run"],
        capsys,
        *expected,
    )


def test_rerank_missing_model_is_bad_input(tmp_path, capsys, runs):
    fails(
        ["rerank", FIXTURE, "--run", runs["initial"], "--model", tmp_path / "no-model", "--out", tmp_path / "o.run"],
        capsys,
        "no-model",
        "no such model folder",
        "field '--model'",
    )
    fails(
        ["rerank", FIXTURE, "--run", runs["initial"], "--model", "dsr:never-trained", "--out", tmp_path / "o.run"],
        capsys,
        "no trained model 'never-trained'",
    )
    empty = tmp_path / "empty-model"
    empty.mkdir()
    fails(
        ["rerank", FIXTURE, "--run", runs["initial"], "--model", empty, "--out", tmp_path / "o.run"], capsys, "not a model folder"
    )
    assert not (tmp_path / "o.run").exists()


# --- dsr fuse --------------------------------------------------------------------------


def test_fuse_params_reach_the_method(tmp_path, runs):
    from dsr.core.fusion import fuse

    a, b = Run.read(runs["initial"]), Run.read(runs["random"])
    for method, params in (("rrf", ["k=1"]), ("combmnz", ["norm=zscore"]), ("interp", ["weight=0.8", "norm=zscore"])):
        out = tmp_path / f"{method}.run"
        assert (
            main(["fuse", str(runs["initial"]), str(runs["random"]), "--method", method, "--param", *params, "--out", str(out)])
            == 0
        )
        typed = {p.split("=")[0]: (p.split("=")[1] if p.startswith("norm") else float(p.split("=")[1])) for p in params}
        assert Run.read(out).rankings == fuse([a, b], method, **typed).rankings
    # the parameters change the result
    assert Run.read(tmp_path / "interp.run").rankings != fuse([a, b], "interp", weight=0.2).rankings


def test_fuse_rejects_runs_of_different_collections(tmp_path, capsys, runs):
    other = other_collection(tmp_path)
    foreign = tmp_path / "foreign.run"
    assert main(["run", str(other), "--ranker", "random", "--out", str(foreign)]) == 0
    fails(
        ["fuse", runs["initial"], foreign, "--method", "rrf", "--out", tmp_path / "f.run"],
        capsys,
        f"{foreign}.json",
        "field 'collection.hash'",
        "'other'",
        str(runs["initial"]),
    )
    # against a named collection, each run is checked
    fails(
        ["fuse", runs["initial"], runs["random"], "--method", "rrf", "--collection", other, "--out", tmp_path / "f.run"],
        capsys,
        f"{runs['initial']}.json",
        "collection.hash",
    )
    assert not (tmp_path / "f.run").exists()


def test_fuse_rejects_runs_without_common_topics(tmp_path, capsys):
    Run({"q1": [("a", 1.0)]}, "x").write(tmp_path / "x.run", sidecar=False)
    Run({"q2": [("a", 1.0)]}, "y").write(tmp_path / "y.run", sidecar=False)
    fails(
        ["fuse", tmp_path / "x.run", tmp_path / "y.run", "--method", "rrf", "--out", tmp_path / "f.run"],
        capsys,
        "no topic in common",
    )


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--method", "rrf", "--param", "weight=0.3"], ["fusion method 'rrf' takes k, metric, not weight", "--param"]),
        (["--method", "interp", "--param", "weight=2"], ["weight must be in [0, 1]"]),
        (["--method", "combsum", "--param", "norm=l2"], ["unknown normalisation 'l2'"]),
        (["--method", "rrf", "--param", "k=-3"], ["k must be >= 0"]),
    ],
)
def test_fuse_bad_parameters(tmp_path, capsys, runs, argv, expected):
    fails(["fuse", runs["initial"], runs["random"], *argv, "--out", tmp_path / "f.run"], capsys, *expected)


def test_fuse_interp_needs_two_runs_and_fuse_at_least_two(tmp_path, capsys, runs):
    three = [runs["initial"], runs["random"], runs["initial"]]
    fails(["fuse", *three, "--method", "interp", "--out", tmp_path / "f.run"], capsys, "interp fuses exactly two runs")
    fails(["fuse", runs["initial"], "--method", "rrf", "--out", tmp_path / "f.run"], capsys, "at least two runs")
    with pytest.raises(SystemExit) as exit_:  # argparse's own check of --method
        main(["fuse", str(runs["initial"]), str(runs["random"]), "--method", "no_such_method", "--out", str(tmp_path / "f.run")])
    assert exit_.value.code == 2


def test_rerank_with_the_bi_encoder_and_the_real_minilm(tmp_path, runs, collection):
    out = tmp_path / "bi.run"
    assert (
        main(
            [
                "rerank",
                str(FIXTURE),
                "--run",
                str(runs["initial"]),
                "--reranker",
                "bi-encoder",
                "--model",
                "all-MiniLM-L6-v2",
                "--top-k",
                "3",
                "--query",
                "last",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    run, before = Run.read(out), Run.read(runs["initial"])
    for qid in before.topics():
        assert sorted(run.top(qid, 3)) == sorted(before.top(qid, 3))
        assert run.top(qid)[3:] == before.top(qid)[3:]
    side = json.loads((tmp_path / "bi.run.json").read_text())
    assert side["reranker"] == "bi-encoder" and side["top_k"] == 3
    assert side["params"]["query"] == "last"
    [model] = side["models"]
    from dsr.core.models import PACKAGE_SHA256

    assert model["weights_sha256"] == PACKAGE_SHA256 and model["source"] == "package"


def test_fusion_with_dense_records_the_model(tmp_path, collection):
    out = tmp_path / "fd.run"
    assert (
        main(
            ["run", str(FIXTURE), "--ranker", "fusion", "--query", "last", "--param", "rankers=initial,dense", "--out", str(out)]
        )
        == 0
    )
    side = json.loads((tmp_path / "fd.run.json").read_text())
    from dsr.core.models import PACKAGE_SHA256

    assert [m["weights_sha256"] for m in side["models"]] == [PACKAGE_SHA256]
    assert side["rankers"][1]["ranker"] == "dense" and side["rankers"][1]["params"]["query"] == "last"
    assert "collection" not in side["rankers"][1]
