"""Runs written by other tools (trec_eval, Anserini/pyserini, PyTerrier, ranx, hand-edited
files) evaluate as they are, with the numbers ir_measures gives on the same files."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import ir_measures
import pytest

from dsr.cli import main
from tests.support.order import RANX

pytestmark = RANX  # the tool_runs fixture writes with ranx: one worker compiles it (tests/support/order.py)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "interchange"
RUNS = sorted(FIXTURES.glob("*.run"))
MEASURES = ["RR", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@10", "P@1", "P@5", "AP", "R@10"]


def _dsr_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def assert_evaluate_equals_ir_measures(run: Path, qrels_file: Path) -> None:
    """dsr evaluate's means of ``run`` are ir_measures' on the same files."""
    result = _dsr_json(["evaluate", "sample", str(run), "--json", "--quiet", "--protocol", "all", "--measures", *MEASURES])
    (values,) = [r["all_dialogues"]["all"] for r in result["runs"].values()]
    expected = ir_measures.calc_aggregate(
        [ir_measures.parse_measure(m) for m in MEASURES],
        list(ir_measures.read_trec_qrels(str(qrels_file))),
        list(ir_measures.read_trec_run(str(run))),
    )
    for measure in MEASURES:
        assert values[measure] == pytest.approx(expected[ir_measures.parse_measure(measure)], abs=1e-12), measure


@pytest.fixture(scope="module")
def qrels_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("qrels") / "sample.qrels"
    assert main(["qrels", "sample", "--out", str(path)]) == 0
    return path


def test_the_fixtures_are_in_the_styles_they_claim():
    text = {p.name: p.read_bytes() for p in RUNS}
    assert len(RUNS) == 6
    assert b"\tQ0\t" in text["trec_eval_tabs.run"]
    assert text["anserini.run"].split(b"\n")[0].endswith(b" Anserini")
    assert text["pyserini.run"].split(b"\n")[0].endswith(b" pyserini")
    assert text["pyterrier.run"].split(b"\n")[0].split()[3] == b"0"  # ranks from 0
    assert b"\r\n" in text["messy_whitespace.run"] and b"\r\n\r\n" in text["messy_whitespace.run"]
    scores = [float(line.split()[4]) for line in text["pyserini.run"].decode().splitlines()]
    assert len(set(scores)) < len(scores)  # ties


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_dsr_evaluate_equals_ir_measures(run, qrels_file):
    assert_evaluate_equals_ir_measures(run, qrels_file)


def test_dsr_evaluate_equals_the_ir_measures_command_line(qrels_file):
    run = FIXTURES / "messy_whitespace.run"
    cli = subprocess.run(
        [sys.executable, "-m", "ir_measures", str(qrels_file), str(run), " ".join(MEASURES), "--places", "15"],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = {name: float(value) for name, value in (line.split("\t") for line in cli.stdout.strip().splitlines())}
    result = _dsr_json(["evaluate", "sample", str(run), "--json", "--quiet", "--protocol", "all", "--measures", *MEASURES])
    (values,) = [r["all_dialogues"]["all"] for r in result["runs"].values()]
    assert set(expected) == set(MEASURES)
    for measure in MEASURES:
        assert values[measure] == pytest.approx(expected[measure], abs=1e-14), measure


def test_validate_accepts_every_style_and_names_ties(capsys):
    """Whitespace, tags and ranks from 0 (PyTerrier: trec_eval ignores the rank column) are
    no problem for `dsr validate`; tied scores are a warning (an error with --strict)."""
    for run in RUNS:
        code = main(["validate", "sample", str(run)])
        captured = capsys.readouterr()
        out = captured.out + captured.err
        if run.name == "pyserini.run":
            assert code == 0 and "tie as 32-bit floats" in out
            assert main(["validate", "sample", str(run), "--strict"]) == 2
            capsys.readouterr()
        else:
            assert code == 0, (run.name, out)


# --- files written by the tools themselves (tests/tool_runs.py) -----------------------------


def test_tool_written_runs_are_in_the_styles_they_claim(tool_runs):
    pyterrier = tool_runs["pyterrier"].read_text().splitlines()
    assert pyterrier[0].split()[3] == "0" and pyterrier[0].endswith(" pyterrier")  # ranks from 0
    ranx = tool_runs["ranx"].read_bytes()
    assert not ranx.endswith(b"\n") and ranx.count(b"\n") == 507  # no final newline
    anserini = [line.split() for line in tool_runs["anserini"].read_text().splitlines()]
    assert all(p[4].endswith(".000000") for p in anserini)
    assert len({(p[0], p[4]) for p in anserini}) < len(anserini)  # ties


@pytest.mark.parametrize("tool", ["pyterrier", "ranx", "anserini"])
def test_tool_written_runs_validate_evaluate_and_fix(tool, tool_runs, qrels_file, tmp_path, capsys):
    """dsr validate accepts what dsr evaluate scores (ties a warning), dsr evaluate gives
    ir_measures' numbers, and --fix-ties rewrites the run without ties."""
    run = tool_runs[tool]
    code = main(["validate", "sample", str(run)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert ("tie as 32-bit floats" in captured.err) == (tool == "anserini")
    assert_evaluate_equals_ir_measures(run, qrels_file)
    fixed = tmp_path / "fixed.run"
    assert main(["validate", "sample", str(run), "--fix-ties", "--out", str(fixed)]) == 0
    capsys.readouterr()
    assert main(["validate", "sample", str(fixed), "--strict"]) == 0
