"""docs/board.md's season runs line by line on a fresh DSR_HOME, as an organiser would follow it.

The commands are taken from the guide itself (every ``bash`` block of "A season, step by
step", in order) and run in one bash with ``set -e`` in an empty folder, on the bundled
``sample`` collection. The only change: ``dsr serve --port 8000 &`` gets a free port (and
the script waits until it listens), and so do the ``--server`` URLs. Each line is checked
for its exit status; then what the season must have left: the baselines named by their
system names, tokens that work, a rotated and a removed member's that do not, a final phase
published by its freeze, and exports that name the board.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.board import free_port

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "board.md"


def season_commands() -> list[str]:
    """The command lines of the guide's season, in order (continuations joined)."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## A season, step by step", 1)[1].split("\n## ", 1)[0]
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", section, re.S):
        block = re.sub(r"\\\n\s*", "", block)  # join continued lines
        lines += [line.strip() for line in block.splitlines() if line.strip()]
    return lines


def test_the_guide_names_the_commands_a_season_needs():
    commands = season_commands()
    for needed in (
        "dsr board add-phase",
        "dsr board add-baseline sample out/dev",
        "dsr board add-team",
        "dsr board participant-file sample --phase test",
        "dsr board add-member",
        "dsr serve",
        "dsr submit",
        "dsr board rotate-token",
        "dsr board remove-member",
        "dsr board freeze",
        "dsr board export",
        "dsr board list",
    ):
        assert any(c.startswith(needed) for c in commands), needed
    assert sum(c.startswith("dsr serve") for c in commands) == 1


@pytest.mark.slow
def test_the_season_of_docs_board_md_runs_line_by_line_on_a_fresh_home(tmp_path, dsr_home):
    port = free_port()
    script = ["set -euo pipefail"]
    for line in season_commands():
        line = line.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        if line.startswith("dsr serve"):
            assert line.endswith("&")
            line = line.replace("--port 8000", f"--port {port}")
            script += [
                line.replace("&", "> serve.log 2>&1 &"),
                "SERVER=$!",
                "trap 'kill $SERVER' EXIT",
                f"for i in $(seq 600); do (echo > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; sleep 0.1; done",
            ]
            continue
        script += [f"echo '$ {line}' >&2", line]
    work = tmp_path / "season"
    work.mkdir()
    env = {**os.environ, "DSR_HOME": str(dsr_home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, f"a line of docs/board.md failed:\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    out = done.stdout
    assert "Traceback" not in out + done.stderr
    # the baselines by their system names, in a table with 4-decimal means
    assert re.search(r"^#\d+\s+BM25\s+0\.\d{4}", out, re.M) and re.search(r"^#\d+\s+initial\s", out, re.M)
    assert "BM25.run.gz" not in out and "None" not in out
    # both submissions accepted; the final phase's answer shows no score
    accepted = re.findall(r"^accepted: run #\d+ .*$", out, re.M)
    assert len(accepted) == 2
    after_final = out.split(accepted[1], 1)[1]
    assert after_final.splitlines()[1].startswith("scores: none published yet")
    # tokens: ada's rotated one works, ben's (removed) does not; neither is in the database
    from dsr.board.service import Board, BoardConfig

    board = Board(BoardConfig())
    ada = (work / "ada.token").read_text().strip()
    ben = (work / "ben.token").read_text().strip()
    assert board.members.identify(ada)[1].name == "ada" and board.members.identify(ben) is None
    assert ada.encode() not in (dsr_home / "board" / "board.sqlite").read_bytes()
    test = board.phases.get_phase("sample", "test")
    assert test.frozen_at is not None and test.final
    systems = sorted(s.system for s in board.submissions(test))
    # dsr reproduce's folder: every distinct ranking a baseline, each other run an alias listed
    # under "not loaded again" (issue 42; with 5 splits the tuned BM25 may match no single
    # configuration, then there is no alias and every run is a baseline)
    names = {p.name[: -len(".run.gz")] for p in (work / "out" / "test" / "runs").glob("*.run.gz")}
    test_part = out.split("baseline(s) added to sample/test", 1)[1]
    said = re.search(r"^(\d+) run\(s\) not loaded again.*\n.*\n", test_part, re.M)  # the count, the header
    table = test_part[said.end() :].splitlines()[: int(said.group(1))] if said else []
    aliases = {line.split()[0] for line in table}
    assert aliases <= names, aliases
    baselines = set(systems) - {"BM25 tuned"}  # ada's submission
    assert {"BM25", "initial"} <= baselines and "BM25 tuned" in systems
    assert baselines | aliases == names and not baselines & aliases, (baselines, aliases, names)
    board.close()
    # what participants were given of the hidden phase: its 10 dialogues, no label or next turn
    given = (work / "test-dialogues.jsonl").read_text()
    assert len(given.splitlines()) == 10 and '"label"' not in given and '"target"' not in given
    exported = json.loads((work / "test.json").read_text())
    assert exported["provenance"]["board"] == "sample/test" and exported["provenance"]["frozen"]
    assert "sample/test" in (work / "test.csv").read_text() and r"\begin{tabular}" in (work / "test.tex").read_text()
