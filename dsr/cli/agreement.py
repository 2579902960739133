"""``dsr agreement``: argument handling; the computation is :mod:`dsr.evaluation.ordering_agreement`."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import _SubParsersAction
from pathlib import Path

from dsr.cli.common import add_command, add_param_flags
from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.evaluation.ordering_agreement import MEASURE, agreement


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "agreement",
        description="Measure each RUN with the labels of SILVER and of JUDGED on the query points "
        "both collections hold, and compare the two orderings of the runs with "
        "Kendall's tau (scipy.stats.kendalltau).",
        epilog="Example: dsr agreement cmu_dog cmu_dog_judged --silver-source ../shared/data/cmu_dog "
        "--silver-split valid --judged-source ../shared/data/judged a.run b.run c.run",
    )
    p.add_argument("silver", metavar="SILVER", help="collection with silver labels (name or .jsonl)")
    p.add_argument("judged", metavar="JUDGED", help="collection with judged labels (name or .jsonl)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (at least two)")
    p.add_argument("--silver-source", metavar="DIR", help="--source of SILVER")
    p.add_argument("--silver-split", metavar="S", help="--split of SILVER (e.g. valid)")
    p.add_argument("--judged-source", metavar="DIR", help="--source of JUDGED")
    add_param_flags(p, (MEASURE,))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_agreement)


def cmd_agreement(args: argparse.Namespace) -> int:
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
    print(f"{len(result.topics)} query points in both {silver.name} and {judged.name}; {result.measure} per run")
    print(f"{'run':{width}s}  silver  judged")
    for s, a, b in sorted(zip(result.systems, result.silver, result.judged), key=lambda x: -x[2]):
        print(f"{s:{width}s}  {a:.4f}  {b:.4f}" + (f"  ({result.missing[s]} points not ranked)" if result.missing[s] else ""))
    print(f"Kendall tau (tau-b) over {len(result.systems)} systems: {result.tau:.4f} (p = {result.p_value:.3g})")
    return 0
