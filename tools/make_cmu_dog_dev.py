"""Make ``dsr/collections/data/cmu_dog_dev.points.jsonl``: the judged development set's
points and their judging pools (ids and grades only; see ``dsr/collections/cmu_dog_dev.py``).

    python tools/make_cmu_dog_dev.py --source ../shared/data/cmu_dog --judged ../shared/data/judged

1. the points: ``cmu_dog_dev.choose_points`` (valid conversations in no other split, a seeded
   slice of train conversations; the 115-point judged set's point and grades where it has
   one of the conversation);
2. the pools: every point's candidates ranked by BM25 (dsr's default query), zero-shot dense
   (all-MiniLM-L6-v2, ``title+recent``, ``text=title: body``) and their RRF (k 60); the union
   of their top ``--depth`` (10) sentence ids is the point's pool.

Grades already in the file are kept (a rerun never drops a judgement). Prints the counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dsr.collections import cmu_dog, cmu_dog_dev, cmu_dog_judged  # noqa: E402
from dsr.core.fusion import fuse  # noqa: E402
from dsr.rankers import make_ranker  # noqa: E402

RUNS = {"bm25": ("bm25", {}), "dense": ("dense", {"query": "title+recent", "text": "title: body"})}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="CMU_DoG folder")
    parser.add_argument("--judged", type=Path, required=True, help="folder of the 115-point judged set")
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args(argv)
    old = {r["id"]: r for r in cmu_dog_dev.points()}
    valid = cmu_dog.load(args.source, "valid")
    train = cmu_dog.load(args.source, "train")
    judged = cmu_dog_judged.load(args.judged)
    records = cmu_dog_dev.choose_points(valid, train, args.source, judged)
    for record in records:  # grades already given stay
        record["grades"] = {**old.get(record["id"], {}).get("grades", {}), **record["grades"]}
    _write(records)
    cmu_dog_dev.points.cache_clear()
    collection = cmu_dog_dev.build(args.source, points="all")
    order = collection.initial_order()
    runs = {name: make_ranker(kind, **params)(collection) for name, (kind, params) in RUNS.items()}
    runs["rrf"] = fuse([runs["bm25"], runs["dense"]], "rrf", k=60, initial_order=order)
    pools = cmu_dog_dev.depth_pool((r.rankings for r in runs.values()), args.depth)
    for record in records:
        record["pool"] = sorted(pools[record["id"]])
    _write(records)
    _report(records, args.depth)
    return 0


def _write(records) -> None:
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in records)
    cmu_dog_dev.POINTS_FILE.write_text(text, encoding="utf-8")


def _report(records, depth: int) -> None:
    by = {}
    for r in records:
        by.setdefault((r["split"], r["origin"]), []).append(r)
    print(f"{len(records)} points, one per conversation; pools: union of {', '.join([*RUNS, 'rrf'])} top {depth}")
    for (split, origin), rs in sorted(by.items()):
        sizes = [len(r["pool"]) for r in rs]
        print(
            f"  {split:5s} {origin:10s} {len(rs):4d} points, pooled sentences per point: mean "
            f"{statistics.mean(sizes):.1f}, min {min(sizes)}, max {max(sizes)}; "
            f"graded: {sum(1 for r in rs if r['grades'])}"
        )
    todo = [r for r in records if not r["grades"]]
    print(f"  to grade: {len(todo)} points, {sum(len(r['pool']) for r in todo)} sentences")


if __name__ == "__main__":
    raise SystemExit(main())
