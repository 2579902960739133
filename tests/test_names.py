"""Every name the project's code uses is defined: pyflakes over the packages and the benches.

A bench runs on demand, not in the suite, so a name it lost (``time`` after an edit of its
imports) would only show when someone measures; pyflakes finds it without running anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("dsr", "bench", "tools")


def _undefined(paths: list[Path]) -> list[str]:
    """pyflakes' undefined-name findings (and files it cannot parse) in ``paths``."""
    api = pytest.importorskip("pyflakes.api")
    from pyflakes import messages
    from pyflakes.reporter import Reporter

    found: list[str] = []

    class Collect(Reporter):
        def __init__(self):
            super().__init__(None, None)

        def flake(self, message):
            if isinstance(message, (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)):
                found.append(str(message))

        def syntaxError(self, filename, msg, lineno, offset, text):
            found.append(f"{filename}:{lineno}: {msg}")

        def unexpectedError(self, filename, msg):
            found.append(f"{filename}: {msg}")

    reporter = Collect()
    for path in paths:
        api.checkPath(str(path), reporter)
    return found


def test_no_undefined_names():
    files = [p for folder in FOLDERS if (ROOT / folder).is_dir() for p in sorted((ROOT / folder).rglob("*.py"))]
    assert len(files) > 100
    found = _undefined(files)
    assert not found, "\n".join(found)


def test_the_check_finds_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\ndef f():\n    return time.perf_counter(), os.sep\n")
    assert [m.split(": ", 1)[1] for m in _undefined([bad])] == ["undefined name 'time'"]
