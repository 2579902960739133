"""docs/api.md is true: its Python blocks run, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_every_python_block_of_the_api_doc_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{DOC.name} block {number}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "k1 (default 1.2)" in out
    results, table = namespace["results"], namespace["table"]
    # the frame holds what the results hold, for every system and measure
    mean = table[(table.system == "BM25") & (table.subset == "all") & (table.measure == "nDCG@5")]["mean"]
    assert float(mean.iloc[0]) == results.summary("all")["BM25"]["nDCG@5"][0]
    assert set(table.system) == {"BM25", "BM25>>bi-encoder", "dense", "RRF"}
    assert table[table.system == "BM25"].p_holm.isna().all()        # the baseline has no p
    per_topic = namespace["per_topic"]
    assert len(per_topic) == 4 * len(namespace["collection"])
    tuned = namespace["tuned"]
    assert tuned.systems["BM25 tuned"].kind == "tuned"
