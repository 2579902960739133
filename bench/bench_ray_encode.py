"""Where the CPU goes when Ray encodes a corpus: per-process CPU seconds by role, 1 vs 2 workers.

    python bench/bench_ray_encode.py [--encode 3000]

Builds a corpus of real CMU_DoG sentences (as bench_corpus.py does), then
encodes it (all-MiniLM-L6-v2, ``encode_corpus``) in this process with one
torch thread and on a local Ray with 1 and 2 workers, each on a fresh copy.
While each pass runs, a sampler reads every process's CPU time (psutil,
every 0.2 s; a process that exits keeps its last reading) and sums it by
role: the driver (this process: Ray Data's streaming executor, the Arrow
blocks and vectors coming back, writing the shards), the encoder actors, the
other Ray workers (readers), Ray's own daemons (raylet, GCS, agents, log
monitor), and everything else on the machine (other people's jobs on a
shared one). The CPU the machine offered is wall seconds x cores; what the
encoders got of it is the share that scales with workers. Printed with date,
machine and load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_memory_usage_threshold", "0.995")

from benchinfo import footer, goal, header  # noqa: E402

ROLES = ("driver", "encoder actors", "other Ray workers", "Ray daemons", "rest of the machine")


def role(pid: int, name: str, cmdline: str) -> str:
    if pid == os.getpid():
        return "driver"
    if "MapWorker" in cmdline or "EncoderActor" in cmdline or "MapBatches" in cmdline:
        return "encoder actors"
    if cmdline.startswith("ray::") or "default_worker.py" in cmdline:
        return "other Ray workers"
    if any(k in name or k in cmdline for k in ("raylet", "gcs_server", "ray/dashboard", "log_monitor",
                                               "runtime_env", "ray_process_reaper", "monitor.py")):
        return "Ray daemons"
    return "rest of the machine"


class CpuSampler:
    """CPU seconds (user + system) of every process while the ``with`` block runs, by role."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.first, self.last, self.roles = interval, {}, {}, {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        import psutil

        for p in psutil.process_iter(["pid", "name", "cmdline", "cpu_times"]):
            try:
                times = p.info["cpu_times"]
                if times is None:
                    continue
                used = times.user + times.system
                key = (p.info["pid"], p.create_time())
            except (psutil.Error, TypeError):
                continue
            self.first.setdefault(key, used if self.started_before(key) else 0.0)
            self.last[key] = used
            if key not in self.roles:  # a worker's title names its actor once it has one
                self.roles[key] = role(key[0], p.info["name"] or "", " ".join(p.info["cmdline"] or []))
            elif self.roles[key] == "other Ray workers":
                title = " ".join(p.info["cmdline"] or [])
                self.roles[key] = role(key[0], p.info["name"] or "", title)

    def started_before(self, key) -> bool:
        return key[1] < self.start_time

    def __enter__(self) -> CpuSampler:
        self.start_time, self.wall = time.time(), time.perf_counter()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.wall = time.perf_counter() - self.wall

    def by_role(self) -> dict[str, float]:
        out = dict.fromkeys(ROLES, 0.0)
        for key, used in self.last.items():
            out[self.roles[key]] += max(0.0, used - self.first[key])
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encode", type=int, default=3000, help="sentences to encode (default 3,000)")
    args = parser.parse_args()
    import torch
    from bench_corpus import real_documents, write_jsonl

    from dsr.core.models import load_sentence_transformer, resolve_model
    from dsr.indexes.corpus.build import build_corpus
    from dsr.indexes.corpus.dense import encode_corpus
    from dsr.indexes.corpus.distributed import Executor
    from dsr.indexes.corpus.layout import Corpus

    info = header("bench_ray_encode: CPU by role while Ray encodes")
    work = Path(tempfile.mkdtemp(prefix="bench-ray-encode-"))
    os.environ["DSR_HOME"] = str(work / "home")
    docs, _ = real_documents(10)
    picked, count = [], 0
    for doc in docs:  # whole documents until the subset is full
        picked.append(doc)
        count += doc["text"].count("\n") + 1
        if count >= args.encode:
            break
    source = write_jsonl(work / "docs.jsonl", picked)
    model = resolve_model("all-MiniLM-L6-v2", "bi-encoder")
    load_sentence_transformer(model)
    cores = os.cpu_count() or 1
    rates = {}
    for name, workers in (("in-process, 1 thread", 0), ("Ray, 1 worker", 1), ("Ray, 2 workers", 2)):
        out = work / f"corpus-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        build_corpus(source, out, docs_per_shard=max(1, len(picked) // 8))
        corpus = Corpus(out)
        executor = Executor(workers)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # in-process: one thread, as each Ray actor has
        try:
            with executor:
                with CpuSampler() as sampler:
                    encode_corpus(corpus, model, executor=executor)
        finally:
            torch.set_num_threads(threads)
        rates[name] = len(corpus) / sampler.wall
        cpu = sampler.by_role()
        print(f"\n## {name}: {len(corpus):,} sentences in {sampler.wall:.1f} s = {rates[name]:.0f}/s "
              f"(actors' model load included); the machine offered {sampler.wall * cores:.1f} CPU s")
        for key in ROLES:
            print(f"  {key:<22} {cpu[key]:8.1f} CPU s  ({cpu[key] / (sampler.wall * cores):6.1%} of the machine)")
    print(f"\nRay 2 workers / 1 worker: {rates['Ray, 2 workers'] / rates['Ray, 1 worker']:.2f}x; "
          f"Ray 1 worker / in-process 1 thread: {rates['Ray, 1 worker'] / rates['in-process, 1 thread']:.2f}x")
    scaling = rates["Ray, 2 workers"] / rates["Ray, 1 worker"]
    within = rates["Ray, 1 worker"] / rates["in-process, 1 thread"]
    goal("Ray encoding, 2 workers / 1", f"{scaling:.2f}x", ">= 1.7x", scaling >= 1.7)
    goal("Ray encoding, 1 worker / in-process", f"{within:.2f}x", ">= 0.90x (within 10 %, issue 34)", within >= 0.9)
    footer(info)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
