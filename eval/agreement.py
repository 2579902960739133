"""``dsr agreement``: do two label sets rank systems alike? Kendall tau over systems.

Given a silver collection (e.g. CMU_DoG valid), a judged one (the judged
development set: the same query points and candidates, other labels) and
several runs, each run is measured with both label sets on the query points
the two collections share, and the systems' orderings are compared with
Kendall's tau (``scipy.stats.kendalltau``, tau-b: ties in either ordering are
handled, not broken). A tau near 1 means the silver labels rank systems as
judged relevance does, so silver is a sound signal for tuning and training.

A run may rank more query points than are shared (a run on CMU_DoG valid
ranks all 502): only the shared ones count. A shared point a run does not
rank counts 0 (as ``dsr evaluate`` does) and is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from retrieval.errors import InputError


@dataclass
class Agreement:
    """Per-system means under both label sets, and Kendall's tau between the orderings."""

    measure: str
    topics: list[str]
    systems: list[str]
    silver: list[float]
    judged: list[float]
    tau: float
    p_value: float
    missing: dict[str, int]

    def as_dict(self) -> dict:
        return {"measure": self.measure, "topics": len(self.topics), "tau": self.tau,
                "p_value": self.p_value,
                "systems": [{"run": s, "silver": a, "judged": b, "missing_topics": self.missing[s]}
                            for s, a, b in zip(self.systems, self.silver, self.judged)]}


def agreement(silver, judged, runs: dict[str, object], measure: str = "nDCG@5") -> Agreement:
    """Kendall tau between the systems' mean ``measure`` under ``silver`` and ``judged`` labels,
    over the query points both collections hold."""
    from scipy.stats import kendalltau

    from eval.measures import Evaluator
    from eval.qrels import qrels_from_collection

    if len(runs) < 2:
        raise InputError("give at least two runs: Kendall's tau compares orderings of systems",
                         field="RUN")
    judged_ids = set(judged.ids)
    topics = [q for q in silver.ids if q in judged_ids]
    if not topics:
        raise InputError(f"collections {silver.name!r} and {judged.name!r} share no query point "
                         "(compare a silver collection with its judged counterpart)", field="COLLECTION")
    _check_same_candidates(silver, judged, topics)
    by_silver = Evaluator(qrels_from_collection(silver), [measure], topics)
    by_judged = Evaluator(qrels_from_collection(judged), [measure], topics)
    names, silver_means, judged_means, missing = [], [], [], {}
    for name, run in runs.items():
        # Scores replaced by rank positions: the run's own order is what is compared, and
        # near-tied float scores cannot be re-tied (and reordered by id) downstream.
        ranked = {q: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)}
                  for q, docs in run.rankings.items()}
        a, b = by_silver(ranked), by_judged(ranked)
        names.append(name)
        silver_means.append(float(a.mean()[0]))
        judged_means.append(float(b.mean()[0]))
        missing[name] = a.missing
    result = kendalltau(silver_means, judged_means)
    return Agreement(measure, topics, names, silver_means, judged_means,
                     float(result.statistic), float(result.pvalue), missing)


def _check_same_candidates(silver, judged, topics: Sequence[str]) -> None:
    for q in topics:
        if set(silver.candidate_ids(q)) != set(judged.candidate_ids(q)):
            raise InputError(f"query point {q!r} has other candidates in {silver.name!r} than in "
                             f"{judged.name!r}: the label sets must judge the same pools",
                             record=q, field="candidates")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "agreement", help="Kendall tau between system rankings by silver and by judged labels",
        description="Measure each RUN with the labels of SILVER and of JUDGED on the query points "
                    "both collections hold, and compare the two orderings of the runs with "
                    "Kendall's tau (scipy.stats.kendalltau).",
        epilog="Example: dsr agreement cmu_dog cmu_dog_judged --silver-source ../shared/data/cmu_dog "
               "--silver-split valid --judged-source ../shared/data/judged a.run b.run c.run")
    p.add_argument("silver", metavar="SILVER", help="collection with silver labels (name or .jsonl)")
    p.add_argument("judged", metavar="JUDGED", help="collection with judged labels (name or .jsonl)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (at least two)")
    p.add_argument("--silver-source", metavar="DIR", help="--source of SILVER")
    p.add_argument("--silver-split", metavar="S", help="--split of SILVER (e.g. valid)")
    p.add_argument("--judged-source", metavar="DIR", help="--source of JUDGED")
    p.add_argument("--measure", default="nDCG@5", help="measure (default nDCG@5)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_agreement)


def cmd_agreement(args: argparse.Namespace) -> int:
    from retrieval.collections import load_collection
    from retrieval.run import Run

    silver = load_collection(args.silver, args.silver_source, args.silver_split)
    judged = load_collection(args.judged, args.judged_source, None)
    runs = {}
    for path in args.runs:
        name = Path(path).name.removesuffix(".run")
        if name in runs:
            raise InputError("two runs with the same file name", path=path, field="RUN")
        runs[name] = Run.read(path)
    result = agreement(silver, judged, runs, args.measure)
    if args.json:
        json.dump(result.as_dict(), sys.stdout, indent=2)
        print()
        return 0
    width = max(len(s) for s in result.systems)
    print(f"{len(result.topics)} query points in both {silver.name} and {judged.name}; "
          f"{result.measure} per run")
    print(f"{'run':{width}s}  silver  judged")
    for s, a, b in sorted(zip(result.systems, result.silver, result.judged), key=lambda x: -x[2]):
        print(f"{s:{width}s}  {a:.4f}  {b:.4f}" + (f"  ({result.missing[s]} points not ranked)"
                                                  if result.missing[s] else ""))
    print(f"Kendall tau (tau-b) over {len(result.systems)} systems: {result.tau:.4f} "
          f"(p = {result.p_value:.3g})")
    return 0
