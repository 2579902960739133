"""Figures in the README and the docs are written by their commands, never typed: each sits in a
``<!-- figures:NAME -->`` block that ``tools/docs_figures.py --write`` fills from the result file
``bench/results/NAME.json`` (or ``experiments/results/``) its bench or experiment wrote, and this
test fails when a block differs from its file. Outside those blocks no line of the README or of
docs/ carries a date, a clock time, a load average or a work-item number (a date given as an
option's value in a command line, ``--closes 2030-05-01``, is a setting, not a measurement)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import docs_figures

ROOT = Path(__file__).resolve().parents[1]
DATED = re.compile(r"\b20\d\d-\d\d(-\d\d)?\b|\b\d\d:\d\d( UTC)?\b|\bload( average)?s? (of |from |was )?\d|\bissues? \d", re.I)


def dated(line: str) -> bool:
    return bool(DATED.search(re.sub(r"--[a-z][\w-]* \S+", "", line)))


def reference_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_every_figure_block_is_what_its_result_file_holds():
    assert not docs_figures.stale(), "run: python tools/docs_figures.py --write"


def test_the_benchmarks_page_shows_its_figures_from_result_files():
    names = docs_figures.blocks((ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8"))
    assert {"reproduce_cmu_dog_dev", "board_latency", "train_default_recipe"} <= set(names)


def test_no_line_of_the_readme_or_the_docs_outside_a_block_carries_a_date_or_a_load():
    found = []
    for path in reference_pages():
        text = docs_figures.outside_blocks(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}:{n}: {line}" for n, line in enumerate(text.splitlines(), 1) if dated(line)]
    assert not found, f"{len(found)} dated line(s) outside figure blocks:\n" + "\n".join(found[:40])


def test_every_result_file_has_the_fields_a_block_shows():
    files = sorted(p for folder in docs_figures.RESULTS for p in (ROOT / folder).glob("*.json"))
    assert files
    for path in files:
        data = docs_figures.load(path.stem)
        assert set(data["machine"]) >= {"cpu", "cores", "units"}, path
        assert re.match(r"20\d\d-\d\d-\d\d", data["date"]), path


def test_a_figure_typed_by_hand_is_caught_and_rewritten(tmp_path):
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    result = {
        "name": "x", "title": "A bench", "command": "python bench/bench_x.py", "date": "2030-01-02 03:04 UTC",
        "machine": {"cpu": "Some CPU", "cores": 2, "units": [], "python": "3.11.7"},
        "load_before": "0.10, 0.20, 0.30", "load_after": "0.40, 0.50, 0.60",
        "columns": ["what", "wall"], "rows": [["cold", "46.8 s"]], "notes": ["a note"],
    }  # fmt: skip
    (tmp_path / "bench" / "results" / "x.json").write_text(json.dumps(result))
    typed = "Figures:\n<!-- figures:x -->\n| what | wall |\n|---|---|\n| cold | 40 s |\n<!-- /figures -->\n"
    (tmp_path / "README.md").write_text(typed)
    assert docs_figures.stale(tmp_path) == ["README.md: figures x"]
    fixed = docs_figures.filled(typed, tmp_path)
    assert "| cold | 46.8 s |" in fixed and "2030-01-02 03:04 UTC" in fixed and "Some CPU, 2 cores" in fixed
    assert "load average 0.10, 0.20, 0.30 before, 0.40, 0.50, 0.60 after" in fixed and "a note" in fixed
    (tmp_path / "README.md").write_text(fixed)
    assert docs_figures.stale(tmp_path) == []
    assert not dated(docs_figures.outside_blocks(fixed).replace("\n", " "))  # the date is inside the block only
    with pytest.raises(KeyError):
        docs_figures.rendered("nope", tmp_path)


def test_write_result_writes_what_a_block_renders(tmp_path, monkeypatch):
    import sys

    from bench import benchinfo

    monkeypatch.setattr(sys, "argv", ["bench/bench_x.py", "--quick"])
    info = benchinfo.header("bench x")
    path = benchinfo.write_result("y", info, ["what", "wall"], [["cold", 1.5]], folder=tmp_path / "bench" / "results")
    data = json.loads(path.read_text())
    assert data["name"] == "y" and data["rows"] == [["cold", 1.5]] and data["load_after"]
    assert data["command"] == "python bench/bench_x.py --quick" and data["date"].endswith("UTC")
    assert "| cold | 1.5 |" in docs_figures.rendered("y", tmp_path)


@pytest.mark.parametrize("line", ["measured 2026-11-27 on two cores", "at 11:09 UTC", "under load 1.6", "(issue 34)"])
def test_a_dated_line_is_caught(line):
    assert dated(line)


def test_a_date_given_to_an_option_is_a_setting():
    assert not dated("dsr board set-phase sample --phase test --closes 2030-05-01")
