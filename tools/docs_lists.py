"""Lists in the docs that come from the registry, never typed by hand.

A doc (README.md, docs/*.md) marks a list with ``<!-- registry:NAME -->`` ...
``<!-- /registry -->``, on one line or across lines; this tool fills what is between with
the names of a kind of part of the registry (``dsr.core.registry``), each in backticks,
comma-separated:

    rankers      kind ranker
    rerankers    kind reranker
    queries      kind query (the query strategies)
    fusion       kind fusion
    collections  kind collection
    measures     kind measure (the ir_measures family names)
    recipes      kind recipe (dsr train --recipe NAME)
    formats      kind format (dsr export --format NAME)

Only dsr's own parts are listed: an installed plug-in does not change the docs.

    python tools/docs_lists.py           # exit 1 and the blocks that differ
    python tools/docs_lists.py --write   # rewrite them

tests/test_docs_lists.py fails when a block differs from what the registry gives.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BLOCK = re.compile(r"(<!-- registry:([a-z_]+) -->)(.*?)(<!-- /registry -->)", re.S)

#: a docs list's name -> the registry's kind
KINDS = {
    "rankers": "ranker",
    "rerankers": "reranker",
    "queries": "query",
    "fusion": "fusion",
    "collections": "collection",
    "measures": "measure",
    "recipes": "recipe",
    "formats": "format",
}


def own_names(kind: str) -> list[str]:
    """dsr's own parts of ``kind``, in the registry's order."""
    from dsr.core import registry

    return [name for name, entry in registry.entries(kind).items() if entry.owner == registry.DSR]


REGISTRIES: dict[str, Callable[[], list[str]]] = {name: (lambda kind=kind: own_names(kind)) for name, kind in KINDS.items()}


def docs(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def rendered(name: str) -> str:
    """A registry's names as a doc shows them: ``a``, ``b``, ``c`` (each in backticks)."""
    if name not in REGISTRIES:
        raise KeyError(f"no registry {name!r}; known: {', '.join(REGISTRIES)}")
    return ", ".join(f"`{item}`" for item in REGISTRIES[name]())


def filled(text: str) -> str:
    """``text`` with every block filled from its registry."""
    return BLOCK.sub(lambda m: m.group(1) + rendered(m.group(2)) + m.group(4), text)


def stale(root: Path = ROOT) -> list[str]:
    """``FILE: registry NAME`` for every block that differs from its registry."""
    out = []
    for path in docs(root):
        text = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            if match.group(3) != rendered(match.group(2)):
                out.append(f"{path.relative_to(root)}: registry {match.group(2)}")
    return out


def check_or_write(
    argv: list[str] | None,
    doc: str,
    found: Callable[[], list[str]],
    up_to_date: str,
    rewrites: Callable[[], list[tuple[Path, Callable[[str], str]]]],
) -> int:
    """The command line of a tool that writes text from a declaration (this one,
    tools/package_docs.py): without ``--write``, exit 1 listing what differs; with it, each
    file whose rewrite differs is rewritten."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite what differs")
    args = parser.parse_args(argv)
    if not args.write:
        differ = found()
        print("\n".join(differ) or up_to_date)
        return 1 if differ else 0
    for path, rewrite in rewrites():
        text = path.read_text(encoding="utf-8")
        if rewrite(text) != text:
            path.write_text(rewrite(text), encoding="utf-8")
            print(f"rewrote {path.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return check_or_write(
        argv, __doc__, stale, "every registry list in the docs is up to date", lambda: [(path, filled) for path in docs()]
    )


if __name__ == "__main__":
    sys.exit(main())
