"""Where the CPU and memory go when Ray encodes a corpus: per-process CPU seconds and peak RSS by
role, Ray on one node against the in-process path (goal: within 10 %).

    python bench/bench_ray_encode.py [--encode 20000] [--backend auto] [--home DSR_HOME]

The default, 20,000 (26,202 sentences: whole documents until at least that
many), is the size issue 34's goal is measured at; a smaller corpus shows the
actor's fixed start (docs/scale.md).

Builds a corpus of real CMU_DoG sentences (as bench_corpus.py does), then
encodes it (all-MiniLM-L6-v2, ``encode_corpus``, ``--backend``: by default
the fastest this CPU has) in this process (the encoder on every core), on a
local Ray of all the cores with one encoder actor of that many threads (the
default since issue 34), and with one one-thread actor per core (before),
each on a fresh copy. A pass is timed from ``encode_corpus``'s call to its
return, on a Ray already started (as in ``dsr corpus index --workers N``,
whose one Ray session serves every stage): the actors' start and model load
are inside, Ray's own start and shutdown (``ray.init``, ``ray.shutdown``)
are timed apart, and a second ratio with them is printed.
While each pass runs, a sampler reads every process's CPU time (psutil,
every 0.2 s; a process that exits keeps its last reading) and sums it by
role: the driver (this process: submitting the shards, the vectors coming
back, writing them), the encoder actors, the other Ray workers (idle
pre-started ones), Ray's own daemons (raylet, GCS, agents, log monitor), and
everything else on the machine (other people's jobs on a shared one). The
CPU the machine offered is wall seconds x cores; what the encoders got of it
is the share that scales with workers. Printed with date, machine and load.
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
    if "EncoderActor" in cmdline:
        return "encoder actors"
    if cmdline.startswith("ray::") or "default_worker.py" in cmdline:
        return "other Ray workers"
    if any(
        k in name or k in cmdline
        for k in ("raylet", "gcs_server", "ray/dashboard", "log_monitor", "runtime_env", "ray_process_reaper", "monitor.py")
    ):
        return "Ray daemons"
    return "rest of the machine"


class CpuSampler:
    """CPU seconds (user + system) of every process while the ``with`` block runs, by role."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.first, self.last, self.roles, self.rss = interval, {}, {}, {}, {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        import psutil

        for p in psutil.process_iter(["pid", "name", "cmdline", "cpu_times", "memory_info"]):
            try:
                times = p.info["cpu_times"]
                if times is None:
                    continue
                used = times.user + times.system
                key = (p.info["pid"], p.create_time())
            except (psutil.Error, TypeError):
                continue
            if p.info["memory_info"] is not None:
                self.rss[key] = max(self.rss.get(key, 0), p.info["memory_info"].rss)
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

    def rss_by_role(self) -> dict[str, float]:
        """MiB: the sum over each role's processes of each one's largest RSS seen (the driver's
        includes what it held before the pass)."""
        out = dict.fromkeys(ROLES, 0.0)
        for key, rss in self.rss.items():
            if key in self.roles:
                out[self.roles[key]] += rss / 2**20
        return out

    def by_role(self) -> dict[str, float]:
        out = dict.fromkeys(ROLES, 0.0)
        for key, used in self.last.items():
            out[self.roles[key]] += max(0.0, used - self.first[key])
        return out


PASSES = ("in-process", "Ray, one actor of all CPUs", "Ray, one-thread actors")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--encode", type=int, default=20000, help="sentences to encode (default 20,000)")
    parser.add_argument("--backend", default="auto", help="encoder backend (default auto: the fastest)")
    parser.add_argument("--home", help="DSR_HOME holding the model's export (default: a fresh one)")
    args = parser.parse_args()
    from bench_corpus import real_documents, write_jsonl

    from dsr.core.models import load_sentence_transformer, resolve_model
    from dsr.indexes.backends import export, resolve_backend
    from dsr.indexes.corpus.build import build_corpus
    from dsr.indexes.corpus.dense import encode_corpus
    from dsr.indexes.corpus.distributed import Executor
    from dsr.indexes.corpus.layout import Corpus

    info = header("bench_ray_encode: CPU and memory by role while Ray encodes")
    work = Path(tempfile.mkdtemp(prefix="bench-ray-encode-"))
    os.environ["DSR_HOME"] = args.home or str(work / "home")
    backend = resolve_backend(args.backend)
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
    if backend != "torch":
        export(model, "bi-encoder", backend)  # once per DSR_HOME, before any pass: not timed
    cores = os.cpu_count() or 1
    rates, memory, whole, session = {}, {}, {}, {}
    executors = {
        "in-process": Executor(0),
        "Ray, one actor of all CPUs": Executor(cores),
        "Ray, one-thread actors": Executor(cores, actor_cpus=1),
    }
    for name, executor in executors.items():
        out = work / f"corpus-{PASSES.index(name)}"
        shutil.rmtree(out, ignore_errors=True)
        build_corpus(source, out, docs_per_shard=max(1, len(picked) // 8))
        corpus = Corpus(out)
        began = time.perf_counter()
        with executor:
            started = time.perf_counter() - began  # ray.init (0 in-process)
            with CpuSampler() as sampler:
                encode_corpus(corpus, model, executor=executor, backend=backend)
            ended = time.perf_counter()
        session[name] = started + time.perf_counter() - ended  # ray.init + ray.shutdown
        rates[name] = len(corpus) / sampler.wall
        whole[name] = len(corpus) / (sampler.wall + session[name])
        cpu, rss = sampler.by_role(), sampler.rss_by_role()
        memory[name] = sum(rss[k] for k in ROLES if k != "rest of the machine")
        print(
            f"\n## {name} ({backend}): {len(corpus):,} sentences in {sampler.wall:.1f} s = {rates[name]:.0f}/s "
            f"(the actors' start and model load included; Ray's own start and shutdown, "
            f"{session[name]:.1f} s, apart); the machine offered "
            f"{sampler.wall * cores:.1f} CPU s; peak memory of this job's processes {memory[name]:.0f} MiB"
        )
        for key in ROLES:
            print(
                f"  {key:<22} {cpu[key]:8.1f} CPU s  ({cpu[key] / (sampler.wall * cores):6.1%} of the machine)"
                f"  peak RSS {rss[key]:7.0f} MiB"
            )
    within = rates["Ray, one actor of all CPUs"] / rates["in-process"]
    old = rates["Ray, one-thread actors"] / rates["in-process"]
    print(
        f"\nRay (one actor of {cores} CPUs) / in-process: {within:.2f}x the rate, "
        f"{memory['Ray, one actor of all CPUs'] / memory['in-process']:.2f}x the memory; "
        f"{cores} one-thread actors / in-process: {old:.2f}x the rate, "
        f"{memory['Ray, one-thread actors'] / memory['in-process']:.2f}x the memory"
    )
    print(
        f"With Ray's own start and shutdown (ray.init + ray.shutdown, "
        f"{session['Ray, one actor of all CPUs']:.1f} s; a `dsr corpus index --workers N` command pays "
        f"them once for all its stages): {whole['Ray, one actor of all CPUs'] / whole['in-process']:.2f}x"
    )
    goal("Ray encoding on one node / in-process", f"{within:.2f}x", ">= 0.90x (within 10 %, issue 34)", within >= 0.9)
    footer(info)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
