"""``dsr reproduce`` cold and warm: the second run must reuse indexes and embeddings.

    python bench/bench_reproduce.py                 # SIGIR-shaped synthetic set (846 x 50)
    python bench/bench_reproduce.py --collection sample   # the bundled sample (make reproduce)
    python bench/bench_reproduce.py --fast          # dense on OpenVINO int8 (dsr reproduce --fast)
    python bench/bench_reproduce.py --fast --baseline ../old-checkout --rounds 2
    python bench/bench_reproduce.py --collection cmu_dog_dev --source ../shared/data/cmu_dog --backend torch

Each collection is reproduced twice in one fresh DSR_HOME: the first run
builds every index and encodes every sentence (cold), the second finds them
cached (warm). Each run is a process of its own, so its peak resident memory
(VmHWM) is its own. Prints the wall time per stage of both, the warm/cold
ratio (target: warm <= 20 % of cold on the SIGIR-shaped set) and the peak
RSS, with date, machine, versions and the load average before and after.
The cross-encoder row is skipped (no trained model in the fresh home).

``--baseline DIR`` runs another checkout's code (e.g. an older commit) the
same way, alternating with this one round by round, so both see the same
load; the ratios new/baseline are the figures to trust on a shared machine.
Every file the two write (report, figures, run files, sidecars, manifest) is then
compared byte for byte, cold with cold and warm with warm: a speed change must leave
them alone. Only two JSON files may differ, and only in what differs between any two
runs of the same code (``created``, and the manifest's stage seconds): they are compared
with those keys left out, and the bench says so.

With ``--fast``, the exact path (``--backend torch``, torch fp32) of this checkout is
timed too, cold and warm in a home of its own, and printed beside (``--no-exact``
skips it: its cold run encodes every text with torch, several minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchinfo import footer, goal, header, peak_rss_mib, write_result  # noqa: E402


def cpu_seconds() -> float:
    """CPU seconds of this process's threads and of its ended child processes (the forked
    workers that measure a grid and draw the figures are counted once they end)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def worker(spec: dict) -> dict:
    """One ``reproduce`` with the code of ``spec["code"]``: per-stage seconds and peak RSS."""
    sys.path.insert(0, spec["code"])
    os.environ["DSR_HOME"] = spec["home"]
    # benchinfo imported this checkout's dsr already (its provenance helpers): forget it, so that
    # every dsr module below is the one of spec["code"] (a baseline ran this checkout's code
    # before, and its outputs were byte-identical for that reason)
    for name in [m for m in sys.modules if m == "dsr" or m.startswith("dsr.")]:
        del sys.modules[name]
    import dsr

    code = Path(spec["code"]).resolve()
    assert code in Path(dsr.__file__).resolve().parents, f"dsr imported from {dsr.__file__}, not from {code}"
    try:
        from dsr.baselines import reproduce
        from dsr.core.timing import StageTimer
    except ImportError:  # a baseline checkout from before dsr/reproduce.py became dsr/baselines.py
        from dsr.reproduce import StageTimer, reproduce
    from dsr.collections import load_collection

    class Timer(StageTimer):
        """Wall seconds per stage, and the CPU seconds of all this process's threads and of
        its workers (less sensitive than wall time to other jobs on a shared machine)."""

        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.cpu: dict[str, float] = {}

        def __call__(self, stage: str, what: str = ""):
            inner = super().__call__(stage, what)
            cpu = self.cpu

            class Both:
                def __enter__(self):
                    self.start = cpu_seconds()
                    return inner.__enter__()

                def __exit__(self, *exc):
                    cpu[stage] = cpu.get(stage, 0.0) + cpu_seconds() - self.start
                    return inner.__exit__(*exc)

            return Both()

    timer = Timer(quiet=True)
    cpu_start = cpu_seconds()
    settled = count_settled_near_ties()  # the exact backend's near ties (dsr.indexes.embeddings)
    with timer("load"):
        collection = load_collection(spec["collection"], spec.get("source"))
    reproduce(
        collection,
        Path(spec["home"]) / f"out-{spec['label']}",
        timer=timer,
        backend=spec["backend"],
        skipped_reason="skipped: benchmark without a cross-encoder",
    )
    return {
        "seconds": dict(timer.seconds),
        "cpu": {**timer.cpu, "total": cpu_seconds() - cpu_start},
        "peak_rss_mib": peak_rss_mib(),
        "dialogues": len(collection),
        "candidates": sum(len(d.candidates) for d in collection),
        "near_ties": settled,
    }


def count_settled_near_ties() -> dict[str, float]:
    """Counts of what the dense ranker's ``settle_near_ties`` re-scored in float64, filled as it
    runs: rankings, rankings with a near tie, candidates re-scored, seconds. Empty for a checkout
    without it."""
    import numpy as np

    from dsr.rankers import dense

    counts = {"rankings": 0, "settled": 0, "candidates": 0, "seconds": 0.0}
    real = getattr(dense, "settle_near_ties", None)
    if real is None:
        return {}

    def counted(topics, *args, **kwargs):
        start = time.perf_counter()
        out = real(topics, *args, **kwargs)
        counts["seconds"] += time.perf_counter() - start
        for new, (old, _, _) in zip(out, topics):
            moved = int((np.asarray(new, np.float64) != np.asarray(old, np.float64)).sum())
            counts["rankings"] += 1
            counts["settled"] += moved > 0
            counts["candidates"] += moved
        return out

    dense.settle_near_ties = counted
    return counts


def run_worker(spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    if out.returncode != 0:
        raise RuntimeError(f"reproduce failed ({spec['code']}, {spec['label']}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def collection_file(spec: str, dialogues: int, folder: Path) -> str:
    if spec != "synthetic":
        return spec
    from dsr.collections.synthetic import text_collection
    from dsr.core.data import write_benchmark

    path = folder / "synthetic.jsonl"
    write_benchmark(text_collection(dialogues), str(path))
    return str(path)


#: keys whose values differ between two runs of the same code: when the file is, and how
#: long each stage took
VOLATILE_KEYS = {"created", "wall_time_s"}


def _without_volatile(value):
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def compare_outputs(old: Path, new: Path) -> dict[str, list[str]]:
    """Every file of two ``reproduce`` output folders: ``same`` (byte for byte), ``volatile``
    (JSON equal once VOLATILE_KEYS are left out), ``differ`` (or missing on one side)."""
    names = sorted({p.relative_to(root).as_posix() for root in (old, new) for p in root.rglob("*") if p.is_file()})
    out: dict[str, list[str]] = {"same": [], "volatile": [], "differ": []}
    for name in names:
        a, b = old / name, new / name
        if not (a.is_file() and b.is_file()):
            out["differ"].append(name + " (only in " + ("new" if b.is_file() else "old") + ")")
        elif a.read_bytes() == b.read_bytes():
            out["same"].append(name)
        elif name.endswith(".json") and _without_volatile(json.loads(a.read_text(encoding="utf-8"))) == _without_volatile(
            json.loads(b.read_text(encoding="utf-8"))
        ):
            out["volatile"].append(name)
        else:
            out["differ"].append(name)
    return out


def print_comparison(label: str, found: dict[str, list[str]]) -> bool:
    total = sum(map(len, found.values()))
    print(
        f"{label} outputs, this checkout against the baseline: {total} files, {len(found['same'])} "
        f"byte-identical, {len(found['volatile'])} identical but for their creation time and stage "
        f"seconds ({', '.join(found['volatile']) or '-'}), {len(found['differ'])} differ"
        + (f": {', '.join(found['differ'])}" if found["differ"] else "")
    )
    return not found["differ"]


def report(name: str, results: list[tuple[dict, dict]]) -> dict:
    """Median per stage over rounds, cold and warm; prints the table."""
    stages = list(results[0][0]["seconds"])
    cold = {s: statistics.median(r[0]["seconds"].get(s, 0.0) for r in results) for s in stages}
    warm = {s: statistics.median(r[1]["seconds"].get(s, 0.0) for r in results) for s in stages}
    cpu = [{s: statistics.median(r[i]["cpu"].get(s, 0.0) for r in results) for s in stages} for i in (0, 1)]
    peaks = (max(r[0]["peak_rss_mib"] for r in results), max(r[1]["peak_rss_mib"] for r in results))
    print(
        f"\n## {name} (median of {len(results)} round(s); every round: "
        + "; ".join(f"cold {r[0]['seconds']['total']:.1f} s, warm {r[1]['seconds']['total']:.1f} s" for r in results)
        + ")"
    )
    print(f"{'stage':<16}{'cold s':>10}{'warm s':>10}{'cold CPU s':>12}{'warm CPU s':>12}")
    for stage in stages:
        print(f"{stage:<16}{cold[stage]:>10.2f}{warm[stage]:>10.2f}{cpu[0][stage]:>12.2f}{cpu[1][stage]:>12.2f}")
    print(f"peak RSS: cold {peaks[0]:.0f} MiB, warm {peaks[1]:.0f} MiB")
    ratio = warm["total"] / cold["total"]
    print(f"warm / cold = {ratio:.1%} (target <= 20 %: {'met' if ratio <= 0.2 else 'NOT met'})")
    judged = "exact" not in name  # the goals are --fast's; the exact path is printed beside them
    goal(
        f"{name}: reproduce cold",
        f"{cold['total']:.1f} s",
        "<= 60 s with --fast (issue 44)",
        cold["total"] <= 60 if judged else None,
    )
    goal(
        f"{name}: reproduce warm",
        f"{warm['total']:.1f} s",
        "<= 10 s with --fast (issue 44)",
        warm["total"] <= 10 if judged else None,
    )
    return {
        "cold": cold,
        "warm": warm,
        "cpu": {"cold": cpu[0], "warm": cpu[1]},
        "peak_rss_mib": {"cold": peaks[0], "warm": peaks[1]},
        "rounds": [{"cold": c["seconds"], "warm": w["seconds"]} for c, w in results],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--collection", default="synthetic", help="synthetic (846 x 50, SIGIR shape) or any COLLECTION dsr accepts"
    )
    parser.add_argument("--dialogues", type=int, default=846, help="synthetic: dialogues")
    parser.add_argument("--source", metavar="DIR", help="a registered collection's source folder (as dsr reproduce --source)")
    parser.add_argument("--fast", action="store_true", help="as dsr reproduce --fast (cold includes the export)")
    parser.add_argument(
        "--backend",
        choices=("auto", "torch", "openvino", "openvino-bf16", "openvino-int8"),
        help="as dsr reproduce --backend (default auto, as dsr reproduce)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="cold+warm pairs per code (default 1)")
    parser.add_argument("--baseline", metavar="DIR", help="also time this checkout's code, alternating")
    parser.add_argument(
        "--exact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --fast: also time this checkout on --backend torch, cold and warm (default: on)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the homes and outputs (their folder is printed)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--result",
        metavar="NAME",
        help="the result file the docs show, bench/results/NAME.json (default reproduce_COLLECTION, "
        "with _fast under --fast; 'none': not written)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0

    from dsr.baselines import FAST_BACKEND  # this checkout's, for the default
    from dsr.indexes.backends import resolve_backend

    backend = resolve_backend(args.backend or (FAST_BACKEND if args.fast else "auto"))
    info = header("bench_reproduce: dsr reproduce, cold vs warm")
    folder = Path(tempfile.mkdtemp(prefix="dsr-bench-reproduce-"))
    spec = collection_file(args.collection, args.dialogues, folder)
    codes = {
        "this checkout": (str(ROOT), backend),
        **({"baseline": (str(Path(args.baseline).resolve()), backend)} if args.baseline else {}),
    }
    if args.fast and (args.exact if args.exact is not None else True) and backend != "torch":
        codes["this checkout, exact (torch)"] = (str(ROOT), "torch")
    results: dict[str, list] = {name: [] for name in codes}
    same = True
    for round_ in range(args.rounds):
        homes = {}
        for name, (code, on) in codes.items():
            homes[name] = home = folder / f"home-{round_}-{'-'.join(name.replace(',', '').split())}"
            pair = tuple(
                run_worker(
                    {"code": code, "home": str(home), "collection": spec, "source": args.source, "label": label, "backend": on}
                )
                for label in ("cold", "warm")
            )
            results[name].append(pair)
            print(
                f"{name}, round {round_ + 1}: cold {pair[0]['seconds']['total']:.1f} s, "
                f"warm {pair[1]['seconds']['total']:.1f} s (load {os.getloadavg()[0]:.2f})",
                file=sys.stderr,
                flush=True,
            )
            for label, part in zip(("cold", "warm"), pair):
                if part.get("near_ties", {}).get("rankings"):
                    ties = part["near_ties"]
                    print(
                        f"{name}, round {round_ + 1}, {label}: near ties settled in float64 in "
                        f"{ties['settled']} of {ties['rankings']} dense rankings, {ties['candidates']} "
                        f"candidates re-scored, {ties['seconds']:.2f} s"
                    )
        if args.baseline:
            for label in ("cold", "warm"):
                same &= print_comparison(
                    f"round {round_ + 1}, {label}",
                    compare_outputs(homes["baseline"] / f"out-{label}", homes["this checkout"] / f"out-{label}"),
                )
    first = results["this checkout"][0][0]
    print(f"collection: {args.collection} ({first['dialogues']} dialogues, {first['candidates']} candidates), backend {backend}")
    from dsr.core.provenance import package_versions

    print("versions: " + ", ".join(f"{k} {v}" for k, v in package_versions().items() if v))
    figures = {name: report(name, rows) for name, rows in results.items()}
    if args.baseline:
        for label in ("cold", "warm"):
            ratios = [
                n[i]["seconds"]["total"] / b[i]["seconds"]["total"]
                for n, b in zip(results["this checkout"], results["baseline"])
                for i in [("cold", "warm").index(label)]
            ]
            print(
                f"{label}: this checkout / baseline = {statistics.median(ratios):.2f} "
                f"(per round: {', '.join(f'{r:.2f}' for r in ratios)})"
            )
    if args.baseline:
        goal(
            "reproduce outputs",
            "byte-identical to the baseline's" if same else "DIFFERENT from the baseline's",
            "every file the same (issue 44)",
            same,
        )
    footer(info)
    if args.keep:
        print(f"homes and outputs kept in {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"header": info, "backend": backend, "figures": figures}, indent=2), encoding="utf-8"
        )
    name = args.result or f"reproduce_{Path(args.collection).stem}" + ("_fast" if args.fast else "")
    if name != "none":
        rows = [
            [f"{code}, {label}", f"{figures[code][label]['total']:.1f} s", f"{figures[code]['cpu'][label]['total']:.1f} s",
             f"{figures[code]['peak_rss_mib'][label]:.0f} MiB"]
            for code in figures
            for label in ("cold", "warm")
        ]  # fmt: skip
        write_result(
            name,
            info,
            ["run", "wall", "CPU", "peak RSS"],
            rows,
            title=f"dsr reproduce {args.collection}, cold (a fresh DSR_HOME) and warm, backend {backend}",
            notes=[f"Median of {args.rounds} round(s)." + ("" if same else " Outputs DIFFER from the baseline's.")],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
