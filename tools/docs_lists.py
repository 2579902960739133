"""Lists in the docs that come from the registries, never typed by hand.

A doc (README.md, docs/*.md) marks a list with ``<!-- registry:NAME -->`` ...
``<!-- /registry -->``, on one line or across lines; this tool fills what is between with
the registry's names, each in backticks, comma-separated:

    rankers      dsr.rankers.RANKERS
    rerankers    dsr.rerankers.RERANKERS
    queries      dsr.core.queries.STRATEGIES
    fusion       dsr.core.fusion.METHODS
    collections  dsr.collections.REGISTERED
    measures     dsr.evaluation.registry.FAMILIES (the ir_measures family names)
    recipes      dsr.training.settings.RECIPES (dsr train --recipe NAME)

    python tools/docs_lists.py           # exit 1 and the blocks that differ
    python tools/docs_lists.py --write   # rewrite them

tests/test_docs_lists.py fails when a block differs from what the registries give.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- registry:([a-z_]+) -->)(.*?)(<!-- /registry -->)", re.S)


def _rankers() -> list[str]:
    from dsr.rankers import RANKERS

    return list(RANKERS)


def _rerankers() -> list[str]:
    from dsr.rerankers import RERANKERS

    return list(RERANKERS)


def _queries() -> list[str]:
    from dsr.core.queries import STRATEGIES

    return list(STRATEGIES)


def _fusion() -> list[str]:
    from dsr.core.fusion import METHODS

    return list(METHODS)


def _collections() -> list[str]:
    from dsr.collections import REGISTERED

    return list(REGISTERED)


def _measures() -> list[str]:
    from dsr.evaluation.registry import FAMILIES

    return [family.name for family in FAMILIES]


def _recipes() -> list[str]:
    from dsr.training.settings import RECIPES

    return list(RECIPES)


REGISTRIES: dict[str, Callable[[], list[str]]] = {
    "rankers": _rankers,
    "rerankers": _rerankers,
    "queries": _queries,
    "fusion": _fusion,
    "collections": _collections,
    "measures": _measures,
    "recipes": _recipes,
}


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
