"""``dsr decide``: argument handling; the rule is :mod:`dsr.evaluation.decision`."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import _SubParsersAction
from pathlib import Path

from dsr.cli.common import add_command, add_param_flags, param_values
from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.evaluation.decision import DECIDE_PARAMS, DecideSettings, decide_runs, format_table


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "decide",
        description="The project's decision rule: each CANDIDATE replaces the DEFAULT pipeline only "
        "if it is better on the judged development set (DEV) AND on silver valid "
        "(SILVER), by paired tests (t and sign-flip) Holm-corrected over the candidates; "
        "otherwise the default stays. A RUN is one run file ranking the query points of "
        "both collections (e.g. a CMU_DoG valid run: the judged points are valid points), "
        "or SILVER_RUN,DEV_RUN; prefix NAME= to name it (default: the file's stem).",
    )
    p.add_argument("silver", metavar="SILVER", help="collection with silver labels (e.g. cmu_dog)")
    p.add_argument("dev", metavar="DEV", help="the judged development set (e.g. cmu_dog_judged, cmu_dog_dev)")
    p.add_argument(
        "candidates", nargs="+", metavar="CANDIDATE", help="[NAME=]RUN or [NAME=]SILVER_RUN,DEV_RUN of each candidate pipeline"
    )
    p.add_argument("--default", required=True, metavar="RUN", help="the current default, as a CANDIDATE is given")
    p.add_argument("--silver-source", metavar="DIR", help="--source of SILVER")
    p.add_argument("--silver-split", metavar="S", help="--split of SILVER (e.g. valid)")
    p.add_argument("--dev-source", metavar="DIR", help="--source of DEV")
    p.add_argument("--dev-split", metavar="S", help="--split of DEV")
    add_param_flags(p, DECIDE_PARAMS)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_decide)


def cmd_decide(args: argparse.Namespace) -> int:
    settings = param_values(args, DECIDE_PARAMS)
    DecideSettings(**settings)  # checked before any collection is read
    silver = load_collection(args.silver, args.silver_source, args.silver_split)
    dev = load_collection(args.dev, args.dev_source, args.dev_split)
    runs: dict[str, dict[str, Run]] = {}
    default = ""
    for spec, field in [(args.default, "--default"), *((c, "CANDIDATE") for c in args.candidates)]:
        name, pair = read_spec(spec, field)
        if name in runs:
            raise InputError(f"two runs named {name!r}; name them with NAME=RUN", field=field)
        runs[name] = pair
        default = default or name
    decision = decide_runs(dev, silver, runs, default, **settings)
    if args.json:
        json.dump(decision.as_dict(), sys.stdout, indent=2)
        print()
    else:
        print(f"{silver.name} ({len(silver)} points) and {dev.name} ({len(dev)} points)")
        print("\n".join(format_table(decision, list(runs))))
    return 0


def read_spec(spec: str, field: str) -> tuple[str, dict[str, Run]]:
    """``[NAME=]RUN`` or ``[NAME=]SILVER_RUN,DEV_RUN`` -> (name, {"silver": run, "dev": run})."""
    name, _, paths = spec.rpartition("=")
    parts = [p for p in paths.split(",")]
    if len(parts) > 2 or not all(parts):
        raise InputError(f"expected [NAME=]RUN or [NAME=]SILVER_RUN,DEV_RUN, got {spec!r}", field=field)
    for part in parts:
        if not Path(part).is_file():
            raise InputError("no such run file", path=part, field=field)
    silver = Run.read(parts[0])
    dev = Run.read(parts[1]) if len(parts) == 2 else silver
    return name or Path(parts[0]).name.removesuffix(".run"), {"silver": silver, "dev": dev}
