"""Shared set-up for the leaderboard tests: real databases, real servers, real runs.

* ``postgres``: a throwaway PostgreSQL server from Debian's package (``initdb`` +
  ``pg_ctl`` in a temporary directory, loopback port); skipped with the reason
  when the binaries are missing. ``db_url`` is parametrised over SQLite and
  PostgreSQL (a fresh database per test), so every test that takes it runs on both.
* ``runs``: run files made by dsr's rankers on the bundled ``sample`` collection.
* ``live_server``: the app under a real uvicorn on 127.0.0.1 and a free port.

The servers, runs and clients themselves are ``tools/board_harness.py``'s, which
``bench/bench_board.py`` uses too; they are re-exported here for the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from board_harness import (HIDDEN_SEED, Postgres, ServerProcess, free_port, hammer, load_jobs,
                           make_board, pg_bin, read, sample_runs, setup_phases)

__all__ = ["HIDDEN_SEED", "Postgres", "ServerProcess", "free_port", "hammer", "load_jobs", "make_board",
           "pg_bin", "read", "sample_runs", "setup_phases", "postgres", "db_url", "runs", "plain_rr",
           "LiveServer"]


@pytest.fixture(scope="session")
def postgres():
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    server = Postgres(bindir)
    try:
        server.start()
    except subprocess.CalledProcessError as err:
        server.stop()
        pytest.fail(f"PostgreSQL did not start: {err.stderr.decode(errors='replace')[-800:]}")
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database: SQLite in tmp_path, or one on the throwaway PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'board.sqlite'}"
    return request.getfixturevalue("postgres").new_database()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Run files on the ``sample`` collection from dsr's rankers, plus hidden labels
    (:func:`board_harness.sample_runs`)."""
    return sample_runs(tmp_path_factory.mktemp("runs"))


def plain_rr(run_path: Path, labels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Reciprocal rank of the first relevant doc per topic, from the file's scores (no ties)."""
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line in Path(run_path).read_text().splitlines():
        qid, _, doc, _rank, score, _tag = line.split()
        ranked.setdefault(qid, []).append((float(score), doc))
    out = {}
    for qid, docs in labels.items():
        order = [d for _, d in sorted(ranked.get(qid, []), reverse=True)]
        out[qid] = next((1 / (i + 1) for i, d in enumerate(order) if docs.get(d, 0) >= 1), 0.0)
    return out


class LiveServer:
    """The app under a real uvicorn in a thread on 127.0.0.1:PORT."""

    def __init__(self, board):
        import uvicorn

        from eval.board.app import create_app

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_app(board), host="127.0.0.1", port=self.port,
                                log_level="warning", limit_concurrency=200)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=30)


