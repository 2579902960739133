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
line (issue 34): the default recipe's training in <= 5 minutes on 2 cores
(the trainer's own seconds, printed with the load average: a loaded machine's figure
is pessimistic) at equal or better dev figures.
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
            "bench-train",
            "--overwrite",
            "--precision",
            spec["precision"],
            *spec["extra"],
        ]
    )
    total = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"dsr train failed with exit {code}")
    card = json.loads((Path(spec["home"]) / "models" / "bench-train" / "dsr_model.json").read_text())
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
    run = make_ranker("dense", model="dsr:bench-train", query=card["query"], text=card.get("text", "body")).rank(judged)
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
    judged = args.judged
    results = {}
    for precision in args.precisions:
        home = str(Path(args.keep) / precision) if args.keep else tempfile.mkdtemp(prefix="dsr-bench-train-")
        spec = {"home": home, "source": args.source, "precision": precision, "extra": extra, "judged": judged}
        try:
            out = subprocess.run(
                [sys.executable, __file__, "--worker", json.dumps(spec)],
                text=True,
                stdout=subprocess.PIPE,
                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            )
        finally:
            if not args.keep:
                shutil.rmtree(home, ignore_errors=True)
        if out.returncode != 0:
            print(f"--precision {precision}: the worker failed (exit {out.returncode})", file=sys.stderr)
            return out.returncode
        results[precision] = json.loads(out.stdout.strip().splitlines()[-1])
        show(precision, results[precision])
    first = next(iter(results.values()))
    if "--recipe" in extra:  # a named recipe (e.g. full): its own steps were timed above, not the default's
        footer(info)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
