"""``make lint`` reports nothing on the whole tree: ruff (pyproject.toml's ``[tool.ruff]``:
pyflakes, pycodestyle, import order, bugbear, pyupgrade, unused ``noqa``) and mypy (``[tool.mypy]``:
the package, the core strictly). CI (``.ci/run``) and pre-commit run the same target, so the
suite fails where they would. Each checker can fail: a finding of each is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the tools beside this Python (the venv's), as `make lint` runs them
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    if not (BIN / name).exists():
        pytest.skip(f"{name} is not installed beside {sys.executable} (pip install -e '.[test]' brings it)")
    return str(BIN / name)


def _run(*command: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


@pytest.mark.slow
def test_make_lint_reports_nothing():
    _tool("ruff"), _tool("mypy")
    make = shutil.which("make") or pytest.skip("make is not installed")
    done = _run(make, "lint", f"BIN={BIN}")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_reports_nothing():
    """The fast part of ``make lint``, so the fast tier catches what ruff finds too."""
    done = _run(_tool("ruff"), "check", "--no-cache", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_finds_what_it_should(tmp_path):
    """An unused import, unsorted imports and a ``noqa`` that suppresses nothing are findings."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "bad.py").write_text("import sys\nimport os\n\nx = 1  # noqa: E501\n")
    done = _run(_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "bad.py", cwd=tmp_path)
    assert done.returncode == 1
    assert {"F401", "I001", "RUF100"} <= {line.split()[1] for line in done.stdout.splitlines() if ": " in line}


def test_mypy_finds_what_it_should(tmp_path):
    """Under the project's configuration, a wrong type and a function without annotations are
    findings anywhere in the package (the core is checked more strictly still)."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    (tmp_path / "dsr" / "core").mkdir(parents=True)
    (tmp_path / "dsr" / "__init__.py").write_text("")
    (tmp_path / "dsr" / "core" / "__init__.py").write_text("")
    (tmp_path / "dsr" / "core" / "loose.py").write_text("def half(x):\n    return x / 2\n")
    (tmp_path / "dsr" / "wrong.py").write_text('count: int = "three"\n')
    (tmp_path / "dsr" / "plain.py").write_text("def twice(x):\n    return 2 * x\n")
    done = _run(_tool("mypy"), "--no-incremental", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "dsr/core/loose.py:1: error: Function is missing a type annotation  [no-untyped-def]" in done.stdout
    assert "dsr/wrong.py:1: error: Incompatible types in assignment" in done.stdout
    assert "dsr/plain.py:1: error: Function is missing a type annotation  [no-untyped-def]" in done.stdout


def test_ci_and_pre_commit_run_make_lint():
    """One lint, three callers: CI's script and the pre-commit hook call ``make lint`` (this
    suite calls it above), so none of them checks something the others do not."""
    assert "\nmake lint\n" in (ROOT / ".ci" / "run").read_text()
    assert "entry: make lint\n" in (ROOT / ".pre-commit-config.yaml").read_text()
    assert "\nlint:\n" in (ROOT / "Makefile").read_text()
