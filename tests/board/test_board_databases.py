"""Every board and judge command and ``dsr serve`` meet a database they cannot use with exit 2,
a message naming the URL (without its password) or the file, and no traceback: a ``--db`` that
is a folder, another kind of file, a PostgreSQL server that does not answer, a URL that is
not one, and (root only: a 4 MiB tmpfs, filled) a full disk under the SQLite file, on a
database made before the disk filled. :data:`COMMANDS` holds each command of ``dsr board``
and ``dsr judge`` (a test checks it names them all)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from dsr.cli import build_parser, main
from tests.support.disk import fill
from tests.support.tiers import require_slow

#: a command line of each board and judge command (``{dir}``: a folder for its files), and serve
COMMANDS = {
    "board add-team": ["board", "add-team", "t2"],
    "board add-phase": ["board", "add-phase", "sample", "--phase", "p2"],
    "board set-phase": ["board", "set-phase", "sample", "--phase", "p", "--primary", "RR"],
    "board freeze": ["board", "freeze", "sample", "--phase", "p"],
    "board add-member": ["board", "add-member", "t1", "bob"],
    "board remove-member": ["board", "remove-member", "t1", "lead"],
    "board rotate-token": ["board", "rotate-token", "t1", "lead"],
    "board add-baseline": ["board", "add-baseline", "sample", "--phase", "p", "{runs}/bm25.run"],
    "board rebuild": ["board", "rebuild"],
    "board export": ["board", "export", "sample", "--phase", "p", "--format", "json", "--out", "{dir}/b.json"],
    "board participant-file": ["board", "participant-file", "sample", "--phase", "h", "--out", "{dir}/p.jsonl"],
    "board list": ["board", "list"],
    "judge guidelines": ["judge", "guidelines", "j1", "{dir}/guidelines.yaml"],
    "judge create": ["judge", "create", "j2", "sample", "--auto-honeypots"],
    "judge add-assessor": ["judge", "add-assessor", "carol"],
    "judge remove-assessor": ["judge", "remove-assessor", "alice"],
    "judge rotate-token": ["judge", "rotate-token", "alice"],
    "judge assign": ["judge", "assign", "j1"],
    "judge status": ["judge", "status", "j1"],
    "judge report": ["judge", "report", "j1"],
    "judge export": ["judge", "export", "j1", "--partial", "--out", "{dir}/judged.jsonl"],
    "judge export-tasks": ["judge", "export-tasks", "j1", "--format", "crowd", "--out", "{dir}/crowd"],
    "judge import": ["judge", "import", "j1", "{dir}/results.csv", "--format", "crowd"],
    "judge list": ["judge", "list"],
    "judge review": ["judge", "review", "j1"],
    "serve": ["serve", "--port", "0"],
}


def subcommands(group: str) -> set[str]:
    parser = build_parser(group)
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = action.choices[group]
    inner = next(a for a in found._actions if isinstance(a, argparse._SubParsersAction))
    return {f"{group} {name}" for name in inner.choices}


def test_the_table_holds_every_board_and_judge_command():
    assert set(COMMANDS) - {"serve"} == subcommands("board") | subcommands("judge")


def run(what: str, db: str, folder, runs, capsys) -> tuple[int, str]:
    argv = [a.replace("{dir}", str(folder)).replace("{runs}", str(runs)) for a in COMMANDS[what]]
    capsys.readouterr()
    code = main([*argv, "--db", db] + (["--store", str(folder / "store")] if argv[0] in ("board", "serve") else []))
    return code, capsys.readouterr().err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "results.csv").write_text("WorkerId,Input.item_1,Answer.grade_1\nW1,x,1\n")
    (tmp_path / "text.txt").write_text("not a database\n")
    (tmp_path / "folder").mkdir()
    return tmp_path


def bad_databases(folder) -> dict[str, tuple[str, str]]:
    """What a --db may wrongly be, and what the message must name."""
    return {
        "a folder": (f"sqlite:///{folder / 'folder'}", str(folder / "folder")),
        "another kind of file": (f"sqlite:///{folder / 'text.txt'}", str(folder / "text.txt")),
        "a server that does not answer": ("postgresql://dsr:s3cret@127.0.0.1:1/board", "postgresql://dsr:***@127.0.0.1:1/board"),
        "a URL that is not one": ("postgresql://dsr:s3cret@localhost:port/board", "postgresql://dsr:***@"),
        "not a URL at all": (str(folder / "board.sqlite"), str(folder / "board.sqlite")),
        "an SQLite URL without a file": ("sqlite:///", "sqlite:///"),
    }


@pytest.mark.parametrize("what", COMMANDS)
def test_a_database_that_cannot_be_used_is_exit_2_naming_it(what, files, runs, capsys):
    for why, (db, named) in bad_databases(files).items():
        code, err = run(what, db, files, runs, capsys)
        assert code == 2, (what, why, err[-500:])
        assert "Traceback" not in err and named in err and "s3cret" not in err, (what, why, err)
    assert list((files / "folder").iterdir()) == [] and (files / "text.txt").read_text() == "not a database\n"


def dsr(*argv: str) -> subprocess.CompletedProcess:
    """``dsr ARGV`` in a process of its own, as a user runs it (a process that still held the
    database open, as the tests' own does after ``main``, would let the next one open it
    without growing its files on the full disk)."""
    return subprocess.run([sys.executable, "-m", "dsr.cli", *argv], capture_output=True, text=True)


@pytest.mark.slow
def test_every_command_on_a_full_disk_under_the_database_is_exit_2_naming_it(tiny_disk, files, runs):
    """The database made on the small disk first (a phase, a hidden phase, a team, a campaign
    with an assessor), then the disk filled before each command: every command is exit 2
    naming the file and saying the disk is full, no traceback; the database is as it was once
    space is freed."""
    require_slow("dsr subprocesses")
    db = f"sqlite:///{tiny_disk / 'b.sqlite'}"
    store = ["--store", str(files / "store")]
    hidden = ["--hidden", "--qrels", str(runs / "hidden.qrels"), "--allow-overlap"]
    for argv in (
        ["board", "add-phase", "sample", "--phase", "p", *store],
        ["board", "add-phase", "sample", "--phase", "h", *hidden, *store],
        ["board", "add-team", "t1", *store],
        ["judge", "create", "j1", "sample", "--auto-honeypots"],
        ["judge", "add-assessor", "alice"],
    ):
        assert dsr(*argv, "--db", db).returncode == 0, argv
    size = (tiny_disk / "b.sqlite").stat().st_size
    for what in COMMANDS:
        fill(tiny_disk)  # again: what the command before freed
        argv = [a.replace("{dir}", str(files)).replace("{runs}", str(runs)) for a in COMMANDS[what]]
        done = dsr(*argv, "--db", db, *(store if argv[0] in ("board", "serve") else []))
        assert done.returncode == 2, (what, done.stderr[-500:])
        err = done.stderr
        assert "Traceback" not in err and str(tiny_disk / "b.sqlite") in err and "full" in err, (what, err)
    (tiny_disk / "fill").unlink()
    listed = dsr("board", "list", "--db", db, *store)
    assert listed.returncode == 0 and "t1" in listed.stdout and "t2" not in listed.stdout and "p2" not in listed.stdout
    assert (tiny_disk / "b.sqlite").stat().st_size == size
