"""What a pip user gets: the wheel, installed in a fresh virtual environment outside the
repository, runs ``dsr reproduce sample`` and no hint it prints names a file of the repository
(there is no README.md, docs/ or tools/ beside an installed package).

The fresh venv gets only the wheel of dsr (``pip install --no-deps --no-index``); its third-party
packages (torch, sentence-transformers, ...) are the project venv's, reached through a ``.pth``
file in the fresh venv's site-packages that appends the project venv's site-packages to
``sys.path``. A directory added that way is not a site directory, so its own ``.pth`` files,
among them the editable install's finder of dsr, are not run: ``import dsr`` finds the wheel's
copy, which the test checks. Nothing is downloaded (the wheel is built without build isolation,
by the project venv's setuptools)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.cli.test_hints import REPOSITORY_FILE

ROOT = Path(__file__).resolve().parents[1]

#: builds a wheel, makes a venv, runs dsr in subprocesses; its tests share the venv: one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


def run(command: list[str], **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, **kw)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv outside the repository with dsr's wheel in it; its bin folder."""
    work = tmp_path_factory.mktemp("wheel")
    source, dist = work / "source", work / "dist"  # built from a copy: setuptools writes build/ where it builds
    shutil.copytree(ROOT / "dsr", source / "dsr", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(dist),
            str(source),
        ]
    )
    (wheel,) = dist.glob("dialogue_sentence_retrieval-*.whl")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "project_third_party.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)])
    return venv / "bin"


def env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("DSR_", "PYTHON", "VIRTUAL_ENV"))}
    return {**keep, "DSR_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_the_wheel_imports_its_own_copy_outside_the_repository(installed, tmp_path):
    where = run([str(installed / "python"), "-c", "import dsr; print(dsr.__file__)"], cwd=tmp_path, env=env(tmp_path))
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout  # not the checkout's dsr
    help_text = run([str(installed / "dsr"), "--help"], cwd=tmp_path, env=env(tmp_path)).stdout
    assert "commands, by task" in help_text and not REPOSITORY_FILE.search(help_text)


def test_reproduce_sample_runs_from_the_wheel_and_names_no_repository_file(installed, tmp_path):
    done = run([str(installed / "dsr"), "reproduce", "sample", "--out", "out/sample"], cwd=tmp_path, env=env(tmp_path / "home"))
    printed = done.stdout + done.stderr
    assert "SMOKE TEST on the bundled sample" in printed and (tmp_path / "out" / "sample" / "results.md").is_file()
    hints = [line for line in printed.splitlines() if REPOSITORY_FILE.search(line)]
    assert not hints, hints
    assert "readthedocs.io" in printed  # the reference table's page on the site
