"""Run files as trec_eval reads them, gzip, sidecar consistency, the collection-hash
policy, ties in users' runs, option order and checked evaluation options."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsr.cli import build_parser, main
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.core.errors import InputError
from dsr.core.run import Run, read_trec_run
from dsr.evaluation.qrels import qrels_from_collection, read_qrels, write_qrels
from dsr.evaluation.validate import validate_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("integrity")
    collection = make_collection(n=8, candidates=6, seed=4)
    write_benchmark(collection, root / "c.jsonl")
    run = make_run(collection, seed=1, quality=1.0)
    run.config = {"ranker": "synthetic", "collection": collection.describe()}
    run.write(root / "a.run")
    return root, collection


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lines_of(collection, score=lambda rank: f"{10 - rank}.5"):
    return [f"{d.id} Q0 {c.id} {r} {score(r)} t" for d in collection.dialogues for r, c in enumerate(d.candidates, start=1)]


# --- parsed as trec_eval parses ---------------------------------------------------------


@pytest.mark.parametrize(
    "column, value, expected",
    [
        (4, "1_000", "score is not a number"),
        (4, "0x1p3", "score is not a number"),
        (4, "1e39", "float32 range"),
        (1, "X0", "Q0"),
    ],
)
def test_fields_trec_eval_reads_otherwise_are_problems(tmp_path, setup, column, value, expected):
    _, collection = setup
    lines = lines_of(collection)
    parts = lines[2].split()
    parts[column] = value
    lines[2] = " ".join(parts)
    path = tmp_path / "x.run"
    path.write_text("\n".join(lines) + "\n")
    result = validate_run(collection, path)
    assert [p.line for p in result.problems] == [3] and expected in result.problems[0].message
    with pytest.raises(InputError) as err:
        read_trec_run(path)
    assert err.value.line == 3 and expected in str(err.value)


@pytest.mark.parametrize("value, warned", [("from 0", False), ("-1", True), ("1.5", True), ("x", True)])
def test_the_rank_column_is_ignored_as_trec_eval_ignores_it(tmp_path, setup, value, warned):
    """PyTerrier's ranks from 0 are fine; a rank that is not a whole number is a warning, and
    the line is read and scored by its score either way."""
    _, collection = setup
    lines = lines_of(collection)
    if value == "from 0":  # PyTerrier: every rank one less
        lines = [" ".join(p[:3] + [str(int(p[3]) - 1)] + p[4:]) for p in map(str.split, lines)]
        value = lines[2].split()[3]
    parts = lines[2].split()
    parts[3] = value
    lines[2] = " ".join(parts)
    path = tmp_path / "x.run"
    path.write_text("\n".join(lines) + "\n")
    result = validate_run(collection, path)
    assert result.valid
    assert [(w.line, "rank is not a whole number" in w.message) for w in result.warnings] == ([(3, True)] if warned else [])
    run = read_trec_run(path)
    assert dict(run.rankings[parts[0]])[parts[2]] == float(parts[4])


def test_tabs_and_extra_whitespace_are_fine(tmp_path, setup):
    _, collection = setup
    lines = ["\t".join(line.split()) + "  \t" for line in lines_of(collection)]
    lines[0] = "  " + lines[0].replace("\t", "   ")
    path = tmp_path / "tabs.run"
    path.write_text("\n".join(lines) + "\n")
    assert validate_run(collection, path).valid
    assert len(read_trec_run(path)) == len(collection)


# --- ties in users' runs --------------------------------------------------------------


def test_ties_are_warned_by_evaluate_and_validate_and_fixed_by_fix_ties(tmp_path, setup, capsys):
    root, collection = setup
    # topic 0: two candidates equal as float32 but not as float64; topic 1: an exact tie
    d0, d1 = collection.dialogues[0], collection.dialogues[1]
    lines = lines_of(collection)
    lines[0] = f"{d0.id} Q0 {d0.candidates[0].id} 1 10.839401064536501 t"
    lines[1] = f"{d0.id} Q0 {d0.candidates[1].id} 2 10.8394010645365 t"
    lines[7] = f"{d1.id} Q0 {d1.candidates[1].id} 2 7.5 t"  # = rank 3's score
    path = tmp_path / "user.run"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(["validate", root / "c.jsonl", path], capsys)
    assert code == 0 and "2 topic(s) hold scores that tie" in err and "tied as float32" in out
    code, out, _ = run_cli(["validate", root / "c.jsonl", path, "--json"], capsys)
    assert code == 0 and json.loads(out)["tied_topics"] == 2
    code, out, _ = run_cli(["validate", root / "c.jsonl", path, "--strict"], capsys)
    assert code == 2 and f"{path}:2: topic {d0.id!r}: scores tie" in out
    code, out, err = run_cli(["evaluate", root / "c.jsonl", path, "--quiet", "--json"], capsys)
    assert code == 0 and "2 topic(s) hold scores that tie as 32-bit floats" in err
    assert json.loads(out)["runs"]["user"]["tied_topics"] == 2
    # --fix-ties: ties by the collection's initial rank, then id; no ties left
    fixed = tmp_path / "fixed.run.gz"
    code, _, err = run_cli(["validate", root / "c.jsonl", path, "--fix-ties", "--out", fixed], capsys)
    assert code == 0, err
    assert fixed.read_bytes()[:2] == b"\x1f\x8b"
    code, _, err = run_cli(["validate", root / "c.jsonl", fixed, "--strict"], capsys)
    assert code == 0 and "tie" not in err
    back = Run.read(fixed)
    assert back.tied_topics() == []
    assert back.top(d0.id)[:2] == [d0.candidates[0].id, d0.candidates[1].id]  # 64-bit order kept
    assert back.top(d1.id)[1:3] == [d1.candidates[1].id, d1.candidates[2].id]  # initial rank
    side = json.loads(Path(str(fixed) + ".json").read_text())
    assert side["collection"]["hash"] == collection.content_hash
    assert side["inputs"][0]["path"] == str(path.resolve()) and "--fix-ties" in side["command_line"]
    # a run with problems is not rewritten
    path.write_text("\n".join(lines + ["nope Q0 x 1 1.0 t"]) + "\n")
    assert main(["validate", str(root / "c.jsonl"), str(path), "--fix-ties", "--out", str(tmp_path / "never.run")]) == 2
    assert not (tmp_path / "never.run").exists()


# --- gzip -----------------------------------------------------------------------------


def test_gz_runs_and_qrels_are_read_and_written_everywhere(tmp_path, setup, capsys):
    root, collection = setup
    plain = root / "a.run"
    gz = tmp_path / "a.run.gz"
    code, _, err = run_cli(["run", root / "c.jsonl", "--ranker", "initial", "--out", gz], capsys)
    assert code == 0, err
    assert gz.read_bytes()[:2] == b"\x1f\x8b" and not list(tmp_path.glob(".*"))
    assert Run.read(gz).config["ranker"] == "initial"
    code, out, err = run_cli(["evaluate", root / "c.jsonl", gz, plain, "--quiet", "--json"], capsys)
    assert code == 0, err
    assert set(json.loads(out)["runs"]) == {"a", f"{root.name}/a"}  # a.run.gz is named like a.run
    assert run_cli(["validate", root / "c.jsonl", gz], capsys)[0] == 0
    code, _, err = run_cli(["fuse", gz, plain, "--method", "rrf", "--out", tmp_path / "f.run.gz"], capsys)
    assert code == 0, err
    assert len(Run.read(tmp_path / "f.run.gz")) == len(collection)
    # the same run written twice gives the same bytes (no name or time in the gzip header)
    Run.read(gz).write(tmp_path / "b.run.gz")
    Run.read(gz).write(tmp_path / "c.run.gz")
    assert (tmp_path / "b.run.gz").read_bytes() == (tmp_path / "c.run.gz").read_bytes()
    # qrels
    qrels = qrels_from_collection(collection)
    write_qrels(qrels, tmp_path / "q.qrels.gz")
    assert gzip.decompress((tmp_path / "q.qrels.gz").read_bytes()).startswith(collection.ids[0].encode())
    assert read_qrels(tmp_path / "q.qrels.gz") == qrels
    # a truncated gzip run is bad input naming the file
    (tmp_path / "cut.run.gz").write_bytes(gz.read_bytes()[:-20])
    code, _, err = run_cli(["evaluate", root / "c.jsonl", tmp_path / "cut.run.gz", "--quiet"], capsys)
    assert code == 2 and "cut.run.gz" in err and "gzip" in err
    assert run_cli(["validate", root / "c.jsonl", tmp_path / "cut.run.gz"], capsys)[0] == 2


# --- sidecar consistency --------------------------------------------------------------


def test_a_kill_between_run_and_sidecar_leaves_a_detected_stale_sidecar(tmp_path, monkeypatch, capsys):
    import dsr.core.run as run_module

    path = tmp_path / "x.run"
    Run({"q": [("a", 2.0), ("b", 1.0)]}, "old", {"ranker": "old"}).write(path)
    assert Run.read(path).config == {"ranker": "old"}
    assert json.loads((tmp_path / "x.run.json").read_text())["run_sha256"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies after the run, before the sidecar

    monkeypatch.setattr(run_module, "write_json", killed)
    with pytest.raises(KeyboardInterrupt):
        Run({"q": [("b", 2.0), ("a", 1.0)]}, "new", {"ranker": "new"}).write(path)
    monkeypatch.undo()
    capsys.readouterr()
    back = Run.read(path)
    assert back.top("q") == ["b", "a"] and back.config == {}  # the old sidecar is not used
    err = capsys.readouterr().err
    assert "stale" in err and str(path) in err and str(tmp_path / "x.run.json") in err


def test_a_kill_between_the_two_renames_of_a_command(tmp_path, setup, monkeypatch, capsys):
    root, _ = setup
    out = tmp_path / "r.run"
    assert main(["run", str(root / "c.jsonl"), "--ranker", "initial", "--out", str(out)]) == 0
    real_replace = os.replace
    calls = []

    def replace(src, dst):
        calls.append(Path(dst).name)
        if Path(dst) == tmp_path / "r.run.json":  # dies before the final sidecar rename
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        from dsr.core.run import write_run

        write_run(Run({"q": [("a", 1.0)]}, "new", {"ranker": "new"}), out)
    monkeypatch.undo()
    assert calls[-2:] == ["r.run", "r.run.json"]  # the run was renamed first
    capsys.readouterr()
    assert Run.read(out).config == {} and "stale" in capsys.readouterr().err


# --- one collection-hash policy ---------------------------------------------------------


def test_a_run_of_another_collection_is_rejected_everywhere_unless_allowed(tmp_path, setup, capsys):
    root, collection = setup
    other = make_collection(n=8, candidates=6, seed=4, name="other")
    other.dialogues[0].candidates[0].label = 1 - other.dialogues[0].candidates[0].label
    write_benchmark(other, tmp_path / "other.jsonl")
    run = root / "a.run"
    foreign = tmp_path / "foreign.run"
    Run.read(run).write(foreign)
    side = json.loads(Path(str(foreign) + ".json").read_text())
    side["collection"] = other.describe()
    Path(str(foreign) + ".json").write_text(json.dumps(side))
    for argv in (
        ["evaluate", tmp_path / "other.jsonl", run, "--quiet"],
        ["fuse", run, foreign, "--method", "rrf", "--out", tmp_path / "g.run"],
        ["validate", tmp_path / "other.jsonl", run],
        ["fuse", run, run, "--method", "rrf", "--collection", tmp_path / "other.jsonl", "--out", tmp_path / "f.run"],
    ):
        code, out, err = run_cli(argv, capsys)
        assert code == 2, (argv, err)
        assert str(run) in out + err and collection.content_hash in out + err
        code, out, err = run_cli(argv + ["--allow-collection-mismatch"], capsys)
        assert code == 0, (argv, err)
        assert "warning" in err


# --- options before or after positionals ---------------------------------------------------


def test_options_may_come_between_and_after_positionals(tmp_path, setup, capsys):
    root, _ = setup
    run = root / "a.run"
    code, out, err = run_cli(["evaluate", root / "c.jsonl", "--quiet", "--json", run, "--measures", "RR"], capsys)
    assert code == 0, err and json.loads(out)["measures"] == ["RR"]
    code, out, err = run_cli(["evaluate", root / "c.jsonl", "--quiet", run, "--protocol", "all", run, "--json"], capsys)
    assert code == 0, err
    assert run_cli(["validate", "--allow-missing", root / "c.jsonl", "--json", run], capsys)[0] == 0
    code, _, err = run_cli(["fuse", "--method", "rrf", run, "--out", tmp_path / "f.run", run], capsys)
    assert code == 0, err


def test_every_subcommand_parses_intermixed():
    import argparse

    def leaves(parser):
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            yield parser
            return
        for child in sub.choices.values():
            yield from leaves(child)

    found = list(leaves(build_parser()))
    assert len(found) >= 10
    for parser in found:
        try:  # a TypeError here means intermixed parsing cannot handle this parser
            parser.parse_known_intermixed_args([])
        except SystemExit:
            pass  # a required argument is missing: parsing itself works


# --- evaluation options checked before trec_eval sees them ------------------------------------


@pytest.mark.parametrize(
    "extra, option, says",
    [
        (["--measures", "nDCG@0"], "--measures", "1 or more"),
        (["--measures", "P(rel=0)@5"], "--measures", "1 or more"),
        (["--measures", "nDCG@1.5"], "--measures", "cutoff"),
        (["--alpha", "7"], "--alpha", "a number > 0 and < 1"),
        (["--permutations", "-1"], "--permutations", "a whole number >= 0"),
    ],
)
def test_bad_evaluation_options_exit_2_without_a_traceback(setup, extra, option, says):
    root, _ = setup
    # a subprocess: trec_eval aborts the whole process on a cutoff of 0
    done = subprocess.run(
        [sys.executable, "-m", "dsr.cli", "evaluate", str(root / "c.jsonl"), str(root / "a.run"), "--quiet", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert option in done.stderr and says in done.stderr and "Traceback" not in done.stderr
