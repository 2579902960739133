"""Compare two ``dsr reproduce`` output folders: the same table, the same runs?

    python bench/compare_reports.py OLD_OUT NEW_OUT [--tolerance 0]

Used to check that a speed change leaves the results alone (issue 34: "with the
same table"). Compares ``results.json`` number by number (``--tolerance``: the
largest absolute difference allowed, 0 = identical), ``results.md`` line by line,
and every run file in ``runs/`` by its decompressed text. What may differ between
two runs of the same code is ignored: the creation time, and the folder's own path
wherever a file names it. Prints each difference; exit 1 when there is one.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path

#: keys whose values differ between two runs of the same code
VOLATILE = {"created"}


def differences(old, new, where: str, old_root: str, new_root: str, tolerance: float) -> list[str]:
    """Every place where ``old`` and ``new`` (parsed JSON) differ, as ``where: old != new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}/{k}: only in {'old' if k in old else 'new'}" for k in set(old) ^ set(new)]
        for key in old.keys() & new.keys():
            if key not in VOLATILE:
                out += differences(old[key], new[key], f"{where}/{key}", old_root, new_root, tolerance)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} items != {len(new)}"]
        return [
            d for k, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{where}[{k}]", old_root, new_root, tolerance)
        ]
    if isinstance(old, str) and isinstance(new, str):
        return [] if old.replace(old_root, "OUT") == new.replace(new_root, "OUT") else [f"{where}: {old!r} != {new!r}"]
    if (isinstance(old, float) and isinstance(new, (int, float))) or (isinstance(new, float) and isinstance(old, int)):
        if (math.isnan(old) and math.isnan(new)) or abs(old - new) <= tolerance:
            return []
        return [f"{where}: {old!r} != {new!r} (|diff| {abs(old - new):.3g})"]
    return [] if old == new else [f"{where}: {old!r} != {new!r}"]


def compare(old: Path, new: Path, tolerance: float = 0.0) -> list[str]:
    roots = (str(old.resolve()), str(new.resolve()))
    out = differences(
        json.loads((old / "results.json").read_text(encoding="utf-8")),
        json.loads((new / "results.json").read_text(encoding="utf-8")),
        "results.json",
        *roots,
        tolerance,
    )
    old_md = (old / "results.md").read_text(encoding="utf-8").replace(roots[0], "OUT")
    new_md = (new / "results.md").read_text(encoding="utf-8").replace(roots[1], "OUT")
    if tolerance == 0 and old_md != new_md:
        out.append("results.md: the tables differ")
    old_runs = sorted(p.name for p in (old / "runs").glob("*.run*") if not p.name.endswith(".json"))
    new_runs = sorted(p.name for p in (new / "runs").glob("*.run*") if not p.name.endswith(".json"))
    if old_runs != new_runs:
        out.append(f"runs/: {old_runs} != {new_runs}")
    for name in sorted(set(old_runs) & set(new_runs)):
        read = gzip.open if name.endswith(".gz") else open
        with read(old / "runs" / name, "rb") as a, read(new / "runs" / name, "rb") as b:
            if a.read() != b.read() and tolerance == 0:
                out.append(f"runs/{name}: the rankings differ")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        help="largest |difference| allowed in results.json's numbers (0: identical, and the tables and run files too)",
    )
    args = parser.parse_args(argv)
    found = compare(args.old, args.new, args.tolerance)
    for line in found:
        print(line)
    print(f"RESULT: {'the same table and runs' if not found else f'{len(found)} differences'} (tolerance {args.tolerance})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
