"""Run every benchmark in bench/ in turn (``make bench``); each prints its own table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = (
    "bench_load.py",
    "bench_eval.py",
    "bench_trec_eval.py",
    "bench_retrieval.py",
    "bench_backends.py",
    "bench_reproduce.py",
    "bench_train.py",
    "bench_board.py",
    "bench_ray_encode.py",
    "bench_million.py",
    "bench_machine.py",
)

if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    failed = [name for name in BENCHES if subprocess.call([sys.executable, str(here / name)]) != 0]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    sys.exit(1 if failed else 0)
