"""The example at the end of every ``--help`` (``dsr.cli.help.EXAMPLES``) runs as written,
through the real command line, in a folder holding what it names.

The cheap ones run in the fast tier, in one workspace and in order (``board add-member`` needs
the team ``board add-team`` made); those that load a model or run the whole suite run in the
slow tier; the rest need what no test may have here (the network, a Wikipedia dump, a server
a person starts) or data under ../shared/data, and are named with where they are run instead.
Every command's example is in exactly one of these lists.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.cli.help import EXAMPLES

#: run in the fast tier, in this order
FAST = (
    "collections",
    "stats",
    "",
    "run",
    "fuse",
    "evaluate",
    "validate",
    "trec_eval",
    "export",
    "qrels",
    "board",
    "board list",
    "board add-team",
    "board add-member",
    "board rotate-token",
    "board remove-member",
    "board add-phase",
    "board rebuild",
    "board export",
    "judge",
    "judge list",
    "judge guidelines",
    "judge add-assessor",
    "judge rotate-token",
    "judge remove-assessor",
)

#: run in the slow tier: they load a model or run the whole baseline suite
SLOW = ("rerank", "reproduce")

#: not run here, and why (where a test runs the same command on what it needs)
ELSEWHERE = {
    "data": "downloads CMU_DoG (the network): tests/collections/test_fetch.py fetches from a local mirror",
    "data fetch": "downloads CMU_DoG (the network): tests/collections/test_fetch.py fetches from a local mirror",
    "data build": "reads ../shared/data/cmu_dog: tests/cli/test_data_commands.py builds the fixture's copy",
    "train": "trains for an hour on ../shared/data: tests/training/ trains the tiny recipes",
    "kfold": "trains per fold on ../shared/data: tests/training/test_biencoder_train.py on the fixtures",
    "agreement": "reads ../shared/data (judged and silver labels): tests/training/test_biencoder_train.py",
    "decide": "reads ../shared/data (judged and silver labels): tests/evaluation/test_decision.py",
    "serve": "serves until stopped: tests/board/ start it on a loopback port",
    "submit": "needs a running server: tests/board/test_board_access.py submits to one",
    "board add-baseline": "adds dsr reproduce's out/sample/runs: tests/board/test_board_baselines_reproduce.py",
    "board set-phase": "names the hidden phase test: tests/board/test_board_cli.py sets a season",
    "board freeze": "names the hidden phase test: tests/board/test_board_cli.py freezes one",
    "board participant-file": "names the hidden phase test: tests/board/test_board_participants.py",
    "judge create": "needs dsr pool's ccpe-pool.jsonl: tests/cli/test_judge_command.py creates one from a pool",
    "judge assign": "needs a campaign: tests/cli/test_judge_command.py",
    "judge status": "needs a campaign: tests/cli/test_judge_command.py",
    "judge report": "needs a graded campaign: tests/cli/test_judge_command.py",
    "judge review": "needs a graded campaign: tests/judging/test_review.py",
    "judge export": "needs a graded campaign: tests/cli/test_judge_command.py",
    "judge export-tasks": "needs a campaign: tests/judging/test_labelstudio.py",
    "judge import": "needs Label Studio's export: tests/judging/test_labelstudio.py",
    "corpus": "reads a Wikipedia dump: tests/indexes/ build a corpus from a small one",
    "corpus build": "reads a Wikipedia dump: tests/indexes/ build a corpus from a small one",
    "corpus index": "needs a built corpus: tests/indexes/",
    "corpus search": "needs a built corpus: tests/indexes/",
    "pool": "reads CCPE and a built corpus: tests/cli/test_pool_runs.py",
}


def test_every_example_is_run_or_named_with_where_it_runs():
    listed = [*FAST, *SLOW, *ELSEWHERE]
    assert len(listed) == len(set(listed)), "an example in two lists"
    assert set(listed) == set(EXAMPLES), sorted(set(EXAMPLES) ^ set(listed))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with what the examples name: runs/ of the sample (runs/dense.run a random
    ranker's, standing in for a dense one), trec_eval's qrels.test and results.test."""
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for ranker, out in (("bm25", "runs/bm25.run"), ("random", "runs/dense.run")):
        assert main(["run", "sample", "--ranker", ranker, "--out", out]) == 0
    assert main(["qrels", "sample", "--out", "qrels.test"]) == 0
    shutil.copy("runs/bm25.run", "results.test")
    return tmp_path


def _run(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = shlex.split(EXAMPLES[path])[1:]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 0, f"{EXAMPLES[path]} exited {code}:\n{err[-2000:]}"


def test_the_cheap_examples_run_as_written(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for path in FAST:
        _run(path, capsys)
    assert (workspace / "runs" / "rrf.run").exists() and (workspace / "export" / "sample-beir").is_dir()
    assert (workspace / "board.tex").exists() and (workspace / "guidelines.yaml").exists()


@pytest.mark.slow
@pytest.mark.parametrize("path", SLOW)
def test_the_examples_that_load_models_run_as_written(workspace: Path, capsys: pytest.CaptureFixture[str], path: str) -> None:
    _run(path, capsys)
