"""docs/contributing.md's worked example is code that works: the collection module it shows,
saved as written, keeps the contract every registered collection keeps and loads its data."""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

from dsr.collections import SourceInfo
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.params import Param

DOC = Path(__file__).resolve().parents[1] / "docs" / "contributing.md"


@pytest.fixture()
def example(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    code = re.search(r"## Worked example: a collection.*?```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "team_chats.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("team_chats_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source(tmp_path, lines) -> Path:
    folder = tmp_path / "team_chats"
    folder.mkdir()
    (folder / "dialogues.jsonl").write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    return folder


def test_the_worked_example_keeps_the_contract_and_loads(example, tmp_path):
    assert isinstance(example.SOURCE, SourceInfo) and example.SOURCE.name == "team_chats"
    assert all(isinstance(p, Param) for p in example.PARAMS)
    assert {"source", "split"} <= set(inspect.signature(example.build).parameters)
    folder = _source(
        tmp_path,
        [
            {
                "id": "d1",
                "title": "Jazz",
                "turns": ["who played?", "Miles"],
                "candidates": [
                    {"id": "s1", "text": "Miles Davis played trumpet.", "relevant": 1},
                    {"id": "s2", "text": "Paris is in France.", "relevant": 0},
                ],
            },
            {
                "id": "d2",
                "title": "Tea",
                "turns": ["green or black?"],
                "candidates": [{"id": "s1", "text": "Green tea is unoxidised.", "relevant": 1}],
            },
        ],
    )
    collection = example.load(folder)
    assert isinstance(collection, Collection) and [d.id for d in collection.dialogues] == ["d1", "d2"]
    assert [c.label for c in collection.dialogues[0].candidates] == [1, 0]
    assert [d.id for d in example.build(folder, None, min_turns=2).dialogues] == ["d1"]
    with pytest.raises(InputError):
        example.build(folder, None, min_turns=0)


def test_the_worked_example_names_the_line_of_a_bad_record(example, tmp_path):
    folder = _source(tmp_path, [{"id": "d1", "title": "Jazz", "turns": ["hi"], "candidates": []}, {"id": "d2", "title": "Tea"}])
    with pytest.raises(InputError) as error:
        example.load(folder)
    assert error.value.line == 2 and "dialogues.jsonl" in str(error.value)


def test_the_worked_example_keeps_dsr_testings_collection_contract(example, tmp_path):
    from dsr import testing

    folder = _source(
        tmp_path,
        [
            {"id": "d1", "title": "Jazz", "turns": ["who?"], "candidates": [{"id": "s1", "text": "Miles.", "relevant": 1}]},
            {"id": "d2", "title": "Tea", "turns": ["green?"], "candidates": [{"id": "s2", "text": "Green tea.", "relevant": 0}]},
        ],
    )
    assert len(testing.check_collection(example, folder, name="team_chats")) == 2
