"""Open retrieval's exact (flat) search gives the same top k, in the same order, on every
machine (issue 39): near ties are settled in float64 as the dense ranker settles a topic's
(``embeddings.settled_top_k``), including across the k-th place, where a row just below the
cut can belong above it.

The pool is the sample's sentences, encoded by the run's tiny random BERT (tests/support/
tiny_bert.py): its cosines lie close together, so near ties are many. "Another machine" is the
same vectors with noise added (scaled up with the margin, as tests/rankers/test_near_ties.py
does: fp32's 3e-7 against NEAR_TIE's 1e-5, here 1e-5 against 3e-4).
"""

from __future__ import annotations

import numpy as np
import pytest

from dsr.collections import load_collection
from dsr.indexes import dense as dense_index
from dsr.indexes import embeddings
from dsr.indexes.dense import DenseIndex
from dsr.indexes.embeddings import near_depth, settled_top_k

QUERIES = ["what do you think of the film", "who played the lead", "i loved the music", "the ending was sad"]


@pytest.fixture(scope="module")
def pool():
    sentences = load_collection("sample").unique_sentences()
    ids = sorted(sentences)[:400]
    return ids, [sentences[i].body for i in ids]


def float64_top(model, pool, query: str, k: int) -> list[str]:
    """The plain computation: a float64 copy of the model, every text encoded, ranked by
    cosine, ties by pool order."""
    from sentence_transformers import SentenceTransformer

    ids, texts = pool
    st = SentenceTransformer(model.path, device="cpu", local_files_only=True).double()
    vectors = st.encode([query, *texts], convert_to_numpy=True, normalize_embeddings=True)
    cosines = np.round(vectors[1:] @ vectors[0], embeddings.FLOAT64_DECIMALS)
    return [ids[i] for i in np.lexsort((np.arange(len(ids)), -cosines))[:k]]


def noisy_encode(seed: int, scale: float):
    real = embeddings.encode

    def encode(texts, model, batch_size=64, **kwargs):
        vectors = real(texts, model, batch_size, cache=False, **{k: v for k, v in kwargs.items() if k != "cache"})
        rng = np.random.default_rng([seed, len(texts)])
        return (vectors + rng.uniform(-scale, scale, vectors.shape)).astype(np.float32)

    return encode


def test_near_depth_keeps_every_score_within_the_margin_of_the_k_th():
    scores = np.array([0.9, 0.5, 0.7, 0.5 - 4e-6, 0.1, 0.5 + 2e-6, 0.5 - 2e-5])
    assert sorted(near_depth(scores, 3).tolist()) == [0, 1, 2, 3, 5]  # k-th is 0.5+2e-6; 0.5-2e-5 is out
    assert near_depth(scores, 10).tolist() == list(range(7)) and near_depth(scores, 0).tolist() == []


def test_a_row_below_the_cut_that_float64_ranks_above_it_enters_the_top_k(tiny_bi, pool):
    ids, texts = pool
    query = QUERIES[0]
    vectors = embeddings._float64_vectors([query, texts[0], texts[1], texts[2]], tiny_bi)
    true = vectors[1:] @ vectors[0]
    low, high = int(np.argmin(true)), int(np.argmax(true))
    assert true[high] > true[low]
    # fp32 put ``high`` 2e-6 below ``low``, at the (k+1)-th place: float64 swaps them
    found = [[(7, 2.0), (low, float(true[low])), (high, float(true[low]) - 2e-6)]]
    [got] = settled_top_k(found, [query], lambda rows: [texts[r] if r < 3 else "far away" for r in rows], 2, tiny_bi)
    assert [r for r, _ in got] == [7, high]
    assert got[1][1] == round(float(true[high]), embeddings.FLOAT64_DECIMALS)
    # a fast backend's scores rank as they came (ties by row)
    [fast] = settled_top_k(found, [query], lambda rows: ["x"] * len(rows), 2, tiny_bi, backend="openvino")
    assert [r for r, _ in fast] == [7, low]


def test_flat_search_is_float64_s_order_and_the_same_under_noise(tiny_bi, pool, monkeypatch):
    monkeypatch.setattr(embeddings, "NEAR_TIE", 3e-4)
    settled = []
    real = dense_index.settled_top_k

    def spy(found, queries, texts_of, k, model, backend="torch"):
        out = real(found, queries, texts_of, k, model, backend)
        settled.append(sum(len(f) for f in found) - k * len(found))  # rows past the cut, within the margin
        return out

    monkeypatch.setattr(dense_index, "settled_top_k", spy)
    ids, texts = pool
    k = 5
    exact = DenseIndex.cached(ids, texts, name="exact", model=tiny_bi)
    got = exact.search(QUERIES, k)
    assert [[i for i, _ in ranked] for ranked in got] == [float64_top(tiny_bi, pool, q, k) for q in QUERIES]
    orders, unsettled = [], []
    for seed in range(3):
        monkeypatch.setattr(dense_index, "encode", noisy_encode(seed, 1e-5))
        index = DenseIndex.cached(ids, texts, name=f"noisy{seed}", model=tiny_bi)
        orders.append([[i for i, _ in ranked] for ranked in index.search(QUERIES, k)])
        unsettled.append([[i for i, _ in ranked] for ranked in index.search_vectors(dense_index.encode(QUERIES, tiny_bi), k)])
    assert sum(settled) > 0, "no near tie met at the cut: the test would prove nothing"
    assert orders[0] == orders[1] == orders[2] == [[i for i, _ in ranked] for ranked in got]
    assert not unsettled[0] == unsettled[1] == unsettled[2], "the noise moved nothing: the test would prove nothing"


def test_approximate_indexes_are_not_settled(tiny_bi, pool, monkeypatch):
    called = []
    monkeypatch.setattr(dense_index, "settled_top_k", lambda *a, **kw: called.append(a) or [])
    ids, texts = pool
    for kind in ("hnsw", "ivf"):
        hits = DenseIndex.cached(ids, texts, name="approx", model=tiny_bi, kind=kind).search(QUERIES[:1], 3)
        assert len(hits[0]) == 3
    assert called == []
