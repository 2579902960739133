"""What the encoders are fed (issue 44, item 3): each distinct text once, requests of inputs
sorted by length, and int8 calibration on a small fixed set that is part of the export's key.

The dedupe tests run a tiny random BERT bi-encoder (tests/support/tiny_bert.py) on torch, the
exact path: a text's vector must be the one encoding every text gives, bytes for bytes where
there is nothing to dedupe. The length-order tests export that BERT to OpenVINO (slow tier).
"""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsr.collections import load_collection
from dsr.core.models import load_sentence_transformer, resolve_model
from dsr.indexes import backends, embeddings


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


def _texts(sample) -> list[str]:
    """Real sentences of different lengths, a third of them repeated, shuffled."""
    texts = [c.body for d in sample for c in d.candidates][:90]
    texts += texts[::3]
    random.Random(0).shuffle(texts)
    return texts


@given(st.lists(st.sampled_from(["a", "b", "", "a b", "é", "B"]), max_size=30))
def test_distinct_texts_scatter_back_to_every_place(texts):
    distinct, where = embeddings.distinct_texts(texts)
    assert len(set(distinct)) == len(distinct) and set(distinct) == set(texts)
    assert [distinct[i] for i in where] == texts
    assert distinct == sorted(set(texts), key=texts.index)  # first occurrences, in order


def test_each_distinct_text_is_encoded_once_and_scattered_back(tiny_bi, sample, monkeypatch):
    texts = _texts(sample)
    model = load_sentence_transformer(tiny_bi)
    everything = embeddings.normalise(np.asarray(model.encode(texts, batch_size=16, convert_to_numpy=True), np.float32))
    fed: list[list[str]] = []
    original = type(model).encode

    def spy(self, sentences, *args, **kwargs):
        fed.append(list(sentences))
        return original(self, sentences, *args, **kwargs)

    monkeypatch.setattr(type(model), "encode", spy)
    got = embeddings.encode(texts, tiny_bi, batch_size=16, cache=False)
    assert fed == [list(dict.fromkeys(texts))]  # each distinct text once, in first-seen order
    assert got.shape == everything.shape
    for i, text in enumerate(texts):  # a repeat gets its first occurrence's row, bytes for bytes
        assert np.array_equal(got[i], got[texts.index(text)])
    # the same vectors as encoding every text (batches differ, so up to float noise)
    np.testing.assert_allclose(got, everything, rtol=0, atol=1e-6)


def test_the_exact_path_is_unchanged_where_there_is_nothing_to_dedupe(tiny_bi, sample):
    texts = list(dict.fromkeys(_texts(sample)))
    model = load_sentence_transformer(tiny_bi)
    direct = embeddings.normalise(
        np.asarray(model.encode(texts, batch_size=16, convert_to_numpy=True, normalize_embeddings=True), np.float32)
    )
    assert embeddings.encode(texts, tiny_bi, batch_size=16, cache=False).tobytes() == direct.tobytes()
    # and through the cache (which dedupes by digest first), the same bytes
    assert embeddings.encode(texts + texts[:5], tiny_bi, batch_size=16).tobytes() == np.vstack([direct, direct[:5]]).tobytes()


def test_length_order_is_longest_first_with_ties_in_input_order():
    lengths = [3, 9, 3, 1, 9, 5]
    assert backends.length_order(lengths) == [1, 4, 5, 0, 2, 3]
    assert backends.length_order([]) == []


def test_a_padded_request_is_masked_and_rounded_to_the_pad_multiple(tiny_bi, sample, tmp_path):
    module = load_sentence_transformer(tiny_bi)
    (tmp_path / "tokenizer.json").write_text(module.tokenizer.backend_tokenizer.to_str(), encoding="utf-8")
    tokenizer = backends._Tokenizer(tmp_path, {"pad_id": module.tokenizer.pad_token_id})
    fed = backends.FastModel(tmp_path, "bi-encoder", "openvino", "sentence_embedding", ("input_ids", "attention_mask"), 128, True)
    texts = _texts(sample)[:7]
    encoded = backends._encodings(tokenizer, fed, texts, None)
    reference = module.tokenizer([t.strip() for t in texts], padding=True, truncation=True, max_length=128)
    batch = backends._padded(encoded, fed.inputs, tokenizer.pad_id)
    assert set(batch) == {"input_ids", "attention_mask"}
    width = max(len(ids) for ids in reference["input_ids"])
    assert batch["input_ids"].shape == (7, -(-width // backends.PAD_MULTIPLE) * backends.PAD_MULTIPLE)
    for row, (ids, mask) in enumerate(zip(reference["input_ids"], reference["attention_mask"])):
        n = sum(mask)  # the transformers tokenizer's tokens, then padding masked out
        assert batch["input_ids"][row, :n].tolist() == ids[:n]
        assert batch["attention_mask"][row].tolist() == [1] * n + [0] * (batch["input_ids"].shape[1] - n)
        assert set(batch["input_ids"][row, n:].tolist()) <= {module.tokenizer.pad_token_id}


@pytest.mark.slow
def test_requests_sorted_by_length_return_rows_in_input_order(tiny_bi, sample, dsr_home):
    fed = backends.export(tiny_bi, "bi-encoder", "openvino")
    texts = _texts(sample)
    runner = backends._Runner(fed, request_batch=8, in_flight=2)
    alone = np.vstack([runner.run([t]) for t in texts])  # one text a request: no padding, no order
    sorted_run = runner.run(texts)
    assert sorted_run.shape == alone.shape
    np.testing.assert_allclose(sorted_run, alone, rtol=0, atol=1e-5)
    np.testing.assert_allclose(runner.run(texts, order=False), alone, rtol=0, atol=1e-5)
    lengths = [len(e.ids) for e in backends._encodings(runner.tokenizer, fed, texts, None)]
    assert len(set(lengths)) > 5  # the texts' lengths differ, so the order matters


def test_the_calibration_set_is_small_fixed_and_in_the_exports_key(monkeypatch):
    model = resolve_model("all-MiniLM-L6-v2", "bi-encoder")
    for kind in ("bi-encoder", "cross-encoder"):
        items = backends.calibration_items(kind)
        assert len(items) == backends.CALIBRATION_SIZE <= 300
        assert items == backends.calibration_items(kind)  # seeded: the same set every time
        info = backends.expected_export_manifest(model, kind, "openvino-int8")["params"]["calibration"]
        assert info["items"] == len(items)
        assert info["sha256"] == hashlib.sha256(json.dumps(items, ensure_ascii=False).encode("utf-8")).hexdigest()
    identity = backends.export_identity(model, "bi-encoder", "openvino-int8")
    assert "calibration" not in backends.expected_export_manifest(model, "bi-encoder", "openvino")["params"]
    # another set, by size or by draw, is another export (and another int8 embedding cache)
    monkeypatch.setattr(backends, "CALIBRATION_SEED", 1)
    assert backends.export_identity(model, "bi-encoder", "openvino-int8") != identity
    monkeypatch.setattr(backends, "CALIBRATION_SEED", 0)
    assert backends.export_identity(model, "bi-encoder", "openvino-int8") == identity
    monkeypatch.setattr(backends, "CALIBRATION_SIZE", 64)
    assert backends.export_identity(model, "bi-encoder", "openvino-int8") != identity
