"""Time the default `dsr train` recipe (CMU_DoG train, silver labels) on this machine.

    python bench/bench_train.py [--source /work/shared/data/cmu_dog] [--max-steps N] [...]

Runs `dsr train cmu_dog --split train` in a throw-away DSR_HOME (so the
collection build is timed too and no model is left behind) and prints the
figures with the date, the machine and the package versions. Extra arguments
go to `dsr train` unchanged (e.g. `--max-steps 40` for a quick estimate: the
per-step time is printed, multiply by the default steps). The target: the
default recipe finishes in under 30 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", default=str(ROOT.parent / "shared" / "data" / "cmu_dog"))
    parser.add_argument("--keep", metavar="DIR", help="use this DSR_HOME and keep the model there")
    args, extra = parser.parse_known_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    home = args.keep or tempfile.mkdtemp(prefix="dsr-bench-train-")
    os.environ["DSR_HOME"] = home

    from dsr.cli import main as dsr
    from retrieval.provenance import machine, package_versions
    from dsr.training.settings import DEFAULT_MODEL_TYPE, RECIPES

    started = time.perf_counter()
    try:
        code = dsr(["train", "cmu_dog", "--source", args.source, "--split", "train",
                    "--name", "bench-train", "--overwrite", *extra])
        total = time.perf_counter() - started
        if code != 0:
            print(f"dsr train failed with exit {code}", file=sys.stderr)
            return code
        card = json.loads((Path(home) / "models" / "bench-train" / "dsr_model.json").read_text())
    finally:
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    t, d = card["training"], card["training_data"]
    per_step = t["wall_seconds"] / max(t["steps"], 1)
    print(f"# bench_train  {datetime.now(timezone.utc).isoformat(timespec='seconds')}")
    print(f"machine: {json.dumps(machine())}  load average: {os.getloadavg()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in package_versions(
        ("torch", "transformers", "sentence-transformers", "datasets", "accelerate")).items()))
    print(f"args: {' '.join(extra) or '(defaults)'}; recipe: {card.get('recipe') or card['kind']}")
    print(f"pairs {d['pairs']} ({d['positives']} positives), batch {card['parameters']['batch_size']}, "
          f"max_length {card['parameters']['max_length']}, device {t['device']}")
    print(f"steps {t['steps']}: load+train {t['wall_seconds']:.0f} s, {per_step:.2f} s/step, "
          f"{card['parameters']['batch_size'] / per_step:.1f} pairs/s")
    print(f"held-out scoring + card: {t['total_seconds'] - t['wall_seconds']:.0f} s; "
          f"whole command incl. collection build: {total:.0f} s")
    kind = "cross-encoder" if "cross-encoder" in extra else DEFAULT_MODEL_TYPE
    default_steps = RECIPES[kind]["max_steps"]
    print(f"estimated {kind} recipe at its default {default_steps} steps: "
          f"{(total - t['wall_seconds'] + per_step * default_steps) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
