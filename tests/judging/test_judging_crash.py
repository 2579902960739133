"""SIGKILL of ``dsr serve`` while four assessors are grading, on SQLite and PostgreSQL, twice per
database: every grade the server acknowledged is in the database with its value, no (sentence,
assessor) has two rows, and after a restart the assessors send again what was not acknowledged
and the campaign ends with exactly one row per grade given. The servers are real ``dsr serve``
processes forked from one launcher that has imported dsr already (the module's ``launcher``:
``tests.support.board.ForkedServers``) with no scoring workers (``--workers 0``: grading never
uses them), so the six starts take seconds, not six interpreters' imports."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from sqlalchemy import text

from dsr.judging.campaigns import Judging
from tests.support.board import make_board
from tests.support.judging import ASSESSORS, assignments, sample_campaign, simulate

#: kills and restarts real servers, or hammers one: the slow tier
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("judging-crash")]  # one launcher: one worker

KILLS = 2


def send(url: str, token: str, rows: list[dict], acked: dict, stop: threading.Event) -> None:
    """Grade ``rows`` in order until the server goes away; acknowledged ones go into ``acked``."""
    with httpx.Client(base_url=url, timeout=10, headers={"Authorization": f"Bearer {token}"}) as http:
        for row in rows:
            if stop.is_set():
                return
            try:
                answer = http.post("/judge/api/grades", json={"item": row["item"], "grade": row["grade"]})
            except httpx.HTTPError:
                return
            if answer.status_code != 200:
                raise AssertionError(answer.text)
            acked[row["item"], row["assessor"]] = row["grade"]


def stored(board) -> list[tuple[str, str, int]]:
    with board.engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "select i.key, a.name, g.grade from judge_grades g join judge_items i on i.id = g.item_id "
                    "join judge_assessors a on a.id = g.assessor_id"
                )
            )
        ]


def run_until_kill(launcher, serve, log, tokens, pending, acked, kill_after):
    pid, url = launcher.start(*serve, log=log)
    stop = threading.Event()
    threads = [threading.Thread(target=send, args=(url, tokens[a], pending[a], acked, stop)) for a in ASSESSORS]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(acked) < kill_after and time.monotonic() < deadline:
        time.sleep(0.01)
    launcher.kill(pid)  # SIGKILL: no shutdown handler runs (a crash)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert len(acked) >= kill_after, "grades did not get through before the deadline"


def test_kill_during_judging_loses_and_duplicates_nothing(db_url, tmp_path, launcher):
    board = make_board(db_url, tmp_path)
    judging = Judging(board.engine)
    truth, tokens = sample_campaign(judging)
    rows = simulate(assignments(judging, "s1")[:240], truth, dict.fromkeys(ASSESSORS, 0.2), seed=5)
    sent = {(r["item"], r["assessor"]): r["grade"] for r in rows}
    acked: dict = {}
    # no scoring workers (--workers 0): grades never reach them, and each start would spawn them
    serve = ("--db", db_url, "--store", str(tmp_path / "store"), "--workers", "0")
    log = tmp_path / "serve.log"
    for _ in range(KILLS):
        pending = {a: [r for r in rows if r["assessor"] == a and (r["item"], a) not in acked] for a in ASSESSORS}
        run_until_kill(launcher, serve, log, tokens, pending, acked, kill_after=len(acked) + 40)
        rows_now = stored(board)
        pairs = [(k, a) for k, a, _ in rows_now]
        assert len(pairs) == len(set(pairs)), "a grade has two rows"
        have = {(k, a): g for k, a, g in rows_now}
        assert all(have.get(pair) == grade for pair, grade in acked.items()), "an acknowledged grade is lost"
        assert all(sent[pair] == grade for pair, grade in have.items())
        assert len(have) < len(sent), "the kill should land while grades are being sent"
    # a restart: the assessors send again everything not acknowledged (some of it was stored)
    pid, url = launcher.start(*serve, log=log)
    try:
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=send,
                args=(url, tokens[a], [r for r in rows if r["assessor"] == a and (r["item"], a) not in acked], acked, stop),
            )
            for a in ASSESSORS
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        tasks = httpx.get(f"{url}/judge/api/campaigns/s1/tasks", headers={"Authorization": f"Bearer {tokens['alice']}"})
        assert tasks.status_code == 200
    finally:
        launcher.kill(pid)
    final = stored(board)
    assert len(final) == len(sent) and {(k, a): g for k, a, g in final} == sent
    board.close()
