"""`dsr collections`, `dsr data build`, `dsr stats` through dsr.cli.main."""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.collections import REGISTERED, sigir2022
from dsr.core.data import read_benchmark
from dsr.core.text import tokenize

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sigir2022"
CURRENT = FIXTURES / "current"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_collections_lists_every_source_and_its_availability(capsys, dsr_home):
    code, out, _ = run(capsys, "collections", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert list(rows) == list(REGISTERED)
    assert rows["sigir2022"]["licence"] == "MIT" and rows["sigir2022"]["available"] is False
    assert rows["sigir2022"]["cache"] == str(dsr_home / "data" / "sigir2022")
    assert rows["sigir2022"]["commit"] == "bc72a50686642cc25bd4f98fa6c12045b159c530"
    for name in ("cmu_dog", "redial", "ccpe"):
        assert rows[name]["fetchable"] is True and rows[name]["available"] is False

    shutil.copytree(CURRENT, dsr_home / "data" / "sigir2022")
    code, out, _ = run(capsys, "collections")
    assert code == 0
    header, *lines = out.splitlines()
    assert header.split() == ["name", "available", "licence", "cache"]
    sigir_line = next(line for line in lines if line.startswith("sigir2022 "))
    assert sigir_line.split()[1] == "yes"
    # aligned: the cache column starts at the same offset on every row
    col = header.index("cache")
    assert sigir_line[col:] == str(dsr_home / "data" / "sigir2022")


def test_build_writes_the_benchmark_file(capsys, tmp_path):
    out_file = tmp_path / "built" / "sigir.jsonl"
    code, out, err = run(capsys, "data", "build", "sigir2022", "--source", str(FIXTURES / "old"), "--out", str(out_file))
    assert code == 0, err
    assert "wrote 6 dialogues (plain 3, grounded 3)" in out
    built = read_benchmark(out_file)
    # the old-schema source converts to the same collection as the current one
    assert built.content_hash == sigir2022.load(CURRENT).content_hash
    code, _, _ = run(
        capsys,
        "data",
        "build",
        "sigir2022",
        "--source",
        str(CURRENT),
        "--out",
        str(tmp_path / "grounded.jsonl"),
        "--split",
        "grounded",
    )
    assert code == 0 and read_benchmark(tmp_path / "grounded.jsonl").subsets == ["grounded"]


def test_failing_build_leaves_no_output(capsys, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(CURRENT, src)
    plain = src / "datasets" / "dialogues.json"
    items = json.loads(plain.read_text())
    items[1]["candidates"][2]["label"] = 2
    plain.write_text(json.dumps(items))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, out, err = run(capsys, "data", "build", "sigir2022", "--source", str(src), "--out", str(out_dir / "x.jsonl"))
    assert code == 2 and out == ""
    assert str(plain) in err and "t5_2qh03.tkeys.0.3" in err and "candidates[2].label" in err
    assert list(out_dir.iterdir()) == []

    # an existing output stays as it was
    (out_dir / "x.jsonl").write_text("previous\n")
    assert run(capsys, "data", "build", "sigir2022", "--source", str(src), "--out", str(out_dir / "x.jsonl"))[0] == 2
    assert (out_dir / "x.jsonl").read_text() == "previous\n"
    assert [p.name for p in out_dir.iterdir()] == ["x.jsonl"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--source", "{missing}"], "no such folder"),
        (
            ["--source", "{fixture}", "--param", "threshold=0.5"],
            "unknown parameter(s) threshold for collection 'sigir2022'; known: none",
        ),
        (["--source", "{fixture}", "--param", "threshold"], "NAME=VALUE"),
        (["--source", "{fixture}", "--split", "valid"], "unknown split"),
    ],
)
def test_build_bad_arguments_exit_2(capsys, tmp_path, argv, needle):
    argv = [a.format(missing=tmp_path / "nope", fixture=CURRENT) for a in argv]
    code, _, err = run(capsys, "data", "build", "sigir2022", *argv, "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and needle in err
    assert not (tmp_path / "o.jsonl").exists()


def test_build_unknown_source_and_missing_action(capsys, tmp_path):
    code, _, err = run(capsys, "data", "build", "msmarco", "--source", str(CURRENT), "--out", str(tmp_path / "o.jsonl"))
    assert code == 2 and "unknown collection 'msmarco'" in err
    assert run(capsys, "data")[0] == 2


def _expected_stats(dialogues: list[dict]) -> dict:
    """Recomputed from the raw fixture JSON, without the reader."""

    def summary(values):
        return {"n": len(values), "mean": round(statistics.fmean(values), 2), "min": min(values), "max": max(values)}

    labels = [int(c["label"]) for d in dialogues for c in d["candidates"]]
    return {
        "dialogues": len(dialogues),
        "candidates_per_dialogue": summary([len(d["candidates"]) for d in dialogues]),
        "relevant_per_dialogue": summary([sum(int(c["label"]) for c in d["candidates"]) for d in dialogues]),
        "labels": {str(k): labels.count(k) for k in sorted(set(labels))},
        "context_turns": summary([len(d["context"]) for d in dialogues]),
        "tokens": {
            "context_turn": summary([len(tokenize(t["body"])) for d in dialogues for t in d["context"]]),
            "target": summary([len(tokenize(d["target"]["body"])) for d in dialogues]),
            "candidate": summary([len(tokenize(c["body"])) for d in dialogues for c in d["candidates"]]),
        },
    }


def test_stats_json_matches_an_independent_count(capsys, tmp_path):
    plain = json.loads((CURRENT / "datasets" / "dialogues.json").read_text())
    grounded = json.loads((CURRENT / "datasets" / "wikipedia_grounded_dialogues.json").read_text())
    code, out, err = run(capsys, "stats", "sigir2022", "--source", str(CURRENT), "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["subsets"]["plain"] == _expected_stats(plain)
    assert stats["subsets"]["grounded"] == _expected_stats(grounded)
    assert stats["all"] == _expected_stats(plain + grounded)
    assert stats["splits"]["count"] == 3

    # a benchmark file path works the same way (no splits there)
    built = tmp_path / "b.jsonl"
    assert run(capsys, "data", "build", "sigir2022", "--source", str(CURRENT), "--out", str(built))[0] == 0
    code, out, _ = run(capsys, "stats", str(built), "--json")
    again = json.loads(out)
    assert code == 0 and again["all"] == stats["all"] and "splits" not in again


def test_stats_table_is_aligned_and_shows_the_same_numbers(capsys):
    code, out, _ = run(capsys, "stats", "sigir2022", "--source", str(CURRENT))
    assert code == 0
    lines = out.splitlines()
    header = next(line for line in lines if line.split() == ["plain", "grounded", "all"])
    table = lines[lines.index(header) : lines.index("cells: mean [min-max]")]
    assert len(table) == 10
    assert len({len(line) for line in table}) == 1  # right-aligned columns
    row = {line.split("  ")[0].strip(): line.split() for line in table[1:]}
    assert row["dialogues"][-3:] == ["3", "3", "6"]
    assert "4.67 [4-6]" in " ".join(row["candidates / dialogue"])
    assert "14 (50.0%)" in " ".join(row["label 1"])


def test_stats_without_data_says_how_to_fetch(capsys):
    code, out, err = run(capsys, "stats", "sigir2022")
    assert code == 2 and out == ""
    assert "dsr data fetch sigir2022" in err
