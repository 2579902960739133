"""ruff (pyproject.toml's ``[tool.ruff]``: pyflakes, pycodestyle, import order, bugbear,
pyupgrade) reports nothing on the whole tree, so the suite fails where CI's lint would."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")
    if beside.exists():
        return [str(beside)]
    if shutil.which("ruff"):
        return [shutil.which("ruff")]
    pytest.skip("ruff is not installed (pip install -e '.[test]' brings it)")


def test_ruff_reports_nothing():
    done = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_finds_what_it_should(tmp_path):
    """The check can fail: an unused import and unsorted imports are findings."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import sys\nimport os\n")
    done = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "bad.py"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 1 and "F401" in done.stdout and "I001" in done.stdout
