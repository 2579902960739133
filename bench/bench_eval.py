"""Benchmark: evaluate 20 runs x 846 topics x 9 measures x 50 splits (SIGIR 2022-shaped).

Target: under 2 s on 2 cores for the whole protocol (per-topic evaluation of
each run once, then every split's test-half means and sds for all dialogues
and both subsets). Also timed: the same 20 runs tuned as one family (choice on
val per split), and the significance tests of 19 runs against a baseline.

    python bench/bench_eval.py [--repeat 3] [--splits FILE]

Synthetic data: 846 dialogues (ids from the real split file when it is
available, else generated), 50 candidates each, 0/1 labels at the real set's
rate of about one relevant in ten, half plain and half grounded.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.core.provenance import machine, package_versions  # noqa: E402
from dsr.evaluation.experiment import evaluate_runs  # noqa: E402
from dsr.evaluation.measures import DEFAULT_MEASURES  # noqa: E402
from dsr.evaluation.protocol import generate_splits, read_splits  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from benchinfo import goal  # noqa: E402

from dsr.collections.synthetic import make_collection, make_run  # noqa: E402

DEFAULT_SPLITS = ROOT.parent / "shared" / "data" / "sigir2022" / "val_test_splits.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--splits", default=str(DEFAULT_SPLITS))
    args = parser.parse_args()

    if Path(args.splits).exists():
        first = json.loads(Path(args.splits).read_text().splitlines()[0])
        ids = sorted(first["val"] + first["test"])
        collection = make_collection(ids=ids, seed=0, grades=(0,) * 9 + (1,))
        splits = read_splits(args.splits, collection.ids)
        where = f"real split file {args.splits}"
    else:
        collection = make_collection(n=846, seed=0, grades=(0,) * 9 + (1,))
        splits = generate_splits(collection.ids, 50, seed=0)
        where = "generated splits (seed 0)"
    runs = {f"run{k:02d}": make_run(collection, seed=k, quality=0.1 * k) for k in range(args.runs)}

    def timed(label, fn):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        print(f"{label}: best {min(times):.3f} s, median {statistics.median(times):.3f} s ({args.repeat} repeats)")
        return min(times)

    print(f"# bench_eval {dt.datetime.now().astimezone().isoformat(timespec='seconds')}")
    print(f"machine: {machine()}")
    versions = package_versions(("numpy", "scipy", "ir_measures", "pytrec-eval-terrier"))
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(
        f"data: {len(runs)} runs x {len(collection)} topics x {len(DEFAULT_MEASURES)} measures x "
        f"{len(splits)} splits; {where}; subsets {collection.subsets}"
    )
    best = timed(
        "untuned runs, 50-split protocol (target < 2 s)", lambda: evaluate_runs(collection, runs, splits=splits, progress=False)
    )
    timed(
        "the 20 runs tuned as one family on val per split",
        lambda: evaluate_runs(collection, {}, splits=splits, families={"grid": runs}, progress=False),
    )
    timed(
        "untuned protocol + baseline tests (t and 10000-resample randomisation, 3 subsets)",
        lambda: evaluate_runs(collection, runs, splits=splits, baseline="run00", progress=False),
    )
    print(f"RESULT: {best:.3f} s for the protocol ({'meets' if best < 2 else 'misses'} the 2 s target)")
    goal("the 50-split protocol, 20 runs x 846 topics", f"{best:.3f} s", "< 2 s", best < 2)


if __name__ == "__main__":
    main()
