"""What a pip user reads points to the documentation site or to ``dsr COMMAND --help``, never to
a file of the repository (installed from the wheel, there is no README.md, docs/ or tools/):
every command's help, and every string the package can print (its string constants outside
docstrings and comments, which only a reader of the code sees). And ``dsr --help`` lists every
command under its task."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from dsr.cli import build_parser
from dsr.cli.commands import COMMANDS, GROUPS, grouped
from dsr.cli.help import commands
from dsr.core import DOCS_URL, docs_url

ROOT = Path(__file__).resolve().parents[2]
#: a file of the repository named as a place to read: docs/X.md, tools/X.py, tests/..., bench/...,
#: experiments/..., or the README as something to look at
REPOSITORY_FILE = re.compile(
    r"(?<![\w/.])(docs|tools|tests|bench|experiments)/[\w./-]+\.(md|py|sh|json)\b|(see|compare with:?|in) README(\.md)?\b", re.I
)


def printed_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings (f-strings' parts included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_no_help_names_a_file_of_the_repository():
    found = []
    for path, parser in commands(build_parser()).items():
        for line in parser.format_help().splitlines():
            if REPOSITORY_FILE.search(line):
                found.append(f"dsr {path} --help: {line.strip()}")
    assert not found, found


def test_no_string_the_package_prints_names_a_file_of_the_repository():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:120]!r}"
        for path in sorted((ROOT / "dsr").rglob("*.py"))
        if "migrations" not in path.parts
        for line, text in printed_strings(path)
        if REPOSITORY_FILE.search(text)
    ]
    assert not found, found


def test_a_hint_to_a_repository_file_is_caught():
    assert REPOSITORY_FILE.search("its reference table, to compare with: README.md")
    assert REPOSITORY_FILE.search("see docs/board.md") and REPOSITORY_FILE.search("run tools/labelstudio_venv.sh")
    assert not REPOSITORY_FILE.search(f"see {docs_url('board')}") and not REPOSITORY_FILE.search("out/sample/results.md")


def test_the_docs_address_is_the_sites():
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"site_url: {DOCS_URL}" in mkdocs
    assert docs_url("board", "quotas") == f"{DOCS_URL}board/#quotas"
    for page in ("board", "scale", "training", "models", "results", "interchange", "judging"):
        assert (ROOT / "docs" / f"{page}.md").is_file(), page  # every page a hint names exists


def test_dsr_help_lists_every_command_under_its_task():
    assert "other" not in grouped(), f"commands with no group in dsr/cli/commands.py GROUPS: {grouped()['other']}"
    assert sorted(c for names in GROUPS.values() for c in names) == sorted(COMMANDS)
    text = build_parser("").format_help()
    for title, names in GROUPS.items():
        assert f"  {title}:" in text
        for name in names:
            assert re.search(rf"^    {re.escape(name)}\s+\S", text, re.M), name
    assert text.index("  evaluate:") < text.index("  rank and fuse:") < text.index("  data and export:")
