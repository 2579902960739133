"""Kill test (SQLite and PostgreSQL): ``dsr serve`` is SIGKILLed at random moments while
clients submit, 12 times (every other server scoring in a worker process, the others in the
server itself); after each restart the database and the run store agree: every row
has its file and every file a row, no file is half written (each hashes to its name), no run
is on a board twice, every acknowledged run is stored, and no temporary is left; a request
cut by the kill and sent again with its Idempotency-Key is answered 201 and stored once. Then a
new run is accepted and ``dsr board rebuild`` finds nothing missing. Servers are forked from
one launcher that has imported dsr already (one for both databases), so 13 starts take
seconds."""

from __future__ import annotations

import hashlib
import random
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from dsr.cli import main
from tests.support.board import make_board, read, retag, setup_phases

#: kills and restarts real servers, or hammers one: the slow tier
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("board-kill")]  # one launcher: one worker

#: 12 kills, each at a moment drawn from a fixed seed: every trial makes 4 clients' 6-7
#: submissions, so the 12 cut 50-80 requests in all, at every stage of a submission (20 trials
#: cut no kind more; each start costs the scoring worker's new interpreter)
TRIALS = 12
CLIENTS = 4
BUDGET_S = 120  # a bound, not a target: far above what a loaded 2-core machine takes


def consistent(db: str, store: Path) -> dict:
    """The store and the database agree (read directly: no Board is made, which would recover)."""
    engine = create_engine(db.replace("postgresql://", "postgresql+psycopg://", 1))
    with engine.connect() as conn:
        rows = conn.execute(text("select id, phase_id, sha256, idempotency_key from submissions")).all()
    engine.dispose()
    files = {p.name: p for p in store.glob("??/*")}
    assert {r.sha256 for r in rows} == set(files), "a row without its file, or a file without a row"
    for name, path in files.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == name, f"half-written {name}"
    assert len({(r.phase_id, r.sha256) for r in rows}) == len(rows), "a run twice on one board"
    keys = [r.idempotency_key for r in rows if r.idempotency_key]
    assert len(set(keys)) == len(keys), "a retried submission stored twice"
    assert not list((store / "tmp").iterdir()), "a temporary left behind"
    return {r.id for r in rows}


def send(url: str, jobs: list[dict], results: list[dict]) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        for job in jobs:
            try:
                answer = http.post(
                    "/api/submissions",
                    files={"run": ("run.run", job["run"])},
                    data={"collection": "sample", "phase": job["phase"], "system": job["system"]},
                    headers={"Authorization": f"Bearer {job['token']}", **job["headers"]},
                )
                results.append({**job, "status": answer.status_code, "body": answer.json()})
            except (httpx.HTTPError, ValueError):
                results.append({**job, "status": -1})
                return


def wait_for(condition, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)


def jobs_for(trial: int, tokens: list[str], base: list[bytes]) -> list[list[dict]]:
    """Per client: new runs (some with an Idempotency-Key), and a run of the last trial again."""
    out = []
    for c, token in enumerate(tokens):
        jobs = []
        for k in range(6):
            run = retag(base[(trial + c + k) % len(base)], f"t{trial}-c{c}-k{k}")
            jobs.append(
                {
                    "token": token,
                    "phase": "public" if k % 2 else "test",
                    "system": f"c{c}k{k}",
                    "run": run,
                    "headers": {"Idempotency-Key": f"t{trial}c{c}k{k}"} if k % 3 == 0 else {},
                }
            )
        if trial:  # first: the last trial's first run again (a duplicate when it was stored)
            jobs.insert(
                0,
                {
                    **jobs[0],
                    "run": retag(base[(trial - 1 + c) % len(base)], f"t{trial - 1}-c{c}-k0"),
                    "headers": {},
                    "system": "again",
                },
            )
        out.append(jobs)
    return out


def test_kill_at_random_moments_then_restart(db_url, tmp_path, runs, launcher):
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs, daily_quota=10_000, total_quota=10_000)  # crash safety, not quotas
    tokens = [board.members.add_team(f"team{c}") for c in range(CLIENTS)]
    board.close()
    store = tmp_path / "store"
    base = [read(runs / f"random{i}.run") for i in range(5)] + [read(runs / "bm25.run")]
    log = tmp_path / "serve.log"
    # one scoring worker (the pool's path: a forkserver and its worker, each loading the phases'
    # data) in the even trials, none (scoring in the server's own threads) in the odd ones:
    # crash safety must not depend on where a run is scored, nor on the count
    serve = ("--db", db_url, "--store", str(store), "--rate-limit", "0", "--workers")
    rng = random.Random(19)
    acknowledged: set[int] = set()
    started = time.monotonic()
    outcomes = {"killed mid-request": 0, "accepted": 0, "duplicate": 0, "retried": 0}
    cut_with_key: list[dict] = []
    for trial in range(TRIALS):
        pid, url = launcher.start(*serve, "0" if trial % 2 else "1", log=log)
        assert acknowledged <= consistent(db_url, store)  # after the restart
        for phase in ("public", "test"):  # the phases' scoring data, loaded on first use
            assert httpx.get(f"{url}/api/boards/sample/{phase}/topics", timeout=30).status_code == 200
        retried: list[dict] = []  # what a client does when its answer was cut: again
        send(url, cut_with_key, retried)
        assert [r["status"] for r in retried] == [201] * len(cut_with_key), retried
        acknowledged |= {r["body"]["id"] for r in retried}
        outcomes["retried"] += len(retried)
        results: list[dict] = []
        clients = [threading.Thread(target=send, args=(url, jobs, results)) for jobs in jobs_for(trial, tokens, base)]
        for client in clients:
            client.start()
        # a random moment: after 0 to 4 runs accepted (whatever the machine's speed; a trial's
        # first answers are often its duplicates' 409s, and counting those let a slow machine
        # kill before a new run was stored), then a short random pause
        wait_for(lambda n=rng.randint(0, 4): sum(r["status"] == 201 for r in results) >= n, 20)
        time.sleep(rng.uniform(0.0, 0.3))
        launcher.kill(pid)
        for client in clients:
            client.join(timeout=30)
        acknowledged |= {r["body"]["id"] for r in results if r["status"] == 201}
        cut_with_key = [r for r in results if r["status"] == -1 and r["headers"]]
        outcomes["killed mid-request"] += sum(r["status"] == -1 for r in results)
        outcomes["accepted"] += sum(r["status"] == 201 for r in results)
        outcomes["duplicate"] += sum(r["status"] == 409 for r in results)
        assert {r["status"] for r in results} <= {201, 409, -1}, results
        assert time.monotonic() - started < BUDGET_S
    pid, url = launcher.start(*serve, "1", log=log)
    assert acknowledged <= consistent(db_url, store)
    answer = httpx.post(
        f"{url}/api/submissions",
        files={"run": ("bm25.run", read(runs / "bm25.run"))},
        data={"collection": "sample", "phase": "public", "system": "after"},
        headers={"Authorization": f"Bearer {tokens[0]}"},
        timeout=30,
    )
    assert answer.status_code in (201, 409)
    launcher.kill(pid)
    assert outcomes["killed mid-request"] >= 5 and outcomes["accepted"] >= 10 and outcomes["duplicate"] >= 1, outcomes
    assert outcomes["retried"] >= 1, outcomes
    assert main(["board", "rebuild", "--db", db_url, "--store", str(store)]) == 0
    print(f"{TRIALS} kills in {time.monotonic() - started:.1f} s: {outcomes}")
