"""``dsr collections``, ``dsr data fetch|build`` and ``dsr stats``: argument handling; the
work is :mod:`dsr.collections` (sources, builders, stats) and
:mod:`dsr.collections.fetch` (verified downloads)."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import Namespace, _SubParsersAction
from pathlib import Path
from typing import Any

from dsr.cli.common import add_collection_argument, add_command, add_param_flags, check_out, collection_from_args, show_help
from dsr.collections import source_module
from dsr.collections.fetch import TIMEOUT, fetch, sources
from dsr.collections.stats import collection_stats, collections_info
from dsr.core.data import write_benchmark
from dsr.core.errors import InputError
from dsr.core.params import parse_assignments


def register(subparsers: _SubParsersAction) -> None:
    _register_p(subparsers)
    _register_data(subparsers)
    _register_s(subparsers)


def _register_p(subparsers: argparse._SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "collections",
        description="List each registered source with its licence, where its raw files are "
        "cached ($DSR_HOME/data/NAME) and whether they are there.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_collections)


def _register_data(subparsers: argparse._SubParsersAction) -> None:
    data = add_command(
        subparsers,
        "data",
        description="Download and verify a source's raw files, or convert them into a benchmark file.",
    )
    actions = data.add_subparsers(dest="data_command", metavar="ACTION")
    data.set_defaults(func=lambda args: show_help(data, sys.stderr))

    f = actions.add_parser(
        "fetch",
        help="download a source from its pinned GitHub commit and verify every file",
        description=f"Download NAME ({', '.join(sources())}) from its official "
        "repository at the pinned commit into $DSR_HOME/data/NAME (or --dest), "
        "verifying each file by git blob id or by the sha256 recorded on first "
        "use (CHECKSUMS.json). A file that fails is deleted (exit 2).",
    )
    f.add_argument("name", metavar="NAME", help=f"one of {', '.join(sources())}")
    f.add_argument("--dest", metavar="DIR", help="folder to fill (default: $DSR_HOME/data/NAME)")
    f.add_argument(
        "--base-url",
        metavar="URL",
        help="mirror of https://github.com with the same layout (default: $DSR_FETCH_BASE_URL or https://github.com)",
    )
    f.add_argument(
        "--revision",
        metavar="REV",
        help="another upstream revision: `old` for sigir2022's older pos/neg schema "
        "(commit b351828, into $DSR_HOME/data/sigir2022-b351828)",
    )
    f.add_argument("--force", action="store_true", help="download again even the files already present and verified")
    add_param_flags(f, (TIMEOUT,))
    f.set_defaults(func=cmd_fetch)

    b = actions.add_parser(
        "build",
        help="convert a source's raw files into a benchmark file (JSON Lines)",
        description="Convert NAME's raw files in --source DIR into a benchmark file: JSON "
        "Lines in the SIGIR 2022 schema. The output is written atomically: on "
        "bad input (exit 2) no file is left behind.",
    )
    b.add_argument("name", metavar="NAME", help=f"one of {', '.join(sources())}")
    b.add_argument("--source", metavar="DIR", required=True, help="folder with the raw files")
    b.add_argument("--out", metavar="FILE", required=True, help="benchmark file to write (.jsonl)")
    b.add_argument("--split", metavar="S", help="source split (e.g. valid for cmu_dog; plain or grounded for sigir2022)")
    b.add_argument("--param", action="append", metavar="K=V", help="a build parameter, repeatable (e.g. threshold=0.5)")
    b.set_defaults(func=cmd_build)


def _register_s(subparsers: argparse._SubParsersAction) -> None:
    s = add_command(
        subparsers,
        "stats",
        description="Per subset and overall: dialogues; candidates, relevant candidates and "
        "context turns per dialogue (mean/min/max); the label distribution; "
        "lengths in tokens of context turns, targets and candidates.",
    )
    add_collection_argument(s)
    s.add_argument("--json", action="store_true", help="the same numbers as JSON")
    s.set_defaults(func=cmd_stats)


# --- dsr collections --------------------------------------------------------


def cmd_collections(args: Namespace) -> int:
    rows = collections_info()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    table = [["name", "available", "licence", "cache"]]
    for r in rows:
        table.append([r["name"], "yes" if r["available"] else "no", r["licence"] or "-", r["cache"]])
    print(_format_table(table))
    print()
    for r in rows:
        print(f"{r['name']}: {r['description']}")
        if r.get("repository"):
            print(f"    github.com/{r['repository']} @ {r['commit'][:12]}")
    missing = [r["name"] for r in rows if r["fetchable"] and not r["available"]]
    if missing:
        print(
            f"\nNot here yet: {', '.join(missing)}. Fetch with `dsr data fetch NAME`, or pass "
            "a folder of raw files with --source DIR."
        )
    return 0


# --- dsr data fetch / build -------------------------------------------------


def cmd_fetch(args: Namespace) -> int:
    result = fetch(args.name, args.dest, base_url=args.base_url, revision=args.revision, force=args.force, timeout=args.timeout)
    counts: dict[str, int] = {}
    for how in result.files.values():
        counts[how] = counts.get(how, 0) + 1
    summary = ", ".join(f"{n} {how}" for how, n in sorted(counts.items()))
    print(f"{result.name}: {len(result.files)} file(s) in {result.dest} (commit {result.commit[:12]}): {summary}")
    return 0


def cmd_build(args: Namespace) -> int:
    params = parse_assignments(args.param, "--param")
    module = source_module(args.name)
    build = getattr(module, "build", None)
    if build is None:
        raise InputError(f"{args.name} has no raw files to convert; use it directly as the COLLECTION", field="NAME")
    source = Path(args.source)
    if not source.is_dir():
        raise InputError("no such folder (--source must be the folder of raw files)", path=source, field="--source")
    out = Path(args.out)
    check_out(out, "a benchmark file name")
    collection = build(source, args.split, **params)
    write_benchmark(collection, out)
    subsets = ", ".join(f"{s} {len(collection.subset(s))}" for s in collection.subsets)
    print(f"{args.name}: wrote {len(collection)} dialogues ({subsets}) to {out}; hash {collection.content_hash[:16]}")
    return 0


# --- dsr stats --------------------------------------------------------------


def cmd_stats(args: Namespace) -> int:
    collection = collection_from_args(args)
    stats = collection_stats(collection)
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
        return 0
    print(f"{collection.name}: {len(collection)} dialogues, hash {stats['hash'][:16]}")
    groups = [*stats["subsets"].items(), ("all", stats["all"])]
    if len(stats["subsets"]) == 1:
        groups = [("all", stats["all"])]
    labels = sorted({k for _, g in groups for k in g["labels"]}, key=int)
    rows = [["", *(name for name, _ in groups)], ["dialogues", *(str(g["dialogues"]) for _, g in groups)]]
    for key, title in (
        ("candidates_per_dialogue", "candidates / dialogue"),
        ("relevant_per_dialogue", "relevant / dialogue"),
        ("context_turns", "context turns / dialogue"),
    ):
        rows.append([title, *(_cell(g[key]) for _, g in groups)])
    for label in labels:
        rows.append([f"label {label}", *(_share(g["labels"].get(label, 0), g["labels"]) for _, g in groups)])
    for key, title in (
        ("context_turn", "tokens / context turn"),
        ("target", "tokens / target"),
        ("candidate", "tokens / candidate"),
    ):
        rows.append([title, *(_cell(g["tokens"][key]) for _, g in groups)])
    print(_format_table(rows, right=True))
    print("cells: mean [min-max]")
    if "splits" in stats:
        sp = stats["splits"]
        print(f"splits: {sp['count']} val/test splits, val {_cell(sp['val'])}, test {_cell(sp['test'])} dialogues")
    return 0


def _cell(s: dict[str, Any]) -> str:
    if not s["n"]:
        return "-"
    return f"{s['mean']:.2f} [{s['min']}-{s['max']}]"


def _share(n: int, labels: dict[str, int]) -> str:
    total = sum(labels.values())
    return f"{n} ({100 * n / total:.1f}%)" if total else "-"


def _format_table(rows: list[list[str]], right: bool = False) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0])]
        cells += [c.rjust(w) if right else c.ljust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
