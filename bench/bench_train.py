"""Time the default `dsr train` recipe (CMU_DoG train, silver labels) on this machine.

    python bench/bench_train.py [--source /work/shared/data/cmu_dog] [--max-steps N] [...]
    python bench/bench_train.py --precisions auto fp32     # bf16 (where the CPU has it) vs fp32

Runs `dsr train cmu_dog --split train` in a throw-away DSR_HOME (so the
collection build is timed too and no model is left behind), one process per
``--precisions`` value (so each one's peak resident memory is its own), and
prints the figures with the date, the machine, the load and the package
versions. Each trained bi-encoder then ranks the graded points of the judged
development set ``cmu_dog_dev`` (built from ``--source``; ``--no-judged`` skips it)
with the card's query strategy and candidate text, and nDCG@5 is printed, with each
precision's difference to the first. Extra arguments go to `dsr train` unchanged (e.g. `--max-steps
40` for a quick estimate: the per-step time is printed, multiply by the
default steps; `--recipe full` times that recipe instead, without the estimate). The GOAL
line: the default recipe's training in <= 5 minutes on 2 cores
(the trainer's own seconds, printed with the load average: a loaded machine's figure
is pessimistic) at equal or better dev figures.

    python bench/bench_train.py --recipe full --home DIR --name full --json bench/results/train.json

``--home DIR`` trains in DIR as DSR_HOME and keeps the model there as ``--name`` (so the timed
training is also the model the levers build on); ``--json PATH`` writes the figures (time, steps,
peak memory, load before and after, judged nDCG@5) as a result file that docs blocks are
generated from.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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


def worker(spec: dict) -> dict:
    """Train once (and rank the judged set) in this process; the card's figures and peak RSS."""
    os.environ["DSR_HOME"] = spec["home"]
    from dsr.cli import main as dsr

    started = time.perf_counter()
    code = dsr(
        [
            "train",
            "cmu_dog",
            "--source",
            spec["source"],
            "--split",
            "train",
            "--name",
            spec["name"],
            "--overwrite",
            "--precision",
            spec["precision"],
            *spec["extra"],
        ]
    )
    total = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"dsr train failed with exit {code}")
    card = json.loads((Path(spec["home"]) / "models" / spec["name"] / "dsr_model.json").read_text())
    judged = None
    if spec["judged"] and card.get("kind") == "bi-encoder":
        judged = judged_ndcg(spec, card)
    return {"total_s": total, "card": card, "judged_ndcg5": judged, "peak_rss_mib": peak_rss_mib()}


def judged_ndcg(spec: dict, card: dict) -> float:
    """nDCG@5 of the trained bi-encoder on the graded points of cmu_dog_dev (the card's query
    and text)."""
    from dsr.collections import load_collection
    from dsr.evaluation.measures import evaluate_run
    from dsr.evaluation.qrels import qrels_from_collection
    from dsr.rankers import make_ranker

    judged = load_collection("cmu_dog_dev", spec["source"])
    run = make_ranker("dense", model=f"dsr:{spec['name']}", query=card["query"], text=card.get("text", "body")).rank(judged)
    return float(evaluate_run(qrels_from_collection(judged), run, ["nDCG@5"]).values[:, 0].mean())


def show(precision: str, got: dict) -> None:
    card = got["card"]
    t, d = card["training"], card["training_data"]
    per_step = t["wall_seconds"] / max(t["steps"], 1)
    used = t.get("precision", {})
    print(f"\n## --precision {precision}: trained in {used.get('used', 'fp32')} ({used.get('why', 'before --precision')})")
    print(
        f"recipe: {card.get('recipe') or card['kind']}; pairs {d['pairs']} ({d['positives']} positives), "
        f"batch {card['parameters']['batch_size']}, max_length {card['parameters']['max_length']}, "
        f"device {t['device']}"
    )
    print(
        f"steps {t['steps']}: load+train {t['wall_seconds']:.0f} s, {per_step:.2f} s/step, "
        f"{card['parameters']['batch_size'] / per_step:.1f} examples/s"
    )
    print(
        f"held-out scoring + card: {t['total_seconds'] - t['wall_seconds']:.0f} s; "
        f"whole command incl. collection build: {got['total_s']:.0f} s; peak RSS {got['peak_rss_mib']:.0f} MiB"
    )
    held = (card.get("heldout") or {}).get("rankers", {}).get("model", {})
    if held:
        print("held-out (silver): " + ", ".join(f"{m} {v:.4f}" for m, v in held.items()))
    if got["judged_ndcg5"] is not None:
        print(f"judged dev set (cmu_dog_dev, graded points): nDCG@5 {got['judged_ndcg5']:.4f}")


class LoadSampler:
    """The 1-minute load average every 15 s while a training runs (the machine may be shared:
    a time means little without the load it was taken under)."""

    def __init__(self, every: float = 15.0):
        import threading

        self.every, self.samples, self.stop = every, [os.getloadavg()[0]], threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()

    def summary(self) -> str:
        ordered = sorted(self.samples)
        return f"min {ordered[0]:.2f}, median {ordered[len(ordered) // 2]:.2f}, max {ordered[-1]:.2f} ({len(ordered)} samples)"


COLUMNS = [
    "recipe",
    "precision",
    "steps",
    "batch",
    "training s",
    "s/step (steps only)",
    "whole command s",
    "training peak RSS MiB",
    "process peak RSS MiB",
    "held-out nDCG@5 (silver)",
    "judged dev nDCG@5",
    "mining s",
    "teacher s",
]


def result_rows(extra: list[str], results: dict) -> list[list]:
    """One row per precision: the card's own figures and the process's peak memory."""
    rows = []
    for precision, got in results.items():
        card, t = got["card"], got["card"]["training"]
        held = (card.get("heldout") or {}).get("rankers", {}).get("model", {}).get("nDCG@5")
        rows.append(
            [
                card.get("named_recipe") or card["kind"],
                (t.get("precision") or {}).get("used", precision),
                t["steps"],
                card["parameters"]["batch_size"],
                round(t["wall_seconds"], 1),
                round(step_seconds(card) / max(t["steps"], 1), 2),
                round(got["total_s"], 1),
                (t.get("memory") or {}).get("peak_rss_mib"),
                round(got["peak_rss_mib"]),
                None if held is None else round(held, 4),
                None if got["judged_ndcg5"] is None else round(got["judged_ndcg5"], 4),
                (card["training_data"].get("hard_negative_miner") or {}).get("seconds"),
                (card["training_data"].get("teacher") or {}).get("seconds"),
            ]
        )
    return rows


def public_args(words: list[str]) -> list[str]:
    """``words`` with no folder of this machine: a folder given to --home, --keep or --source
    becomes DIR, a base model's folder DIR/ and its last part."""
    shown = []
    for i, word in enumerate(words):
        before = words[i - 1] if i else ""
        if before in ("--home", "--keep", "--source"):
            word = "DIR"
        elif before == "--base" and "/" in word:
            word = "DIR/" + Path(word).name
        shown.append(word)
    return shown


def step_seconds(card: dict) -> float:
    """The steps' own seconds: the trainer's (the card's ``training.steps_seconds``), else the
    card's training seconds less the mining and the teacher's scoring (done once, before the
    first step)."""
    if card["training"].get("steps_seconds"):
        return card["training"]["steps_seconds"]
    data = card["training_data"]
    once = sum((data.get(key) or {}).get("seconds", 0) for key in ("hard_negative_miner", "teacher"))
    return card["training"]["wall_seconds"] - once


def pilot_note(card: dict) -> str | None:
    """For a run cut short by --max-steps: how many of its passes' steps it ran and what all of
    them would take at its rate (None for a run to the end of its passes)."""
    import math

    t, params = card["training"], card["parameters"]
    examples = card["training_data"].get("examples") or card["training_data"]["pairs"]
    total = math.ceil(params["epochs"] * math.ceil(examples / params["batch_size"]))
    if t["steps"] >= total:
        return None
    rate = step_seconds(card) / max(t["steps"], 1)
    once = t["wall_seconds"] - step_seconds(card)
    return (
        f"a pilot: {t['steps']} of the {total} steps of {params['epochs']:g} passes over {examples} examples; at "
        f"{rate:.1f} s a step all {total} would take about {total * rate + once:.0f} s here"
        + (f" ({once:.0f} s before the first step included: selection, loading, mining, teacher scoring)" if once else "")
    )


def write_json(path: Path, info: dict, extra: list[str], results: dict) -> None:
    """The run as a result file (name, title, command, date, machine, loads, columns, rows)."""
    import platform
    from datetime import UTC, datetime

    command = "python bench/bench_train.py " + " ".join(public_args(sys.argv[1:]))
    doc = {
        "name": path.stem,
        "title": "dsr train on CMU_DoG train: training time and peak memory",
        "command": command.strip(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"cpu": info["cpu"], "cores": info["cores"], "units": info["units"], "python": platform.python_version()},
        "load_before": info["load_before"],
        "load_after": info.get("load_after"),
        "columns": COLUMNS,
        "rows": result_rows(extra, results),
        "notes": [
            f"dsr train arguments: {' '.join(public_args(extra)) or '(defaults)'}",
            "training s: the trainer's own seconds (the card's training.wall_seconds: selection, mining, "
            "teacher scoring and the steps); whole command: collection build, training, held-out scoring "
            "and the card; mining s, teacher s: ranking the training points with --hard-negatives' model, "
            "scoring them with --teacher's",
            "training peak RSS: the card's training.memory.peak_rss_mib (VmHWM when training ended); "
            "process peak: the same process after the judged ranking as well",
            "the machine may be shared: the load averages before, during and after are the run's context",
            *(f"1-minute load average during the {p} run: {v}" for p, v in info.get("load_during", {}).items()),
            *filter(None, (pilot_note(got["card"]) for got in results.values())),
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(ROOT.parent / "shared" / "data" / "cmu_dog"))
    parser.add_argument(
        "--no-judged", dest="judged", action="store_false", help="do not rank cmu_dog_dev's graded points with the trained model"
    )
    parser.add_argument(
        "--precisions",
        nargs="+",
        default=["auto"],
        choices=("auto", "bf16", "fp32"),
        help="train once per value, in this order (default: auto)",
    )
    parser.add_argument("--keep", metavar="DIR", help="use DIR/PRECISION as DSR_HOME and keep the models")
    parser.add_argument("--home", metavar="DIR", help="use DIR as DSR_HOME and keep the model (one precision)")
    parser.add_argument("--name", default="bench-train", help="the trained model's name (default bench-train)")
    parser.add_argument("--json", metavar="PATH", help="write the figures as a result file (bench/results/NAME.json)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args, extra = parser.parse_known_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0

    info = header("bench_train: the default dsr train recipe")
    from dsr.core.provenance import package_versions
    from dsr.training.settings import DEFAULT_MODEL_TYPE, MODEL_DEFAULTS

    print(
        "versions: "
        + ", ".join(
            f"{k} {v}"
            for k, v in package_versions(("torch", "transformers", "sentence-transformers", "datasets", "accelerate")).items()
        )
    )
    print(f"args: {' '.join(extra) or '(defaults)'}")
    if args.home and len(args.precisions) > 1:
        parser.error("--home keeps one model: give one --precisions value (or --keep DIR)")
    judged = args.judged
    results = {}
    for precision in args.precisions:
        home = args.home or (str(Path(args.keep) / precision) if args.keep else tempfile.mkdtemp(prefix="dsr-bench-train-"))
        spec = {"home": home, "name": args.name, "source": args.source, "precision": precision, "extra": extra, "judged": judged}
        try:
            with LoadSampler() as sampled:
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", json.dumps(spec)],
                    text=True,
                    stdout=subprocess.PIPE,
                    env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                )
            info.setdefault("load_during", {})[precision] = sampled.summary()
        finally:
            if not (args.keep or args.home):
                shutil.rmtree(home, ignore_errors=True)
        if out.returncode != 0:
            print(f"--precision {precision}: the worker failed (exit {out.returncode})", file=sys.stderr)
            return out.returncode
        results[precision] = json.loads(out.stdout.strip().splitlines()[-1])
        show(precision, results[precision])
    first = next(iter(results.values()))
    if "--recipe" in extra:  # a named recipe (e.g. full): its own steps were timed above, not the default's
        footer(info)
        if args.json:
            write_json(Path(args.json), info, extra, results)
        return 0
    kind = "cross-encoder" if "cross-encoder" in extra else DEFAULT_MODEL_TYPE
    default_steps = MODEL_DEFAULTS[kind]["max_steps"]
    rows = []
    for precision, got in results.items():
        t = got["card"]["training"]
        per_step = t["wall_seconds"] / max(t["steps"], 1)
        line = (
            f"--precision {precision}: estimated {kind} recipe at its default {default_steps} steps "
            f"{(got['total_s'] - t['wall_seconds'] + per_step * default_steps) / 60:.1f} min; "
            f"whole command {got['total_s'] / first['total_s']:.2f}x the first"
        )
        if got["judged_ndcg5"] is not None:
            line += f"; judged nDCG@5 {got['judged_ndcg5'] - first['judged_ndcg5']:+.4f} vs the first"
        print(line)
        training = per_step * default_steps
        goal(
            f"--precision {precision}: the default {kind} recipe's training",
            f"{training:.0f} s at {default_steps} steps",
            "<= 300 s on 2 cores at equal or better dev figures (issue 34)",
            training <= 300,
        )
        rows.append([f"{kind}, --precision {precision}", f"{training:.0f} s", f"{got['total_s']:.0f} s"])
    if not extra:  # the default recipe: the figure the docs show
        write_result(
            "train_default_recipe",
            info,
            ["recipe", f"training at {default_steps} steps", "whole command"],
            rows,
            title=f"dsr train, the default {kind} recipe",
        )
    footer(info)
    if args.json:
        write_json(Path(args.json), info, extra, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
