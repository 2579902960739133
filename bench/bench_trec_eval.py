"""Benchmark: ``dsr trec_eval`` and ``dsr evaluate --qrels`` against the real trec_eval on a
large run: 5,000 topics x 1,000 documents (5 M lines) with 500 k qrels lines, by default.

    python bench/bench_trec_eval.py [--trec-eval BIN]... [--te-9 BIN] [--te-10 BIN]
        [--topics 5000] [--docs 1000] [--judged 100] [--rounds 3] [--seed 0] [--out JSON]

Writes the run and qrels (seeded) to a temporary folder, then times, in interleaved rounds,
``dsr trec_eval`` (the default measures, and ``-q -m all_trec``), ``dsr evaluate --qrels``
(its default measures) and each trec_eval binary given beside dsr under the binary's release
(``--te-9``/``--te-10``, or ``--trec-eval`` read by ``-v``), each a process of its own: wall
time (the median of the rounds) and peak resident memory (``wait4``'s ``ru_maxrss``). Checks
dsr trec_eval's output byte-equal to the binary's, prints both figures and their ratio, and
writes ``bench/results/trec_eval.json``. Without a binary it prints dsr's own figures.

The run is shaped as runs are: topic by topic, scores descending with ties (4 decimals) in
no particular order of doc id, ids like ``d1234567``; half of each topic's judged documents
retrieved, grades 0 to 3 and some -1.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from benchinfo import footer, goal, header, write_result  # noqa: E402

#: the dsr command of this interpreter's environment
DSR = (
    [str(Path(sys.executable).with_name("dsr"))]
    if Path(sys.executable).with_name("dsr").exists()
    else [sys.executable, "-m", "dsr.cli"]
)
#: GNU time reports a child's own peak (a child started from this Python process inherits its
#: peak in ru_maxrss: the kernel folds the parent's memory in at exec)
GNU_TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None
RESULTS = ROOT / "bench" / "results" / "trec_eval.json"
#: the measure sets timed: trec_eval's default, and every measure per topic
SETS = {"default": [], "-q -m all_trec": ["-q", "-m", "all_trec"]}


def write_files(folder: Path, topics: int, docs: int, judged: int, seed: int) -> tuple[Path, Path]:
    """The run and qrels, written with pyarrow (a few seconds for 5 M lines)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv

    rng = np.random.default_rng(seed)
    n = topics * docs
    # distinct ids within a topic: rank slot j draws from its own range, slots shuffled per topic
    slots = rng.permuted(np.tile(np.arange(docs), (topics, 1)), axis=1)
    ids = (rng.integers(0, 2000, size=(topics, docs)) + 2000 * slots).reshape(-1)
    scores = np.round(rng.normal(10, 3, size=n), 4)
    topic = np.repeat(np.arange(1, topics + 1), docs)
    order = np.lexsort((-scores, topic))  # by score within a topic; ties keep a random order
    ids, scores = ids[order], scores[order]

    def text(values) -> pa.Array:
        return pc.cast(pa.array(values), pa.string())

    def column(value: str, size: int) -> pa.Array:
        return pa.array(np.full(size, value))

    options = csv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    run = pa.table(
        {
            "q": text(topic),
            "z": column("Q0", n),
            "d": pc.binary_join_element_wise("d", text(ids), ""),
            "r": text(np.tile(np.arange(1, docs + 1), topics)),
            "s": text(scores),
            "t": column("bench", n),
        }
    )
    csv.write_csv(run, folder / "run", options)
    half = judged // 2
    retrieved = rng.permuted(np.tile(np.arange(docs), (topics, 1)), axis=1)[:, :half] + np.arange(topics)[:, None] * docs
    unretrieved = 2_000_000 + rng.integers(0, 20000, size=(topics, judged - half)) + 20000 * np.arange(judged - half)
    qrels = pa.table(
        {
            "q": text(np.repeat(np.arange(1, topics + 1), judged)),
            "i": column("0", topics * judged),
            "d": pc.binary_join_element_wise("d", text(np.concatenate([ids[retrieved], unretrieved], axis=1).reshape(-1)), ""),
            "g": text(rng.choice([0, 0, 0, 1, 1, 2, 3, -1], size=topics * judged)),
        }
    )
    csv.write_csv(qrels, folder / "qrels", options)
    return folder / "qrels", folder / "run"


def timed(command: list[str], out: Path) -> tuple[float, float, int]:
    """(wall seconds, peak resident GB, exit status) of one process, its stdout to ``out``."""
    report = out.with_suffix(".rss")
    wrapped = [GNU_TIME, "-f", "%M", "-o", str(report), *command] if GNU_TIME else command
    start = time.perf_counter()
    with out.open("wb") as stdout:
        process = subprocess.Popen(wrapped, stdout=stdout, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    kib = int(report.read_text().split()[-1]) if GNU_TIME else usage.ru_maxrss
    return wall, kib / 2**20, os.waitstatus_to_exitcode(status)


def release_of(binary: str) -> str:
    """The release a trec_eval binary follows, from ``-v`` (9.0.8 prints 9.0.7, its last tag)."""
    done = subprocess.run([binary, "-v"], capture_output=True, text=True)
    return "10.0" if "version 10" in done.stdout + done.stderr else "9.0.8"


def commands(binaries: dict[str, str], qrels: Path, run: Path) -> dict[str, list[str]]:
    """name -> command: each binary and dsr trec_eval under its release, per measure set; dsr
    evaluate --qrels."""
    out: dict[str, list[str]] = {}
    for release in binaries or {"9.0.8": ""}:
        for label, flags in SETS.items():
            out[f"dsr trec_eval {release} {label}"] = [*DSR, "trec_eval", "--release", release, *flags, str(qrels), str(run)]
            if binaries:
                out[f"trec_eval {release} {label}"] = [binaries[release], *flags, str(qrels), str(run)]
    out["dsr evaluate --qrels"] = [*DSR, "evaluate", "--qrels", str(qrels), str(run)]
    return out


def measure(named: dict[str, list[str]], rounds: int, folder: Path) -> dict[str, dict]:
    """Each command run once per round, the rounds interleaved (the order rotated)."""
    figures: dict[str, dict] = {name: {"wall": [], "gb": [], "status": set()} for name in named}
    names = list(named)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            wall, gb, status = timed(named[name], folder / f"out {name}")
            figures[name]["wall"].append(wall)
            figures[name]["gb"].append(gb)
            figures[name]["status"].add(status)
            print(f"  round {r + 1}: {name}: {wall:.2f} s, {gb:.3f} GB, exit {status}", flush=True)
    return figures


def rows(binaries: dict[str, str], figures: dict[str, dict], folder: Path) -> tuple[list[list[str]], list[str]]:
    """The table's rows (dsr against the binary, per release and measure set) and the GOAL lines."""
    table, goals = [], []

    def wall(name: str) -> float:
        return statistics.median(figures[name]["wall"])

    def gb(name: str) -> float:
        return max(figures[name]["gb"])

    for release in binaries or {"9.0.8": ""}:
        for label in SETS:
            ours = f"dsr trec_eval {release} {label}"
            theirs = f"trec_eval {release} {label}"
            if theirs not in figures:
                table.append([ours, f"{wall(ours):.2f}", "", "", f"{gb(ours):.3f}", "", "", ""])
                continue
            equal = (folder / f"out {ours}").read_bytes() == (folder / f"out {theirs}").read_bytes()
            time_ratio, memory_ratio = wall(ours) / wall(theirs), gb(ours) / gb(theirs)
            table.append(
                [
                    ours,
                    f"{wall(ours):.2f}",
                    f"{wall(theirs):.2f}",
                    f"{time_ratio:.2f}",
                    f"{gb(ours):.3f}",
                    f"{gb(theirs):.3f}",
                    f"{memory_ratio:.2f}",
                    "yes" if equal else "NO",
                ]
            )
            goals.append(
                goal(
                    f"{ours} vs trec_eval",
                    f"{time_ratio:.2f}x time, {memory_ratio:.2f}x memory, output {'byte-equal' if equal else 'DIFFERS'}",
                    "<= 1.0x time, <= 1.5x memory, byte-equal",
                    time_ratio <= 1.0 and memory_ratio <= 1.5 and equal,
                )
            )
    name = "dsr evaluate --qrels"
    against = f"trec_eval {'9.0.8' if '9.0.8' in binaries else next(iter(binaries), '')} default"
    if against in figures:
        time_ratio, memory_ratio = wall(name) / wall(against), gb(name) / gb(against)
        table.append(
            [
                name,
                f"{wall(name):.2f}",
                f"{wall(against):.2f}",
                f"{time_ratio:.2f}",
                f"{gb(name):.3f}",
                f"{gb(against):.3f}",
                f"{memory_ratio:.2f}",
                "",
            ]
        )
        goals.append(
            goal(
                name + " vs trec_eval (default)",
                f"{time_ratio:.2f}x time, {memory_ratio:.2f}x memory",
                "<= 1.0x time, <= 1.5x memory",
                time_ratio <= 1.0 and memory_ratio <= 1.5,
            )
        )
    else:
        table.append([name, f"{wall(name):.2f}", "", "", f"{gb(name):.3f}", "", "", ""])
    return table, goals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trec-eval", action="append", default=[], metavar="BIN", help="a trec_eval binary (repeatable)")
    parser.add_argument("--te-9", metavar="BIN", help="trec_eval 9.0.8's binary")
    parser.add_argument("--te-10", metavar="BIN", help="trec_eval 10.0's binary")
    parser.add_argument("--topics", type=int, default=5000)
    parser.add_argument("--docs", type=int, default=1000, help="lines per topic")
    parser.add_argument("--judged", type=int, default=100, help="qrels lines per topic")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS), help="the JSON written (default bench/results/trec_eval.json)")
    args = parser.parse_args()
    binaries = {release_of(b): b for b in args.trec_eval}
    binaries.update({r: b for r, b in (("9.0.8", args.te_9), ("10.0", args.te_10)) if b})
    info = header(f"dsr trec_eval and dsr evaluate --qrels against trec_eval ({args.topics} topics x {args.docs} documents)")
    folder = Path(tempfile.mkdtemp(prefix="bench_trec_eval."))
    try:
        qrels, run = write_files(folder, args.topics, args.docs, args.judged, args.seed)
        size = run.stat().st_size / 1e6
        print(f"run: {args.topics * args.docs:,} lines, {size:.0f} MB; qrels: {args.topics * args.judged:,} lines", flush=True)
        figures = measure(commands(binaries, qrels, run), args.rounds, folder)
        table, goals = rows(binaries, figures, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    columns = ["command", "dsr s", "trec_eval s", "time ratio", "dsr GB", "trec_eval GB", "memory ratio", "byte-equal"]
    print("\n" + "\t".join(columns))
    for row in table:
        print("\t".join(row))
    footer(info)
    write_json(Path(args.out), args, info, columns, table, goals, size)
    return 0


def write_json(path: Path, args, info: dict, columns: list[str], table: list[list[str]], goals: list[str], size: float) -> None:
    """``bench/results/trec_eval.json`` in the figures' schema (docs/contributing.md)."""
    given = [
        *(["--trec-eval BIN"] * len(args.trec_eval)),
        *(f"--te-{n} BIN" for n, b in (("9", args.te_9), ("10", args.te_10)) if b),
    ]
    flags = " ".join(given)  # the binaries by their option, not their path
    title = (
        f"dsr trec_eval and dsr evaluate --qrels against trec_eval: {args.topics:,} topics x {args.docs:,} documents "
        f"({size:.0f} MB), {args.topics * args.judged:,} qrels lines"
    )
    notes = [
        f"median wall time of {args.rounds} interleaved rounds, each command a process of its own; memory: the "
        "largest peak resident set (ru_maxrss) of the rounds",
        *(line.split(" (goal")[0].removeprefix("GOAL ") for line in goals),
    ]
    command = f"python bench/bench_trec_eval.py {flags}".strip()
    write_result("trec_eval", info, columns, table, title=title, command=command, notes=notes, path=path)


if __name__ == "__main__":
    sys.exit(main())
