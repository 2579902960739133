"""Shared set-up for the leaderboard tests: real databases, real servers, real runs.

* ``postgres``: a throwaway PostgreSQL server from Debian's package (``initdb`` +
  ``pg_ctl`` in a temporary directory, loopback port); skipped with the reason
  when the binaries are missing. ``db_url`` is parametrised over SQLite and
  PostgreSQL (a fresh database per test), so every test that takes it runs on both.
* ``memory_root``, ``db_folder``: folders in memory (tmpfs) for SQLite databases that a test
  commits to thousands of times.
* ``runs``: run files made by dsr's rankers on the bundled ``sample`` collection.
* ``live_server``: the app under a real uvicorn on 127.0.0.1 and a free port.

The servers, runs and clients the benchmarks use too are ``tools/board_harness.py``'s;
they are re-exported here for the tests. The fixtures here (``postgres``, ``db_url``,
``runs``, ``setup``, ``browser``) are registered once for the whole suite by tests/conftest.py
(``pytest_plugins``): a test module takes them by name and never imports them, so the
session-scoped PostgreSQL starts once per run (per xdist worker), not once per module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.support import processes
from tests.support.tiers import require_slow, slow_fixture
from tools import board_harness
from tools.board_harness import (
    HIDDEN_SEED,
    Postgres,
    bench_database,
    fix_secret,
    free_port,
    hammer,
    load_jobs,
    make_board,
    migrated_sqlite,
    pg_bin,
    read,
    retag,
    sample_runs,
    setup_phases,
)

__all__ = [
    "HIDDEN_SEED",
    "Postgres",
    "ServerProcess",
    "bench_database",
    "free_port",
    "hammer",
    "load_jobs",
    "fix_secret",
    "make_board",
    "pg_bin",
    "read",
    "retag",
    "sample_runs",
    "setup_phases",
    "postgres",
    "db_url",
    "memory_root",
    "db_folder",
    "empty_database",
    "sqlite_template",
    "runs",
    "plain_rr",
    "LiveServer",
    "POST_ROUTES",
    "walk_every_route",
    "ForkedServers",
    "launcher",
    "engine_at",
    "migration_head",
    "OLD_TEAM",
    "OLD_PHASE",
    "OLD_SUBMISSION",
    "insert_row",
    "chromium",
    "browser",
    "CHROMIUM_FLAGS",
    "login_csrf",
    "post",
    "next_day",
    "quotas",
    "Attacker",
    "noisy",
]


class ServerProcess(board_harness.ServerProcess):
    """``dsr serve`` in its own process (tools/board_harness.py), started by a slow test only."""

    def start(self, *args, **kwargs):
        require_slow("a dsr serve process")
        return super().start(*args, **kwargs)


@pytest.fixture(scope="session")
@slow_fixture
def postgres():
    require_slow("PostgreSQL")
    bindir = pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    server = Postgres(bindir)
    # pg_ctl starts the server in a session of its own: an interrupted run would leave it
    watch = processes.stop_with_me(
        run=[[*server.as_user, str(bindir / "pg_ctl"), "-D", str(server.root / "data"), "-m", "immediate", "stop"]],
        remove=[str(server.root)],
    )
    try:
        server.start()
    except subprocess.CalledProcessError as err:
        server.stop()
        watch.release()
        pytest.fail(f"PostgreSQL did not start: {err.stderr.decode(errors='replace')[-800:]}")
    yield server
    server.stop()
    watch.release()


#: tmpfs: where an SQLite commit's fsync (``synchronous=FULL``: slow on a disk other
#: processes write to, one per grade) costs nothing, as the throwaway PostgreSQL runs with
#: fsync=off; what the tests prove is the same (a killed process loses no committed row either
#: way). For tests that commit thousands of times (test_quality's graded campaigns); the
#: boards of ``db_url`` commit tens of times and stay in tmp_path (no difference measured)
MEMORY = Path("/dev/shm")


@pytest.fixture(scope="session")
def memory_root(tmp_path_factory):
    """This process's folder for test databases in memory (:data:`MEMORY`; tmp_path_factory's
    folder where there is none), removed at the end of the run."""
    if not (MEMORY.is_dir() and os.access(MEMORY, os.W_OK)):
        yield tmp_path_factory.mktemp("databases")
        return
    folder = Path(tempfile.mkdtemp(prefix="dsr-test-db-", dir=MEMORY))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def db_folder(memory_root):
    """A test's own empty folder for its SQLite databases, in memory (:func:`memory_root`)."""
    return Path(tempfile.mkdtemp(dir=memory_root))


def empty_database(test):
    """Mark a test whose ``db_url`` must be empty (it migrates it itself: :func:`engine_at`)."""
    test.__dsr_empty_database__ = True
    return test


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """Where the SQLite database that ``db_url`` copies is made (on first use, per process)."""
    return tmp_path_factory.mktemp("template") / "board.sqlite"


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh database, SQLite in tmp_path or one on the throwaway PostgreSQL, with the schema
    at the head as a board's first start leaves it (a copy of one migrated once per process,
    with its own login secret: ``tools.board_harness.migrated_sqlite``,
    ``Postgres.migrated_database``); empty for a test marked :func:`empty_database`."""
    empty = getattr(request.function, "__dsr_empty_database__", False)
    if request.param == "sqlite":
        path = tmp_path / "board.sqlite"
        return f"sqlite:///{path}" if empty else migrated_sqlite(request.getfixturevalue("sqlite_template"), path)
    postgres = request.getfixturevalue("postgres")
    return postgres.new_database() if empty else postgres.migrated_database()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Run files on the ``sample`` collection from dsr's rankers, plus hidden labels
    (:func:`tools.board_harness.sample_runs`)."""
    return sample_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def setup(db_url, tmp_path, runs):
    """A board with the sample's public and hidden phases, team ``alpha`` (its token) and an
    in-process client of the board's app."""
    from fastapi.testclient import TestClient

    from dsr.board.app import create_app

    board = make_board(db_url, tmp_path)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    yield board, client, token
    client.close()
    board.close()


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


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
@slow_fixture
def chromium():
    """Debian's chromium, headless, driven by Playwright's Python API (its own browser
    download is never used), started once for a module's tests; skipped when either is
    missing."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
    with sync_api.sync_playwright() as pw:
        launch = lambda: pw.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)  # noqa: E731
        browser, started = processes.started_by(launch, named="chrom")
        # Playwright starts the browser in a process group of its own (and its crash handlers
        # leave it): killed with the run however it ends
        watch = processes.stop_with_me(kill=started)
        yield browser
        browser.close()
    watch.release()


@pytest.fixture
@slow_fixture
def browser(chromium):
    """The module's chromium (:func:`chromium`), with no browser context open: each test opens
    its own (its cookies, storage and cache), and what it leaves open is closed after it."""
    assert not chromium.contexts
    yield chromium
    for context in chromium.contexts:
        context.close()


class LiveServer:
    """The app under a real uvicorn in a thread on 127.0.0.1:PORT."""

    def __init__(self, board):
        import uvicorn

        from dsr.server import create_site

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(create_site(board), host="127.0.0.1", port=self.port, log_level="warning", limit_concurrency=200)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        require_slow("a uvicorn server")
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


def login_csrf(page: str) -> str:
    """The CSRF field of a page's form (a logged-out form's is bound to the browser's cookie)."""
    import re

    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


#: the routes that only take POSTs (a walk of GETs leaves them out, and fails on a new one)
POST_ROUTES = {
    "/login",
    "/logout",
    "/submit",
    "/api/submissions",
    "/judge/login",
    "/judge/logout",
    "/judge/{name}/task/{seq}",
    "/judge/api/grades",
}


def walk_every_route(
    client, token: str, values: dict[str, list], queries: dict[str, list[str]], post_routes=POST_ROUTES
) -> tuple[dict[str, str], set[str]]:
    """GET every route of the app (``dsr.board.app.all_routes``: pages, API, exports, static
    files) with every value of its path parameters and each query of ``queries``, as three
    identities: anonymous, API token and a logged-in browser session. Returns the bodies by
    "WHO GET URL" and the route paths walked; fails on a route it cannot fill."""
    from fastapi.testclient import TestClient
    from starlette.routing import Mount

    from dsr.board.app import all_routes

    app = client.app
    browser = TestClient(app)
    login = browser.get("/login").text
    browser.post("/login", data={"token": token, "csrf": login_csrf(login)})
    headers = {"anonymous": {}, "token": {"Authorization": f"Bearer {token}"}}
    bodies: dict[str, str] = {}
    seen = set()
    for route in all_routes(app):
        if isinstance(route, Mount):  # static files: walk each one
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
import json, os, sys
import alembic.command, alembic.config, dsr.cli, dsr.board.app, dsr.board.routes, dsr.board.service
import dsr.board.release, dsr.board.scoring, dsr.board.workers, dsr.server
import psycopg, uvicorn   # the imports a start costs, paid once; and uvicorn's own, made by load(),
uvicorn.Config(lambda scope, receive, send: None, log_level="warning").load()
dsr.board.release.warm()  # and scipy.stats, which a start's warm-up imports (1-2 s each time)
for line in sys.stdin:
    if line.startswith("reap "):           # wait for a killed server, so its pid is gone
        os.waitpid(int(line.split()[1]), 0)
        print("reaped", flush=True)
        continue
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:                           # the server: dsr serve, as an organiser runs it
        if job["log"]:                     # its stderr (and its children's) to its test's log
            os.dup2(os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), 2)
        os._exit(dsr.cli.main(job["argv"]))
    print(pid, flush=True)
"""


class ForkedServers:
    """``dsr serve`` processes forked from one launcher that has imported dsr already (and
    scipy.stats, which a start's warm-up imports: most of each start otherwise), so a kill
    test can start (and SIGKILL) a real server many times in a few seconds. Each start still
    runs all of ``dsr serve``: its checks, the migration, recovery, its scoring workers (their
    forkserver is a new interpreter), the warm-up and uvicorn."""

    def __init__(self, log: Path):
        import sys

        require_slow("dsr serve processes")
        root = Path(__file__).resolve().parents[2]
        self.log = open(log, "ab")
        self.launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER],
            cwd=root,
            text=True,
            env={**os.environ, "PYTHONPATH": str(root)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )

    def _ask(self, line: str) -> str:
        self.launcher.stdin.write(line + "\n")
        self.launcher.stdin.flush()
        return self.launcher.stdout.readline().strip()

    def start(self, *serve_args: str, timeout: float = 30, log: Path | None = None) -> tuple[int, str]:
        """(pid, url) of a new server, once it answers /healthz; its stderr goes to ``log``
        (else to the launcher's)."""
        import httpx

        port = free_port()
        job = {"argv": ["serve", "--port", str(port), *serve_args], "log": str(log) if log else None}
        pid = int(self._ask(json.dumps(job)))
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return pid, url
            except httpx.HTTPError:
                time.sleep(0.02)
        raise RuntimeError(f"the forked dsr serve did not answer; see {log or self.log.name}")

    def kill(self, pid: int) -> None:
        """SIGKILL (no handler runs), then reap it."""
        import signal

        os.kill(pid, signal.SIGKILL)
        assert self._ask(f"reap {pid}") == "reaped"

    def close(self) -> None:
        self.launcher.stdin.close()
        self.launcher.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
@slow_fixture
def launcher(tmp_path_factory):
    """One :class:`ForkedServers` for a module's tests (its start, seconds of imports, paid once);
    a test gives each start its own log."""
    servers = ForkedServers(tmp_path_factory.mktemp("launcher") / "launcher.log")
    yield servers
    servers.close()


def engine_at(db_url: str, revision: str):
    """An engine on ``db_url`` (an empty database: a test taking ``db_url`` is marked
    :func:`empty_database`) with the schema upgraded to ``revision`` only (a board of an older
    version, to test the upgrade from it with rows in it)."""
    from sqlalchemy import inspect

    from dsr.db.engine import make_engine, migrate

    engine = make_engine(db_url)
    assert not inspect(engine).get_table_names(), f"{db_url} is not empty: mark the test @empty_database"
    migrate(engine, revision)
    return engine


#: rows of a board made by an older dsr, in the columns every schema since the first has: a test
#: of an upgrade adds what its version had beside them (:func:`insert_row`)
OLD_TEAM = {"id": 1, "name": "alpha", "token_hash": "0" * 64, "organiser": False, "created_at": "2026-11-01 00:00:00"}
OLD_PHASE = {
    "id": 1,
    "collection": "sample",
    "name": "public",
    "collection_ref": "sample",
    "hidden": False,
    "description": "",
    "measures_json": '["RR"]',
    "created_at": "2026-11-01 00:00:00",
}
OLD_SUBMISSION = {
    "phase_id": 1,
    "team_id": 1,
    "system": "x",
    "description": "",
    "link": "",
    "run_type": "automatic",
    "trained_on_collection": False,
    "baseline": False,
    "filename": "x.run",
    "sha256": "e" * 64,
    "size": 1,
    "lines": 1,
    "means_json": "{}",
    "created_at": "2026-11-01 00:00:00",
}


def insert_row(conn, table: str, **row) -> None:
    """``insert into TABLE`` the columns of ``row``, in SQL: a row as an older schema held it
    (dsr's models describe the newest schema only)."""
    from sqlalchemy import text

    conn.execute(text(f"insert into {table} ({', '.join(row)}) values ({', '.join(':' + c for c in row)})"), row)


def migration_head() -> str:
    """The newest migration shipped in dsr/migrations."""
    from dsr.db.engine import revisions

    return revisions()[-1]


# --- a hidden phase's attacker (tests/board/test_board_release.py, test_board_attacks.py) ----


def post(client, token, data: bytes, system: str, phase: str = "test", collection: str = "sample"):
    return client.post(
        "/api/submissions",
        data={"collection": collection, "phase": phase, "system": system},
        files={"run": ("run.run", data)},
        headers={"Authorization": f"Bearer {token}"},
    )


def next_day(board) -> None:
    """A day passes: every row's time moves back one day (the daily quota starts again)."""
    from datetime import timedelta

    from sqlalchemy import select

    from dsr.board.models import Submission
    from dsr.db.engine import write_session

    with write_session(board.engine) as s:
        for row in s.scalars(select(Submission)):
            row.created_at = row.created_at - timedelta(days=1)


def quotas(client, collection: str = "sample", phase: str = "test") -> tuple[int | None, int | None]:
    board = next(b for b in client.get("/api/boards").json()["boards"] if b["collection"] == collection and b["phase"] == phase)
    return board["daily_quota"], board["total_quota"]


class Attacker:
    """A team that submits within the board's quotas, waiting a day when the daily one is spent."""

    def __init__(self, board, client, name: str, phase: str = "test", collection: str = "sample"):
        self.board, self.client, self.phase, self.collection = board, client, phase, collection
        self.token = board.members.add_team(name)
        self.daily, self.total = quotas(client, collection, phase)
        self.sent = self.today = 0
        self.ids: list[int] = []

    def left(self, default: int) -> int:
        return (self.total if self.total is not None else default) - self.sent

    def submit(self, data: bytes, system: str) -> dict:
        if self.daily is not None and self.today >= self.daily:
            next_day(self.board)
            self.today = 0
        answer = post(self.client, self.token, data, system, self.phase, self.collection)
        assert answer.status_code == 201, answer.text[:400]
        self.sent, self.today = self.sent + 1, self.today + 1
        self.ids.append(answer.json()["id"])
        return answer.json()


def noisy(board, run_ids: list[int], k: int, group: str, measure: str, mean: float, n: int) -> float:
    """What a hidden phase publishes of the ``k``-th of a team's runs (``run_ids``, in order)
    when it moves a value: ``mean`` plus the team's noise for that run, on the group's grid
    (``dsr.board.release``; the test knows the board's secret, a participant does not)."""
    from dsr.board import release

    row = board.submission(run_ids[k])
    noise = board.release_noise(board.phases.get_phase(row.phase.collection, row.phase.name), row.team_id, run_ids)
    return release.published(mean + release.NOISE / n * noise.draw(k, group, measure), release.group_step(n))
