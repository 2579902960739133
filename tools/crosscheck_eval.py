"""Check ``dsr evaluate`` against an independent evaluator on every run of a report.

    python tools/crosscheck_eval.py COLLECTION OUT_DIR [--source DIR] [--split S]

For each run file in ``OUT_DIR/runs`` (what ``dsr reproduce`` writes) this walks
the file in score order, as trec_eval reads it (scores as 32-bit floats, ties by
doc id descending), computes each measure with the plain definitions of
``tools/plain_eval.py``, and compares with what ``dsr evaluate`` computes for the
file, per topic; and for every untuned system of ``OUT_DIR/per_topic.parquet``
(``per_topic.tsv`` in older reports) with a run file, with the values the report
published. Prints the largest difference
per run; exits 1 when one is above 1e-9.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import struct
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # dsr and tools (a package) from this checkout

from tools.plain_eval import plain_measure  # noqa: E402

MEASURES = ("RR", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@10", "P@1", "P@5", "AP", "R@10")
TOLERANCE = 1e-9


def as_float32(text: str) -> float:
    return struct.unpack("f", struct.pack("f", float(text)))[0]


def walk(path: Path) -> dict[str, list[str]]:
    """topic -> doc ids in the order trec_eval ranks them."""
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    lines: dict[str, list[tuple[float, str]]] = defaultdict(list)
    with opener(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) == 6 and not line.startswith("#"):
                lines[parts[0]].append((as_float32(parts[4]), parts[2]))
    return {q: [d for _, d in sorted(rows, key=lambda sd: (-sd[0], _reverse(sd[1])))] for q, rows in lines.items()}


def _reverse(doc: str) -> tuple:
    # doc id descending, as trec_eval breaks ties (a key that sorts descending)
    return tuple(-ord(ch) for ch in doc) + (1,)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("collection")
    parser.add_argument("out", type=Path)
    parser.add_argument("--source")
    parser.add_argument("--split")
    args = parser.parse_args(argv)

    from dsr.collections import load_collection
    from dsr.core.run import Run
    from dsr.evaluation.measures import Evaluator
    from dsr.evaluation.qrels import qrels_from_collection

    collection = load_collection(args.collection, args.source, args.split)
    qrels = {d.id: {c.id: c.label for c in d.candidates} for d in collection}  # labels as written
    evaluator = Evaluator(qrels_from_collection(collection), list(MEASURES), collection.ids)
    published = _published(args.out)
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    system_of = {Path(v["path"]).name: name for name, v in manifest.get("runs", {}).items()}
    worst_all = 0.0
    files = sorted(p for p in (args.out / "runs").iterdir() if p.name.endswith((".run", ".run.gz")))
    for path in files:
        ranked = walk(path)
        dsr_values = evaluator(Run.read(path))
        worst = 0.0
        system = system_of.get(path.name)
        for i, topic in enumerate(collection.ids):
            for j, measure in enumerate(MEASURES):
                plain = plain_measure(measure, ranked.get(topic, []), qrels[topic])
                worst = max(worst, abs(plain - dsr_values.values[i, j]))
                if system in published:
                    worst = max(worst, abs(plain - published[system][topic][measure]))
        worst_all = max(worst_all, worst)
        where = f"dsr evaluate and report ({system})" if system in published else "dsr evaluate"
        print(f"{path.name:40s} topics {len(ranked):5d}  max |plain - {where}| = {worst:.3g}")
    print(
        f"{len(files)} runs, largest difference {worst_all:.3g} "
        f"({'agree' if worst_all <= TOLERANCE else 'DISAGREE'} to {TOLERANCE:g})"
    )
    return 0 if worst_all <= TOLERANCE else 1


def _published(out: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Untuned systems' per-topic values from a report's per_topic.parquet (or .tsv)."""
    published: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    if (out / "per_topic.parquet").exists():
        import pandas as pd

        rows = pd.read_parquet(out / "per_topic.parquet").to_dict(orient="records")
    else:
        with open(out / "per_topic.tsv", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
    for row in rows:
        if row["kind"] == "run":
            published[row["system"]][row["topic"]] = {m: float(row[m]) for m in MEASURES if row.get(m) not in (None, "")}
    return published


if __name__ == "__main__":
    sys.exit(main())
