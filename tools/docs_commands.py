"""The command reference of the documentation site, written from dsr's own argparse parsers.

``docs/reference/commands.md`` holds every command's ``--help`` (``dsr``, ``dsr run``,
``dsr board add-phase``, ...), grouped by task as ``dsr --help`` lists them, each at 100 columns.
It is generated, never edited:

    python tools/docs_commands.py           # exit 1 when the page differs from the parsers
    python tools/docs_commands.py --write   # rewrite it

tests/test_docs_site.py fails when the page differs from what the parsers print.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools, a package, when run as a script

from tools.docs_lists import check_or_write  # noqa: E402

PAGE = ROOT / "docs" / "reference" / "commands.md"
#: the width the help is wrapped at (argparse reads $COLUMNS)
COLUMNS = "100"


def anchor(path: str) -> str:
    return "dsr-" + path.replace(" ", "-").replace("_", "-") if path else "dsr"


def rendered() -> str:
    """The whole page, from the parsers."""
    from dsr.cli import build_parser
    from dsr.cli.commands import grouped
    from dsr.cli.help import commands

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        parsers = commands(build_parser())
        helps = {path: parser.format_help().rstrip() for path, parser in parsers.items()}
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    lines = [
        "# Command reference",
        "",
        "Every command's `--help`, as `dsr` prints it (written from the parsers by",
        "`python tools/docs_commands.py --write`; never edited by hand).",
        "",
        "## `dsr`",
        "",
        "```text",
        helps[""],
        "```",
        "",
    ]
    for title, names in grouped().items():
        lines += [f"## {title[0].upper()}{title[1:]}", ""]
        for name in names:
            for path in [p for p in helps if p == name or p.startswith(name + " ")]:
                lines += [f"### `dsr {path}`", "", "```text", helps[path], "```", ""]
    return "\n".join(lines)


def stale() -> list[str]:
    current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
    return [] if current == rendered() else [str(PAGE.relative_to(ROOT))]


def main(argv: list[str] | None = None) -> int:
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    if not PAGE.exists():
        PAGE.write_text("", encoding="utf-8")
    return check_or_write(
        argv, __doc__, stale, "the command reference is what the parsers print", lambda: [(PAGE, lambda _: rendered())]
    )


if __name__ == "__main__":
    sys.exit(main())
