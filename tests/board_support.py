"""Shared set-up for the leaderboard tests: real databases, real servers, real runs.

* ``postgres``: a throwaway PostgreSQL server from Debian's package (``initdb`` +
  ``pg_ctl`` in a temporary directory, loopback port); skipped with the reason
  when the binaries are missing. ``db_url`` is parametrised over SQLite and
  PostgreSQL (a fresh database per test), so every test that takes it runs on both.
* ``runs``: run files made by dsr's rankers on the bundled ``sample`` collection.
* ``live_server``: the app under a real uvicorn on 127.0.0.1 and a free port.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from eval.qrels import write_qrels

PG_BIN_DIRS = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
HIDDEN_SEED = 7
_db_counter = itertools.count()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pg_bin() -> Path | None:
    for folder in PG_BIN_DIRS:
        if Path(folder, "initdb").is_file() and Path(folder, "pg_ctl").is_file():
            return Path(folder)
    found = shutil.which("pg_ctl")
    return Path(found).parent if found and Path(found).with_name("initdb").is_file() else None


class Postgres:
    """A PostgreSQL cluster in a temporary directory; root runs it as the postgres user."""

    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="dsr-pg-"))
        self.port = free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:    # PostgreSQL refuses to run as root
            shutil.chown(self.root, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        (self.root / "sock").mkdir()
        if self.as_user:
            shutil.chown(self.root / "sock", "postgres", "postgres")

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        data = self.root / "data"
        self._run(str(self.bindir / "initdb"), "-D", str(data), "-U", "dsr", "--auth=trust",
                  "-E", "UTF8", "--no-locale")
        options = (f"-p {self.port} -k {self.root / 'sock'} -c listen_addresses=127.0.0.1 "
                   "-c max_connections=200 -c fsync=off -c synchronous_commit=off")
        self._run(str(self.bindir / "pg_ctl"), "-D", str(data), "-o", options,
                  "-l", str(self.root / "log"), "-w", "-t", "60", "start")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def new_database(self) -> str:
        import psycopg

        name = f"board_{os.getpid()}_{next(_db_counter)}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=dsr dbname=postgres",
                             autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://dsr@127.0.0.1:{self.port}/{name}"


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
    """Run files on the ``sample`` collection from dsr's rankers, plus hidden labels.

    ``initial``, ``bm25`` and ``random0..4``; ``hidden.qrels``: graded labels
    (0-3, seeded) that differ from the collection's, for a hidden phase.
    """
    from retrieval.collections import load_collection
    from retrieval.rankers import make_ranker

    folder = tmp_path_factory.mktemp("runs")
    patch = pytest.MonkeyPatch()
    patch.setenv("DSR_HOME", str(folder / "home"))
    try:
        collection = load_collection("sample")
        make_ranker("initial").rank(collection).write(folder / "initial.run")
        make_ranker("bm25").rank(collection).write(folder / "bm25.run")
        for seed in range(5):
            make_ranker("random", seed=seed).rank(collection).write(folder / f"random{seed}.run")
    finally:
        patch.undo()
    rng = np.random.default_rng(HIDDEN_SEED)
    hidden = {}
    for d in collection.dialogues:
        grades = rng.choice([0, 0, 0, 1, 2, 3], size=len(d.candidates))
        grades[rng.integers(len(grades))] = 3          # every topic has a relevant candidate
        hidden[d.id] = {c.id: int(g) for c, g in zip(d.candidates, grades)}
    write_qrels(hidden, folder / "hidden.qrels")
    return folder


def read(path: Path) -> bytes:
    return Path(path).read_bytes()


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


def make_board(db_url: str, tmp_path: Path, **config):
    from eval.board.service import Board, BoardConfig

    config.setdefault("rate_per_minute", 0)
    return Board(BoardConfig(db=db_url, store=tmp_path / "store", **config))


def setup_phases(board, runs: Path, daily_quota=None, total_quota=None):
    """sample/public (baseline: initial) and sample/test (hidden labels, quotas)."""
    from eval.board.admin import add_baselines
    from eval.qrels import read_qrels

    public = board.add_phase("sample", "public")
    hidden = board.add_phase("sample", "test", hidden=True, labels=read_qrels(runs / "hidden.qrels"),
                             daily_quota=daily_quota, total_quota=total_quota)
    add_baselines(board, public, [str(runs / "initial.run")])
    add_baselines(board, hidden, [str(runs / "initial.run")])
    return board.get_phase("sample", "public"), board.get_phase("sample", "test")


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


class ServerProcess:
    """``dsr serve`` in a subprocess (what an organiser runs), on 127.0.0.1 and a free port."""

    def __init__(self, db_url: str, store: Path, *extra: str, env: dict | None = None):
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        root = Path(__file__).resolve().parents[1]
        self.command = [sys.executable, "-m", "dsr.cli", "serve", "--db", db_url, "--store",
                        str(store), "--port", str(self.port), *extra]
        self.env = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
        self.cwd = root
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "ServerProcess":
        import httpx

        self.process = subprocess.Popen(self.command, cwd=self.cwd, env=self.env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dsr serve exited: {self.process.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("dsr serve did not answer in time")

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs (a crash)."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def hammer(url: str, jobs: list[dict], clients: int, timeout: float = 120.0) -> list[dict]:
    """Send ``jobs`` ({token, phase, system, run: bytes}) from ``clients`` concurrent clients
    (one HTTP connection each); returns each job with its ``status`` and ``seconds``."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    queues = [jobs[i::clients] for i in range(clients)]

    def client(queue):
        out = []
        with httpx.Client(base_url=url, timeout=timeout) as http:
            for job in queue:
                start = time.perf_counter()
                try:
                    answer = http.post("/api/submissions",
                                       data={"collection": "sample", "phase": job["phase"],
                                             "system": job["system"]},
                                       files={"run": ("run.run", job["run"])},
                                       headers={"Authorization": f"Bearer {job['token']}"})
                    status, body = answer.status_code, answer.json()
                except httpx.HTTPError as err:
                    status, body = -1, {"error": str(err)}
                out.append({**job, "status": status, "body": body,
                            "seconds": time.perf_counter() - start})
        return out

    with ThreadPoolExecutor(clients) as pool:
        return [r for part in pool.map(client, queues) for r in part]


def load_jobs(runs: Path, tokens: list[str], per_team: int) -> list[dict]:
    """``per_team`` submissions per team, alternating the hidden (quota) and public phases."""
    files = [read(runs / f"random{i}.run") for i in range(5)] + [read(runs / "bm25.run")]
    jobs = []
    for k in range(per_team):
        for t, token in enumerate(tokens):
            jobs.append({"token": token, "team": t, "phase": "test" if k % 2 == 0 else "public",
                         "system": f"team{t}-{k}", "run": files[(k + t) % len(files)]})
    return jobs
