"""What fusion through ranx costs (run on demand, not a test).

    python bench/bench_fusion.py

* **ranx's first call in a process.** ranx is numba code: a process's first ``dsr fuse``
  with one of ranx's methods imports ranx and numba and compiles (or loads numba's cache of)
  the functions it calls. Each figure is a fresh Python process: ``import ranx``, then the
  first fusion of two small runs (condorcet, a rank method; anz, a score method; bayesfuse,
  learnt), then the same call again (warm): first with numba's cache empty (a fresh
  ``NUMBA_CACHE_DIR``: numba compiles and writes it), then with it filled (what every later
  process finds: numba keeps it in ``__pycache__`` beside ranx's modules, or in
  ``NUMBA_CACHE_DIR``).
* **RRF of two reproduce-shaped runs** (846 topics x 50 sentences): dsr's numpy kernel, the
  aligned fast path ``dsr reproduce`` takes (an initial order given), and ranx's rrf through
  ``backend="ranx"`` (warm), seconds per fusion: why dsr keeps its kernels for the six
  methods it shares with ranx.
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from benchinfo import footer, goal, header  # noqa: E402

CHILD = """
import time, sys
t = time.perf_counter(); import ranx; t_import = time.perf_counter() - t
from dsr.core.fusion import fuse
from dsr.core.run import Run
a = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"y": 1.0}}, "a")
b = Run.from_dict({"q1": {"c": 3.0, "a": 2.0}, "q2": {"x": 1.0}}, "b")
labels = {"q1": {"a": 1, "c": 0}, "q2": {"x": 1}}
method = sys.argv[1]
t = time.perf_counter(); fuse([a, b], method, labels=labels); first = time.perf_counter() - t
t = time.perf_counter(); fuse([a, b], method, labels=labels); warm = time.perf_counter() - t
print(f"{t_import:.2f} {first:.2f} {warm:.3f}")
"""


def first_calls() -> tuple[float, float]:
    """(the worst import + first call with numba's cache empty, the same with it filled)."""
    import os
    import tempfile

    print("## a fresh process per method: import ranx, first fusion, the same again (seconds)")
    worst = {"empty": 0.0, "filled": 0.0}
    with tempfile.TemporaryDirectory() as cache:
        for state, method in (
            ("empty", "condorcet"),
            ("filled", "condorcet"),
            ("empty", "anz"),
            ("filled", "anz"),
            ("empty", "bayesfuse"),
            ("filled", "bayesfuse"),
        ):
            where = os.path.join(cache, method)
            env = {**os.environ, "NUMBA_CACHE_DIR": where}  # empty: numba compiles and fills it
            out = subprocess.run(
                [sys.executable, "-c", CHILD, method], capture_output=True, text=True, cwd=ROOT, check=True, env=env
            ).stdout.split()
            imported, first, warm = map(float, out)
            worst[state] = max(worst[state], imported + first)
            print(f"  {method:<10} numba cache {state:<6} import {imported:6.2f}  first call {first:6.2f}  warm {warm:6.3f}")
    return worst["empty"], worst["filled"]


def shaped_runs(topics: int = 846, per: int = 50):
    from dsr.core.run import Run

    rng = random.Random(0)
    order = {f"t{t}": [f"s{t}-{i}" for i in range(per)] for t in range(topics)}
    runs = [Run.from_scores({q: {d: rng.random() for d in docs} for q, docs in order.items()}, tag=f"r{i}") for i in range(2)]
    return runs, order


def rrf_costs() -> None:
    from dsr.core.fusion import fuse

    runs, order = shaped_runs()
    print("## RRF of two runs of 846 topics x 50 sentences (seconds per fusion, best of 3)")
    for name, call in (
        ("dsr kernel", lambda: fuse(runs, "rrf")),
        ("dsr aligned (reproduce)", lambda: fuse(runs, "rrf", initial_order=order)),
        ("ranx (backend=ranx)", lambda: fuse(runs, "rrf", backend="ranx")),
    ):
        call()  # warm: ranx compiled, layouts cached
        best = min(_timed(call) for _ in range(3))
        print(f"  {name:<24} {best:.3f}")


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


if __name__ == "__main__":
    info = header("bench_fusion: ranx's first call and RRF's cost")
    cold, cached = first_calls()
    rrf_costs()
    goal(
        "ranx's first fusion in a process (import + first call)",
        f"{cold:.1f} s with numba's cache empty, {cached:.1f} s with it filled",
        "none set: documented in docs/api.md",
        None,
    )
    footer(info)
