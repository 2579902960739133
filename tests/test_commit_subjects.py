"""Commit subjects are one line of at most 72 characters (tools/commit_subject.py, the commit-msg
hook of .pre-commit-config.yaml), for every commit made since the rule began; the history before
it stays as it is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools.commit_subject import LIMIT, main, problems

ROOT = Path(__file__).resolve().parents[1]
#: the last commit before the rule (its subject and its ancestors' are not checked)
SINCE = "d99c26d"


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_a_long_or_two_line_subject_is_refused(tmp_path):
    assert problems("Hints point to the docs site\n\nThe body, as long as it needs.\n") == []
    assert problems("x" * LIMIT) == [] and len(problems("x" * (LIMIT + 1))) == 1
    assert problems("a subject\nthat goes on\n") and problems("# only a comment\n") == ["the message is empty"]
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("y" * 100 + "\n")
    assert main([str(message)]) == 1


def test_the_hook_runs_on_every_commit_message():
    config = (ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    assert "tools/commit_subject.py" in config and "commit-msg" in config


def test_every_commit_since_the_rule_has_a_short_subject():
    if not shutil.which("git") or git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    if git("cat-file", "-e", f"{SINCE}^{{commit}}").returncode != 0:
        pytest.skip(f"{SINCE} is not in this clone's history (a shallow clone)")
    subjects = git("log", "--format=%h %s", f"{SINCE}..HEAD").stdout.splitlines()
    long = [line for line in subjects if len(line.split(" ", 1)[1]) > LIMIT]
    assert not long, long
