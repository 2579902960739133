"""A run's sidecar names the collection's file by its name only: no folder of this machine."""

from __future__ import annotations

import json
import shutil

from dsr.cli import main
from dsr.collections import sample


def test_a_sidecar_carries_no_path_of_the_machine(tmp_path, capsys, monkeypatch):
    """The collection outside the working directory (by name), the run file inside it (relative)."""
    folder = tmp_path / "private-user-folder"
    folder.mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    collection = shutil.copy(str(sample.data_file()), folder / "mine.jsonl")
    assert main(["run", str(collection), "--ranker", "bm25", "--out", str(tmp_path / "work" / "a.run")]) == 0
    capsys.readouterr()
    text = (tmp_path / "work" / "a.run.json").read_text()
    sidecar = json.loads(text)
    assert sidecar["collection"]["meta"]["path"] == "mine.jsonl"
    assert sidecar["command_line"] == "dsr run mine.jsonl --ranker bm25 --out a.run"
    assert "private-user-folder" not in text and str(tmp_path) not in text
