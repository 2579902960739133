"""Crash consistency of outputs: report folders written as a set, stale
temporaries cleaned, and outputs that cannot be written reported as exit 2."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

import dsr.evaluation.report
from dsr.cli import main
from dsr.core.atomic import atomic_dir, check_output_path, write_json
from dsr.core.errors import InputError


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def inodes(folder: Path) -> set[int]:
    return {p.stat().st_ino for p in folder.rglob("*") if p.is_file()}


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def boom(*args, **kwargs):
    raise RuntimeError("disk full (injected half way through the set)")


@pytest.fixture
def random_run(tmp_path) -> Path:
    run = tmp_path / "random.run"
    assert main(["run", "sample", "--ranker", "random", "--out", str(run)]) == 0
    return run


# --- report folders are written as a set --------------------------------------


@pytest.mark.slow
def test_report_folder_is_replaced_as_a_set(tmp_path, random_run, monkeypatch, capsys):
    rep = tmp_path / "rep"
    evaluate = ["evaluate", "sample", str(random_run), "--report", str(rep), "--measures"]
    assert main([*evaluate, "P@1", "RR"]) == 0
    before = snapshot(rep)
    assert {"results.md", "results.json", "per_topic.parquet", "measures.png"} <= set(before)

    # a failure after results.md/.csv/.json/.tex were written, before per_topic.parquet
    original = dsr.evaluation.report.write_per_topic
    monkeypatch.setattr(dsr.evaluation.report, "write_per_topic", boom)
    assert main([*evaluate, "nDCG@5"]) == 1
    assert snapshot(rep) == before  # the old set, every file of it
    assert hidden(tmp_path) == []  # no staging folder left behind

    monkeypatch.setattr(dsr.evaluation.report, "write_per_topic", original)
    old_inodes = inodes(rep)
    assert main([*evaluate, "nDCG@5"]) == 0
    after = snapshot(rep)
    assert inodes(rep).isdisjoint(old_inodes)  # every file is new
    assert "measures.png" not in after and "main.png" in after  # no stale plot (one measure)
    assert json.loads(after["results.json"])["measures"] == ["nDCG@5"]
    assert b"P@1" not in after["per_topic.parquet"] and b"nDCG@5" in after["per_topic.parquet"]
    assert hidden(tmp_path) == []


def test_report_folder_with_other_files_is_refused(tmp_path, random_run, capsys):
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "notes.txt").write_text("mine\n")
    assert main(["evaluate", "sample", str(random_run), "--report", str(rep)]) == 2
    err = capsys.readouterr().err
    assert "notes.txt" in err and "Traceback" not in err
    assert (rep / "notes.txt").read_text() == "mine\n" and sorted(os.listdir(rep)) == ["notes.txt"]


@pytest.mark.slow
def test_reproduce_out_is_replaced_as_a_set(tmp_path, monkeypatch, capsys):
    """A reproduce of one query strategy and one measure (a set of 28 files, runs/ among them:
    the set is the point, not its size) is replaced as a set, or not at all."""
    out = tmp_path / "out"
    args = [
        "reproduce",
        "sample",
        "--out",
        str(out),
        "--no-dense",
        "--n-splits",
        "3",
        "--queries",
        "last",
        "--measures",
        "nDCG@5",
    ]
    assert main(args) == 0
    before = snapshot(out)
    assert {"manifest.json", "results.json", "per_topic.parquet", "runs/BM25.run.gz"} <= set(before)

    original = dsr.evaluation.report.write_per_topic
    monkeypatch.setattr(dsr.evaluation.report, "write_per_topic", boom)
    assert main([*args, "--seed", "1"]) == 1
    assert snapshot(out) == before and hidden(tmp_path) == []

    monkeypatch.setattr(dsr.evaluation.report, "write_per_topic", original)
    old_inodes = inodes(out)
    assert main([*args, "--seed", "1"]) == 0
    assert inodes(out).isdisjoint(old_inodes) and hidden(tmp_path) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["seed"] == 1
    # the runs are named where they are now relative to the report, not where they were staged
    for name, entry in manifest["runs"].items():
        path = Path(entry["path"])
        assert path.parent == Path("runs"), name
        assert hashlib.sha256((out / path).read_bytes()).hexdigest() == entry["sha256"]
    report = json.loads((out / "results.json").read_text())
    assert all(Path(info["path"]).parent == Path("runs") for info in report["runs"].values() if "path" in info)


def test_reproduce_refuses_a_folder_with_other_files_before_working(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    assert main(["reproduce", "sample", "--out", str(out), "--no-dense", "--n-splits", "3"]) == 2
    err = capsys.readouterr().err
    assert "thesis.tex" in err and "dsr reproduce: bm25" not in err
    assert sorted(os.listdir(out)) == ["thesis.tex"]
    # a file of the user's inside runs/ too: the whole folder is replaced, so it is refused
    (out / "thesis.tex").unlink()
    (out / "runs").mkdir()
    (out / "runs" / "mine.txt").write_text("notes")
    assert main(["reproduce", "sample", "--out", str(out), "--no-dense", "--n-splits", "3"]) == 2
    assert "runs/mine.txt" in capsys.readouterr().err and (out / "runs" / "mine.txt").read_text() == "notes"


# --- stale temporaries ----------------------------------------------------------


def _old(path: Path) -> Path:
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


def test_stale_temporaries_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "x.run"
    dead = 999_999_999  # above any pid_max: no such process
    stale = [
        tmp_path / name
        for name in (".x.run.k3j_q8ab.tmp", f".x.run.{dead}.partial", f".x.run.{dead}.partial.json", f".x.run.{dead}-abc.part")
    ]
    for p in stale:
        p.write_text("half")
        _old(p)
    kept = {
        tmp_path / ".x.run.fresh.tmp": "written after this process started",
        tmp_path / f".x.run.{os.getpid()}-live.tmp": "this process's own",
        tmp_path / ".x.run.partial": "dsr train's resumable folder",
        tmp_path / "x.run.tmp": "not hidden: not ours",
        tmp_path / ".y.run.abc.tmp": "another target's",
    }
    for p in kept:
        if p.name == ".x.run.partial":
            p.mkdir()
        else:
            p.write_text("keep")
        if p.name != ".x.run.fresh.tmp":
            _old(p)
    write_json(target, {"ok": True})
    assert json.loads(target.read_text()) == {"ok": True}
    assert [p.name for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept), [p.name for p in kept if not p.exists()]


def test_stale_staging_folder_of_a_report_is_removed(tmp_path):
    target = tmp_path / "rep"
    left = tmp_path / ".rep.999999999-z.dsr-new"
    left.mkdir()
    (left / "results.md").write_text("half")
    _old(left)
    with atomic_dir(target, ["*.md"]) as staging:
        (staging / "results.md").write_text("new\n")
    assert not left.exists() and (target / "results.md").read_text() == "new\n"
    assert hidden(tmp_path) == []


# --- outputs that cannot be written -----------------------------------------------


def test_output_under_a_file_is_exit_2_naming_it(tmp_path, random_run, capsys):
    blocker = tmp_path / "FILE"
    blocker.write_text("i am a file\n")
    for args in (
        ["run", "sample", "--ranker", "random", "--out", str(blocker / "x.run")],
        ["run", "sample", "--ranker", "bm25", "--out", str(blocker / "a" / "b.run")],
        ["evaluate", "sample", str(random_run), "--report", str(blocker / "rep")],
        ["evaluate", "sample", str(random_run), "--per-topic", str(blocker / "t.tsv")],
        ["reproduce", "sample", "--no-dense", "--out", str(blocker / "rep")],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert "Traceback" not in err and f"{blocker} is a file, not a folder" in err, (args, err)
    assert blocker.read_text() == "i am a file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE", "random.run", "random.run.json"]


def test_check_output_path_names_the_path(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(InputError) as err:
        check_output_path(tmp_path / "f" / "g" / "h.json")
    assert err.value.path == str(tmp_path / "f" / "g" / "h.json") and err.value.field == "out"
    with pytest.raises(InputError, match="is a folder"):
        check_output_path(tmp_path, "--out")
    assert check_output_path(tmp_path / "new" / "deep" / "x.run") == tmp_path / "new" / "deep" / "x.run"
    assert (tmp_path / "new" / "deep").is_dir()


# --- a folder swap cut between its renames ----------------------------------------


class _Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs (no except/finally clean-up is relied on)."""


#: (existed, one-step exchange, steps done before the kill, what the folder holds then)
CUTS = [
    (True, True, 1, "old"),
    (True, True, 2, "new"),
    (True, True, 3, "new"),
    (True, True, "removing", "new"),
    (True, False, 1, "old"),
    (True, False, 2, "none"),
    (True, False, 3, "new"),
    (True, False, "removing", "new"),
    (False, True, 1, "none"),
    (False, False, 1, "none"),
]


@pytest.mark.parametrize("existed,exchanges,done,holds", CUTS)
def test_a_swap_cut_at_any_step_is_finished_or_undone_by_the_next_writer(tmp_path, monkeypatch, existed, exchanges, done, holds):
    """replace_folder stopped after each of its steps (its process gone): with the one-step
    exchange (renameat2) the folder is never missing, the old set until the exchange and the
    new one after; without it (another system) the folder is missing between the two renames.
    Either way the next atomic_dir on the folder first restores the old set or the complete
    new one, and leaves nothing."""
    import dsr.core.atomic as atomic

    target = tmp_path / "rep"
    old = {"results.md": b"old\n", "runs/a.run": b"q 0 a 1 1.0 old\n"}
    new = {"results.md": b"new\n", "runs/a.run": b"q 0 a 1 1.0 new\n", "runs/b.run": b"b\n"}
    staging = tmp_path / ".rep.999999999-x.dsr-new"
    for folder, files in ((target, old if existed else {}), (staging, new)):
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
    real_replace, real_exchange, steps = os.replace, atomic.exchange, []

    def step(real):
        def run(*args):
            if len(steps) == done:
                raise _Killed
            result = real(*args)
            if result is not False:
                steps.append(args)
            return result

        return run

    def remove(path):
        shutil.rmtree(path / "runs")  # the old set half removed
        raise _Killed

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", step(real_replace))
        patched.setattr(atomic, "exchange", step(real_exchange) if exchanges else lambda a, b: False)
        patched.setattr(atomic, "_remove", remove)
        patched.setattr(os, "getpid", lambda: 999_999_999)  # the swap's tag names a dead process
        with pytest.raises(_Killed):
            atomic.replace_folder(staging, target)
    for left in tmp_path.iterdir():
        _old(left)
    assert snapshot(target) == {"old": old, "new": new}.get(holds) if holds != "none" else not target.exists()
    expected = old if holds == "old" else new
    with atomic_dir(target, ["results.md", "runs/*.run"]) as fresh:
        assert snapshot(target) == expected and hidden(tmp_path) == [fresh.name]
    assert snapshot(target) == {} and hidden(tmp_path) == []
