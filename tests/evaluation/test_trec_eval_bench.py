"""bench/bench_trec_eval.py runs as documented (small files, no binary: dsr's own figures) and
writes its JSON in the figures' schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_bench_times_dsr_alone_and_writes_its_figures(tmp_path):
    out = tmp_path / "trec_eval.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_trec_eval.py"), "--topics", "30", "--docs", "20", "--judged", "6"]
        + ["--rounds", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["name"] == "trec_eval" and record["columns"][0] == "command"
    assert {"cpu", "cores", "units", "python"} <= set(record["machine"]) and record["load_before"]
    commands = [row[0] for row in record["rows"]]
    assert commands == ["dsr trec_eval 9.0.8 default", "dsr trec_eval 9.0.8 -q -m all_trec", "dsr evaluate --qrels"]
    assert all(float(row[1]) > 0 and float(row[4]) > 0 for row in record["rows"])
    assert "exit 0" in done.stdout and "exit 1" not in done.stdout
