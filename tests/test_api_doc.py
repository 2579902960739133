"""docs/api.md is true: its Python blocks run, in order, in one namespace, and what they
show is what the objects hold (the walk: load, run, fuse, evaluate, table, plot)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.support.order import RANX

# a block converts to ranx: one worker compiles it (tests/support/order.py); the walk runs every
# block of docs/api.md (a reproduce, fusions, figures)
pytestmark = [RANX, pytest.mark.slow]
DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


@pytest.fixture(scope="module")
def walked():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 11
    namespace: dict = {}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"{DOC.name} block {number}", "exec"), namespace)
    return namespace


def test_every_python_block_of_the_api_doc_runs(walked, capsys):
    results, frame = walked["results"], walked["frame"]
    # the long frame holds what the results hold, for every system and measure
    mean = frame[(frame.system == "BM25") & (frame.subset == "all") & (frame.measure == "nDCG@5")]["mean"]
    assert float(mean.iloc[0]) == results.summary("all")["BM25"]["nDCG@5"][0]
    assert set(frame.system) == {"BM25", "BM25>>bi-encoder", "dense", "RRF"}
    assert frame[frame.system == "BM25"].p_holm.isna().all()  # the baseline has no p
    per_topic = walked["per_topic"]
    assert len(per_topic) == 4 * len(walked["collection"])
    assert walked["tuned"].systems["BM25 tuned"].kind == "tuned"
    assert "k1 (default 1.2)" in walked["dsr"].ranker("bm25").help()


def test_the_wide_table_is_the_papers(walked):
    results, table = walked["results"], walked["table"]
    assert list(table.index) == list(results.systems)
    assert table.columns.names == ["subset", "measure"]
    assert list(table.columns.get_level_values("subset").unique()) == ["all", "plain", "grounded"]
    for system in table.index:
        assert table.loc[system, ("all", "RR")] == results.summary("all")[system]["RR"][0]
    cells = walked["paper"].table("all", formatted=True)
    assert all(isinstance(c, str) for c in cells.to_numpy().ravel())


def test_runs_in_any_shape_evaluate_and_fuse_alike(walked):
    dsr, collection = walked["dsr"], walked["collection"]
    run, dense = walked["run"], walked["dense"]
    same = dsr.fuse([run.to_frame(), dense.to_ranx()], "rrf", k=60, collection=collection)
    assert same.as_dict() == walked["rrf"].as_dict()
    mixed, results = walked["mixed"], walked["results"]
    assert list(mixed.runs) == ["bm25", "run2"]
    pd.testing.assert_series_equal(
        mixed.per_topic_frame().query("system == 'run2'")["nDCG@5"].reset_index(drop=True),
        results.per_topic_frame().query("system == 'dense'")["nDCG@5"].reset_index(drop=True),
    )
    alone = walked["alone"]
    assert alone.table("all").loc["BM25", "nDCG@5"] == results.table("all").loc["BM25", "nDCG@5"]


def test_the_figure_is_one_acm_column_with_truetype_fonts(walked):
    from matplotlib.figure import Figure

    figure = walked["figure"]
    assert isinstance(figure, Figure) and figure.get_figwidth() == pytest.approx(3.33)
    pdf = (walked["folder"] / "main.pdf").read_bytes()
    assert b"/Type3" not in pdf and b"/FontFile2" in pdf
