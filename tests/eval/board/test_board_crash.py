"""A crash mid-submission (SIGKILL of ``dsr serve`` while clients are sending) leaves the
database and the run store consistent, on SQLite and PostgreSQL: every row's run file is there
and hashes to its name (files are fsynced before the row commits), every acknowledged run is
stored, and a restarted server carries on: new runs are accepted and ``dsr board rebuild``
finds nothing missing."""

from __future__ import annotations

import threading
import time

import httpx
from sqlalchemy import text

from board_support import (ServerProcess, db_url, hammer, load_jobs, make_board, postgres,  # noqa: F401
                           read, runs, setup_phases)
from dsr.cli import main


def test_kill_mid_submission_then_restart(db_url, tmp_path, runs, capsys):  # noqa: F811
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs)
    tokens = [board.add_team(f"team{t}") for t in range(3)]
    jobs = load_jobs(runs, tokens, per_team=12)            # 36 submissions, more than get through
    server = ServerProcess(db_url, tmp_path / "store", "--rate-limit", "0").start()
    results: list[dict] = []

    def send():
        results.extend(hammer(server.url, jobs, clients=6, timeout=30))

    sender = threading.Thread(target=send)
    sender.start()
    deadline = time.monotonic() + 60
    with board.engine.connect() as conn:     # wait until a few runs are in, then crash
        while conn.execute(text("select count(*) from submissions where not baseline")).scalar() < 5:
            assert time.monotonic() < deadline, "no submission got through"
            time.sleep(0.02)
            conn.rollback()
    server.kill()
    sender.join(timeout=120)
    assert not sender.is_alive()
    accepted = [r["body"]["id"] for r in results if r["status"] == 201]
    cut = [r for r in results if r["status"] == -1]
    assert accepted and cut, "the kill should land while submissions are under way"

    with board.engine.connect() as conn:
        rows = conn.execute(text("select id, sha256 from submissions where not baseline")).all()
    assert set(accepted) <= {i for i, _ in rows}                 # nothing acknowledged is lost
    assert all(board.store.verify(digest) for _, digest in rows)  # no row without its file

    with ServerProcess(db_url, tmp_path / "store", "--rate-limit", "0") as again:
        answer = httpx.post(f"{again.url}/api/submissions",
                            data={"collection": "sample", "phase": "public", "system": "after"},
                            files={"run": ("bm25.run", read(runs / "bm25.run"))},
                            headers={"Authorization": f"Bearer {tokens[0]}"}, timeout=60)
        assert answer.status_code == 201
        board_json = httpx.get(f"{again.url}/api/boards/sample/public", timeout=60).json()
        assert answer.json()["id"] in {r["id"] for r in board_json["rows"]}
    capsys.readouterr()
    assert main(["board", "rebuild", "--db", db_url, "--store", str(tmp_path / "store")]) == 0
    assert "rescored" in capsys.readouterr().out
    board.close()
