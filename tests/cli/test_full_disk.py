"""Issue 40: a full disk. The command-line writers end with exit 2 and a message that names the
output and says the disk is full, no traceback, and leave nothing half-written; ``dsr serve``
answers 507 (Insufficient Storage), stores nothing, and goes on serving.

The disk is a real one: a 4 MiB tmpfs mounted for the test and filled (root only: skipped
elsewhere), so the writers meet the kernel's own ENOSPC where they would on a server. The
writers' own paths (``atomic_write``, ``atomic_dir``) are also tried with ``os.fsync``
failing with ENOSPC, which runs anywhere.
"""

from __future__ import annotations

import errno

import pytest

from dsr.cli import main
from dsr.core import atomic
from dsr.core.errors import InputError
from tests.support.board import make_board
from tests.support.disk import fill


def left(folder) -> set[str]:
    """Everything under ``folder`` but the filler (dot files too)."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} - {"fill"}


@pytest.fixture
def board_db(tmp_path, runs):
    """A board with a hidden phase (for the board's writers) and a judging campaign."""
    db, store = ["--db", f"sqlite:///{tmp_path / 'b.sqlite'}"], ["--store", str(tmp_path / "store")]
    hidden = ["--hidden", "--qrels", str(runs / "hidden.qrels")]
    assert main(["board", "add-phase", "sample", "--phase", "test", *hidden, *db, *store]) == 0
    assert main(["judge", "create", "j1", "sample", "--auto-honeypots", *db]) == 0
    return db, store


@pytest.mark.slow
def test_every_writer_on_a_full_disk_exits_2_and_leaves_nothing(tiny_disk, board_db, runs, capsys):
    db, store = board_db
    run = str(runs / "bm25.run")
    phase = ["--phase", "test"]
    commands = {
        "run": ["run", "sample", "--ranker", "bm25", "--out", "{out}/a.run"],
        "fuse": ["fuse", run, str(runs / "random0.run"), "--method", "rrf", "--out", "{out}/f.run"],
        "qrels": ["qrels", "sample", "--out", "{out}/q.qrels"],
        "export": ["export", "sample", "--format", "beir", "--out", "{out}/beir"],
        "evaluate --report": ["evaluate", "sample", run, "--report", "{out}/report"],
        "board export": ["board", "export", "sample", *phase, "--format", "json", "--out", "{out}/board.json", *db, *store],
        "board participant-file": ["board", "participant-file", "sample", *phase, "--out", "{out}/p.jsonl", *db, *store],
        "judge export-tasks": ["judge", "export-tasks", "j1", "--format", "label-studio", "--out", "{out}/ls", *db],
        "judge create (database on the full disk)": ["judge", "create", "j2", "sample", "--db", "sqlite:///{out}/j.sqlite"],
    }
    fill(tiny_disk)
    capsys.readouterr()
    for what, argv in commands.items():
        code = main([a.replace("{out}", str(tiny_disk)) for a in argv])
        err = capsys.readouterr().err
        assert code == 2, (what, err[-600:])
        assert "Traceback" not in err and "full" in err, (what, err)
        assert str(tiny_disk) in err and ".dsr-new" not in err and ".partial" not in err, (what, err)
        assert left(tiny_disk) <= {"j.sqlite"}, (what, left(tiny_disk))  # no temporary, no half file


def test_the_atomic_writers_turn_a_full_disk_into_exit_2(tmp_path, monkeypatch):
    """Anywhere (no tmpfs needed): ``os.fsync`` failing with ENOSPC in ``atomic_write`` and in a
    file written inside ``atomic_dir`` is a FullDisk naming the output; no temporary is left."""

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(InputError) as err:
        with atomic.atomic_write(tmp_path / "out.txt") as handle:
            handle.write("x")
    assert err.value.path == str(tmp_path / "out.txt") and "disk is full" in err.value.message
    with pytest.raises(InputError) as err:
        with atomic.atomic_dir(tmp_path / "folder", ["*.txt"]) as staging:
            with atomic.atomic_write(staging / "a.txt") as handle:
                handle.write("x")
    assert err.value.path == str(tmp_path / "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert atomic.disk_full(OSError(errno.EDQUOT, "quota")) and not atomic.disk_full(OSError(errno.EACCES, "no"))


@pytest.mark.slow
@pytest.mark.parametrize("where", ["store", "database"])
def test_dsr_serve_answers_507_and_stores_nothing(tiny_disk, tmp_path, runs, where):
    """The run store, or the SQLite database, on the full disk: the submission is answered 507
    with a JSON error, no row and no file are stored, and the server answers the next request."""
    from fastapi.testclient import TestClient

    from dsr.board.app import create_app

    db = f"sqlite:///{tiny_disk / 'b.sqlite'}" if where == "database" else f"sqlite:///{tmp_path / 'b.sqlite'}"
    board = make_board(db, tiny_disk if where == "store" else tmp_path)
    board.phases.add_phase("sample", "public")
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board), raise_server_exceptions=False)
    before = left(tiny_disk)
    fill(tiny_disk)
    answer = client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": "public", "system": "bm25"},
        files={"run": ("bm25.run", (runs / "bm25.run").read_bytes())},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 507, answer.text[:300]
    assert "disk is full" in answer.json()["error"] and "Traceback" not in answer.text
    (tiny_disk / "fill").unlink()  # space again: nothing was stored
    assert board.submissions(board.phases.get_phase("sample", "public")) == []
    assert {p for p in left(tiny_disk) if "/tmp/" not in p and not p.endswith(("-wal", "-shm"))} <= before
    assert client.get("/api/boards").status_code == 200
    client.close()
    board.close()
