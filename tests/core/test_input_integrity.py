"""Bad input never gets in, nor out with a traceback: ids a TREC file cannot carry,
line separators inside JSON strings, deep nesting, huge numbers and labels.

Each case goes through the command line (``dsr.cli.main`` returns the exit
code): exit 2, a message naming the file, the line or record and the field, and
no traceback."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.data import Candidate, Collection, Dialogue, read_benchmark, write_benchmark
from dsr.core.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sigir2022"


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return [d.to_json() for d in load_collection("sample").dialogues[:3]]


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def cli(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    return code, captured.err


def run_rejects(capsys, tmp_path, path: Path, *words: str) -> str:
    out = tmp_path / "out.run"
    code, err = cli(capsys, "run", str(path), "--ranker", "bm25", "--out", str(out))
    assert code == 2, err
    assert str(path) in err
    for word in words:
        assert word in err, err
    assert not out.exists()  # nothing half-written
    return err


# --- ids that TREC files cannot carry -----------------------------------------


@pytest.mark.parametrize(
    "where, value",
    [
        ("candidate", "Great Pyramid"),
        ("candidate", "tab\there"),
        ("candidate", "new\nline"),
        ("candidate", "nbsp\u00a0here"),
        ("candidate", "ls\u2028here"),
        ("dialogue", "t5 x"),
        ("dialogue", "cr\rhere"),
    ],
)
def test_ids_with_whitespace_are_rejected_on_load(capsys, tmp_path, records, where, value):
    recs = copy.deepcopy(records)
    if where == "candidate":
        recs[1]["candidates"][4]["id"] = value
        field = "candidates[4].id"
    else:
        recs[1]["id"] = value
        field = "'id'"
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(r) for r in recs])
    err = run_rejects(capsys, tmp_path, path, f"{path}:2", field, "whitespace")
    if where == "candidate":
        assert f"record {recs[1]['id']}" in err


def test_empty_candidate_id_is_rejected(capsys, tmp_path, records):
    recs = copy.deepcopy(records)
    recs[2]["candidates"][0]["id"] = ""
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(r) for r in recs])
    run_rejects(capsys, tmp_path, path, f"{path}:3", "candidates[0].id", "missing")


def test_builders_cannot_make_such_ids():
    with pytest.raises(InputError, match="whitespace"):
        Candidate("a b", "", "text", None, 0)
    good = load_collection("sample").dialogues[0]
    with pytest.raises(InputError) as err:
        Dialogue("d 1", good.title, good.context, good.target, good.candidates)
    assert err.value.field == "id"


def test_sigir2022_titles_in_ids_become_underscores_and_runs_have_six_columns(capsys, tmp_path):
    out = tmp_path / "sigir.run"
    code, err = cli(capsys, "run", "sigir2022", "--source", str(FIXTURES / "current"), "--ranker", "bm25", "--out", str(out))
    assert code == 0, err
    lines = [line.split() for line in out.read_text().splitlines()]
    assert lines and all(len(parts) == 6 for parts in lines)
    assert "Great_Pyramid_of_Giza.12138.0.0.1.Great_Pyramid_of_Giza" in {p[2] for p in lines}
    assert main(["validate", "sigir2022", str(out), "--source", str(FIXTURES / "current")]) == 0


# --- JSON Lines split on \n only ----------------------------------------------

SEPARATORS = "\u2028\u2029\u0085\x1c\x1d\x1e\x0b\x0c"


def test_line_separators_inside_strings_round_trip(tmp_path):
    collection = load_collection("sample")
    dialogues = copy.deepcopy(collection.dialogues[:4])
    dialogues[1].context[0].body = f"one{SEPARATORS}two"
    dialogues[2].candidates[3].body = "first\u2028second\u0085third"
    dialogues[3].title = "title\u2029end"
    edited = Collection("edited", dialogues)
    path = tmp_path / "edited.jsonl"
    write_benchmark(edited, path)
    back = read_benchmark(path)
    assert back.content_hash == edited.content_hash
    assert back.dialogues[1].context[0].body == f"one{SEPARATORS}two"


def test_line_separators_through_data_build_and_stats(capsys, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "current", src)
    path = src / "datasets" / "dialogues.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw[0]["context"][0]["body"] += "\u2028and a line separator\u0085too"
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "built.jsonl"
    code, err = cli(capsys, "data", "build", "sigir2022", "--source", str(src), "--out", str(out))
    assert code == 0, err
    assert "\u2028" in out.read_text(encoding="utf-8")  # written raw, as JSON allows
    code, err = cli(capsys, "stats", str(out))
    assert code == 0, err
    assert read_benchmark(out).dialogues[0].context[0].body.endswith("\u2028and a line separator\u0085too")


# --- no traceback: nesting, huge numbers, labels ------------------------------


def test_deep_nesting_is_an_input_error(capsys, tmp_path, records):
    deep = "[" * 100_000 + "]" * 100_000
    line = json.dumps(records[1])[:-1] + f', "meta": {{"x": {deep}}}}}'
    path = write_lines(tmp_path / "deep.jsonl", [json.dumps(records[0]), line])
    run_rejects(capsys, tmp_path, path, f"{path}:2", "nested too deeply")


def test_deep_nesting_in_a_json_document(capsys, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "current", src)
    (src / "datasets" / "dialogues.json").write_text("[" * 100_000 + "]" * 100_000)
    code, err = cli(capsys, "data", "build", "sigir2022", "--source", str(src), "--out", str(tmp_path / "x.jsonl"))
    assert code == 2 and "dialogues.json" in err and "nested too deeply" in err


@pytest.mark.parametrize("field", ["label", "score"])
def test_five_thousand_digit_numbers(capsys, tmp_path, records, field):
    line = json.dumps(records[1]).replace(f'"{field}": {records[1]["candidates"][0][field]}', f'"{field}": {"7" * 5000}', 1)
    assert "7" * 5000 in line
    path = write_lines(tmp_path / "digits.jsonl", [json.dumps(records[0]), line])
    run_rejects(capsys, tmp_path, path, f"{path}:2", f"candidates[0].{field}", "finite")


@pytest.mark.parametrize(
    "value, words",
    [
        ("1e30", "whole number from 0 to"),
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("-Infinity", "finite"),
        ("true", "expected a number"),
        ('"1e30"', "whole number from 0 to"),
        ("2147483648", "whole number from 0 to"),
    ],
)
def test_bad_labels(capsys, tmp_path, records, value, words):
    line = json.dumps(records[1]).replace('"label": 0', f'"label": {value}', 1)
    assert value in line
    path = write_lines(tmp_path / "labels.jsonl", [json.dumps(records[0]), line])
    err = run_rejects(capsys, tmp_path, path, f"{path}:2", "label", words)
    assert f"record {records[1]['id']}" in err


def test_largest_label_is_accepted(tmp_path, records):
    line = json.dumps(records[1]).replace('"label": 0', '"label": 2147483647', 1)
    path = write_lines(tmp_path / "labels.jsonl", [json.dumps(records[0]), line])
    assert max(c.label for d in read_benchmark(path) for c in d.candidates) == 2**31 - 1


# --- issue 40: a lone surrogate, grades and measure parameters beyond a C int ------------------


@pytest.mark.parametrize("where", ["title", "candidates[1].body", "context[0].author_name"])
def test_a_lone_surrogate_escape_is_refused_naming_the_field(capsys, tmp_path, records, where):
    """``"\ud800"`` in a benchmark file is valid JSON but no UTF-8 text: it was a traceback when
    the collection's content hash encoded it. Now exit 2 naming the line and field; a valid
    pair (an emoji written as two escapes) is read as it should be."""
    record = copy.deepcopy(records[0])
    if where == "title":
        record["title"] = "bad \ud800 title"
    elif where.startswith("candidates"):
        record["candidates"][1]["body"] = "x\udc80y"
    else:
        record["context"][0]["author_name"] = "\udbff"
    path = write_lines(tmp_path / "bad.jsonl", [json.dumps(record)])  # json.dumps writes \ud800
    err = run_rejects(capsys, tmp_path, path, "lone surrogate", where)
    assert f"{path}:1" in err
    record = copy.deepcopy(records[0])
    record["title"] = "fine \U0001f600"
    good = write_lines(tmp_path / "good.jsonl", [json.dumps(record)])
    assert "\\ud83d\\ude00" in good.read_text() and read_benchmark(good)[record["id"]].title == "fine \U0001f600"


@pytest.mark.parametrize("measure", ["RR(rel=3000000000)", "P@3000000000", "SDCG(max_rel=9999999999)@5"])
def test_a_measure_parameter_beyond_a_c_int_is_refused(capsys, tmp_path, measure):
    run = tmp_path / "bm25.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(run)]) == 0
    code, err = cli(capsys, "evaluate", "sample", str(run), "--measures", measure)
    assert code == 2 and "--measures" in err and "2,147,483,647" in err, err


@pytest.mark.parametrize("grade", ["3000000000", "4294967297", "-2147483649"])
def test_a_qrels_grade_beyond_a_c_int_is_refused(capsys, tmp_path, grade):
    """trec_eval holds a grade as a C int: 4294967297 was read as 1 (a relevant document
    scored as not relevant) and 3000000000 as a negative number whose arrays took the
    machine's memory (dsr board add-baseline was killed). Now the qrels line is refused."""
    qrels = write_lines(
        tmp_path / "big.qrels",
        [
            "sample_askscience.s01.0.3 0 Sunset_8575223_2_0_0 1",
            f"sample_askscience.s01.0.3 0 Tyndall_effect_8663704_0_0_2 {grade}",
        ],
    )
    run = tmp_path / "bm25.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(run)]) == 0
    code, err = cli(capsys, "evaluate", "--qrels", str(qrels), str(run))
    assert code == 2 and f"{qrels}:2" in err and "grade" in err, err
    code, err = cli(
        capsys,
        "board",
        "add-phase",
        "sample",
        "--phase",
        "t",
        "--hidden",
        "--qrels",
        str(qrels),
        "--db",
        f"sqlite:///{tmp_path / 'b.sqlite'}",
        "--store",
        str(tmp_path / "store"),
    )
    assert code == 2 and f"{qrels}:2" in err, err
