"""``dsr reproduce`` cold and warm: the second run must reuse indexes and embeddings.

    python bench/bench_reproduce.py                 # SIGIR-shaped synthetic set (846 x 50)
    python bench/bench_reproduce.py --collection sample   # the bundled sample (make reproduce)
    python bench/bench_reproduce.py --fast          # dense on OpenVINO int8 (dsr reproduce --fast)

Each collection is reproduced twice in one fresh DSR_HOME: the first run
builds every index and encodes every sentence (cold), the second finds them
cached (warm). Prints the wall time per stage of both and the warm/cold ratio
(target: warm <= 20 % of cold on the SIGIR-shaped set), with date, machine and
versions. The cross-encoder row is skipped (no trained model in the fresh home).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="synthetic",
                        help="synthetic (846 x 50, SIGIR shape) or any COLLECTION dsr accepts")
    parser.add_argument("--dialogues", type=int, default=846, help="synthetic: dialogues")
    parser.add_argument("--home", help="DSR_HOME to use (default: a fresh temporary folder)")
    parser.add_argument("--fast", action="store_true", help="as dsr reproduce --fast (cold includes the export)")
    parser.add_argument("--backend", choices=("torch", "openvino", "openvino-bf16", "openvino-int8"), help="as dsr reproduce --backend")
    args = parser.parse_args(argv)

    home = Path(args.home or tempfile.mkdtemp(prefix="dsr-bench-reproduce-"))
    os.environ["DSR_HOME"] = str(home)
    from retrieval.data import write_benchmark
    from retrieval.provenance import machine, package_versions
    from dsr.baselines import FAST_BACKEND, StageTimer, reproduce

    backend = args.backend or (FAST_BACKEND if args.fast else "torch")

    spec = args.collection
    if spec == "synthetic":
        from retrieval.collections.synthetic import text_collection

        spec = str(home / "synthetic.jsonl")
        write_benchmark(text_collection(args.dialogues), spec)
    from retrieval.collections import load_collection

    rows = []
    for label in ("cold", "warm"):
        timer = StageTimer(quiet=True)
        reproduce(spec, home / f"out-{label}", timer=timer, backend=backend,
                  skipped_reason="skipped: benchmark without a cross-encoder")
        rows.append((label, dict(timer.seconds)))
        print(f"{label}: {timer.seconds['total']:.1f} s", file=sys.stderr, flush=True)

    cold, warm = rows[0][1], rows[1][1]
    collection = load_collection(spec)
    print(f"# dsr reproduce, cold vs warm — {dt.datetime.now().isoformat(timespec='seconds')}")
    print(f"collection: {args.collection} ({len(collection)} dialogues, "
          f"{sum(len(d.candidates) for d in collection)} candidates), backend {backend}, DSR_HOME {home}")
    print(f"machine: {json.dumps(machine())}")
    versions = package_versions()
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    print(f"\n{'stage':<16}{'cold s':>10}{'warm s':>10}")
    for stage in cold:
        print(f"{stage:<16}{cold[stage]:>10.2f}{warm.get(stage, 0.0):>10.2f}")
    ratio = warm["total"] / cold["total"]
    print(f"\nwarm / cold = {ratio:.1%} (target <= 20 %: {'met' if ratio <= 0.2 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
