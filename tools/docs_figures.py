"""Figures in the docs come from the result files their commands write, never typed by hand.

A bench or an experiment writes its figures to ``bench/results/NAME.json`` (or
``experiments/results/NAME.json``) with :func:`bench.benchinfo.write_result`::

    {"name": NAME, "title": "one line", "command": "python bench/bench_x.py ...",
     "date": "YYYY-MM-DD HH:MM UTC", "machine": {"cpu": ..., "cores": 2, "units": [...], "python": ...},
     "load_before": "0.10, 0.20, 0.30", "load_after": "...",
     "columns": [...], "rows": [[...], ...], "notes": ["a line under the table", ...]}

A page (README.md, docs/**/*.md, experiments/*.md) shows it in a block
``<!-- figures:NAME -->`` ... ``<!-- /figures -->`` that this tool fills: a caption that says
once what was measured, by which command, when, on which machine and under which load, then
the table and the notes. Nothing else in a page carries a date or a load
(tests/test_docs_figures.py counts them).

    python tools/docs_figures.py           # exit 1 and the blocks that differ
    python tools/docs_figures.py --write   # rewrite them
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools, a package, when run as a script

from tools.docs_lists import check_or_write  # noqa: E402

#: where result files are looked up, in order
RESULTS = ("bench/results", "experiments/results")
BLOCK = re.compile(r"(<!-- figures:([A-Za-z0-9_.-]+) -->)(.*?)(<!-- /figures -->)", re.S)
#: the fields every result file holds (``notes`` and the machine's ``python`` may be empty)
FIELDS = ("name", "title", "command", "date", "machine", "load_before", "load_after", "columns", "rows")


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may hold figure blocks."""
    found = [root / "README.md", *sorted((root / "docs").rglob("*.md")), *sorted((root / "experiments").glob("*.md"))]
    return [path for path in found if path.is_file()]


def result_path(name: str, root: Path = ROOT) -> Path:
    for folder in RESULTS:
        path = root / folder / f"{name}.json"
        if path.is_file():
            return path
    raise KeyError(f"no result file {name}.json in {' or '.join(RESULTS)} (a bench or experiment writes it)")


def load(name: str, root: Path = ROOT) -> dict[str, Any]:
    """The result file of ``name``, checked for the fields a block shows."""
    path = result_path(name, root)
    data = json.loads(path.read_text(encoding="utf-8"))
    missing = [field for field in FIELDS if field not in data]
    if missing:
        raise ValueError(f"{path.relative_to(root)}: missing field(s) {', '.join(missing)}")
    if data["name"] != name:
        raise ValueError(f"{path.relative_to(root)}: field name is {data['name']!r}, the file is {name}.json")
    width = len(data["columns"])
    for number, row in enumerate(data["rows"], 1):
        if len(row) != width:
            raise ValueError(f"{path.relative_to(root)}: row {number} has {len(row)} cells, columns has {width}")
    return data


def machine_words(machine: dict[str, Any]) -> str:
    """``AMD EPYC 9B14, 2 cores (avx512_vnni, avx512_bf16), Python 3.11.7``."""
    words = str(machine.get("cpu") or "an unnamed CPU")
    if machine.get("cores"):
        words += f", {machine['cores']} cores"
    units = machine.get("units")
    if units is not None:
        words += f" ({', '.join(units) or 'no VNNI, BF16 or AMX'})"
    if machine.get("python"):
        words += f", Python {machine['python']}"
    return words


def caption(data: dict[str, Any]) -> str:
    """One line: what, how, when, where and under which load."""
    load = f"load average {data['load_before'] or 'not recorded'} before"
    if data["load_after"]:
        load += f", {data['load_after']} after"
    return f"*{data['title']}.* `{data['command']}`, {data['date']}, {machine_words(data['machine'])}; {load}."


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(data: dict[str, Any]) -> str:
    lines = ["| " + " | ".join(_cell(c) for c in data["columns"]) + " |", "|" + "---|" * len(data["columns"])]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in data["rows"]]
    return "\n".join(lines)


def rendered(name: str, root: Path = ROOT) -> str:
    """What a block of ``name`` holds between its markers."""
    data = load(name, root)
    parts = [caption(data), table(data)]
    parts += [str(note) for note in data.get("notes") or []]
    return "\n" + "\n\n".join(parts) + "\n"


def filled(text: str, root: Path = ROOT) -> str:
    return BLOCK.sub(lambda m: m.group(1) + rendered(m.group(2), root) + m.group(4), text)


def blocks(text: str) -> list[str]:
    return [match.group(2) for match in BLOCK.finditer(text)]


def outside_blocks(text: str) -> str:
    """The text with every figure block's inside removed (what hand-typed text remains)."""
    return BLOCK.sub(lambda m: m.group(1) + m.group(4), text)


def stale(root: Path = ROOT) -> list[str]:
    """``FILE: figures NAME`` for every block that differs from its result file."""
    out = []
    for path in pages(root):
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            if match.group(3) != rendered(match.group(2), root):
                out.append(f"{path.relative_to(root)}: figures {match.group(2)}")
    return out


def main(argv: list[str] | None = None) -> int:
    return check_or_write(
        argv, __doc__, stale, "every figure block is what its result file holds", lambda: [(p, filled) for p in pages()]
    )


if __name__ == "__main__":
    sys.exit(main())
