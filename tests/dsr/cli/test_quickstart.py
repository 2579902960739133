"""The README's quickstart runs as written on a fresh install: every `dsr` line, in order,
in an empty folder with an empty DSR_HOME (so nothing trained or downloaded before is there)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from dsr.cli import main

README = Path(__file__).resolve().parents[3] / "README.md"


def quickstart_commands() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
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
    assert {"stats", "run", "rerank", "fuse", "validate", "evaluate", "qrels", "export",
            "reproduce"} <= set(names)
    assert "train" not in names
    assert not any(word.startswith("dsr:") for c in quickstart_commands() for word in c), \
        "a dsr:NAME model needs `dsr train` first"


def test_every_quickstart_command_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv in quickstart_commands():
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, f"dsr {shlex.join(argv)} exited {code}:\n{captured.err[-2000:]}"
        out = argv[argv.index("--out") + 1] if "--out" in argv else None
        if out:
            assert Path(out).exists(), f"dsr {shlex.join(argv)} did not write {out}"
    assert (tmp_path / "out" / "sample" / "results.md").exists()
