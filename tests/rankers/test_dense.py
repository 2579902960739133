"""Dense retrieval with the real all-MiniLM-L6-v2: ranking, the embedding cache, FAISS, the bi-encoder reranker."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.core.models import load_sentence_transformer, resolve_model
from dsr.core.run import Run
from dsr.indexes import embeddings
from dsr.indexes.dense import DenseIndex
from dsr.rankers import make_ranker
from dsr.rankers.dense import dense_search
from dsr.rerankers import make_reranker

SENTENCES = {
    "eiffel": "The Eiffel Tower in Paris was completed in 1889.",
    "banana": "Bananas are rich in potassium.",
    "python": "Python is a programming language created by Guido van Rossum.",
    "whale": "The blue whale is the largest animal ever known.",
}


@pytest.fixture(scope="module")
def model():
    """Load the model once for the module (the loader caches it per process)."""
    return load_sentence_transformer("all-MiniLM-L6-v2")


@pytest.fixture(autouse=True)
def counting():
    embeddings.stats.reset()
    yield embeddings.stats


def collection(eiffel_text: str = SENTENCES["eiffel"]) -> Collection:
    texts = {**SENTENCES, "eiffel": eiffel_text}

    def cands(order):
        return [Candidate(cid, "Wiki " + cid, texts[cid], None, int(cid == order[-1])) for cid in order]

    return Collection(
        "toy",
        [
            Dialogue(
                "paris",
                "Travel",
                [
                    Turn("a", "a", "I'm going to France next month."),
                    Turn("b", "b", "When was that big iron tower in Paris built?"),
                ],
                None,
                cands(["banana", "python", "whale", "eiffel"]),
            ),
            Dialogue(
                "code",
                "Hobbies",
                [Turn("a", "a", "Which language should I learn to write software?")],
                None,
                cands(["eiffel", "whale", "banana", "python"]),
            ),
        ],
    )


def test_real_minilm_ranks_the_relevant_sentence_first(model, counting):
    toy = collection()
    run = make_ranker("dense").rank(toy)
    assert run.top("paris")[0] == "eiffel"
    assert run.top("code")[0] == "python"
    assert run.tag == "dense-query=all"
    assert run.config["model"]["weights_sha256"].startswith("53aa5117")
    assert run.config["collection"]["hash"] == toy.content_hash
    scores = [s for _, s in run.rankings["paris"]]
    assert all(a > b for a, b in zip(scores, scores[1:])) and -1 <= scores[-1] < scores[0] <= 1
    # four distinct candidate texts (shared by both dialogues) and two queries
    assert counting.encoded == 6


def test_second_run_reuses_the_cache_and_a_change_rebuilds_only_it(model, counting):
    first = make_ranker("dense", query="last").rank(collection())
    assert counting.encoded == 6
    counting.reset()
    embeddings._caches.clear()  # as a new process would: read the vectors back from disk
    second = make_ranker("dense", query="last").rank(collection())
    assert counting.encoded == 0 and counting.reused == 6
    assert second.rankings == first.rankings
    counting.reset()
    make_ranker("dense", query="last").rank(collection("The Eiffel Tower opened in 1889."))
    assert counting.encoded == 1


def test_encode_returns_unit_float32_rows_in_order(model, counting):
    texts = ["a cat", "a dog", "a cat", "a cat sat on a mat"]
    vectors = embeddings.encode(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])
    assert counting.encoded == 3  # duplicates are encoded once
    direct = model.encode(texts, normalize_embeddings=True)
    assert np.allclose(vectors, direct, atol=1e-5)
    assert embeddings.encode([]).shape == (0, 384)


def test_stale_cache_manifest_starts_afresh(model, counting, dsr_home, capsys):
    embeddings.encode(["one sentence"])
    [manifest] = dsr_home.glob("indexes/embeddings/*/manifest.json")
    data = json.loads(manifest.read_text())
    data["versions"]["sentence-transformers"] = "0.0.1"
    manifest.write_text(json.dumps(data))
    embeddings._caches.clear()
    counting.reset()
    embeddings.encode(["one sentence"])
    assert counting.encoded == 1
    assert "rebuilding embeddings index" in capsys.readouterr().err


def test_many_shards_are_merged(model, counting, dsr_home, monkeypatch):
    monkeypatch.setattr(embeddings, "MAX_SHARDS", 2)
    texts = [f"sentence number {i}" for i in range(4)]
    singles = [embeddings.encode([t])[0] for t in texts]
    folder = next(dsr_home.glob("indexes/embeddings/*"))
    assert len(list(folder.glob("*.keys.npy"))) <= 2
    counting.reset()
    embeddings._caches.clear()
    again = embeddings.encode(texts)
    assert counting.encoded == 0 and np.array_equal(again, np.stack(singles))


def test_digests_ending_in_nul_bytes(model, counting):
    # numpy "S32" strings would drop a digest's trailing NUL bytes; one in 256 texts has one.
    text = next(t for t in (f"text {i}" for i in range(10_000)) if embeddings.text_key(t)[-1] == 0)
    first = embeddings.encode([text, "plain"])
    embeddings._caches.clear()
    counting.reset()
    assert np.array_equal(embeddings.encode([text, "plain"]), first) and counting.encoded == 0


def test_faiss_index_search_and_reuse(model, counting, capsys, monkeypatch):
    monkeypatch.setattr("dsr.core.quiet.progress_shown", lambda: True)  # the notice is progress: a terminal's
    ids, texts = list(SENTENCES), list(SENTENCES.values())
    index = DenseIndex.cached(ids, texts, name="toy")
    assert "building faiss index" in capsys.readouterr().err
    hits = index.search(["How big is the biggest whale?", "Which fruit has potassium?"], k=2)
    assert [h[0][0] for h in hits] == ["whale", "banana"] and len(hits[0]) == 2
    assert hits[0][0][1] > hits[0][1][1]
    counting.reset()
    DenseIndex.cached(ids, texts, name="toy")
    assert capsys.readouterr().err == "" and counting.encoded == 0
    for kind in ("hnsw", "ivf"):
        other = DenseIndex.cached(ids, texts, name="toy", kind=kind)
        assert other.search(["How big is the biggest whale?"], k=1)[0][0][0] == "whale"
    with pytest.raises(InputError, match="FAISS index kind"):
        DenseIndex.cached(ids, texts, name="toy", kind="lsh")


def test_dense_search_over_a_collection_pool(model):
    run = dense_search(collection(), {"q": "programming languages"}, k=2)
    assert isinstance(run, Run) and run.top("q")[0] == "python" and len(run.top("q")) == 2


def test_bi_encoder_reranks_the_top_k_and_keeps_the_rest(model):
    toy = collection()
    first = Run.from_scores({"paris": {"banana": 4, "eiffel": 3, "python": 2, "whale": 1}})
    run = make_reranker("bi-encoder").rerank(toy, first, top_k=2)
    assert run.top("paris") == ["eiffel", "banana", "python", "whale"]
    scores = [s for _, s in run.rankings["paris"]]
    assert all(a > b for a, b in zip(scores, scores[1:]))
    everything = make_reranker("bi-encoder").rerank(toy, first)
    assert everything.top("paris")[0] == "eiffel"
    stray = Run.from_scores({"elsewhere": {"banana": 1.0}})
    with pytest.raises(InputError, match="another collection") as err:
        make_reranker("bi-encoder").rerank(toy, stray)
    assert err.value.record == "elsewhere"


def test_bad_dense_parameters():
    with pytest.raises(InputError, match="text"):
        make_ranker("dense", text="title")
    with pytest.raises(InputError, match="batch_size"):
        make_ranker("dense", batch_size=0)
    with pytest.raises(InputError, match="query"):
        make_ranker("dense", query="everything")


def test_model_loader_is_cached_per_process(model):
    assert load_sentence_transformer("sentence-transformers/all-MiniLM-L6-v2") is model
    assert load_sentence_transformer(resolve_model("all-MiniLM-L6-v2")) is model
