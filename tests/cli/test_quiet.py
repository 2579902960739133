"""Only dsr's own lines on a user's screen and in a log (issue 39, dsr.core.quiet).

Each test runs the real command in a process of its own with a fresh DSR_HOME, as a user
would: on a pseudo-terminal (what a screen shows: dsr's progress included) or into a pipe
(what a log holds). The int8 export is where the libraries were loudest: torch's
TracerWarnings with the source lines they point at, transformers' FutureWarning and
``loss_type=None``, four NNCF progress bars on standard output. The models exported here are
tiny BERTs (tests/support/tiny_bert.py), loaded and exported by the same code as MiniLM: with
DSR_VERBOSE=1 their int8 exports print every one of those lines (the verbose test below).
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dsr.cli.reproduce import NEXT_STEPS
from tests.cli.test_quickstart import MAKE_REPRODUCE_LINES

ROOT = Path(__file__).resolve().parents[2]
#: what the libraries printed before issue 39 (any of these on a user's screen is a failure)
NOISE = re.compile(
    r"Warning|warnings\.warn|loss_type|━|Statistics collection|Applying|Traceback|"
    r"Loading weights|site-packages|TracerWarning|it/s\]"
)


def environment(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DSR_BACKEND", "DSR_VERBOSE", "PYTHONWARNINGS")}
    return {**env, "DSR_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **extra}


def on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 900) -> tuple[int, str]:
    """Run ``dsr ARGV`` with stdout and stderr on a pseudo-terminal; everything it showed."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsr.cli", *argv],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=env,
        cwd=cwd,
        close_fds=True,
    )
    os.close(terminal)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(controller, 65536)
            except OSError:  # the process closed the terminal: it has ended
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(controller)
        code = proc.wait(timeout=60)
    return code, b"".join(chunks).decode("utf-8", "replace")


def screen_lines(shown: str) -> list[str]:
    """The lines a terminal keeps: each line's text after its last carriage return (a progress
    bar redraws itself over one line and, closed with leave=False, leaves nothing)."""
    lines = [line.rsplit("\r", 1)[-1] for line in shown.replace("\r\n", "\n").split("\n")]
    return [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in lines if line.strip("\r ")]


@pytest.mark.slow
def test_make_reproduce_on_a_terminal_shows_dsr_s_lines_only_within_the_budget(tmp_path):
    code, shown = on_a_terminal(["reproduce", "sample", "--out", "out/sample"], environment(tmp_path / "home"), tmp_path)
    lines = screen_lines(shown)
    assert code == 0, shown[-3000:]
    assert 1 + len(lines) <= MAKE_REPRODUCE_LINES, "\n".join(lines)  # make prints its command first
    assert not NOISE.search(shown), shown
    assert any(line.startswith("dsr reproduce: bm25") for line in lines)  # dsr's progress, on a terminal
    assert lines[0].startswith("SMOKE TEST") and lines[-4:] == NEXT_STEPS.splitlines()


def _tiny(folder: Path, **config) -> Path:
    from dsr.collections import load_collection
    from tests.support.tiny_bert import collection_texts, make_tiny_bert

    return make_tiny_bert(folder, collection_texts(load_collection("sample")), **config)


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory) -> Path:
    """A tiny bare BERT (a bi-encoder, or the base a training starts from), shared read-only."""
    return _tiny(tmp_path_factory.mktemp("tiny-encoder"), num_labels=None, max_position_embeddings=128)


@pytest.mark.slow
def test_reproduce_fast_exports_int8_without_a_library_line_on_screen_or_in_a_log(tmp_path, tiny_encoder):
    """``--fast`` with a tiny bi-encoder for the dense rows (MiniLM's export is slow; the
    tiny one's int8 export prints the same library lines when verbose: sentence-transformers'
    and transformers' TracerWarnings, the FutureWarning, ``loss_type=None``, NNCF's bars)."""
    home = tmp_path / "home"
    argv = ["reproduce", "sample", "--fast", "--dense-model", str(tiny_encoder), "--out", "out/fast"]
    logged = subprocess.run(
        [sys.executable, "-m", "dsr.cli", *argv], capture_output=True, text=True, env=environment(home), cwd=tmp_path, timeout=900
    )
    assert logged.returncode == 0, logged.stderr[-3000:]
    assert (home / "models" / "fast").is_dir()  # the int8 export did run
    assert logged.stderr == "", logged.stderr  # a log: no progress, no library line
    assert not NOISE.search(logged.stdout), logged.stdout
    out = logged.stdout.splitlines()
    assert 1 + len(out) <= MAKE_REPRODUCE_LINES
    under = out[out.index("") + 1]  # the first line under the table
    assert under.startswith("note: openvino-int8: figures differ from the exact backend (torch) by")
    code, shown = on_a_terminal([*argv[:-1], "out/again"], environment(home), tmp_path)
    assert code == 0 and not NOISE.search(shown), shown


@pytest.mark.slow
def test_verbose_shows_what_the_libraries_print_and_the_default_does_not(tmp_path):
    """The contrast that makes the quiet test mean something: the same int8 export of a tiny
    cross-encoder, with DSR_VERBOSE=1 (what --verbose sets), prints the libraries' lines."""
    from dsr.cli import main

    model = _tiny(tmp_path / "tiny")
    first = ["run", "sample", "--ranker", "initial", "--out", "initial.run"]
    rerank = [
        "rerank",
        "sample",
        "--run",
        "initial.run",
        "--reranker",
        "cross-encoder",
        "--model",
        str(model),
        "--param",
        "backend=openvino-int8",
        "--top-k",
        "5",
    ]
    outputs = {}
    # one initial run for both reranks, written here (the same file either way; each rerank
    # exports in its own home, in a process of its own)
    assert main([*first[:-1], str(tmp_path / first[-1])]) == 0
    for label, extra in (("quiet", {}), ("verbose", {"DSR_VERBOSE": "1"})):
        env = environment(tmp_path / f"home-{label}", **extra)
        done = subprocess.run(
            [sys.executable, "-m", "dsr.cli", *rerank, "--out", f"{label}.run"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outputs[label] = done.stdout + done.stderr
    assert outputs["quiet"].splitlines() == ["dsr: wrote quiet.run (20 topics, 508 lines) and its sidecar quiet.run.json"], (
        outputs["quiet"]
    )
    assert "TracerWarning" in outputs["verbose"] and "Statistics collection" in outputs["verbose"]


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["cross-encoder", "bi-encoder"])
def test_train_prints_its_report_on_stdout_and_nothing_of_the_trainer_into_a_log(tmp_path, model_type, tiny_encoder):
    """The trainer printed its log dicts on stdout (``{'train_runtime': ...}``) and stderr when
    no terminal showed its bar; a log now holds dsr's report and its one line on stderr."""
    base = tiny_encoder  # read only: the trained model is saved in the test's DSR_HOME
    train = ["train", "sample", "--name", "t", "--base", str(base), "--model-type", model_type]
    small = ["--max-steps", "4", "--batch-size", "8", "--max-length", "64"]
    done = subprocess.run(
        [sys.executable, "-m", "dsr.cli", *train, *small],
        capture_output=True,
        text=True,
        env=environment(tmp_path / "home"),
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.splitlines()
    assert [line.split(":")[0] for line in out[:4]] == ["model", "use", "data", "train"], done.stdout
    assert out[4].startswith("held out") and all(line.startswith("  ") for line in out[5:])
    assert [line.split(":")[0] for line in done.stderr.splitlines()] == ["dsr train"], done.stderr
    assert not NOISE.search(done.stdout + done.stderr) and "{'" not in done.stdout + done.stderr
