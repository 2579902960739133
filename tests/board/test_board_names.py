"""Names and ids are printable text: the collection reader refuses a dialogue or candidate id
holding a format character (a bidi control such as U+202E, a zero-width space, the byte order
mark: each shows the id as another) as board and judging names do, with the file, line and
field; a board's collection or phase name ``.`` or ``..`` is refused for what it is."""

from __future__ import annotations

import json

import pytest

from dsr.cli import main
from dsr.core.data import Candidate, read_benchmark
from dsr.core.errors import InputError

SAMPLE = "dsr/collections/data/sample.jsonl"
#: characters that print as nothing or turn the text around
HIDDEN = {
    "\u202e": "RIGHT-TO-LEFT OVERRIDE",
    "\u2066": "LEFT-TO-RIGHT ISOLATE",
    "\u200b": "ZERO WIDTH SPACE",
    "\ufeff": "ZERO WIDTH NO-BREAK SPACE",
}


def with_id(tmp_path, where: str, char: str, plain: bool = True):
    """The sample with ``char`` in the third dialogue's id or in a candidate's id; ``plain``
    False gives that dialogue a candidate the reader's fast path does not take (a numeric
    title as text), so the checked path reads it."""
    from pathlib import Path

    lines = (Path(__file__).parents[2] / SAMPLE).read_text().splitlines()
    record = json.loads(lines[2])
    if where == "dialogue":
        record["id"] += char + "gpj.exe"
    else:
        record["candidates"][4]["id"] += char
    if not plain:
        record["candidates"][0]["score"] = "1.5"
    lines[2] = json.dumps(record)
    path = tmp_path / "ids.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("plain", [True, False], ids=["fast path", "checked path"])
@pytest.mark.parametrize("where", ["dialogue", "candidate"])
@pytest.mark.parametrize("char", HIDDEN)
def test_the_reader_refuses_format_characters_in_ids(tmp_path, where, char, plain):
    path = with_id(tmp_path, where, char, plain)
    with pytest.raises(InputError) as err:
        read_benchmark(path)
    assert err.value.line == 3 and err.value.field == ("id" if where == "dialogue" else "candidates[4].id"), err.value
    assert HIDDEN[char] in err.value.message and "not printable" in err.value.message


def test_commands_refuse_them_with_exit_2_naming_the_file(tmp_path, capsys):
    path = with_id(tmp_path, "dialogue", "\u202e")
    db, store = ["--db", f"sqlite:///{tmp_path / 'b.sqlite'}"], ["--store", str(tmp_path / "store")]
    for argv in (
        ["run", str(path), "--ranker", "bm25", "--out", str(tmp_path / "x.run")],
        ["stats", str(path)],
        ["board", "add-phase", str(path), "--phase", "p", *db, *store],
        ["board", "add-phase", str(path), "--phase", "h", "--hidden", *db, *store],
    ):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert f"{path}:3" in err and "RIGHT-TO-LEFT OVERRIDE" in err and "Traceback" not in err, err
    assert not (tmp_path / "x.run").exists()


def test_builders_cannot_make_such_ids():
    with pytest.raises(InputError, match="not printable"):
        Candidate(id="abc\u202e", title="", body="x", score=None, label=0)


def test_board_names_refuse_them_and_dot_names_are_refused_for_what_they_are(tmp_path, capsys):
    db, store = ["--db", f"sqlite:///{tmp_path / 'b.sqlite'}"], ["--store", str(tmp_path / "store")]
    for argv, flag in (
        (["board", "add-phase", "sample", "--phase", "te\u202est"], "--phase"),
        (["board", "add-phase", "sample", "--phase", "p", "--name", "sam\u200bple"], "--name"),
        (["board", "add-team", "al\u2066pha"], "NAME"),
    ):
        capsys.readouterr()
        assert main([*argv, *db, *store]) == 2, argv
        err = capsys.readouterr().err
        assert flag in err and "not printable" in err and "Traceback" not in err, err
    for name in (".", "..", " .. "):
        for argv in (["--phase", name], ["--phase", "p", "--name", name]):
            assert main(["board", "add-phase", "sample", *argv, *db, *store]) == 2
            err = capsys.readouterr().err
            assert "a URL path reads it as this folder or the one above" in err and "characters" not in err, err
    assert main(["board", "list", *db, *store]) == 0
    assert "sample" not in capsys.readouterr().out
