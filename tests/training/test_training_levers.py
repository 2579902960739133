"""experiments/training_levers.py: the levers' table from a real ``dsr decide`` decision, the
study's result file, and the generated block of the journal replaced in place on every re-run."""

from __future__ import annotations

import numpy as np

from dsr.evaluation.decision import decide
from experiments import training_levers as levers
from tools import docs_figures


def _result() -> dict:
    rng = np.random.default_rng(0)
    base = {s: rng.uniform(0.2, 0.8, n) for s, n in (("dev", 120), ("silver", 300))}
    values = {
        s: {"default": v, "fast": v + 0.10 + rng.normal(0, 0.01, v.size), "fast-gist": v - 0.10 + rng.normal(0, 0.01, v.size)}
        for s, v in base.items()
    }
    decision = decide(values, "default", n_resamples=500).as_dict()
    return {
        "decision": decision,
        "text": "the table\n",
        "command": "dsr decide cmu_dog cmu_dog_dev --default fast=/x/runs/fast.silver.run",
        "runs": "/x/runs",
        "date": "2026-11-26 02:00 UTC",
        "machine": "a CPU",
        "load": "0.50, 0.40, 0.30",
        "rows": {
            "default": {"train_s": 500.0, "steps": 120, "load": "1.16–2.00", "present": True},
            "fast": {"train_s": 250.0, "steps": 72, "load": None, "present": True},
            "fast-gist": {"present": True},
        },
    }


def test_table_has_every_lever_and_the_rules_verdict():
    lines = levers.table(_result())
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert set(rows) == {lever.name for lever in levers.LEVERS}
    assert rows["default"].endswith("| default |") and "500 (120, load 1.16–2.00)" in rows["default"]
    assert rows["fast"].endswith("| **yes** |") and "▲" in rows["fast"] and "+0.1" in rows["fast"]
    assert rows["fast-gist"].endswith("| no |") and "-0.1" in rows["fast-gist"]
    assert rows["mpnet"].endswith("| not trained |")


def test_block_is_written_once_and_replaced_on_a_rerun(tmp_path):
    doc = tmp_path / "results.md"
    doc.write_text("# Results\n\n## Issue 31: the training levers\n\nprose\n\n## Next\n", encoding="utf-8")
    result = _result()
    levers.write(doc, levers.block(result, True), "## Issue 31: the training levers")
    first = doc.read_text(encoding="utf-8")
    assert first.count(levers.BEGIN) == 1 and "the table" in first and "**Decision:**" in first
    assert "fast=runs/fast.silver.run" in first and "/x/" not in first  # no path of this machine
    assert first.index("## Issue 31") < first.index(levers.BEGIN) < first.index("prose") < first.index("## Next")
    result["date"] = "2026-11-27 03:30 UTC"
    levers.write(doc, levers.block(result, False), "## Issue 31: the training levers")
    second = doc.read_text(encoding="utf-8")
    assert second.count(levers.BEGIN) == 1 and "2026-11-27 03:30 UTC" in second
    assert "2026-11-26" not in second and "the table" not in second and second.endswith("## Next\n")


def test_the_result_file_is_what_a_figures_block_renders(tmp_path, monkeypatch):
    monkeypatch.setattr(levers, "RESULTS", tmp_path / "experiments" / "results")
    path = levers.result_file(_result(), "training_levers", "The levers")
    assert path == tmp_path / "experiments" / "results" / "training_levers.json"
    data = docs_figures.load("training_levers", tmp_path)
    assert data["columns"][0] == "lever" and {row[0] for row in data["rows"]} == {lever.name for lever in levers.LEVERS}
    assert data["date"] == "2026-11-26 02:00 UTC" and data["load_after"] == "0.50, 0.40, 0.30"
    assert "| default |" in docs_figures.rendered("training_levers", tmp_path)
