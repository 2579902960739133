"""One stage shape: rankers, rerankers and fusion take a collection (and runs) and
return a Run; pipelines compose them; parameters come from one declaration."""

from __future__ import annotations

import pytest

from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.core.fusion import fuse
from dsr.core.queries import STRATEGIES
from dsr.core.stage import Pipeline
from dsr.rankers import make_ranker
from dsr.rankers.fusion import Fusion
from dsr.rerankers import make_reranker


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


def test_a_ranker_is_called_on_the_collection(sample):
    bm25 = make_ranker("bm25", k1=0.9)
    assert bm25(sample).rankings == bm25.rank(sample).rankings
    with pytest.raises(InputError, match="takes no input run"):
        bm25(sample, bm25(sample))


def test_pipeline_equals_the_stages_run_by_hand(sample):
    first, second = make_ranker("bm25"), make_reranker("bi-encoder", top_k=5)
    pipeline = first >> second
    assert isinstance(pipeline, Pipeline) and len(pipeline.stages) == 2
    by_hand = second.rerank(sample, first.rank(sample), top_k=5)
    assert pipeline(sample).rankings == by_hand.rankings
    assert pipeline.describe()["pipeline"][1]["reranker"] == "bi-encoder"
    # the reranked block is the top 5, the rest keeps BM25's order
    qid = sample.ids[0]
    assert pipeline(sample).top(qid)[5:] == first.rank(sample).top(qid)[5:]


def test_fusion_is_a_stage_over_runs(sample):
    a, b = make_ranker("bm25")(sample), make_ranker("initial")(sample)
    order = {d.id: sample.candidate_ids(d.id) for d in sample}
    fused = Fusion(method="rrf", k=10)(sample, a, b)
    assert fused.rankings == fuse([a, b], "rrf", initial_order=order, k=10).rankings
    assert Fusion.GRID == {"k": [1, 10, 30, 60, 100], "weight": [round(0.1 * i, 1) for i in range(11)]}
    with pytest.raises(InputError, match="parameter method of fusion 'fuse' must be one of"):
        Fusion(method="no_such_method")


def test_declared_parameters_are_checked_once_for_every_stage():
    with pytest.raises(InputError, match=r"parameter b of ranker 'bm25' must be a number >= 0 and <= 1"):
        make_ranker("bm25", b=2)
    with pytest.raises(InputError, match=r"parameter top_k of reranker 'bi-encoder' must be a whole number >= 1"):
        make_reranker("bi-encoder", top_k=0)
    with pytest.raises(InputError, match=r"unknown parameter\(s\) k3 for ranker 'bm25'"):
        make_ranker("bm25", k3=1)
    assert make_ranker("bm25").GRID == {"query": list(STRATEGIES), "k1": [0.9, 1.2, 1.6], "b": [0.4, 0.75]}


def test_run_help_lists_the_named_rankers_parameters(capsys):
    with pytest.raises(SystemExit) as done:
        main(["run", "--ranker", "bm25", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "parameters of ranker bm25 (--param NAME=VALUE):" in out
    assert "k1 (default 1.2): term-frequency saturation; a number >= 0; tuned over 0.9, 1.2, 1.6" in out
    assert "parameters of ranker dense" not in out
    with pytest.raises(SystemExit):
        main(["rerank", "--reranker", "bi-encoder", "--help"])
    out = capsys.readouterr().out
    assert "parameters of reranker bi-encoder" in out and "top_k (default None)" in out
    assert "parameters of reranker cross-encoder" not in out
