"""The quickstart of docs/getting-started.md runs as written on a fresh install: every `dsr` line,
in order, in an empty folder with an empty DSR_HOME (so nothing trained or downloaded before is there)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.cli.reproduce import NEXT_STEPS

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "getting-started.md"
MAKEFILE = ROOT / "Makefile"
#: `make reproduce` prints its command line, then what dsr prints: at most this many lines in all, on a
#: terminal with a fresh DSR_HOME (tests/cli/test_quiet.py counts them under a pseudo-terminal)
MAKE_REPRODUCE_LINES = 40


def make_reproduce_argv() -> list[str]:
    """The dsr command of the Makefile's reproduce recipe (``$(BIN)/dsr reproduce ...``)."""
    recipe = MAKEFILE.read_text(encoding="utf-8").split("\nreproduce:", 1)[1].splitlines()[1]
    words = shlex.split(recipe.strip())
    assert words[0] == "$(BIN)/dsr", recipe
    return words[1:]


def quickstart_commands() -> list[list[str]]:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "dsr":
            commands.append(words[1:])
    return commands


def test_the_quickstart_has_the_main_commands():
    names = [c[0] for c in quickstart_commands()]
    assert {"stats", "run", "rerank", "fuse", "validate", "evaluate", "qrels", "export", "reproduce"} <= set(names)
    assert "train" not in names
    assert not any(word.startswith("dsr:") for c in quickstart_commands() for word in c), (
        "a dsr:NAME model needs `dsr train` first"
    )


@pytest.mark.slow
def test_every_quickstart_command_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert make_reproduce_argv() in quickstart_commands()  # so `make reproduce` runs below
    for argv in quickstart_commands():
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, f"dsr {shlex.join(argv)} exited {code}:\n{captured.err[-2000:]}"
        out = argv[argv.index("--out") + 1] if "--out" in argv else None
        if out:
            assert Path(out).exists(), f"dsr {shlex.join(argv)} did not write {out}"
        if argv == make_reproduce_argv():
            check_make_reproduce_output(captured.out, captured.err)
    assert (tmp_path / "out" / "sample" / "results.md").exists()


def check_make_reproduce_output(out: str, err: str) -> None:
    """The main job says it is a smoke test, prints a short table (on a fresh DSR_HOME,
    index builds included) and ends with the commands of the first table on public data.
    Into a log (here: not a terminal) dsr prints no progress and no library prints anything."""
    lines = out.splitlines() + err.splitlines()
    assert 1 + len(lines) <= MAKE_REPRODUCE_LINES, "\n".join(lines)
    assert err == "", err  # stage lines and build notices are a terminal's only
    assert out.startswith("SMOKE TEST on the bundled sample: 20 invented dialogues")
    assert "nothing can be significant" in out.splitlines()[0]
    assert "nDCG@5 (primary measure) by subset" in out and "no mark: not significantly different" in out
    assert out.rstrip().splitlines()[-4:] == NEXT_STEPS.splitlines()
    assert "sigir2022" not in NEXT_STEPS and "dsr reproduce cmu_dog_dev" in NEXT_STEPS


def test_the_guide_states_the_line_budget_the_tests_keep():
    set_up = GUIDE.read_text(encoding="utf-8").split("\n## Quickstart", 1)[0]  # where `make reproduce` is
    assert f"`make reproduce` prints at most {MAKE_REPRODUCE_LINES} lines" in " ".join(set_up.split())


def test_gitignore_covers_what_the_quickstart_writes():
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    written = {argv[argv.index("--out") + 1].split("/")[0] for argv in quickstart_commands() if "--out" in argv}
    assert written == {"runs", "export", "out"}
    for folder in written:
        assert f"/{folder}/" in ignored, folder
