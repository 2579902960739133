"""The README is a newcomer's page that stays true: short, undated, opening with the two
commands that set dsr up and run it, then four tasks whose code blocks run as written.

The fast tests read it: its length, no date, load or work-item number, the opening commands
(and that CI runs the README's test command), every ``dsr`` line parsing with dsr's own parser.
The slow tests run each task's block with bash, in order, in one empty folder, with ``.venv/bin``
first on the PATH: what a reader pastes into a terminal. Two things are set around them, not in
them: ``DSR_HOME`` is a folder holding a copy of ``../shared/data/cmu_dog`` (so ``dsr data fetch
cmu_dog`` finds every file present and verified, and downloads nothing: no test reaches the
network), and the leaderboard's port 8000 is a free port of this machine (another test or server
may hold 8000). The reproduce task's printed table is compared with the README's, cell by cell,
with tests/test_readme_tables.py's comparison (that module leaves this table to this test, so the
command runs once).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dsr.cli import build_parser
from tests.support.data import SHARED_DATA, needs_shared
from tests.test_readme_tables import differences, printed_table, published

#: the tasks share one folder and home (a module fixture): one worker runs them, in order
pytestmark = pytest.mark.xdist_group("readme-tasks")
ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the four tasks, by their section titles, in the README's order
TASKS = (
    "Evaluate your own run file",
    "Reproduce the baseline table on public judged data",
    "Train a model and let `dsr decide` judge it",
    "Run a leaderboard and submit to it",
)
MAX_LINES = 150
#: a date, a clock time in UTC, a load average, a work-item number
DATED = re.compile(r"\b20\d\d-\d\d(-\d\d)?\b|\b\d\d:\d\d UTC\b|\bload( average)?s? (of )?\d|\bissues? \d", re.I)


def text() -> str:
    return README.read_text(encoding="utf-8")


def sections() -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def bash_blocks(section: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", section, re.S)


def dsr_lines(block: str) -> list[list[str]]:
    """The ``dsr`` command lines of a block, as argv (a ``T=$(dsr ...)`` counts too)."""
    found = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():  # a line continued with a backslash is one
        line = re.sub(r"^\w+=\$\((.*)\)", r"\1", line.strip())
        words = shlex.split(line, comments=True)
        if words and words[-1] == "&":
            words = words[:-1]
        if words and words[0] == "dsr":
            found.append(words[1:])
    return found


def test_the_readme_is_short_and_undated():
    lines = text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES})"
    dated = [f"{n}: {line}" for n, line in enumerate(lines, 1) if DATED.search(line)]
    assert not dated, dated


def test_the_readme_opens_with_the_set_up_and_the_test_command_ci_runs():
    first = bash_blocks(text())[0]
    commands = [line.split("#")[0].strip() for line in first.splitlines()]
    assert commands == ["make reproduce", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\nreproduce: venv\n" in makefile and "\ntest: venv\n" in makefile
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "make test" in ci  # CI runs the README's test command


def test_the_readme_has_its_four_tasks_each_with_a_block():
    found = sections()
    assert list(found)[:4] == list(TASKS)
    for title in TASKS:
        assert len(bash_blocks(found[title])) == 1, title
    assert "Features" in found and "Links" in found


def test_every_link_of_the_readme_is_a_file_of_the_repository():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text())
    assert links
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert not missing, missing


def test_every_dsr_line_of_the_readme_parses():
    parser = build_parser()
    lines = [argv for block in bash_blocks(text()) for argv in dsr_lines(block)]
    assert len(lines) >= 15
    for argv in lines:
        try:
            parser.parse_args(argv)
        except SystemExit as exit:
            pytest.fail(f"`dsr {shlex.join(argv)}` does not parse (exit {exit.code})")


def test_a_dated_line_is_caught():
    assert DATED.search("measured 2026-11-27 on two cores")
    assert DATED.search("at 11:09 UTC") and DATED.search("under load 1.6") and DATED.search("(issue 34)")
    assert not DATED.search("dsr reproduce cmu_dog_dev --out out/cmu_dog_dev")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_block(block: str, cwd: Path, home: Path, timeout: float) -> str:
    """Run one block with bash as a reader would (errexit on, so a failing line fails it), in
    its own process group, killed whole at the end (a server left behind included)."""
    port = str(free_port())
    script = "set -euo pipefail\n" + block.replace("8000", port)
    env = {**os.environ, "DSR_HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("DSR_BACKEND", None)  # the README's settings: the default backend
    process = subprocess.Popen(
        ["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = b"(timed out)"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    output = out.decode("utf-8", "replace")
    assert process.returncode == 0, f"the block exited {process.returncode}:\n{block}\n{output[-4000:]}"
    return output


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """One empty folder the tasks run in, and a DSR_HOME with a copy of CMU_DoG."""
    import shutil

    folder = tmp_path_factory.mktemp("reader")
    home = tmp_path_factory.mktemp("reader-home")
    if (SHARED_DATA / "cmu_dog").is_dir():
        shutil.copytree(SHARED_DATA / "cmu_dog", home / "data" / "cmu_dog")
    return folder, home


@pytest.mark.slow
def test_evaluating_a_run_file_runs_as_written(reader):
    folder, home = reader
    out = run_block(bash_blocks(sections()[TASKS[0]])[0], folder, home, timeout=600)
    assert re.search(r"^map\s+all\s+0\.\d{4}$", out, re.M) and "nDCG@5 (primary measure) by subset" in out
    assert (folder / "runs" / "dense.run").is_file() and (folder / "runs" / "sample.qrels").is_file()


@pytest.mark.slow
@needs_shared("cmu_dog")
def test_reproducing_and_deciding_on_cmu_dog_dev_run_as_written(reader):
    """The reproduce task, then the training task (the quick recipe, then dsr decide)."""
    folder, home = reader
    out = run_block(bash_blocks(sections()[TASKS[1]])[0], folder, home, timeout=1800)
    assert "already present, verified" in out and "RRF(BM25, dense)" in out
    ((_, command, table),) = [t for t in published() if t[0] == "README.md"]
    assert command in sections()[TASKS[1]] or command.removeprefix("dsr ") in sections()[TASKS[1]]
    diff = differences(table, printed_table(out, table[0], len(table)))
    assert not diff, "README.md's table is not what its command prints; update it:\n" + "\n".join(diff)
    out = run_block(bash_blocks(sections()[TASKS[2]])[0], folder, home, timeout=3600)
    assert (home / "models" / "my-bi").is_dir() and "my-bi" in out


@pytest.mark.slow
def test_the_leaderboard_task_runs_as_written(reader):
    folder, home = reader
    if not (folder / "runs" / "dense.run").is_file():  # the first task writes it
        run_block(bash_blocks(sections()[TASKS[0]])[0], folder, home, timeout=600)
    out = run_block(bash_blocks(sections()[TASKS[3]])[0], folder, home, timeout=300)
    assert re.search(r"^accepted: run #\d+ http://127\.0\.0\.1:\d+/runs/\d+$", out, re.M), out
