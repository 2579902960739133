"""Benchmark: reading a benchmark file (``read_benchmark``) from 1x to 10x the SIGIR 2022 size.

Goal (issue 34): loading is linear in the file's size: the slope of log(time) on
log(size) is at most 1.05 (it was 1.25 at 8,460 dialogues: Python's cyclic garbage
collector walking the 0.4 M objects already read, and per-field checks in Python).

    python bench/bench_load.py [--sizes 1 2 5 10] [--repeat 2]

The file is SIGIR-shaped text (:func:`dsr.collections.synthetic.text_collection`,
846 dialogues x 50 candidates with sentences of real length); size k is k copies of
it with the dialogue ids renamed, so only the size changes. Each size is read
``--repeat`` times and the best time kept; the slope is the least-squares fit of
log(seconds) on log(dialogues).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from benchinfo import footer, goal, header  # noqa: E402

from dsr.collections.synthetic import text_collection  # noqa: E402
from dsr.core.data import read_benchmark  # noqa: E402

#: the goal: log-log slope of load time on size (1.0 = linear)
GOAL_SLOPE = 1.05


def write_copies(lines: list[dict], copies: int, path: Path) -> int:
    """``copies`` copies of the dialogues, ids suffixed per copy; returns the byte size."""
    with path.open("w", encoding="utf-8") as handle:
        for k in range(copies):
            for obj in lines:
                handle.write(json.dumps({**obj, "id": f"{obj['id']}x{k}"}, ensure_ascii=False))
                handle.write("\n")
    return path.stat().st_size


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[1, 2, 5, 10], help="multiples of the SIGIR size (846 dialogues x 50 candidates)"
    )
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    info = header("bench_load: read_benchmark from 1x to 10x the SIGIR size")
    base = [d.to_json() for d in text_collection(846, 50, seed=0)]
    dialogues, seconds, cpu = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"x{size}.jsonl"
            nbytes = write_copies(base, size, path)
            best = best_cpu = math.inf
            for _ in range(args.repeat):
                start, start_cpu = time.perf_counter(), time.process_time()
                collection = read_benchmark(path)
                best = min(best, time.perf_counter() - start)
                best_cpu = min(best_cpu, time.process_time() - start_cpu)
                del collection
            dialogues.append(846 * size)
            seconds.append(best)
            cpu.append(best_cpu)
            print(
                f"{size:>3}x: {846 * size:>6} dialogues, {nbytes / 1e6:6.1f} MB, best of "
                f"{args.repeat}: {best:6.3f} s wall, {best_cpu:6.3f} s CPU "
                f"({846 * size * 50 / best:,.0f} candidates/s)"
            )
            path.unlink()
    fit = slope(dialogues, seconds)
    verdict = "meets" if fit <= GOAL_SLOPE else "misses"
    print(
        f"RESULT: slope of log time on log size {fit:.3f} (goal <= {GOAL_SLOPE}: {verdict}); "
        f"at {dialogues[-1]} dialogues {seconds[-1]:.2f} s"
    )
    print(f"slope of log CPU time on log size {slope(dialogues, cpu):.3f} (less sensitive to other jobs)")
    goal(
        "loading a benchmark file, slope of log time on log size",
        f"{fit:.3f}",
        f"<= {GOAL_SLOPE}: linear (issue 34)",
        fit <= GOAL_SLOPE,
    )
    footer(info)


if __name__ == "__main__":
    main()
