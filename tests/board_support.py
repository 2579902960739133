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


def retag(data: bytes, tag: str) -> bytes:
    """The same run (same lines, same scores) under another tag: other bytes, so a board
    does not take it for a duplicate."""
    return b"".join(line.rsplit(b" ", 1)[0] + b" " + tag.encode() + b"\n"
                    for line in data.splitlines())


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


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync"]


@pytest.fixture
def browser():
    """Debian's chromium, headless, driven by Playwright's Python API (its own browser
    download is never used); skipped when either is missing."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


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
        for t, token in enumerate(tokens):   # each run text once per board (no duplicate)
            jobs.append({"token": token, "team": t, "phase": "test" if k % 2 == 0 else "public",
                         "system": f"team{t}-{k}", "run": retag(files[(k + t) % len(files)], f"t{t}-{k}")})
    return jobs


#: the routes that only take POSTs (a walk of GETs leaves them out, and fails on a new one)
POST_ROUTES = {"/login", "/logout", "/submit", "/api/submissions"}


def walk_every_route(client, token: str, values: dict[str, list], queries: dict[str, list[str]],
                     post_routes=POST_ROUTES) -> tuple[dict[str, str], set[str]]:
    """GET every route of the app (``eval.board.app.all_routes``: pages, API, exports, static
    files) with every value of its path parameters and each query of ``queries``, as three
    identities: anonymous, API token and a logged-in browser session. Returns the bodies by
    "WHO GET URL" and the route paths walked; fails on a route it cannot fill."""
    from fastapi.testclient import TestClient
    from starlette.routing import Mount

    from eval.board.app import all_routes

    app = client.app
    browser = TestClient(app)
    browser.get("/login")
    browser.post("/login", data={"token": token, "csrf": browser.cookies.get("dsr_csrf")})
    headers = {"anonymous": {}, "token": {"Authorization": f"Bearer {token}"}}
    bodies: dict[str, str] = {}
    seen = set()
    for route in all_routes(app):
        if isinstance(route, Mount):   # static files: walk each one
            for path in sorted(p.name for p in Path(route.app.directory).iterdir()):
                bodies[f"{route.path}/{path}"] = client.get(f"{route.path}/{path}").text
            continue
        methods = set(route.methods) - {"HEAD"}
        if methods == {"POST"}:
            assert route.path in post_routes, f"new POST route {route.path}: add it to this walk"
            continue
        assert methods == {"GET"}, route.path
        seen.add(route.path)
        params = route.param_convertors
        unknown = set(params) - set(values)
        assert not unknown, f"route {route.path} has parameters {unknown} this walk cannot fill"
        urls = [route.path]
        for name in params:
            urls = [u.replace("{" + name + "}", str(v)) for u in urls for v in values[name]]
        for url in urls:
            for query in queries.get(route.path, [""]):
                for who, head in headers.items():
                    bodies[f"{who} GET {url}{query}"] = client.get(url + query, headers=head).text
                bodies[f"session GET {url}{query}"] = browser.get(url + query).text
    browser.close()
    return bodies, seen


LAUNCHER = r"""
import os, sys
import alembic.command, alembic.config, dsr.cli, eval.board.app, eval.board.routes, eval.board.service
import psycopg, uvicorn   # the imports a start costs, paid once; and uvicorn's own, made by load():
uvicorn.Config(lambda scope, receive, send: None, log_level="warning").load()
for line in sys.stdin:
    args = line.split()
    if args[0] == "reap":                  # wait for a killed server, so its pid is gone
        os.waitpid(int(args[1]), 0)
        print("reaped", flush=True)
        continue
    pid = os.fork()
    if pid == 0:                           # the server: dsr serve, as an organiser runs it
        os._exit(dsr.cli.main(args))
    print(pid, flush=True)
"""


class ForkedServers:
    """``dsr serve`` processes forked from one launcher that has imported dsr already, so a
    kill test can start (and SIGKILL) a real server many times in a few seconds."""

    def __init__(self, log: Path):
        import sys

        root = Path(__file__).resolve().parents[1]
        self.log = open(log, "ab")
        self.launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER], cwd=root, text=True,
                                         env={**os.environ, "PYTHONPATH": str(root)},
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)

    def _ask(self, line: str) -> str:
        self.launcher.stdin.write(line + "\n")
        self.launcher.stdin.flush()
        return self.launcher.stdout.readline().strip()

    def start(self, *serve_args: str, timeout: float = 30) -> tuple[int, str]:
        """(pid, url) of a new server, once it answers /healthz."""
        import httpx

        port = free_port()
        pid = int(self._ask(" ".join(["serve", "--port", str(port), *serve_args])))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return pid, url
            except httpx.HTTPError:
                time.sleep(0.02)
        raise RuntimeError(f"the forked dsr serve did not answer; see {self.log.name}")

    def kill(self, pid: int) -> None:
        """SIGKILL (no handler runs), then reap it."""
        import signal

        os.kill(pid, signal.SIGKILL)
        assert self._ask(f"reap {pid}") == "reaped"

    def close(self) -> None:
        self.launcher.stdin.close()
        self.launcher.wait(timeout=30)
        self.log.close()
