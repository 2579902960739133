"""A command killed (SIGKILL) at any moment while it writes a folder leaves, once the
next command has run, exactly the old set or the new set, never a mix.

Bounded trials of ``dsr reproduce`` and ``dsr export`` on the bundled sample, in real
processes (tests/support/kill.py forks them from a warm helper): a quarter are killed
just before the new set takes the output folder's place, a quarter just after, half
after a random delay within the command's duration. The folder must be there the
moment the command dies (issue 40: the old swap's two renames left no folder between
them until the next command): the old set before the swap, the new one after. After each
trial the next command on the folder runs (the same command with a bad argument, refused
right after it has checked its output folder), then the folder is compared, file by file
with sha256, with the set before the trial and with what the command writes.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import time
from pathlib import Path

import pytest

from tests.support.kill import Forker
from tests.support.tiers import slow_fixture

PRELOAD = [
    "dsr.cli",
    "dsr.cli.reproduce",
    "dsr.cli.interchange",
    "dsr.baselines",
    "dsr.evaluation.report",
    "dsr.evaluation.results",
    "dsr.interchange.hf",
    "dsr.interchange.trec",
    "matplotlib.pyplot",
    "scipy.stats",
    "pandas",
]
TRIALS = 20


def snapshot(folder: Path) -> dict[str, str] | None:
    if not folder.exists():
        return None
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
@slow_fixture
def forker(tmp_path_factory):
    helper = Forker(PRELOAD, {"DSR_HOME": str(tmp_path_factory.mktemp("kill_home"))})
    yield helper
    helper.close()


def _trial(forker: Forker, job: dict, after: dict, out: Path, delay: float | str, log: Path) -> tuple[dict, dict]:
    """Run ``job``; kill it after ``delay`` s (``before`` / ``after``: at that moment of the
    folder swap); then run ``after``, the next command. Returns how ``job`` ended and the
    folder as the kill left it (before the next command)."""
    flag = log.with_name("paused")
    flag.unlink(missing_ok=True)
    moment = delay if isinstance(delay, str) else None
    pause = {"before_rename_to": str(out), "flag": str(flag), "moment": moment} if moment else None
    pid = forker.start({**job, "pause": pause, "log": str(log)})
    if moment:
        deadline = time.monotonic() + 120
        while not flag.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
        assert flag.exists(), "the command never swapped its folder in"
        os.kill(pid, signal.SIGKILL)
    else:
        time.sleep(delay)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    end = forker.wait()
    killed = snapshot(out)
    assert forker.run({**after, "log": str(log.with_name("after.log"))}) == {"exit": 2}
    return end, killed


def _kill_trials(forker, tmp_path, out, jobs, after, is_new, duration: float) -> list[str]:
    """TRIALS kill trials of ``jobs`` (alternating), each followed by the command ``after``;
    every outcome is the old or the new set."""
    rng = random.Random(19)
    before = snapshot(out)
    outcomes = []
    for i in range(TRIALS):
        version, job = jobs[i % 2]
        delay = ("before", None, "after", None)[i % 4] or rng.uniform(0, duration)
        end, killed = _trial(forker, job, after, out, delay, tmp_path / "trial.log")
        now = snapshot(out)
        left = sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))
        assert left == [], (i, end, left)
        # the folder is there the moment the command dies, before any next command: the old
        # set until the new one is in place (issue 40: a kill between two renames left none)
        assert before is None or killed is not None, (i, end, delay)
        if delay == "before":  # killed as the new set was about to take its place: the old one
            assert end == {"signal": signal.SIGKILL} and killed == before == now, (i, end)
        if delay == "after":  # killed just after: the new one
            assert end == {"signal": signal.SIGKILL} and killed == now and is_new(out, now, version), (i, end)
        if now == before:  # (two exports within a second are the same bytes)
            outcomes.append("old")
        else:
            assert now is not None and is_new(out, now, version), (i, end, delay)
            outcomes.append("new")
        before = now
    return outcomes


def _timed(forker, job) -> float:
    """Run ``job`` to the end in the helper itself (warming what its children inherit), then
    once more in a child, as a trial runs it; returns how long the child took (a child starts
    warm: far quicker than the helper's first run, which drew the figures, and a random kill
    within the helper's duration mostly came after the command had ended)."""
    assert forker.run({**job, "warm": True}) == {"exit": 0}
    start = time.monotonic()
    assert forker.run(job) == {"exit": 0}
    return time.monotonic() - start


def test_reproduce_killed_at_any_moment_leaves_the_old_or_the_new_set(forker, tmp_path):
    out = tmp_path / "out"
    small = ["--no-dense", "--no-cross-encoder", "--n-splits", "2", "--queries", "last", "--measures", "nDCG@5"]
    base = ["reproduce", "sample", "--out", str(out), *small]
    jobs = [(seed, {"argv": [*base, "--seed", str(seed)]}) for seed in (0, 1)]
    # the run files each seed writes (deterministic), and the file names of a set
    expected = {}
    for seed, job in jobs:
        duration = _timed(forker, job)
        expected[seed] = {k: v for k, v in snapshot(out).items() if k.startswith("runs/")}
    names = set(snapshot(out))
    assert expected[0]["runs/random.run.gz"] != expected[1]["runs/random.run.gz"]

    def is_new(folder: Path, files: dict[str, str] | None, seed: int) -> bool:
        assert files is not None
        manifest = json.loads((folder / "manifest.json").read_text())
        assert set(files) == names and manifest["parameters"]["seed"] == seed
        assert {k: v for k, v in files.items() if k.startswith("runs/")} == expected[seed]
        assert all(files[f"runs/{Path(e['path']).name}"] == e["sha256"] for e in manifest["runs"].values())
        return True

    after = {"argv": [*base, "--queries", "no-such-strategy"]}
    outcomes = _kill_trials(forker, tmp_path, out, jobs, after, is_new, duration * 1.2)
    assert "old" in outcomes and "new" in outcomes, outcomes


def test_export_killed_at_any_moment_leaves_the_old_or_the_new_set(forker, tmp_path):
    out = tmp_path / "export"
    jobs = [
        (query, {"argv": ["export", "sample", "--format", fmt, "--out", str(out), "--query", query]})
        for fmt, query in (("hf", "last"), ("trec", "all"))
    ]
    listings = {}
    for query, job in jobs:
        duration = _timed(forker, job)
        listings[query] = set(snapshot(out))

    def is_new(folder: Path, files: dict[str, str] | None, query: str) -> bool:
        assert files is not None
        manifest = json.loads((folder / "dsr_export.json").read_text())
        assert set(files) == listings[query] and manifest["query"] == query
        assert {k: v for k, v in files.items() if k != "dsr_export.json"} == manifest["files"]
        return True

    after = {"argv": ["export", "sample", "--format", "trec", "--out", str(out), "--query", "no-such-strategy"]}
    outcomes = _kill_trials(forker, tmp_path, out, jobs, after, is_new, duration * 1.5)
    assert "new" in outcomes, outcomes
