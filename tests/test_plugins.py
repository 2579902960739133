"""docs/plugins.md as written: its plug-in distribution (a collection and a ranker, declared as
entry points) installed beside dsr is dsr's own to `dsr collections`, `dsr run`, `dsr evaluate`,
`dsr reproduce` and the board, and its own tests pass with dsr.testing. Each command runs in a
subprocess that finds the distribution on PYTHONPATH, as an installed one is found."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.plugins import GUIDE, TITLED, guide_files, install_guide_distribution, make_distribution

pytestmark = pytest.mark.slow


def guide_commands() -> list[list[str]]:
    """The `dsr` lines of the guide's block of commands, in order."""
    block = next(b for b in re.findall(r"```bash\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S) if "dsr run" in b)
    return [words[1:] for words in (shlex.split(line, comments=True) for line in block.splitlines()) if words[:1] == ["dsr"]]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    """The guide's files, and a site folder holding its distribution as installed."""
    root = tmp_path_factory.mktemp("plugin")
    files = guide_files(root / "src")
    site = root / "site"
    site.mkdir()
    owner = install_guide_distribution(root / "src" / "dsr-team-chats", site)
    return {"root": root, "site": site, "owner": owner, "files": files}


def dsr(args: list[str], plugin, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(plugin["site"]), "DSR_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "dsr.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_guide_shows_a_whole_distribution():
    names = {Path(relative).name for relative, _ in TITLED.findall(GUIDE.read_text(encoding="utf-8"))}
    assert {"pyproject.toml", "collection.py", "ranker.py", "dialogues.jsonl", "test_contracts.py"} <= names
    assert [c[0] for c in guide_commands()] == ["collections", "run", "run", "evaluate", "reproduce", "board", "board"]


def test_every_command_of_the_guide_runs_on_the_plugins_parts(plugin, tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    outputs = {}
    for args in guide_commands():
        done = dsr(args, plugin, work, home)
        assert done.returncode == 0, f"dsr {shlex.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr
        outputs[args[0] + (" " + args[1] if args[0] == "board" else "")] = done.stdout + done.stderr
    assert f"provided by {plugin['owner']}" in outputs["collections"]
    assert (work / "runs" / "overlap.run").is_file() and (work / "runs" / "bm25.run").is_file()
    sidecar = json.loads((work / "runs" / "overlap.run.json").read_text(encoding="utf-8"))
    assert sidecar["ranker"] == "overlap" and sidecar["collection"]["name"] == "team_chats"
    assert "overlap" in outputs["evaluate"]
    assert (work / "out" / "team_chats" / "results.md").is_file()
    assert "team_chats" in outputs["board add-phase"]


def test_the_plugins_parts_are_listed_and_checked_like_dsrs_own(plugin, tmp_path):
    helped = dsr(["run", "--help"], plugin, tmp_path, tmp_path / "home")
    assert helped.returncode == 0 and "overlap" in helped.stdout and "team_chats" in helped.stdout
    wrong = dsr(
        ["run", "team_chats", "--ranker", "overlap", "--param", "query=nope", "--out", "x.run"], plugin, tmp_path, tmp_path
    )
    assert wrong.returncode == 2 and "query" in wrong.stderr and "Traceback" not in wrong.stderr
    assert not (tmp_path / "x.run").exists()


def test_the_plugins_own_tests_pass_with_dsr_testing(plugin):
    env = {**os.environ, "PYTHONPATH": str(plugin["site"])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "dsr-team-chats/tests"],
        cwd=plugin["root"] / "src",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout


def test_a_name_two_distributions_claim_is_an_error_naming_both(plugin, tmp_path):
    site = tmp_path / "site"
    make_distribution(
        site,
        "other-overlap",
        "2.0",
        {"dsr.rankers": {"overlap": "other_overlap:Ranker"}},
        {"other_overlap/__init__.py": "from team_chats.ranker import OverlapRanker as Ranker\n"},
    )
    env = {**os.environ, "PYTHONPATH": f"{plugin['site']}{os.pathsep}{site}", "DSR_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "dsr.cli", "run", "team_chats", "--ranker", "overlap", "--out", "x.run"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert plugin["owner"] in done.stderr and "other-overlap 2.0" in done.stderr


def test_import_dsr_and_its_registrations_read_no_distribution():
    """``import dsr`` stays light: dsr's own parts register as references, and the installed
    distributions' entry points are read only when a kind is first listed."""
    code = "import dsr, dsr.rankers, dsr.collections; from dsr.core import registry; print(registry._STATE.plugins is None)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr
