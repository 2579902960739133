"""experiments/second_stage.py: the second-stage levers judged against the recommended recipe,
their paired differences with intervals in a result file, and a cross-encoder's top-k runs
derived from one scoring of its deepest k."""

from __future__ import annotations

import json
import random

import numpy as np

from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.run import Run
from dsr.evaluation.decision import decide
from dsr.rerankers.base import rerank_top_k
from experiments import second_stage as levers


def _result() -> dict:
    rng = np.random.default_rng(1)
    base = {s: rng.uniform(0.2, 0.8, n) for s, n in (("dev", 150), ("silver", 300))}
    values = {
        s: {
            "full": v,
            "zero-shot": v - 0.06 + rng.normal(0, 0.01, v.size),
            "ce-hard@5": v + 0.08 + rng.normal(0, 0.01, v.size),
            "ce-hard@10": v + rng.normal(0, 0.2, v.size),  # no gain: its interval holds 0
        }
        for s, v in base.items()
    }
    return {
        "decision": decide(values, "full", n_resamples=500).as_dict(),
        "text": "the rule's table\n",
        "command": "dsr decide cmu_dog cmu_dog_dev --silver-source /w/shared/data/cmu_dog --default full=/h/runs/full.silver.run",
        "runs": "/h/runs",
        "load_before": "1.00, 1.00, 1.00",
        "rows": {
            "full": {"train_s": 1800.0, "steps": 333, "present": True},
            "zero-shot": {"present": True},
            "ce-hard@5": {"train_s": 900.0, "steps": 400, "present": True},
            "ce-hard@10": {"train_s": 900.0, "steps": 400, "present": True},
        },
    }


def test_every_lever_is_a_row_with_its_paired_differences_and_the_rules_verdict():
    figures = levers.result_file(_result())
    assert {"name", "title", "command", "date", "machine", "load_before", "load_after", "columns", "rows", "notes"} <= set(
        figures
    )
    assert figures["name"] == "second-stage-levers" and set(figures["machine"]) == {"cpu", "cores", "units", "python"}
    rows = {row[0]: dict(zip(figures["columns"], row, strict=True)) for row in figures["rows"]}
    assert set(rows) == {lever.name for lever in levers.LEVERS}
    verdict = "by the rule"
    assert rows["full"][verdict] == "default" and rows["ce-hard@5"][verdict].startswith("**passes**")
    assert "within the noise on judged dev and silver valid" in rows["ce-hard@10"][verdict]
    assert rows["zero-shot"][verdict] == "no" and "▼" in rows["zero-shot"]["Δ judged dev [95 % CI] (Holm p t / sign-flip)"]
    assert rows["full-distill"][verdict] == "not trained" and rows["full-distill"]["judged dev nDCG@5 [95 % CI]"] == "–"
    # the difference and its interval are the decision's own
    judged = _result()["decision"]["rows"]["ce-hard@5"]["dev"]
    cell = rows["ce-hard@5"]["Δ judged dev [95 % CI] (Holm p t / sign-flip)"]
    assert cell.startswith(f"{judged['diff']:+.4f} [{judged['diff_ci_low']:+.3f}, {judged['diff_ci_high']:+.3f}]")
    assert "ce-hard@5 passes" in figures["notes"][0] or "replaces full" in figures["notes"][0]
    text = json.dumps(figures)
    assert "/h/" not in text and "/w/" not in text  # no path of the machine in the file


def test_a_top_k_run_derived_from_the_deepest_scoring_is_what_reranking_top_k_gives(tmp_path):
    """One scoring of full's top 10 gives the top-5 run that `dsr rerank --top-k 5` gives."""
    rng = random.Random(4)
    dialogues = [
        Dialogue(f"q{i}", f"t{i}", [], None, [Candidate(f"d{j}", "T", f"s{j}", None, 0) for j in range(20)]) for i in range(6)
    ]
    collection = Collection("c", dialogues)
    first = Run({d.id: [(f"d{j}", float(20 - j) + rng.random()) for j in range(20)] for d in dialogues}, "full")
    scores = {(d.id, f"d{j}"): round(rng.gauss(0, 1), 1) for d in dialogues for j in range(20)}  # with ties
    runs = tmp_path / "runs"
    runs.mkdir()
    for label_set in ("silver", "dev"):
        first.write(runs / f"full.{label_set}.run")
        rerank_top_k(collection, first, scores, 10).write(runs / f"{levers.CE}.top10.{label_set}.run")
    lever = next(lv for lv in levers.LEVERS if lv.rerank == ("full", 5))
    levers.derive(lever, runs, 10, {"silver": collection, "dev": collection})
    expected = rerank_top_k(collection, Run.read(runs / "full.dev.run"), scores, 5)
    got = Run.read(runs / f"{lever.name}.dev.run")
    for qid, ranked in expected.rankings.items():
        assert [d for d, _ in got.rankings[qid]] == [d for d, _ in ranked]


def test_without_the_default_every_lever_is_not_trained_and_the_pilots_are_noted(tmp_path, monkeypatch):
    pilot = {
        "name": "train-mpnet-pilot",
        "title": "t",
        "command": "python bench/bench_train.py --home DIR --recipe full --base DIR/all-mpnet-base-v2 --max-steps 3",
        "date": "2026-12-06 22:00 UTC",
        "machine": {"cpu": "A CPU", "cores": 2, "units": [], "python": "3.11.7"},
        "load_before": "9.00, 9.00, 9.00",
        "load_after": "9.00, 9.00, 9.00",
        "columns": ["steps", "batch", "s/step (steps only)", "training peak RSS MiB"],
        "rows": [[3, 16, 41.5, 7000]],
        "notes": [],
    }
    results = tmp_path / "bench" / "results"
    results.mkdir(parents=True)
    (results / "train-mpnet-pilot.json").write_text(json.dumps(pilot))
    monkeypatch.setattr(levers, "ROOT", tmp_path)
    figures = levers.result_file(
        {"decision": None, "text": "not judged: the default 'full' is not trained", "rows": {}, "load_before": "1"}
    )
    assert {row[-1] for row in figures["rows"]} == {"not trained"}
    assert figures["notes"][0].startswith("Decision: none") and figures["notes"][-1].startswith("not judged")
    (note,) = [n for n in figures["notes"] if n.startswith("mpnet-full")]
    assert "3 steps of 16, 41.5 s a step, training peak RSS 7000 MiB" in note and "load average 9.00" in note
