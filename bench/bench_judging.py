"""Benchmark: the judging page's grade answer under 20 assessors at once, on SQLite and PostgreSQL.

``dsr serve`` runs in a subprocess on 127.0.0.1 with a campaign on the bundled ``sample``
pool (508 sentences, automatic honeypots, k=3, tasks of 10); 20 assessors (one HTTP
connection each, bearer token) grade their assigned sentences through ``POST
/judge/api/grades`` (what the page's keyboard sends), each grade committed before the
answer. ``--think`` is the mean pause between an assessor's grades, drawn from an
exponential distribution so that assessors are not in step (0: back to back, the worst
case; reading a sentence and pressing a key takes a person a few seconds). Printed: date, machine, load average before and
after, grades per second and latency p50/p95/p99/max, and the check that the database
holds exactly the acknowledged grades. Target: p95 under 100 ms.

    python bench/bench_judging.py [--assessors 20] [--grades 30] [--think 2,0] [--db sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from benchinfo import goal  # noqa: E402
from sqlalchemy import text  # noqa: E402

from dsr.core.provenance import machine, package_versions  # noqa: E402
from dsr.judging.campaigns import Judging  # noqa: E402
from tools import board_harness as bh  # noqa: E402  (the servers and runs the tests use too)
from tools.judging_harness import sample_campaign  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def assessor(url: str, token: str, grades: int, think: float, out: list, start: threading.Barrier, seed: int) -> None:
    pauses = random.Random(seed)
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"}) as http:
        tasks = http.get("/judge/api/campaigns/bench/tasks").json()["tasks"]
        keys = [k for t in tasks for k in t["items"]][:grades]
        start.wait()
        for n, key in enumerate(keys):
            began = time.perf_counter()
            answer = http.post("/judge/api/grades", json={"item": key, "grade": n % 3, "seconds": 2.0})
            out.append((time.perf_counter() - began, answer.status_code))
            if think:  # people are not in step: exponential pauses, mean ``think``
                time.sleep(pauses.expovariate(1 / think))


def bench(url: str, folder: Path, assessors: int, grades: int, think: float) -> dict:
    board = bh.make_board(url, folder)
    judging = Judging(board.engine)
    names = tuple(f"assessor{i:02d}" for i in range(assessors))
    _, tokens = sample_campaign(judging, name="bench", assessors=names)
    results: list = []
    start = threading.Barrier(assessors + 1)
    with bh.ServerProcess(url, folder / "store") as server:
        threads = [
            threading.Thread(target=assessor, args=(server.url, tokens[a], grades, think, results, start, i))
            for i, a in enumerate(names)
        ]
        for t in threads:
            t.start()
        start.wait()
        began = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - began
    with board.engine.connect() as conn:
        stored = conn.scalar(text("select count(*) from judge_grades"))
    board.close()
    latencies = [s for s, _ in results]
    return {
        "n": len(results),
        "ok": sum(1 for _, code in results if code == 200),
        "wall": wall,
        "p50": statistics.median(latencies),
        "p95": percentile(latencies, 0.95),
        "p99": percentile(latencies, 0.99),
        "max": max(latencies),
        "stored": stored,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assessors", type=int, default=20)
    parser.add_argument("--grades", type=int, default=30, help="grades per assessor")
    parser.add_argument(
        "--think",
        default="2,0",
        help="mean seconds between an assessor's grades, one run per value (default: 2 s, a fast reader; then 0, back to back)",
    )
    parser.add_argument("--db", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"# bench_judging {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}")
    print(
        "versions: " + ", ".join(f"{k} {v}" for k, v in package_versions(("fastapi", "uvicorn", "sqlalchemy", "psycopg")).items())
    )
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    thinks = [float(t) for t in args.think.split(",")]
    print(f"work: {args.assessors} assessors at once, {args.grades} grades each, mean pause {args.think} s")
    with tempfile.TemporaryDirectory(prefix="bench-judging-") as tmp:
        for name in args.db.split(","):
            folder = Path(tmp) / name
            folder.mkdir()
            for think in thinks:
                run_folder = folder / f"think{think:g}"
                run_folder.mkdir()
                with bh.bench_database(name, run_folder) as url:
                    if url is None:
                        print(f"{name}: skipped (PostgreSQL binaries not found)")
                        break
                    r = bench(url, run_folder, args.assessors, args.grades, think)
                print(
                    f"{name:10s} pause {think:g} s: {r['ok']} of {r['n']} grades answered 200 in "
                    f"{r['wall']:.1f} s = {r['n'] / r['wall']:.0f} grades/s; latency p50 {r['p50'] * 1000:.1f} "
                    f"ms, p95 {r['p95'] * 1000:.1f} ms, p99 {r['p99'] * 1000:.1f} ms, max "
                    f"{r['max'] * 1000:.0f} ms; stored == acknowledged: {r['stored'] == r['ok']}"
                )
                goal(
                    f"{name}: grading p95, pause {think:g} s",
                    f"{r['p95'] * 1000:.1f} ms",
                    "< 100 ms, stored == acknowledged",
                    r["p95"] < 0.1 and r["stored"] == r["ok"],
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
