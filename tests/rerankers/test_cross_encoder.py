"""The cross-encoder reranker, through the same code path as a real model:
a tiny random BERT cross-encoder is built here (transformers, saved with its
tokenizer) and loaded by ``dsr rerank --model <folder>`` / ``dsr:NAME``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark
from dsr.core.errors import InputError
from dsr.core.provenance import sha256_file
from dsr.core.queries import query_text
from dsr.core.run import Run
from dsr.core.ties import float32
from dsr.rerankers import make_reranker
from dsr.rerankers.cross_encoder import CrossEncoderReranker, candidate_text
from tests.support.tiny_bert import collection_texts, make_tiny_bert

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "runs_tiny.jsonl"


@pytest.fixture(scope="module")
def collection():
    return read_benchmark(FIXTURE)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, collection) -> Path:
    """A BERT cross-encoder (hidden 32, 2 layers, one output) with a WordPiece vocabulary
    of the fixture's words, saved as transformers saves any fine-tuned model."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-cross-encoder"), collection_texts(collection), initializer_range=0.5)


def reference_logits(folder: Path, pairs: list[tuple[str, str]]) -> list[float]:
    """The model's logit for each pair, computed one pair at a time with transformers alone."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    with torch.no_grad():
        for query, text in pairs:
            encoded = tokenizer(query, text, truncation=True, max_length=256, return_tensors="pt")
            out.append(float(model(**encoded).logits[0, 0]))
    return out


def write_initial_run(collection, path: Path) -> Run:
    """The collection's initial ranking, as `dsr run --ranker initial` writes it."""
    order = {d.id: collection.candidate_ids(d.id) for d in collection}
    run = Run.from_scores(
        {d.id: {c.id: c.score for c in d.candidates} for d in collection},
        tag="initial",
        initial_order=order,
        config={"ranker": "initial", "params": {}, "collection": collection.describe()},
    )
    run.write(path)
    return run


@pytest.fixture
def initial_run(tmp_path, collection):
    path = tmp_path / "initial.run"
    return path, write_initial_run(collection, path)


def test_rerank_scores_are_the_models_logits(tmp_path, tiny_model, collection, initial_run):
    path, _ = initial_run
    out = tmp_path / "ce.run"
    assert (
        main(["rerank", str(FIXTURE), "--run", str(path), "--model", str(tiny_model), "--batch-size", "4", "--out", str(out)])
        == 0
    )
    run = Run.read(out)
    for dialogue in collection:
        query = query_text(dialogue, "all")
        pairs = [(query, c.body) for c in dialogue.candidates]
        expected = dict(zip((c.id for c in dialogue.candidates), reference_logits(tiny_model, pairs)))
        assert run.scores(dialogue.id) == pytest.approx(expected, abs=1e-5)
        assert run.top(dialogue.id) == sorted(expected, key=lambda d: -expected[d])
    # a random model still separates the candidates: no ties to break
    scores = [s for ranked in run.rankings.values() for _, s in ranked]
    assert len(set(scores)) == len(scores)


def test_scores_are_deterministic_and_batch_size_does_not_change_order(tmp_path, tiny_model, initial_run):
    path, _ = initial_run
    outs = []
    for name, batch in (("a", "4"), ("b", "4"), ("c", "1")):
        out = tmp_path / f"{name}.run"
        assert (
            main(
                ["rerank", str(FIXTURE), "--run", str(path), "--model", str(tiny_model), "--batch-size", batch, "--out", str(out)]
            )
            == 0
        )
        outs.append(out)
    assert outs[0].read_bytes() == outs[1].read_bytes()
    a, c = Run.read(outs[0]), Run.read(outs[2])
    assert {q: a.top(q) for q in a.topics()} == {q: c.top(q) for q in c.topics()}
    for qid in a.topics():
        assert a.scores(qid) == pytest.approx(c.scores(qid), abs=1e-5)


def test_top_k_keeps_the_tail_in_its_original_order(tmp_path, tiny_model, collection, initial_run):
    path, before = initial_run
    out = tmp_path / "top2.run"
    assert main(["rerank", str(FIXTURE), "--run", str(path), "--model", str(tiny_model), "--top-k", "2", "--out", str(out)]) == 0
    run = Run.read(out)
    for qid in before.topics():
        dialogue = collection[qid]
        head, tail = before.top(qid)[:2], before.top(qid)[2:]
        query = query_text(dialogue, "all")
        texts = {c.id: c.body for c in dialogue.candidates}
        logits = dict(zip(head, reference_logits(tiny_model, [(query, texts[d]) for d in head])))
        assert run.top(qid) == sorted(head, key=lambda d: -logits[d]) + tail
        ranked = run.rankings[qid]
        floor = ranked[1][1]
        # the tail sits below the block: lowest block score - 1, - 2, ... (as float32)
        assert [s for _, s in ranked[2:]] == [float32(floor - 1), float32(floor - 2), float32(floor - 3)]
    side = json.loads((tmp_path / "top2.run.json").read_text())
    assert side["params"]["top_k"] == 2
    assert run.tag == f"initial>>cross-encoder-{tiny_model.name}@2"


def test_sidecar_records_model_params_and_input(tmp_path, tiny_model, collection, initial_run):
    path, _ = initial_run
    out = tmp_path / "ce.run"
    assert (
        main(
            [
                "rerank",
                str(FIXTURE),
                "--run",
                str(path),
                "--model",
                str(tiny_model),
                "--query",
                "last",
                "--param",
                "text=title: body",
                "max_length=64",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    side = json.loads((tmp_path / "ce.run.json").read_text())
    assert side["reranker"] == "cross-encoder" and side["command"] == "rerank"
    assert side["params"] == {
        "model": str(tiny_model),
        "query": "last",
        "decay": 0.5,
        "batch_size": 32,
        "max_length": 64,
        "text": "title: body",
        "top_k": None,
        "precision": "fp32",
        "backend": "torch",
    }
    weights = sha256_file(tiny_model / "model.safetensors")
    assert side["model"]["weights_sha256"] == weights
    assert side["model"]["source"] == "folder"
    assert [m["weights_sha256"] for m in side["models"]] == [weights]
    assert side["collection"]["hash"] == collection.content_hash
    [given] = side["inputs"]
    assert given["sha256"] == sha256_file(path) and given["tag"] == "initial"
    assert given["config"]["ranker"] == "initial"
    assert side["versions"]["sentence-transformers"]
    assert "--param 'text=title: body' max_length=64" in side["command_line"]
    # the text option reached the model: scores are those of "title: body" pairs on the last turn
    run = Run.read(out)
    dialogue = collection["t3_b2_q2"]
    pairs = [(query_text(dialogue, "last"), candidate_text(c, "title: body")) for c in dialogue.candidates]
    expected = dict(zip((c.id for c in dialogue.candidates), reference_logits(tiny_model, pairs)))
    assert run.scores("t3_b2_q2") == pytest.approx(expected, abs=1e-5)


def test_trained_model_name_resolves_under_dsr_home(tmp_path, tiny_model, dsr_home, initial_run):
    path, _ = initial_run
    shutil.copytree(tiny_model, dsr_home / "models" / "tiny")
    by_folder, by_name = tmp_path / "folder.run", tmp_path / "name.run"
    assert main(["rerank", str(FIXTURE), "--run", str(path), "--model", str(tiny_model), "--out", str(by_folder)]) == 0
    assert main(["rerank", str(FIXTURE), "--run", str(path), "--model", "dsr:tiny", "--out", str(by_name)]) == 0
    # same scores to the last bit; only the tag (which names the model spec) differs
    assert Run.read(by_folder).rankings == Run.read(by_name).rankings
    assert Run.read(by_name).tag == "initial>>cross-encoder-dsr:tiny"
    assert json.loads((tmp_path / "name.run.json").read_text())["model"]["source"] == "dsr"


def test_reranker_api_rejects_runs_of_other_collections(tiny_model, collection):
    reranker = make_reranker("cross-encoder", model=str(tiny_model))
    with pytest.raises(InputError) as err:
        reranker.rerank(collection, Run({"t3_zz_q9": [("Moon_19331_1_0_4", 1.0)]}))
    assert err.value.record == "t3_zz_q9" and err.value.field == "qid"
    with pytest.raises(InputError) as err:
        reranker.rerank(collection, Run({"t3_a1_q1": [("Sun_1_0_0_0", 1.0)]}))
    assert err.value.record == "t3_a1_q1" and err.value.field == "docid"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"query": "first"}, "query"),
        ({"text": "body: title"}, "text"),
        ({"batch_size": 0}, "batch_size"),
        ({"top_k": 2.5}, "top_k"),
        ({"temperature": 1.0}, "params"),
        ({"precision": "fp16"}, "precision"),
    ],
)
def test_bad_parameters(params, field):
    with pytest.raises(InputError) as err:
        CrossEncoderReranker(**params)
    assert err.value.field == field


def test_a_trained_models_card_sets_query_and_max_length_unless_given(tmp_path, tiny_model, collection, initial_run):
    folder = tmp_path / "trained"
    shutil.copytree(tiny_model, folder)
    (folder / "dsr_model.json").write_text(json.dumps({"query": "last", "max_length": 64}))
    reranker = make_reranker("cross-encoder", model=str(folder))
    reranker.resolve()
    assert reranker.params["query"] == "last" and reranker.params["max_length"] == 64
    explicit = make_reranker("cross-encoder", model=str(folder), query="all")
    explicit.resolve()
    assert explicit.params["query"] == "all" and explicit.params["max_length"] == 64
    # the card's strategy is what the model is fed: same scores as asking for it
    _, run = initial_run
    by_card = reranker.rerank(collection, run)
    asked = make_reranker("cross-encoder", model=str(tiny_model), query="last", max_length=64)
    default = make_reranker("cross-encoder", model=str(tiny_model))
    assert by_card.rankings == asked.rerank(collection, run).rankings
    assert by_card.rankings != default.rerank(collection, run).rankings


def test_bf16_precision_scores_close_to_fp32(tiny_model, collection, initial_run):
    _, run = initial_run
    fp32 = make_reranker("cross-encoder", model=str(tiny_model)).rerank(collection, run)
    bf16 = make_reranker("cross-encoder", model=str(tiny_model), precision="bf16").rerank(collection, run)
    for qid in fp32.topics():
        a, b = fp32.scores(qid), bf16.scores(qid)
        assert a.keys() == b.keys()
        # bfloat16 keeps 8 bits of mantissa; through 2 layers of a random model, a few percent
        assert all(abs(a[d] - b[d]) <= 0.05 * max(1.0, abs(a[d])) for d in a)
    assert bf16.scores(qid) != fp32.scores(qid)  # it did run in another precision
