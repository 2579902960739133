"""Two small facts about the machine behind the larger benches (run on demand, not a test).

    python bench/bench_machine.py

* **Do the cores scale?** The same single-thread fp32 matmul loop (384 x 384, numpy,
  8 s) in one process, then in two at once, twice over. Near 2x in total means the
  cores are real cores; Ray's encoding scaling (bench_ray_encode.py) is read against it.
* **What the run files' gzip level costs.** A run shaped like one of ``dsr reproduce``'s
  on the SIGIR-shaped set (846 topics x 50 sentences) written by
  ``dsr.core.textfiles.atomic_write_text`` (level 6), against the same text at
  Python's default level 9: seconds per write and bytes.
"""

from __future__ import annotations

import gzip
import multiprocessing
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[name] = "1"  # before numpy loads: one thread per process

from benchinfo import footer, goal, header  # noqa: E402

from dsr.core.textfiles import atomic_write_text  # noqa: E402

SECONDS = 8.0


def _matmuls(queue) -> None:
    import numpy as np

    a = np.random.default_rng(0).random((384, 384), dtype=np.float32)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < SECONDS:
        a @ a
        n += 1
    queue.put(n / (time.perf_counter() - start))


def cores() -> None:
    print("## single-thread fp32 matmuls (384 x 384), per process and in total")
    for processes in (1, 2, 1, 2):
        queue = multiprocessing.Queue()
        workers = [multiprocessing.Process(target=_matmuls, args=(queue,)) for _ in range(processes)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        rates = [queue.get() for _ in workers]
        print(f"  {processes} process(es): {', '.join(f'{r:,.0f}' for r in rates)} /s each, {sum(rates):,.0f} /s in all")


def run_text() -> str:
    rng = random.Random(0)
    return "".join(
        f"t5_2qh1i.iixjd.{q}.3 Q0 Roman_concrete_1_2_0_{d} {r} {rng.random() * 10:.7g} dense-title+recent\n"
        for q in range(846)
        for r, d in enumerate(range(50), 1)
    )


def gzip_levels(rounds: int = 5) -> None:
    text = run_text()
    print(f"## a reproduce-shaped run file ({len(text) / 1e6:.2f} MB of text), best of {rounds}")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.run.gz"
        best = min(_timed(lambda: _write(path, text)) for _ in range(rounds))
        print(f"  atomic_write_text (level 6): {best:.3f} s, {path.stat().st_size:,} bytes")
    data = text.encode()
    for level in (9, 6, 1):
        best = min(_timed(lambda: gzip.compress(data, compresslevel=level, mtime=0)) for _ in range(rounds))
        size = len(gzip.compress(data, compresslevel=level, mtime=0))
        print(f"  gzip level {level}: {best:.3f} s, {size:,} bytes")


def _write(path: Path, text: str) -> None:
    with atomic_write_text(path) as handle:
        handle.write(text)


def _timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    info = header("bench_machine: core scaling and the run files' gzip level")
    cores()
    gzip_levels()
    goal("the machine", "see above", "none: what the other benches' figures are read against", None)
    footer(info)


if __name__ == "__main__":
    main()
