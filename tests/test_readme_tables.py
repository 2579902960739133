"""The tables the README publishes are what its commands print, cell by cell.

A published table sits in a ```text block right after a marker naming the command that
prints it::

    <!-- table: dsr reproduce cmu_dog_dev --source ../shared/data/cmu_dog --out out/cmu_dog_dev -->

Each test runs that command as written (with the default settings, in a fresh working folder;
``../shared/data`` is the ``shared_data`` fixture's folder) and compares the printed table with
the block: the title line, the header and every row, cell by cell. A command without
``--source`` reads ``$DSR_HOME/data/cmu_dog``, where ``dsr data fetch cmu_dog`` puts CMU_DoG: the
test copies ``../shared/data/cmu_dog`` there (what that fetch verifies file by file). A change of code that
changes a published number fails here until the README changes in the same commit. The
commands need the real data (``../shared/data``; skipped without it, CI has it) and take
minutes (the dense encoding of every candidate), so they are ``slow``; they share one
DSR_HOME, so a sentence is encoded once for every table.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from dsr.cli import main
from tests.support.data import REAL_CMU_DOG

pytestmark = REAL_CMU_DOG  # one worker builds CMU_DoG from ../shared/data for every module that does

ROOT = Path(__file__).resolve().parents[1]
#: the files whose marked tables are run: README.md, and docs pages where a table is cheap to make
FILES = ("README.md", "docs/results.md")
MARKER = re.compile(r"<!-- table: (dsr .+?) -->\n+```text\n(.*?)```", re.S)


def published() -> list[tuple[str, str, list[str]]]:
    """``(file, command, table lines)`` of every marked table."""
    found = []
    for name in FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        found += [(name, command, block.rstrip("\n").splitlines()) for command, block in MARKER.findall(text)]
    return found


def cells(line: str) -> list[str]:
    """A printed table line's cells: columns are at least two spaces apart (a system name such
    as ``dense (title+recent)`` holds single spaces)."""
    return re.split(r"\s{2,}", line.strip())


def differences(expected: list[str], printed: list[str]) -> list[str]:
    """Every cell that differs, named by its row (first cell) and column (the header's cell)."""
    header = cells(expected[1]) if len(expected) > 1 else []
    out = []
    for i, (want, got) in enumerate(zip(expected, printed)):
        if i == 0:
            if want.strip() != got.strip():
                out.append(f"title: README {want.strip()!r}, printed {got.strip()!r}")
            continue
        a, b = cells(want), cells(got)
        if len(a) != len(b):
            out.append(f"line {i + 1}: README {a}, printed {b}")
            continue
        for j, (x, y) in enumerate(zip(a, b)):
            if x != y:
                column = header[j] if j < len(header) else f"column {j + 1}"
                out.append(f"{a[0]!r} / {column}: README {x}, printed {y}")
    return out


def printed_table(out: str, title: str, rows: int) -> list[str]:
    lines = out.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == title.strip()]
    assert starts, f"the command printed no line {title!r}:\n{out[:3000]}"
    return lines[starts[0] : starts[0] + rows]


def argv_of(command: str, shared: Path) -> list[str]:
    words = shlex.split(command.replace("../shared/data", str(shared)))
    assert words[0] == "dsr"
    return words[1:]


def test_every_table_of_the_readme_is_marked_with_its_command():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    marked = {command for name, command, _ in published() if name == "README.md"}
    assert any(c.startswith("dsr reproduce cmu_dog_dev") for c in marked)  # the headline
    # every printed table in the README (a ```text block with a "by subset" title) has a marker
    blocks = re.findall(r"```text\n(.*?)```", text, re.S)
    tables = [b for b in blocks if "(primary measure) by subset" in b.splitlines()[0]]
    assert len(tables) == len(marked), "a printed table in README.md without its <!-- table: ... --> marker"


def test_the_comparison_names_each_differing_cell():
    expected = ["T", "system     all (5)   a (2)", "dense (last)   0.5000±0.1000▲   0.4000±0.2000"]
    printed = ["T", "system     all (5)   a (2)", "dense (last)   0.5000±0.1000   0.4100±0.2000"]
    assert differences(expected, printed) == [
        "'dense (last)' / all (5): README 0.5000±0.1000▲, printed 0.5000±0.1000",
        "'dense (last)' / a (2): README 0.4000±0.2000, printed 0.4100±0.2000",
    ]
    assert differences(expected, expected) == []


def run_here() -> list[tuple[str, str, list[str]]]:
    """The tables this module runs: the README's own is run by its reproduce task
    (tests/test_readme.py compares it there, so the command runs once)."""
    return [t for t in published() if t[0] != "README.md"]


@pytest.mark.slow
@pytest.mark.parametrize("name, command, table", run_here(), ids=[f"{n}:{c}" for n, c, _ in run_here()])
def test_the_published_table_is_what_its_command_prints(
    name, command, table, real_home, shared_data, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("DSR_HOME", str(real_home))
    monkeypatch.delenv("DSR_BACKEND", raising=False)  # the README's settings: the default backend
    monkeypatch.chdir(tmp_path)
    fetched = real_home / "data" / "cmu_dog"
    if "--source" not in command and not fetched.is_dir():  # what `dsr data fetch cmu_dog` leaves
        shutil.copytree(shared_data / "cmu_dog", fetched)
    assert main(argv_of(command, shared_data)) == 0
    out = capsys.readouterr().out
    got = printed_table(out, table[0], len(table))
    diff = differences(table, got)
    assert not diff, (
        f"{name}: `{command}` prints another table than the one published "
        f"({len(diff)} cell(s)); update {name} in the same commit:\n" + "\n".join(diff)
    )
