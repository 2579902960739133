"""Comments say why, not what was measured: a timing, a date or a load goes stale the day it is
written, so it lives in a bench's result file (bench/results/) and the docs' block made from it.
The Makefile, pyproject.toml and tests/conftest.py carry no timing and no date in a comment or a
docstring, and no comment or docstring of the package carries a date or a load average."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMING = re.compile(r"(?<![\w.])\d[\d,]*(\.\d+)? ?(ms|s|min|minutes?|seconds?|hours?)\b(?!-)")
DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\bload( average)?s? (of |from )?\d")
#: docstrings that show what dsr prints or writes, a date included: examples, not measurements
EXAMPLES = {
    ("dsr/board/models.py", "``2026-03-01 12:00 UTC``"),
    ("dsr/indexes/exactness.py", "2026-11-2"),
    ("dsr/indexes/exactness.py", "2026-12-01"),
}


def remarks(path: Path) -> list[tuple[int, str]]:
    """A Python file's comments and docstrings, line by line."""
    source = path.read_text(encoding="utf-8")
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
            first = node.body[0]
            found += [(first.lineno + i, line) for i, line in enumerate(ast.get_docstring(node, clean=False).splitlines())]
    return found


def comment_lines(path: Path) -> list[tuple[int, str]]:
    """The ``#`` comments of a Makefile or a TOML file."""
    return [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if line.lstrip().startswith("#")]


def test_the_makefile_pyproject_and_conftest_quote_no_timing_and_no_date():
    found = []
    for path, lines in (
        ("Makefile", comment_lines(ROOT / "Makefile")),
        ("pyproject.toml", comment_lines(ROOT / "pyproject.toml")),
        ("tests/conftest.py", remarks(ROOT / "tests" / "conftest.py")),
    ):
        found += [f"{path}:{n}: {text.strip()}" for n, text in lines if TIMING.search(text) or DATED.search(text)]
    assert not found, found


def test_no_comment_or_docstring_of_the_package_carries_a_date_or_a_load():
    found = []
    for path in sorted((ROOT / "dsr").rglob("*.py")):
        if "migrations" in path.parts:
            continue  # Alembic's revision headers carry their creation date
        name = path.relative_to(ROOT).as_posix()
        for n, text in remarks(path):
            if DATED.search(text) and not any(name == file and example in text for file, example in EXAMPLES):
                found.append(f"{name}:{n}: {text.strip()}")
    assert not found, found


def test_a_timing_or_a_date_in_a_comment_is_caught():
    assert TIMING.search("# this step took 175 s instead of 220 s") and TIMING.search("about 0.8 ms less")
    assert DATED.search("cold mypy run (2026-11-27)") and DATED.search("under load 1.6")
    assert not TIMING.search("# pytest-xdist: one worker per core") and not TIMING.search("mypy==2.4.1")
