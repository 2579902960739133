"""experiments/training_recipes.py: the recipes' levers on the training-levers machinery: every lever
in the table with the rule's verdict, a reranking lever's runs made by `dsr rerank` over its first
stage's runs, and the generated block of the journal under its own markers."""

from __future__ import annotations

import numpy as np

from dsr.evaluation.decision import decide
from experiments import training_levers as base
from experiments import training_recipes as levers


def _result() -> dict:
    rng = np.random.default_rng(1)
    base = {s: rng.uniform(0.2, 0.8, n) for s, n in (("dev", 150), ("silver", 300))}
    values = {
        s: {"quick-tb": v, "full": v + 0.08 + rng.normal(0, 0.01, v.size), "zero-shot": v - 0.05 + rng.normal(0, 0.01, v.size)}
        for s, v in base.items()
    }
    return {
        "decision": decide(values, "quick-tb", n_resamples=500).as_dict(),
        "text": "the rule's table\n",
        "command": "dsr decide ... full=/h/runs/full.silver.run",
        "runs": "/h/runs",
        "date": "2026-11-26 23:00 UTC",
        "machine": "a CPU",
        "load": "1.00, 1.00, 1.00",
        "rows": {
            "quick-tb": {"train_s": 169.0, "steps": 120, "load": "2.0–2.1", "present": True},
            "full": {"train_s": 1800.0, "steps": 333, "load": None, "present": True},
            "zero-shot": {"present": True},
        },
    }


def test_every_recipe_lever_is_a_row_and_the_winner_is_marked():
    lines = base.table(_result(), levers.LEVERS)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert set(rows) == {lever.name for lever in levers.LEVERS}
    assert rows["quick-tb"].endswith("| default |") and rows["full"].endswith("| **yes** |")
    assert rows["ce-hard"].endswith("| not trained |") and "`--model-type cross-encoder" in rows["ce-hard"]


def test_the_block_goes_under_its_heading_with_its_own_markers(tmp_path):
    doc = tmp_path / "results.md"
    doc.write_text("# R\n\n## Issue 41: the training budget\n\nprose\n", encoding="utf-8")
    block = base.block(_result(), True, levers.LEVERS, levers.MARKS, "training_recipes.py", levers.NOTE)
    base.write(doc, block, "## Issue 41: the training budget", levers.MARKS)
    text = doc.read_text(encoding="utf-8")
    assert text.count(levers.MARKS[0]) == 1 and base.BEGIN not in text
    assert "python experiments/training_recipes.py --write" in text and "exact backend" in text
    assert "full=runs/full.silver.run" in text and "/h/" not in text
    base.write(doc, block.replace("23:00", "23:59"), "## Issue 41: the training budget", levers.MARKS)
    assert doc.read_text(encoding="utf-8").count(levers.MARKS[0]) == 1 and "23:59" in doc.read_text()


def test_a_reranking_lever_reranks_its_first_stages_runs(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(base, "dsr", lambda *args, **kw: calls.append(args))
    home, runs = tmp_path / "home", tmp_path / "runs"
    runs.mkdir()
    paths = {"home": home, "source": tmp_path / "cmu_dog", "dev_all": tmp_path / "dev-all.jsonl"}
    ce = next(lv for lv in levers.LEVERS if lv.rerank)
    assert not base.reranked(ce, home, paths, runs)  # no model yet: not trained
    (home / "models" / ce.name).mkdir(parents=True)
    (home / "models" / ce.name / "dsr_model.json").write_text("{}")
    assert not base.reranked(ce, home, paths, runs)  # no first-stage runs yet
    for label_set in ("silver", "dev"):
        (runs / f"{ce.rerank[0]}.{label_set}.run").write_text("q Q0 d 1 1.0 x\n")
    assert base.reranked(ce, home, paths, runs) and len(calls) == 2
    for call, label_set in zip(calls, ("silver", "dev"), strict=True):
        assert call[0] == "rerank" and f"dsr:{ce.name}" in call and str(ce.rerank[1]) in call
        assert str(runs / f"{ce.rerank[0]}.{label_set}.run") in call
