"""The docs name only code that exists: every ``dsr.…`` dotted name in backticks in README.md and
docs/*.md resolves (a module, or a name in one), and no page names the top-level packages of an
earlier layout (``eval``, ``retrieval``, a top-level ``indexes``) as where code lives. (A page
said "the code lives in `retrieval` (the domain), `indexes` … and `eval`" long after they were
gone.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
DOTTED = re.compile(r"`(dsr(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`")
REMOVED = re.compile(r"`(eval|retrieval|indexes)(?:\.[A-Za-z_.]+)?`|\bfrom (eval|retrieval|indexes)\.\w")


def resolves(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_dotted_dsr_name_in_the_docs_exists():
    """A module or a name in one, or an entry-point group of the registry (``dsr.fusion``)."""
    from dsr.core.registry import KINDS

    groups = {kind.group for kind in KINDS.values()}
    missing = []
    for doc in DOCS:
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for name in DOTTED.findall(line):
                if name not in groups and not resolves(name):
                    missing.append(f"{doc.relative_to(ROOT)}:{lineno}: {name}")
    assert not missing, missing


def test_no_doc_names_the_packages_of_an_earlier_layout():
    found = [
        f"{doc.relative_to(ROOT)}: {line.strip()}"
        for doc in DOCS
        for line in doc.read_text(encoding="utf-8").splitlines()
        if REMOVED.search(line)
    ]
    assert not found, found


def test_no_docstring_names_the_packages_of_an_earlier_layout():
    """The same for the code's own docstrings and comments (``eval`` for ``dsr.evaluation``)."""
    stale = re.compile(r"``(eval|retrieval|indexes)``")
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "dsr").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if stale.search(line)
    ]
    assert not found, found
