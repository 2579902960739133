"""Real servers and real runs for the leaderboard's tests and benchmarks.

* :class:`Postgres`: a throwaway PostgreSQL server from Debian's package (``initdb`` +
  ``pg_ctl`` in a temporary directory, a loopback port); :func:`pg_bin` finds the binaries,
  :func:`bench_database` gives a benchmark a fresh database URL.
* :class:`ServerProcess`: ``dsr serve`` in a subprocess on 127.0.0.1 and a free port.
* :func:`sample_runs`: run files made by dsr's rankers on the bundled ``sample``
  collection, and hidden labels for a hidden phase; :func:`make_board` and
  :func:`setup_phases` a board with a public and a hidden phase.
* :func:`hammer` and :func:`load_jobs`: concurrent clients submitting runs.

``tests/support/board.py`` (the pytest fixtures) and the benchmarks
(``bench/bench_board.py``, ``bench/bench_judging.py``) both use them, so a benchmark
measures exactly what the tests check.
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

from dsr.evaluation.qrels import write_qrels

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
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            shutil.chown(self.root, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        (self.root / "sock").mkdir()
        if self.as_user:
            shutil.chown(self.root / "sock", "postgres", "postgres")
        self._template: str | None = None  # a database at the head, copied by migrated_database

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        data = self.root / "data"
        self._run(str(self.bindir / "initdb"), "-D", str(data), "-U", "dsr", "--auth=trust", "-E", "UTF8", "--no-locale")
        options = (
            f"-p {self.port} -k {self.root / 'sock'} -c listen_addresses=127.0.0.1 "
            "-c max_connections=200 -c fsync=off -c synchronous_commit=off"
        )
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(self.root / "log"), "-w", "-t", "60", "start"
        )

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def cpu_seconds(self) -> float:
        """CPU time the cluster's processes (the postmaster and its backends) have used so far."""
        with contextlib.suppress(OSError, ValueError):
            return tree_cpu_seconds(int((self.root / "data" / "postmaster.pid").read_text().split()[0]))
        return 0.0

    def new_database(self, template: str | None = None) -> str:
        """A new, empty database (or a copy of the database ``template``): its URL."""
        import psycopg

        name = f"board_{os.getpid()}_{next(_db_counter)}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=dsr dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return f"postgresql://dsr@127.0.0.1:{self.port}/{name}"

    def migrated_database(self) -> str:
        """A new database with the schema at the head, as a board's first start leaves it: a
        copy (``CREATE DATABASE ... TEMPLATE``) of one migrated once on this server, with a
        login secret of its own (:func:`new_login_secret`). A board opened on it finds its
        migrations done; the migrations themselves are tested on empty databases."""
        if self._template is None:
            from dsr.db.engine import make_engine, migrate

            url = self.new_database()
            engine = make_engine(url)
            migrate(engine)
            engine.dispose()  # a template takes no connections while it is copied
            self._template = url.rsplit("/", 1)[1]
        url = self.new_database(self._template)
        new_login_secret(url)
        return url


def migrated_sqlite(template: Path, path: Path) -> str:
    """An SQLite database at ``path`` with the schema at the head: a copy of ``template`` (made
    by :func:`dsr.db.engine.migrate` on an empty file, and closed) with a login secret of its
    own. Its URL."""
    if not template.is_file():
        from dsr.db.engine import make_engine, migrate

        engine = make_engine(f"sqlite:///{template}")
        migrate(engine)
        engine.dispose()  # the last connection's close checkpoints the WAL into the file
    assert not template.with_name(template.name + "-wal").exists(), "the template's WAL was not checkpointed"
    shutil.copyfile(template, path)
    url = f"sqlite:///{path}"
    new_login_secret(url)
    return url


def new_login_secret(url: str) -> None:
    """Draw the board's login secret anew, as migration 0005 does for each new database (a copy
    of a migrated database would share its template's)."""
    import secrets

    from dsr.db.engine import make_engine

    engine = make_engine(url)
    set_login_secret(engine, secrets.token_bytes(32))
    engine.dispose()


def set_login_secret(engine, secret: bytes) -> None:
    """Put ``secret`` in the row of the board's login secret that migration 0005 made."""
    from sqlalchemy import text

    with engine.begin() as conn:
        done = conn.execute(text("UPDATE board_settings SET value = :v WHERE name = 'login_secret'"), {"v": secret.hex()})
        assert done.rowcount == 1, "no login secret in the migrated database"


def sample_runs(folder: Path) -> Path:
    """Run files on the ``sample`` collection from dsr's rankers, plus hidden labels, in ``folder``.

    ``initial``, ``bm25`` and ``random0..4``; ``hidden.qrels``: graded labels
    (0-3, seeded) that differ from the collection's, for a hidden phase. The
    rankers' caches go to ``folder/home`` (``DSR_HOME`` is restored afterwards).
    """
    from dsr.collections import load_collection
    from dsr.rankers import make_ranker

    before = os.environ.get("DSR_HOME")
    os.environ["DSR_HOME"] = str(folder / "home")
    try:
        collection = load_collection("sample")
        make_ranker("initial").rank(collection).write(folder / "initial.run")
        make_ranker("bm25").rank(collection).write(folder / "bm25.run")
        for seed in range(5):
            make_ranker("random", seed=seed).rank(collection).write(folder / f"random{seed}.run")
    finally:
        if before is None:
            os.environ.pop("DSR_HOME", None)
        else:
            os.environ["DSR_HOME"] = before
    rng = np.random.default_rng(HIDDEN_SEED)
    hidden = {}
    for d in collection.dialogues:
        grades = rng.choice([0, 0, 0, 1, 2, 3], size=len(d.candidates))
        grades[rng.integers(len(grades))] = 3  # every topic has a relevant candidate
        hidden[d.id] = {c.id: int(g) for c, g in zip(d.candidates, grades)}
    write_qrels(hidden, folder / "hidden.qrels")
    return folder


def read(path: Path) -> bytes:
    return Path(path).read_bytes()


def retag(data: bytes, tag: str) -> bytes:
    """The same run (same lines, same scores) under another tag: other bytes, so a board
    does not take it for a duplicate."""
    return b"".join(line.rsplit(b" ", 1)[0] + b" " + tag.encode() + b"\n" for line in data.splitlines())


def make_board(db_url: str, tmp_path: Path, **config):
    from dsr.board.service import Board, BoardConfig

    config.setdefault("rate_limit", 0)
    return Board(BoardConfig(db=db_url, store=tmp_path / "store", **config))


def fix_secret(board, secret: bytes) -> None:
    """Give ``board`` a known secret in place of the random one migration 0005 made, so that
    its release noise (keyed by the secret, the phase and the team) draws the same values in
    every test run: a test then asserts exact published values instead of likely ones."""
    set_login_secret(board.engine, secret)
    board.context.login_secret(refresh=True)  # the board keeps the secret it read


def setup_phases(board, runs: Path, daily_quota=None, total_quota=None):
    """sample/public (baseline: initial) and sample/test (hidden labels, quotas)."""
    from dsr.board.admin import add_baselines
    from dsr.evaluation.qrels import read_qrels

    public = board.phases.add_phase("sample", "public")
    hidden = board.phases.add_phase(
        "sample", "test", hidden=True, labels=read_qrels(runs / "hidden.qrels"), daily_quota=daily_quota, total_quota=total_quota
    )
    add_baselines(board, public, [str(runs / "initial.run")])
    add_baselines(board, hidden, [str(runs / "initial.run")])
    return board.phases.get_phase("sample", "public"), board.phases.get_phase("sample", "test")


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (Linux)."""
    out, todo = [], [pid]
    while todo:
        pid = todo.pop()
        out.append(pid)
        for task in Path(f"/proc/{pid}/task").glob("*"):
            with contextlib.suppress(OSError):
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


def tree_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by ``pid`` and its descendants (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for each in process_tree(pid):
        with contextlib.suppress(OSError, IndexError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


class ServerProcess:
    """``dsr serve`` in a subprocess (what an organiser runs), on 127.0.0.1 and a free port."""

    def __init__(self, db_url: str, store: Path, *extra: str, env: dict | None = None, root: Path | None = None):
        """``root``: the checkout whose ``dsr`` runs (default this one; a benchmark runs another
        commit's beside it)."""
        import sys

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
        self.command = [
            sys.executable,
            "-m",
            "dsr.cli",
            "serve",
            "--db",
            db_url,
            "--store",
            str(store),
            "--port",
            str(self.port),
            *extra,
        ]
        self.env = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
        self.cwd = root
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> ServerProcess:
        import httpx

        self.process = subprocess.Popen(
            self.command, cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
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

    def processes(self) -> list[int]:
        """The server's process and all its descendants (server processes, scoring workers)."""
        return process_tree(self.process.pid)

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server's processes have used so far (Linux)."""
        return tree_cpu_seconds(self.process.pid)

    def settle(self, quiet: float = 1.0, timeout: float = 180) -> None:
        """Wait until the server's processes stop using CPU for ``quiet`` seconds: every
        process of ``--processes N`` started and warmed up (``/healthz`` answers from the
        first one ready)."""
        deadline = time.monotonic() + timeout
        last = self.cpu_seconds()
        while time.monotonic() < deadline:
            time.sleep(quiet)
            now = self.cpu_seconds()
            if now - last < 0.02 * quiet:
                return
            last = now


def multipart(job: dict, boundary: str = "dsr-bench-boundary") -> tuple[bytes, str]:
    """A submission form as ``dsr submit`` sends it (collection, phase, system, the run
    file), encoded: the body and its content type."""
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in (("collection", "sample"), ("phase", job["phase"]), ("system", job["system"]))
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="run"; filename="run.run"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + job["run"]
        + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@contextlib.contextmanager
def _httpx_client(url: str, timeout: float):
    """:func:`hammer`'s default client (httpx), its connection open: ``(prepare, send)``."""
    import httpx

    with httpx.Client(base_url=url, timeout=timeout) as http:
        http.get("/healthz")

        def send(job: dict) -> tuple[int, dict, bool]:
            try:
                key = {"Idempotency-Key": job["key"]} if job.get("key") else {}
                answer = http.post(
                    "/api/submissions",
                    data={"collection": "sample", "phase": job["phase"], "system": job["system"]},
                    files={"run": ("run.run", job["run"])},
                    headers={"Authorization": f"Bearer {job['token']}", **key},
                )
                return answer.status_code, answer.json(), answer.headers.get("Idempotency-Replayed") == "true"
            except httpx.HTTPError as err:
                return -1, {"error": str(err)}, False

        yield (lambda job: job), send


@contextlib.contextmanager
def _lean_client(url: str, timeout: float):
    """:func:`hammer`'s lean client (the standard library's ``http.client``, each form encoded by
    ``prepare`` before the timed requests), its connection open: ``(prepare, send)``."""
    import http.client
    import json
    from urllib.parse import urlsplit

    address = urlsplit(url)
    conn = http.client.HTTPConnection(address.hostname, address.port, timeout=timeout)
    conn.request("GET", "/healthz")
    conn.getresponse().read()

    def prepare(job: dict) -> tuple[bytes, dict]:
        form, kind = multipart(job)
        headers = {"Authorization": f"Bearer {job['token']}", "Content-Type": kind}
        if job.get("key"):
            headers["Idempotency-Key"] = job["key"]
        return form, headers

    def send(prepared: tuple[bytes, dict]) -> tuple[int, dict, bool]:
        form, headers = prepared
        try:
            conn.request("POST", "/api/submissions", body=form, headers=headers)
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read()), answer.getheader("Idempotency-Replayed") == "true"
        except (OSError, http.client.HTTPException) as err:
            conn.close()  # the next request opens a new connection
            return -1, {"error": str(err)}, False

    try:
        yield prepare, send
    finally:
        conn.close()


def hammer(url: str, jobs: list[dict], clients: int, timeout: float = 120.0, lean: bool = False) -> list[dict]:
    """Send ``jobs`` ({token, phase, system, run: bytes}, optionally ``key``: an
    Idempotency-Key) from ``clients`` concurrent clients (one HTTP connection each); returns
    each job with its ``status``, ``body``, ``replayed`` and ``seconds``.

    Every client makes its HTTP client and opens its connection (``GET /healthz``) before
    any submission is timed, and all start together: the first submissions' times were the
    bench's own start (20 httpx clients, each loading its TLS context, under this process's
    one GIL), not the server's. ``lean``: the standard library's ``http.client`` with every
    form encoded before the timed requests, a load generator that takes about a tenth of
    httpx's CPU a request, so that on a small machine the clients, which share its cores with
    the server, leave more of them to the server (as clients on other machines would)."""
    from concurrent.futures import ThreadPoolExecutor

    queues = [jobs[i::clients] for i in range(clients)]
    ready = threading.Barrier(clients)
    opened = _lean_client if lean else _httpx_client

    def client(queue):
        out = []
        with opened(url, timeout) as (prepare, send):
            requests = [prepare(job) for job in queue]
            ready.wait()
            for job, request in zip(queue, requests):
                start = time.perf_counter()
                status, body, replayed = send(request)
                out.append({**job, "status": status, "body": body, "replayed": replayed, "seconds": time.perf_counter() - start})
        return out

    with ThreadPoolExecutor(clients) as pool:
        return [r for part in pool.map(client, queues) for r in part]


def load_jobs(runs: Path, tokens: list[str], per_team: int, keys: bool = False) -> list[dict]:
    """``per_team`` submissions per team, alternating the hidden (quota) and public phases;
    ``keys``: each with its own Idempotency-Key, as ``dsr submit`` sends."""
    files = [read(runs / f"random{i}.run") for i in range(5)] + [read(runs / "bm25.run")]
    jobs = []
    for k in range(per_team):
        for t, token in enumerate(tokens):  # each run text once per board (no duplicate)
            jobs.append(
                {
                    "token": token,
                    "team": t,
                    "phase": "test" if k % 2 == 0 else "public",
                    "system": f"team{t}-{k}",
                    "run": retag(files[(k + t) % len(files)], f"t{t}-{k}"),
                    **({"key": f"t{t}-{k}"} if keys else {}),
                }
            )
    return jobs


@contextlib.contextmanager
def bench_database(name: str, folder: Path):
    """For the benchmarks: a fresh database URL, SQLite in ``folder`` or ``postgresql`` on a
    throwaway server (stopped afterwards); None when PostgreSQL's binaries are missing."""
    if name == "sqlite":
        yield f"sqlite:///{folder / 'board.sqlite'}"
        return
    bindir = pg_bin()
    if bindir is None:
        yield None
        return
    server = Postgres(bindir)
    server.start()
    try:
        yield server.new_database()
    finally:
        server.stop()
