"""bench/bench_train.py's result file: the COMMON shape, the card's own figures, no folder of the
machine (a kept home, a source or a base model's folder is written as DIR)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench")]

import bench_train  # noqa: E402


def _card() -> dict:
    return {
        "kind": "bi-encoder",
        "named_recipe": "full",
        "recipe": "full",
        "parameters": {"batch_size": 64, "epochs": 3.0},
        "training_data": {"hard_negative_miner": {"seconds": 81.5}, "pairs": 7046},
        "training": {
            "steps": 333,
            "wall_seconds": 1998.0,
            "precision": {"used": "bf16"},
            "memory": {"peak_rss_mib": 6900, "peak_rss_before_training_mib": 3000},
        },
        "heldout": {"rankers": {"model": {"nDCG@5": 0.51234}}},
    }


def test_the_result_file_has_the_shape_the_docs_read_and_no_folder_of_the_machine(tmp_path, monkeypatch):
    argv = ["bench_train.py", "--home", "/work/me/home", "--name", "full", "--recipe", "full", "--base", "/work/me/b/mpnet"]
    monkeypatch.setattr(sys, "argv", argv)
    info = {
        "cpu": "A CPU",
        "cores": 2,
        "units": ["avx512_bf16"],
        "load_before": "1.00, 1.00, 1.00",
        "load_after": "2.00, 2.00, 2.00",
    }
    info["load_during"] = {"auto": "min 1.00, median 2.00, max 3.00 (9 samples)"}
    results = {"auto": {"card": _card(), "total_s": 2100.0, "peak_rss_mib": 7100.0, "judged_ndcg5": 0.71583}}
    path = tmp_path / "train.json"
    bench_train.write_json(path, info, ["--recipe", "full", "--base", "/work/me/b/mpnet"], results)
    doc = json.loads(path.read_text())
    assert {"name", "title", "command", "date", "machine", "load_before", "load_after", "columns", "rows", "notes"} <= set(doc)
    assert doc["name"] == "train" and doc["machine"] == {
        "cpu": "A CPU",
        "cores": 2,
        "units": ["avx512_bf16"],
        "python": doc["machine"]["python"],
    }
    row = dict(zip(doc["columns"], doc["rows"][0], strict=True))
    # the mining (done once, before the steps) is not a step's
    assert (row["steps"], row["training s"], row["s/step (steps only)"], row["training peak RSS MiB"]) == (
        333,
        1998.0,
        round((1998 - 81.5) / 333, 2),
        6900,
    )
    assert row["judged dev nDCG@5"] == 0.7158 and row["held-out nDCG@5 (silver)"] == 0.5123 and row["precision"] == "bf16"
    assert row["recipe"] == "full"
    assert (row["mining s"], row["teacher s"]) == (81.5, None)
    assert any("median 2.00" in note for note in doc["notes"])
    assert not any(note.startswith("a pilot") for note in doc["notes"])  # 333 steps: the whole recipe
    card = _card()
    card["training"].update(steps=12, wall_seconds=240.0, steps_seconds=120.0)  # the trainer's own time wins
    assert "at 10.0 s a step all 333 would take about 3450 s here (120 s before" in bench_train.pilot_note(card)
    card = _card()
    card["training"].update(steps=12, wall_seconds=240.0)
    assert bench_train.pilot_note(card) == (
        "a pilot: 12 of the 333 steps of 3 passes over 7046 examples; at 13.2 s a step all 333 would take about "
        f"{333 * (240 - 81.5) / 12 + 81.5:.0f} s here (82 s before the first step included: selection, loading, "
        "mining, teacher scoring)"
    )
    text = path.read_text()
    assert "/work/" not in text and "--home DIR" in doc["command"] and "DIR/mpnet" in text
