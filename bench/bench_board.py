"""Benchmark: the leaderboard server under concurrent submissions, on SQLite and PostgreSQL.

``dsr serve`` runs in a subprocess on 127.0.0.1; 20 clients (one team each, one
HTTP connection each) send 200 submissions of runs made by dsr's rankers on
the bundled ``sample`` collection, alternating a hidden phase (daily quota 3
per team) and a public one (no quota). Every submission is validated, scored
and stored synchronously. Printed: p50/p95 latency, submissions per second
(responses, accepted or refused, over the wall time) and the checks the load
test makes (stored runs == accepted responses, quotas exact).

    python bench/bench_board.py [--submissions 200] [--clients 20] [--db sqlite,postgresql]

PostgreSQL is a throwaway server from Debian's package (as in the tests);
without its binaries that database is skipped.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tools"))   # board_harness: the servers and runs the tests use too

import board_harness as bh  # noqa: E402
from benchinfo import goal  # noqa: E402
from sqlalchemy import text  # noqa: E402

from dsr.core.provenance import machine, package_versions  # noqa: E402

QUOTA = 3


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def bench(db_url: str, folder: Path, runs: Path, submissions: int, clients: int) -> dict:
    board = bh.make_board(db_url, folder)
    bh.setup_phases(board, runs, daily_quota=QUOTA)
    tokens = [board.add_team(f"team{t}") for t in range(clients)]
    jobs = bh.load_jobs(runs, tokens, per_team=submissions // clients)
    with bh.ServerProcess(db_url, folder / "store", "--rate-limit", "0") as server:
        start = time.perf_counter()
        results = bh.hammer(server.url, jobs, clients=clients)
        wall = time.perf_counter() - start
    statuses = Counter(r["status"] for r in results)
    accepted = [r for r in results if r["status"] == 201]
    with board.engine.connect() as conn:
        stored = conn.scalar(text("select count(*) from submissions where not baseline"))
    per_team_hidden = Counter(r["team"] for r in accepted if r["phase"] == "test")
    board.close()
    latencies = [r["seconds"] for r in results]
    return {"n": len(results), "statuses": dict(statuses), "wall": wall,
            "p50": statistics.median(latencies), "p95": percentile(latencies, 0.95),
            "p50_accepted": statistics.median([r["seconds"] for r in accepted]),
            "rate": len(results) / wall, "accepted_rate": len(accepted) / wall,
            "stored_equals_accepted": stored == len(accepted),
            "quota_exact": all(per_team_hidden[t] == min(QUOTA, (submissions // clients + 1) // 2)
                               for t in range(clients))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"# bench_board {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}")
    versions = package_versions(("fastapi", "uvicorn", "sqlalchemy", "psycopg"))
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"load: {args.submissions} submissions from {args.clients} concurrent clients, sample "
          f"collection (20 dialogues), half to a hidden phase with a daily quota of {QUOTA}")
    with tempfile.TemporaryDirectory(prefix="bench-board-") as tmp:
        tmp = Path(tmp)
        os.environ["DSR_HOME"] = str(tmp / "home")
        (tmp / "runs").mkdir()
        runs = bh.sample_runs(tmp / "runs")
        for name in args.db.split(","):
            folder = tmp / name
            folder.mkdir()
            with bh.bench_database(name, folder) as url:
                if url is None:
                    print(f"{name}: skipped (PostgreSQL binaries not found)")
                    continue
                r = bench(url, folder, runs, args.submissions, args.clients)
            print(f"{name:10s}: {r['n']} responses {r['statuses']} in {r['wall']:.1f} s = "
                  f"{r['rate']:.1f} submissions/s ({r['accepted_rate']:.1f} accepted/s); latency p50 "
                  f"{r['p50'] * 1000:.0f} ms, p95 {r['p95'] * 1000:.0f} ms (accepted p50 "
                  f"{r['p50_accepted'] * 1000:.0f} ms); stored == accepted: "
                  f"{r['stored_equals_accepted']}; quotas exact: {r['quota_exact']}")
            goal(f"{name}: board p95 at {args.clients} clients", f"{r['p95'] * 1000:.0f} ms, {r['rate']:.1f}/s",
                 "p95 < 200 ms, nothing lost, quotas exact (issue 34)",
                 r["p95"] < 0.2 and r["stored_equals_accepted"] and r["quota_exact"])


if __name__ == "__main__":
    main()
