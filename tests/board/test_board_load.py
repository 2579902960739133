"""Concurrent submissions lose nothing (SQLite and PostgreSQL): a bounded load test on loopback
against ``dsr serve`` in a subprocess. Stored runs == accepted responses; the hidden phase's
daily quota holds exactly under the race. (bench/bench_board.py runs 200 from 20 clients.)"""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import text

from tests.support.board import ServerProcess, hammer, load_jobs, make_board, setup_phases

#: kills and restarts real servers, or hammers one: the slow tier
pytestmark = pytest.mark.slow

QUOTA = 3


def test_concurrent_submissions_lose_nothing_and_quotas_hold(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs, daily_quota=QUOTA)
    tokens = [board.members.add_team(f"team{t}") for t in range(4)]
    jobs = load_jobs(runs, tokens, per_team=10)  # 40 submissions, 20 to the hidden phase
    with ServerProcess(db_url, tmp_path / "store", "--rate-limit", "0") as server:
        # the bench's two load generators: httpx for the first half (each team's 3 hidden runs
        # fill its quota), the lean one (http.client, forms encoded first) for the rest
        server_results = hammer(server.url, jobs[:20], clients=8) + hammer(server.url, jobs[20:], clients=8, lean=True)
    statuses = Counter(r["status"] for r in server_results)
    assert set(statuses) <= {201, 429}, statuses
    accepted = [r for r in server_results if r["status"] == 201]
    by_team_phase = Counter((r["team"], r["phase"]) for r in accepted)
    for t in range(4):
        assert by_team_phase[(t, "test")] == QUOTA  # exactly the quota, not one more
        assert by_team_phase[(t, "public")] == 5  # no quota there: all accepted
    refused = [r for r in server_results if r["status"] == 429]
    assert {r["system"] for r in refused} == {f"team{t}-{k}" for t in range(4) for k in (6, 8)}  # the lean client's
    assert len(refused) == 4 * (5 - QUOTA) and all(r["body"]["quota"]["daily_left"] == 0 for r in refused)
    with board.engine.connect() as conn:
        stored = conn.execute(text("select id, sha256 from submissions where not baseline")).all()
    assert len(stored) == len(accepted)
    assert sorted(r["body"]["id"] for r in accepted) == sorted(i for i, _ in stored)
    assert all(board.store.verify(digest) for _, digest in stored)
    board.close()
