"""A board served by several processes on PostgreSQL (issue 44, item 4): real ``dsr serve``
processes on loopback, started by the tests, share one database and one run store, and
agree on everything a participant can observe: quotas and the rate limit are exact across
processes, an ``Idempotency-Key`` sent to two processes at once stores one run, the ladder's
published values are the same whichever process answers, a phase change or a rebuild made
by another process is seen by every process at its next request, and killing a process of
``dsr serve --processes 2`` in the middle of submissions loses and duplicates nothing.

Two kinds of set-up: two ``dsr serve`` processes on two ports (each addressable, as behind a
reverse proxy's upstream list), and ``dsr serve --processes 2`` (uvicorn's supervisor: one
port, a dead process replaced). Servers are forked from one launcher that has imported dsr
already (``ForkedServers``, one for the module), so a pair starts in seconds; the pair of the
quota, idempotency and ladder tests is started once for the module, on one board, and each of
those tests has teams of its own (its counts are of its teams' rows)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from dsr.board.service import RateLimiter
from dsr.cli import main
from tests.support.board import (
    OLD_PHASE,
    OLD_SUBMISSION,
    OLD_TEAM,
    ForkedServers,
    empty_database,
    engine_at,
    insert_row,
    make_board,
    migration_head,
    read,
    retag,
    setup_phases,
)

QUOTA = 3
#: the module's launcher and pair of servers, set up once: its tests on one worker (tests/support/order.py)
pytestmark = pytest.mark.xdist_group("board-processes")


def new_board(url: str, folder: Path, runs: Path) -> Path:
    """sample/public and sample/test (hidden, 3 a day) on the database at ``url``: its store."""
    board = make_board(url, folder)
    setup_phases(board, runs, daily_quota=QUOTA)
    board.close()
    return folder / "store"


def add_teams(url: str, folder: Path, names: dict[str, str]) -> dict[str, str]:
    """The teams ``names`` (short name: team name) on the board at ``url``: {short name: token}."""
    board = make_board(url, folder)
    tokens = {short: board.members.add_team(name) for short, name in names.items()}
    board.close()
    return tokens


@pytest.fixture
def pg_board(postgres, tmp_path, runs):
    """A fresh PostgreSQL board: sample/public and sample/test (hidden, 3 a day), teams
    alpha, beta and gamma; (url, store, tokens)."""
    url = postgres.new_database()
    store = new_board(url, tmp_path, runs)
    return url, store, add_teams(url, tmp_path, {name: name for name in ("alpha", "beta", "gamma")})


@pytest.fixture(scope="module")
def shared_board(postgres, tmp_path_factory, runs):
    """The board of the module's :func:`pair`, as :func:`pg_board` makes one but without teams:
    each test on it has teams of its own (:func:`pair_board`); (url, store, folder)."""
    url, folder = postgres.new_database(), tmp_path_factory.mktemp("pair")
    return url, new_board(url, folder, runs), folder


@pytest.fixture(scope="module")
def pair(shared_board, launcher):
    """Two ``dsr serve`` processes (no rate limit) on the board of ``shared_board``, started once
    for the module's tests: their URLs."""
    url, store, folder = shared_board
    with serving(launcher, url, store, 2, "--rate-limit", "0", log=folder / "serve.log") as servers:
        yield servers


@pytest.fixture
def pair_board(shared_board, pair, request):
    """The board the :func:`pair` serves, with three new teams of this test alone (alpha, beta
    and gamma, named after the test, so no other test's runs count for them); (url, store,
    tokens by short name, team names by short name)."""
    url, store, folder = shared_board
    names = {short: f"{request.node.name[5:25]}-{short}".replace("_", "-") for short in ("alpha", "beta", "gamma")}
    return url, store, add_teams(url, folder, names), names


@contextlib.contextmanager
def serving(launcher: ForkedServers, url: str, store: Path, count: int, *args: str, log: Path):
    """``count`` ``dsr serve`` processes on their own ports (their URLs), stopped afterwards."""
    started: list[tuple[int, str]] = []
    try:
        for _ in range(count):
            started.append(launcher.start("--db", url, "--store", str(store), *args, timeout=90, log=log))
        yield [u for _, u in started]
    finally:
        for pid, _ in started:
            launcher.kill(pid)


def post(url: str, token: str, run: bytes, system: str, phase: str = "public", key: str | None = None):
    headers = {"Authorization": f"Bearer {token}", **({"Idempotency-Key": key} if key else {})}
    return httpx.post(
        f"{url}/api/submissions",
        files={"run": ("run.run", run)},
        headers=headers,
        data={"collection": "sample", "phase": phase, "system": system},
        timeout=60,
    )


def at_once(calls: list) -> list:
    """Run the calls in threads released together (a barrier), in order of ``calls``."""
    barrier = threading.Barrier(len(calls))

    def go(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(go, calls))


def rows(url: str, where: str = "true", **params) -> list:
    from dsr.db.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"select * from submissions where {where} order by id"), params).all()
    finally:
        engine.dispose()


@pytest.mark.slow
def test_quotas_are_exact_across_processes(pair_board, pair, runs):
    url, _, tokens, names = pair_board
    (a, b), base = pair, read(runs / "bm25.run")
    answers = at_once([lambda k=k: post((a, b)[k % 2], tokens["alpha"], retag(base, f"q{k}"), f"q{k}", "test") for k in range(8)])
    statuses = Counter(r.status_code for r in answers)
    assert statuses == {201: QUOTA, 429: 8 - QUOTA}, [r.text for r in answers]
    accepted = [r.json() for r in answers if r.status_code == 201]
    # each accepted answer counted its own run under the lock: 1, 2 and 3, never one twice
    assert sorted(x["quota"]["daily_used"] for x in accepted) == [1, 2, 3]
    assert all(r.json()["quota"]["daily_left"] == 0 for r in answers if r.status_code == 429)
    for server in (a, b):  # both processes count the same, from the database
        quota = httpx.get(
            f"{server}/api/quota/sample/test", timeout=30, headers={"Authorization": f"Bearer {tokens['alpha']}"}
        ).json()["quota"]
        assert (quota["daily_used"], quota["daily_left"]) == (QUOTA, 0)
    assert post(b, tokens["beta"], retag(base, "other team"), "b", "test").status_code == 201
    team = rows(
        url,
        "phase_id = (select id from phases where name = 'test') and team_id = (select id from teams where name = :team)",
        team=names["alpha"],
    )
    assert sorted(r.id for r in team) == sorted(x["id"] for x in accepted)


@pytest.mark.slow
def test_the_rate_limit_is_exact_across_processes(pg_board, runs, tmp_path, launcher):
    """2 a minute per team: 8 submissions at once, half to each process, take exactly 2."""
    url, store, tokens = pg_board
    base = read(runs / "bm25.run")
    with serving(launcher, url, store, 2, "--rate-limit", "2", log=tmp_path / "serve.log") as (a, b):
        answers = at_once([lambda k=k: post((a, b)[k % 2], tokens["alpha"], retag(base, f"r{k}"), f"r{k}") for k in range(8)])
        assert Counter(r.status_code for r in answers) == {201: 2, 429: 6}, [r.text for r in answers]
        refused = [r for r in answers if r.status_code == 429]
        assert all(r.json()["error"].startswith("rate limit") and int(r.headers["Retry-After"]) >= 1 for r in refused)
        # another team has its own 2, on either process
        assert [post(s, tokens["beta"], retag(base, f"b{s[-5:]}"), "b").status_code for s in (a, b)] == [201, 201]
        assert post(a, tokens["beta"], retag(base, "b3"), "b3").status_code == 429
    assert len(rows(url, "not baseline")) == 4


def test_rate_limit_refills_and_counts_across_boards(tmp_path):
    """The bucket (a GCRA in the database) against a plain token bucket: a burst of the rate,
    then one request per interval, each refusal's wait exact; two boards on one database (as
    two processes) share it."""
    first = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    second = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    first.members.add_team("alpha")
    team = first.members.team("alpha").id
    one, two = RateLimiter(first.engine, 3), RateLimiter(second.engine, 3)  # 3 a minute: every 20 s
    t = 1_000_000.0
    assert [limiter.allow(team, t) for limiter in (one, two, one)] == [0.0, 0.0, 0.0]
    assert two.allow(team, t) == pytest.approx(20.0)  # the bucket is empty: a token in 20 s
    assert one.allow(team, t + 19.0) == pytest.approx(1.0)
    assert two.allow(team, t + 20.0) == 0.0  # one token came back
    assert one.allow(team, t + 20.0) == pytest.approx(20.0)
    assert two.allow(team, t + 100.0) == 0.0  # refilled up to the burst, no more
    assert [one.allow(team, t + 100.0) for _ in range(3)] == [0.0, 0.0, pytest.approx(20.0)]
    assert RateLimiter(first.engine, 0).allow(team, t) == 0.0  # 0: no limit
    first.close()
    second.close()


@pytest.mark.slow
def test_one_idempotency_key_sent_to_two_processes_at_once_stores_one_run(pair_board, pair, runs):
    url, _, tokens, names = pair_board
    (a, b), base = pair, read(runs / "bm25.run")
    for k in range(6):
        run, key = retag(base, f"i{k}"), f"key-{k}"
        answers = at_once([lambda s=s: post(s, tokens["alpha"], run, f"i{k}", key=key) for s in (a, b)])
        assert [r.status_code for r in answers] == [201, 201], [r.text for r in answers]
        assert answers[0].json() == answers[1].json()  # the same answer, the same id
        assert sorted(r.headers.get("Idempotency-Replayed", "") for r in answers) == ["", "true"]
    other = post(b, tokens["alpha"], retag(base, "another run"), "i0", key="key-0")
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["error"]
    used = httpx.get(f"{a}/api/quota/sample/public", headers={"Authorization": f"Bearer {tokens['alpha']}"}, timeout=30).json()[
        "quota"
    ]["total_used"]
    stored = rows(url, "idempotency_key is not null and team_id = (select id from teams where name = :team)", team=names["alpha"])
    assert sorted(r.idempotency_key for r in stored) == [f"key-{k}" for k in range(6)] and used == 6


def boards_json(server: str, ids: list[int]) -> dict:
    """Everything a client reads of the boards: every board (each selection) and every run."""
    out = {}
    for phase in ("public", "test"):
        for select in ("best", "all", "latest"):
            out[f"{phase} {select}"] = httpx.get(f"{server}/api/boards/sample/{phase}?select={select}", timeout=60).json()
    out["boards"] = httpx.get(f"{server}/api/boards", timeout=60).json()
    for i in ids:
        out[f"run {i}"] = httpx.get(f"{server}/api/runs/{i}", timeout=60).json()
    return out


@pytest.mark.slow
def test_the_ladder_is_the_same_whichever_process_serves(pair_board, pair, runs):
    tokens, names, servers = pair_board[2], pair_board[3], pair
    files = [read(runs / f"random{i}.run") for i in range(5)] + [read(runs / "bm25.run")]
    answers = []
    for k in range(QUOTA):  # each team's runs in turn, through either process
        for t, (team, token) in enumerate(tokens.items()):
            for phase in ("test", "public"):
                server = servers[(k + t) % 2]
                answer = post(server, token, retag(files[(k + 2 * t) % len(files)], f"{team}{k}"), f"{team}-{k}", phase)
                assert answer.status_code == 201, answer.text
                answers.append((phase, answer.json()))
    ids = [x["id"] for _, x in answers]
    seen = [boards_json(server, ids) for server in servers]
    assert seen[0] == seen[1]
    # the answer each run got, from whichever process took it, is what the board publishes for
    # it (the team's ladder values after it on the hidden phase, its means on the public one)
    for phase, answer in answers:
        assert seen[0][f"run {answer['id']}"]["means"] == answer["means"], phase
    listed = seen[0]["test all"]["rows"]  # every run of this test's teams, and the baseline
    assert sum(row["team"] in names.values() for row in listed) == 3 * QUOTA
    assert sum(row["baseline"] for row in listed) == 1


def corrupt(url: str) -> None:
    """A restore from an older backup, as it were: every team run's stored scores replaced by
    the baseline's of its phase (``dsr board rebuild`` puts them right)."""
    from dsr.db.engine import make_engine

    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "update submissions s set per_topic = b.per_topic, means_json = b.means_json "
                "from submissions b where b.baseline and b.phase_id = s.phase_id and not s.baseline"
            )
        )
    engine.dispose()


@pytest.mark.slow
def test_rebuilds_and_phase_changes_by_another_process_are_seen_by_every_process(pg_board, runs, tmp_path, launcher):
    url, store, tokens = pg_board
    files = [read(runs / f"random{i}.run") for i in range(3)]
    db = ["--db", url, "--store", str(store)]
    with serving(launcher, url, store, 1, "--rate-limit", "0", log=tmp_path / "first.log") as (first,):
        ids = [
            post(first, tokens["alpha"], retag(run, f"v{k}"), f"v{k}", phase).json()["id"]
            for k, run in enumerate(files)
            for phase in ("test", "public")
        ]
        right = boards_json(first, ids)
    corrupt(url)
    with serving(launcher, url, store, 2, "--rate-limit", "0", log=tmp_path / "serve.log") as (a, b):
        wrong = [boards_json(s, ids) for s in (a, b)]  # each process caches what it read
        assert wrong[0] == wrong[1] and wrong[0]["test all"] != right["test all"]
        assert wrong[0][f"run {ids[0]}"]["means"] != right[f"run {ids[0]}"]["means"]
        assert main(["board", "rebuild", *db]) == 0  # another process puts the rows right
        assert [boards_json(s, ids) for s in (a, b)] == [right, right]
        assert main(["board", "set-phase", "sample", "--phase", "public", "--closes", "2020-01-01", *db]) == 0
        assert main(["board", "freeze", "sample", "--phase", "test", *db]) == 0
        for server in (a, b):
            closed = post(server, tokens["beta"], retag(files[0], "late"), "late", "public")
            frozen = post(server, tokens["beta"], retag(files[0], "late"), "late", "test")
            assert (closed.status_code, frozen.status_code) == (403, 403)
            assert "closed on 2020-01-01" in closed.json()["error"] and "frozen" in frozen.json()["error"]
            listed = {b["phase"]: b for b in httpx.get(f"{server}/api/boards", timeout=30).json()["boards"]}
            assert listed["public"]["closes"] == "2020-01-01T00:00:00Z" and listed["test"]["frozen"]


def uvicorn_children(pid: int) -> list[int]:
    """The server processes uvicorn's supervisor ``pid`` started (its spawned children)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                with contextlib.suppress(OSError):
                    if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                        found.append(int(child))
    return found


def submitter(url: str, jobs: list[dict], results: list[dict], deadline: float, gate) -> None:
    """What ``dsr submit`` does: a request whose answer is lost is sent again, same key
    (``gate()`` before each new job)."""
    for job in jobs:
        gate()
        tries = 0
        while True:
            tries += 1
            try:
                answer = post(url, job["token"], job["run"], job["system"], job["phase"], key=job["key"])
                results.append(
                    {
                        **job,
                        "status": answer.status_code,
                        "body": answer.json(),
                        "tries": tries,
                        "replayed": answer.headers.get("Idempotency-Replayed") == "true",
                    }
                )
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


@pytest.mark.slow
def test_killing_a_process_mid_submission_loses_and_duplicates_nothing(pg_board, runs, tmp_path, launcher):
    """``dsr serve --processes 2``: a process is SIGKILLed while it holds a staged run (between
    the file and the row), three times, each time the process the supervisor started in place
    of the last one killed (so the other one is serving); the clients send what got no answer
    again, and every run is stored once, with its file."""
    url, store, tokens = pg_board
    base = [read(runs / f"random{i}.run") for i in range(5)] + [read(runs / "bm25.run")]
    jobs = [
        {
            "token": token,
            "team": team,
            "phase": "test" if k % 3 == 0 else "public",
            "system": f"{team}{k}",
            "run": retag(base[k % len(base)], f"{team}-{k}"),
            "key": f"{team}-{k}",
        }
        for k in range(30)
        for team, token in tokens.items()
    ]
    supervisor, server = launcher.start(
        "--db", url, "--store", str(store), "--rate-limit", "0", "--processes", "2", timeout=120, log=tmp_path / "serve.log"
    )
    killed: list[int] = []
    paced, started = threading.Condition(), iter(range(len(jobs)))

    def gate():  # at most 12 new jobs a kill ahead (waits 5 s at most): jobs outlast the kills
        n = next(started)
        with paced:
            paced.wait_for(lambda: len(killed) >= 3 or n < 12 * (len(killed) + 1), timeout=5)

    try:
        results: list[dict] = []
        deadline = time.monotonic() + 300
        clients = [threading.Thread(target=submitter, args=(server, jobs[c::4], results, deadline, gate)) for c in range(4)]
        for client in clients:
            client.start()
        before: set[int] = set()  # the processes there at the last kill: the next victim is new
        while len(killed) < 3 and time.monotonic() < deadline and any(c.is_alive() for c in clients):
            children = set(uvicorn_children(supervisor))
            staged = [int(p.name.split("-")[1]) for p in (store / "tmp").glob("stage-*")]
            victims = [pid for pid in staged if pid in children - before]
            if len(children) == 2 and victims:
                os.kill(victims[0], signal.SIGKILL)  # it holds a staged run: mid-submission
                killed.append(victims[0])
                before = children
                with paced:
                    paced.notify_all()
            time.sleep(0.001)
        for client in clients:
            client.join(timeout=300)
        assert len(killed) == 3, f"{len(killed)} process(es) caught holding a staged run"
        assert len(results) == len(jobs) and any(r["tries"] > 1 for r in results)
        # replaced: two processes again, new ones (uvicorn's supervisor looks every 0.5 s, after
        # a health check of the living ones: the clients can finish before the last is restarted)
        until = time.monotonic() + 60
        while len(children := uvicorn_children(supervisor)) < 2 and time.monotonic() < until:
            time.sleep(0.1)
        assert len(children) == 2 and not set(children) & set(killed)
    finally:
        os.kill(supervisor, signal.SIGTERM)
        launcher._ask(f"reap {supervisor}")
    assert {r["status"] for r in results} <= {201, 429}, [r for r in results if r["status"] not in (201, 429)]
    stored = rows(url, "not baseline")
    keys = Counter(r.idempotency_key for r in stored)
    accepted = {r["key"]: r["body"]["id"] for r in results if r["status"] == 201}
    assert max(keys.values()) == 1 and set(keys) == set(accepted)  # once each, none lost
    assert {r.idempotency_key: r.id for r in stored} == accepted
    hidden = Counter(r["team"] for r in results if r["status"] == 201 and r["phase"] == "test")
    assert hidden == dict.fromkeys(tokens, QUOTA)  # quotas exact
    board = make_board(url, tmp_path)  # a start: what the killed ones left
    board.close()
    files = {p.name for p in store.glob("??/*")}
    assert {r.sha256 for r in rows(url)} == files and not list((store / "tmp").iterdir())
    assert main(["board", "rebuild", "--db", url, "--store", str(store)]) == 0


def test_processes_need_postgresql(tmp_path, capsys):
    """SQLite serves a board from one process: --processes 2 is refused (exit 2, said why)."""
    code = main(
        ["serve", "--db", f"sqlite:///{tmp_path / 'board.sqlite'}", "--store", str(tmp_path / "store"), "--processes", "2"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--processes 2 needs PostgreSQL" in err and "Traceback" not in err
    assert main(["serve", "--processes", "0", "--store", str(tmp_path / "store")]) == 2


@pytest.mark.slow
@empty_database
def test_upgrading_a_board_of_0006_keeps_its_rows_and_adds_the_shared_state(db_url, tmp_path):
    """Migration 0007 on a board with rows (SQLite and PostgreSQL): the rows are kept, every phase
    starts at scores_version 0, and the rate limit's table works."""
    from dsr.board.scoring import matrix_bytes
    from dsr.collections import load_collection

    engine = engine_at(db_url, "0006")
    values = [[0.25 * (i % 4)] for i in range(20)]
    sample = load_collection("sample")
    with engine.begin() as conn:
        insert_row(conn, "teams", **OLD_TEAM)
        insert_row(
            conn, "phases", **OLD_PHASE, collection_hash=sample.content_hash, topics_json=json.dumps(sample.ids), final=False
        )
        insert_row(conn, "submissions", **OLD_SUBMISSION, per_topic=matrix_bytes(values), tied_topics=0)
    engine.dispose()
    board = make_board(db_url, tmp_path, rate_limit=1)  # migrates to the newest schema
    with board.engine.connect() as conn:
        assert conn.scalar(text("select version_num from alembic_version")) == migration_head()
        assert conn.execute(text("select id, scores_version from phases")).all() == [(1, 0)]
        assert conn.scalar(text("select count(*) from team_rates")) == 0
    sub = board.submissions(board.phases.get_phase("sample", "public"))[0]
    assert board.matrix(sub, 1).tolist() == values
    team = board.members.team("alpha")
    assert board.limiter.allow(team.id) == 0.0 and board.limiter.allow(team.id) > 0  # 1 a minute
    board.close()


@pytest.mark.slow
def test_each_process_of_processes_n_has_the_whole_site(tmp_path, runs, monkeypatch):
    """What each process of ``dsr serve --processes N`` makes from the settings its parent hands
    over: a board with its own scoring workers, warmed up, serving the leaderboard, the API and
    the judging pages; closed with the process."""
    from fastapi.testclient import TestClient

    from dsr.board.service import BoardConfig
    from dsr.server import SETTINGS_ENV, site_from_environment

    url = f"sqlite:///{tmp_path / 'board.sqlite'}"
    board = make_board(url, tmp_path)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    board.close()
    config = BoardConfig(db=url, store=str(tmp_path / "store"), workers=1, processes=2, rate_limit=0)
    monkeypatch.setenv(
        SETTINGS_ENV,
        json.dumps({k: getattr(config, k) for k in ("db", "store", "workers", "processes", "rate_limit", "max_upload_mb")}),
    )
    app = site_from_environment()
    site = app.state.board
    assert site.pool is not None and site.pool.workers == 1 and site.cache.held()["phases"]  # warmed up
    with TestClient(app) as client:  # runs the app's lifespan: closed at the end
        assert client.get("/judge/login").status_code == 200
        assert client.get("/board/sample/public").status_code == 200
        answer = client.post(
            "/api/submissions",
            files={"run": ("bm25.run", read(runs / "bm25.run"))},
            data={"collection": "sample", "phase": "public", "system": "bm25"},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 201, answer.text
    assert site.pool is None  # the scoring workers ended with the app


@pytest.mark.slow
@pytest.mark.parametrize("processes", ["1", "2"])
def test_sigterm_stops_dsr_serve_with_its_exit_handlers_run(tmp_path, dsr_home, request, processes):
    """``kill``, ``systemctl stop`` and ``docker stop`` send SIGTERM: ``dsr serve`` (one process,
    and each process of ``--processes 2``) shuts down, closes its scoring workers and exits 0
    with Python's exit handlers run, so its scoring workers' forkserver folder (multiprocessing's
    ``pymp-*`` in TMPDIR) goes too: uvicorn used to end each process by the signal again after
    its shutdown, before those handlers, and one folder was left in TMPDIR at each stop. A real
    ``dsr serve`` (not a forked one: those end without exit handlers), on loopback."""
    import subprocess
    import sys

    from tests.support.board import free_port

    if processes == "1":
        db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    else:
        db = request.getfixturevalue("postgres").new_database()
    # the server's own TMPDIR, short: in the run's temporary folder, not under tmp_path, whose
    # length grows with pytest's run counter (/tmp/pytest-of-root/pytest-100/popen-gw2/... passed
    # the 75 bytes the scoring workers' socket allows at the 100th run, and dsr serve refused it)
    temp, port = Path(tempfile.mkdtemp(prefix="serve-")), free_port()
    argv = ["serve", "--port", str(port), "--db", db, "--store", str(tmp_path / "store"), "--workers", "1"]
    server = subprocess.Popen(
        [sys.executable, "-c", "import sys; from dsr.cli import main; sys.exit(main())", *argv, "--processes", processes],
        env={**os.environ, "TMPDIR": str(temp), "DSR_HOME": str(dsr_home)},
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "serve.log", "wb"),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        # every process's scoring workers are up (each warms up before it answers)
        until = time.monotonic() + 60
        while len(list(temp.glob("pymp-*"))) < int(processes) and time.monotonic() < until:
            time.sleep(0.1)
        assert len(list(temp.glob("pymp-*"))) == int(processes), (tmp_path / "serve.log").read_text()
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    log = (tmp_path / "serve.log").read_text()
    assert code == 0 and "Traceback" not in log, log
    assert sorted(p.name for p in temp.iterdir()) == []
    temp.rmdir()
