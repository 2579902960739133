"""The cross-encoder reranker's order does not depend on the last bits of fp32 (issue 39: the
same table on every machine), as the bi-encoder's does not (tests/rankers/test_near_ties.py).

fp32 logits differ in their last bits with the kernel and the batch a pair was padded in; the
reranker re-scores each near tie of a topic (logits within ``cross_encoder.NEAR_TIE``) in
float64, each pair alone (``settle_near_ties``). "Another machine" is the same logits with
noise added, scaled up with the margin so that ties are met on a small collection. The model is
the run's tiny BERT cross-encoder (tests/support/tiny_bert.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from dsr.collections import load_collection
from dsr.core.models import resolve_model
from dsr.rankers import make_ranker
from dsr.rerankers import cross_encoder, make_reranker


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


@pytest.fixture
def tiny_ce(exports):
    return resolve_model(str(exports.model("tiny-ce")), "cross-encoder")


def float64_logits(model, pairs: list[tuple[str, str]], max_length: int) -> list[float]:
    """The plain computation: transformers' own model in float64, the tokenizer's pair
    encoding, one pair at a time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model.path, local_files_only=True)
    network = AutoModelForSequenceClassification.from_pretrained(model.path, local_files_only=True).double().eval()
    out = []
    with torch.no_grad():
        for query, text in pairs:
            features = tokenizer([query], [text], truncation=True, max_length=max_length, return_tensors="pt")
            out.append(float(network(**features).logits.reshape(-1)[0]))
    return out


def test_only_near_ties_of_different_pairs_are_rescored_in_float64(tiny_ce, sample):
    texts = [c.body for c in next(iter(sample)).candidates][:6]
    query = "what do you think of the film"
    pairs = [(query, t) for t in texts] + [(query, texts[1]), ("another topic's query", texts[2])]
    topics = ["a"] * 7 + ["b"]
    # topic a: 1-2 near (4e-5 apart), 2-3 near (a chain); 4 is 2e-4 from 3: not near; 6 is 1's
    # pair (a copy: settled with it); 0 and 5 far. Topic b: alone, not near anything
    scores = [3.0, 1.0, 1.0 + 4e-5, 1.0 + 8e-5, 1.0 + 2.8e-4, -2.0, 1.0, 1.0 + 5e-5]
    got = cross_encoder.settle_near_ties(scores, pairs, topics, tiny_ce, 256)
    near = [1, 2, 3, 6]
    true = float64_logits(tiny_ce, [pairs[i] for i in near], 256)
    np.testing.assert_allclose([got[i] for i in near], true, rtol=0, atol=1e-11)
    assert got[1] == got[6]  # one pair, one score: a true tie left to the tie rule
    assert all(round(got[i], cross_encoder.FLOAT64_DECIMALS) == got[i] for i in near)
    assert [got[i] for i in (0, 4, 5, 7)] == [scores[i] for i in (0, 4, 5, 7)]  # untouched
    assert cross_encoder.settle_near_ties([], [], [], tiny_ce, 256) == []


def noisy_scores(seed: int, scale: float):
    """``score_pairs`` as another machine would return it: each logit moved by up to ``scale``."""
    real = cross_encoder.score_pairs

    def score_pairs(model, pairs, batch_size=32, precision="fp32"):
        rng = np.random.default_rng(seed)
        return (np.asarray(real(model, pairs, batch_size, precision)) + rng.uniform(-scale, scale, len(pairs))).tolist()

    return score_pairs


@pytest.mark.slow
def test_the_reranked_order_is_the_same_under_fp32_noise_and_near_ties_were_met(tiny_ce, sample, monkeypatch):
    # the margin and the noise scaled up together (1e-4 and 3e-6 in the product): 30 times apart
    monkeypatch.setattr(cross_encoder, "NEAR_TIE", 3e-2)
    settled = []
    real_settle = cross_encoder.settle_near_ties

    def spy(scores, pairs, topics, model, max_length):
        out = real_settle(scores, pairs, topics, model, max_length)
        settled.append(sum(a != b for a, b in zip(out, scores)))
        return out

    monkeypatch.setattr(cross_encoder, "settle_near_ties", spy)
    first = make_ranker("initial")(sample)
    orders, unsettled = [], []
    for seed in range(3):
        monkeypatch.setattr(cross_encoder, "score_pairs", noisy_scores(seed, 1e-3))
        rerank = make_reranker("cross-encoder", model=tiny_ce.path, query="last", backend="torch")
        run = rerank.rerank(sample, first, top_k=20)
        orders.append({q: [d for d, _ in run.rankings[q]] for q in run.topics()})
        with monkeypatch.context() as off:
            off.setattr(cross_encoder, "NEAR_TIE", -1.0)  # no settling: what the order was before
            run = make_reranker("cross-encoder", model=tiny_ce.path, query="last", backend="torch").rerank(
                sample, first, top_k=20
            )
            unsettled.append({q: [d for d, _ in run.rankings[q]] for q in run.topics()})
    assert sum(settled) > 0, "no near tie met: the test would prove nothing"
    assert orders[0] == orders[1] == orders[2]
    assert not unsettled[0] == unsettled[1] == unsettled[2], "the noise moved nothing: the test would prove nothing"


def test_a_fast_backend_or_bf16_is_left_as_it_is(tiny_ce, sample, monkeypatch):
    calls = []
    monkeypatch.setattr(cross_encoder, "settle_near_ties", lambda *a: calls.append(a) or a[0])
    first = make_ranker("initial")(sample)
    make_reranker("cross-encoder", model=tiny_ce.path, backend="torch", precision="bf16").rerank(sample, first, top_k=3)
    assert calls == []  # its figures carry a stated tolerance, as the fast backends' do
    make_reranker("cross-encoder", model=tiny_ce.path, backend="torch").rerank(sample, first, top_k=3)
    assert len(calls) == 1


@pytest.mark.slow
def test_fp32_logits_are_well_inside_the_margin_of_float64_s(sample, exports):
    """NEAR_TIE's margin, measured: a MiniLM-L6 cross-encoder's fp32 logits (the exact path:
    batches, oneDNN) against float64's (each pair alone) on the sample's first 4 dialogues' top
    10 (fp32's error grows with a logit's size: the margin allows logits about 10 times the
    sample's)."""
    model = resolve_model(str(exports.model("minilm-ce")), "cross-encoder")
    first = make_ranker("initial")(sample)
    rerank = make_reranker("cross-encoder", model=model.path, query="all", backend="torch")
    pairs, keys = rerank._pairs(sample, first, 10, rerank._budget())
    four = {d.id for d in sample.dialogues[:4]}
    pairs = [pair for pair, (qid, _) in zip(pairs, keys) if qid in four]
    from dsr.core.models import load_cross_encoder

    fp32 = cross_encoder.score_pairs(load_cross_encoder(model, max_length=256), pairs)
    float64 = float64_logits(model, pairs, 256)
    worst = max(abs(a - b) for a, b in zip(fp32, float64))
    print(f"largest |fp32 - float64| logit: {worst:.2e} (logits {min(float64):.1f} to {max(float64):.1f})")
    assert 0 < worst <= cross_encoder.NEAR_TIE / 10, worst  # fp32 is not float64, and far inside the margin
