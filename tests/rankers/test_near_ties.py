"""The exact backend's order does not depend on the last bits of fp32 (issue 39: the same table
on every machine).

fp32 vectors differ in their last bits with the kernel (MKL or oneDNN, the CPU's instruction
set) and with the batch a text was padded in; on cmu_dog_judged two sentences 2e-7 apart at
rank 5 swapped between MKL and oneDNN and moved two published cells by up to 0.004. The dense
ranker and the bi-encoder reranker re-score each near tie (cosines within
``embeddings.NEAR_TIE``) in float64, each text encoded alone (``settle_near_ties``).

These tests run a tiny_bi random BERT bi-encoder (tests/support/tiny_bert.py); its cosines are
close together, so near ties are many. "Another machine" is the same vectors with noise of
fp32's size added (scaled up here with the margin, so that ties are met on a small collection).
"""

from __future__ import annotations

import numpy as np
import pytest

from dsr.collections import load_collection
from dsr.indexes import embeddings
from dsr.indexes.embeddings import settle_near_ties
from dsr.rankers import dense, make_ranker
from dsr.rerankers import make_reranker


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


def float64_cosines(model, query: str, texts: list[str]) -> np.ndarray:
    """The plain computation: a model of its own in float64, every text in one padded batch."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(model.path, device="cpu", local_files_only=True).double()
    vectors = st.encode([query, *texts], convert_to_numpy=True, normalize_embeddings=True)
    return vectors[1:] @ vectors[0]


def test_only_near_ties_of_different_texts_are_rescored_in_float64(tiny_bi, sample):
    texts = [c.body for c in next(iter(sample)).candidates][:8]
    texts[6] = texts[5]  # the same sentence twice (two candidates can share a text) ...
    texts[7] = texts[1]  # ... here once in a near tie
    query = "what do you think of the film"
    true = float64_cosines(tiny_bi, query, texts)
    # 1-2 near (4e-6 apart), 2-3 near too (a chain of three); 4 is 2e-5 from 3: not near;
    # 7 is 1's text (one cached vector: the same fp32 cosine); 5-6 one text, alone: a true tie
    # already; 0 far from all
    cos = np.array([0.9, 0.5, 0.5 + 4e-6, 0.5 + 8e-6, 0.5 + 2.8e-5, 0.2, 0.2, 0.5], np.float32)
    [got] = settle_near_ties([(cos, query, texts)], tiny_bi)
    assert got.dtype == np.float64
    near = [1, 2, 3, 7]
    np.testing.assert_allclose(got[near], true[near], rtol=0, atol=1e-12)  # alone or in a batch: the same
    assert got[1] == got[7]  # every copy of a re-scored text alike: still a true tie
    assert got[[0, 4, 5, 6]].tolist() == cos[[0, 4, 5, 6]].astype(np.float64).tolist()  # untouched
    one, none = settle_near_ties([(np.float32([0.3]), query, texts[:1]), (np.float32([]), query, [])], tiny_bi)
    assert one.tolist() == [np.float32(0.3)] and none.shape == (0,)
    # kept: the float64 vectors are in the embedding cache, read again, not encoded again
    cache = embeddings._cache_for(tiny_bi, embeddings.FLOAT64)
    assert len(cache) == len({query, *texts[1:4]}) and cache.get([embeddings.text_key(query)]).dtype == np.float64


def noisy_encode(seed: int, scale: float):
    """``dense.encode`` as another machine would return it: the same vectors, each component
    moved by up to ``scale`` (fp32's differences between kernels are about 1e-7)."""
    real = embeddings.encode

    def encode(texts, model, batch_size=64, **kwargs):
        vectors = real(texts, model, batch_size, cache=False, **{k: v for k, v in kwargs.items() if k != "cache"})
        rng = np.random.default_rng(seed)
        return (vectors + rng.uniform(-scale, scale, vectors.shape)).astype(np.float32)

    return encode


def test_the_dense_order_is_the_same_under_fp32_noise_and_near_ties_were_met(tiny_bi, sample, monkeypatch):
    # the margin and the noise scaled up together (1e-5 and 3e-7 in the product): 30 times apart
    monkeypatch.setattr(embeddings, "NEAR_TIE", 3e-4)
    settled = []
    real_settle = dense.settle_near_ties

    def spy(topics, model, backend):
        out = real_settle(topics, model, backend)
        settled.extend(int(np.sum(a != np.asarray(c, np.float64))) for a, (c, _, _) in zip(out, topics))
        return out

    monkeypatch.setattr(dense, "settle_near_ties", spy)
    runs, unsettled = [], []
    for seed in range(3):
        monkeypatch.setattr(dense, "encode", noisy_encode(seed, 1e-5))
        runs.append(make_ranker("dense", model=tiny_bi.path, query="all", backend="torch")(sample))
        with monkeypatch.context() as off:
            off.setattr(embeddings, "NEAR_TIE", -1.0)  # no settling: what the order was before
            unsettled.append(make_ranker("dense", model=tiny_bi.path, query="all", backend="torch")(sample))
    assert sum(settled) > 0, "no near tie met: the test would prove nothing"
    orders = [{q: [d for d, _ in run.rankings[q]] for q in run.topics()} for run in runs]
    assert orders[0] == orders[1] == orders[2]
    before = [{q: [d for d, _ in run.rankings[q]] for q in run.topics()} for run in unsettled]
    assert not before[0] == before[1] == before[2], "the noise moved nothing: the test would prove nothing"


def test_the_bi_encoder_reranker_settles_its_near_ties_too(tiny_bi, sample, monkeypatch):
    from dsr.rerankers import bi_encoder

    monkeypatch.setattr(embeddings, "NEAR_TIE", 3e-4)
    first = make_ranker("initial")(sample)
    orders = []
    for seed in range(3):
        monkeypatch.setattr(bi_encoder, "encode", noisy_encode(seed, 1e-5))
        run = make_reranker("bi-encoder", model=tiny_bi.path, query="last", backend="torch").rerank(sample, first, top_k=20)
        orders.append({q: [d for d, _ in run.rankings[q]] for q in run.topics()})
    assert orders[0] == orders[1] == orders[2]


def test_the_exact_backend_s_linear_layers_run_on_onednn_and_give_torch_s_vectors(tiny_bi, sample):
    import torch

    from dsr.core.models import load_sentence_transformer

    texts = [c.body for d in sample for c in d.candidates][:40]
    fast, plain = load_sentence_transformer(tiny_bi), load_sentence_transformer(tiny_bi, export=True)
    assert fast is not plain and fast is load_sentence_transformer(tiny_bi)  # each loaded once
    linears = [m for m in plain.modules() if type(m) is torch.nn.Linear]
    assert linears and not any(type(m) is torch.nn.Linear for m in fast.modules())  # all swapped (x86-64)
    a = embeddings.normalise(fast.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True))
    b = plain.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)  # fp32 both: the last bits differ
    assert embeddings.encode(texts, tiny_bi, cache=False).tobytes() == a.tobytes()  # the exact path runs it


@pytest.mark.slow
def test_fp32_cosines_are_well_inside_the_margin_of_float64_s(sample):
    """NEAR_TIE's margin, measured: all-MiniLM-L6-v2's fp32 cosines (the exact path: batches,
    oneDNN) against float64's (each text alone) on the sample's first 8 dialogues, query
    strategies ``last`` and ``all`` (on cmu_dog_judged the difference stays far below the margin too)."""
    from dsr.core.models import resolve_model

    model = resolve_model("all-MiniLM-L6-v2", "bi-encoder")
    part = sample.dialogues[:8]
    texts = [c.body for d in part for c in d.candidates]
    worst = 0.0
    for strategy in ("last", "all"):
        queries = dense.budgeted_queries(part, model, strategy, 0.5)
        cand32 = embeddings.encode(texts, model, cache=False)
        query32 = embeddings.encode(queries, model, cache=False)
        distinct = list(dict.fromkeys(texts + queries))
        vectors64 = dict(zip(distinct, embeddings._float64_vectors(distinct, model)))
        row = 0
        for d, query, q32 in zip(part, queries, query32):
            n = len(d.candidates)
            cos32 = cand32[row : row + n] @ q32
            cos64 = np.array([vectors64[t] @ vectors64[query] for t in texts[row : row + n]])
            worst = max(worst, float(np.abs(cos32 - cos64).max()))
            row += n
    print(f"largest |fp32 - float64| cosine: {worst:.2e}")
    assert 0 < worst <= embeddings.NEAR_TIE / 10, worst  # fp32 is not float64, and far inside the margin
