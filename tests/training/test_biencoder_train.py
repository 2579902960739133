"""``dsr train --model-type bi-encoder``, document folds, ``dsr kfold`` and ``dsr agreement``.

A tiny random BERT (tests/support/tiny_bert.py) is fine-tuned for a few steps on a
CMU_DoG-shaped fixture: dialogues about 6 documents (``meta.document``), each
with a pool of candidates from several documents (ids ``<doc>/<section>/<i>``),
relevant ones from the dialogue's own document.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from tests.support.tiers import slow_fixture
from tests.support.tiny_bert import make_tiny_bert

pytestmark = pytest.mark.xdist_group("biencoder-train")  # one worker sets up the module fixtures (tests/support/order.py GROUPS)

DOCS = {
    "Moon": "apollo moon rocket saturn launch nasa orbit astronaut crater lunar",
    "Film": "movie actor director scene camera oscar screenplay cinema studio premiere",
    "Food": "bread cheese oven recipe flour butter baking dough yeast kitchen",
    "Music": "guitar song album drummer concert chorus melody band stage tour",
    "Sea": "ocean wave boat sailor harbor whale coral island tide anchor",
    "Farm": "tractor barn cow wheat harvest field farmer sheep hay plough",
}
FILLER = "the a of and it was is to in that for on with as very really maybe think so".split()


def _sentence(rng, words, n=5):
    picked = rng.sample(words, n) + rng.sample(FILLER, 2)
    rng.shuffle(picked)
    return " ".join(picked).capitalize() + "."


def _dialogues(per_doc: int, seed: int, labels: str = "own") -> list[dict]:
    rng = random.Random(seed)
    names = sorted(DOCS)
    out = []
    for doc in names:
        words = DOCS[doc].split()
        for i in range(per_doc):
            others = [n for n in names if n != doc]
            cands = []
            for k in range(8):
                own = k % 3 == 0
                src = doc if own else others[(i + k) % len(others)]
                label = (2 if k == 0 else 1) if own else 0
                if labels == "reversed":
                    label = 0 if own else 1
                cands.append(
                    {
                        "id": f"{src}/scene{k % 2}/{i * 8 + k}",
                        "title": src,
                        "body": _sentence(rng, DOCS[src].split()),
                        "score": float(8 - k),
                        "label": label,
                    }
                )
            out.append(
                {
                    "id": f"{doc}-{i}",
                    "subreddit": "",
                    "title": doc,
                    "context": [
                        {"author_id": f"u{j % 2}", "author_name": f"user{j % 2}", "body": _sentence(rng, words), "score": None}
                        for j in range(3)
                    ],
                    "target": {"author_id": "u1", "author_name": "user1", "body": _sentence(rng, words), "score": None},
                    "candidates": cands,
                    "subset": "section0",
                    "source": "cmu_dog",
                    "meta": {"conversation": f"{doc}-conv{i // 2}", "document": doc},
                }
            )
    return out


def _write(path: Path, dialogues) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in dialogues), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("data")
    return {
        "train": _write(folder / "train.jsonl", _dialogues(6, seed=1)),
        "dev": _write(folder / "dev.jsonl", _dialogues(2, seed=2)),
        "reversed": _write(folder / "dev-reversed.jsonl", _dialogues(2, seed=2, labels="reversed")),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    texts = [*DOCS.values(), *DOCS, " ".join(FILLER), "0 1 2 3 4 5 6 7 8 9 ."]
    return make_tiny_bert(tmp_path_factory.mktemp("tiny"), texts, num_labels=None, max_position_embeddings=128)


TRAIN_FLAGS = ["--max-steps", "4", "--batch-size", "6", "--lr", "1e-3", "--save-steps", "2", "--holdout", "0.2"]
#: the same settings as Python keyword arguments (``dsr.train``, ``dsr kfold --train-param``)
TRAIN_SETTINGS = {"max_steps": 4, "batch_size": 6, "lr": 1e-3, "save_steps": 2, "holdout": 0.2}


@pytest.fixture(scope="module")
@slow_fixture
def home(data, tiny, tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSR_HOME", str(home))
        assert main(["train", str(data["train"]), "--name", "bi", "--base", str(tiny), *TRAIN_FLAGS]) == 0
        assert (
            main(
                ["train", str(data["train"]), "--name", "bi-f1", "--base", str(tiny), "--folds", "3", "--fold", "1", *TRAIN_FLAGS]
            )
            == 0
        )
    return home


def test_bi_encoder_is_the_default_and_writes_its_card(home, tiny):
    from safetensors.torch import load_file

    folder = home / "models" / "bi"
    card = json.loads((folder / "dsr_model.json").read_text())
    assert card["kind"] == "bi-encoder" and card["query"] == "title+recent"
    assert card["parameters"]["loss"] == "MultipleNegativesRankingLoss"
    assert card["parameters"]["batch_size"] == 6 and card["training"]["steps"] == 4
    assert card["parameters"]["padding"] == "chunks (16 texts a chunk)"  # the default
    assert len(card["training_data"]["hash"]) == 64 and card["excluded_documents"] == []
    assert set(card["heldout"]["rankers"]) == {"initial", "bm25", "model"}
    assert (folder / "modules.json").is_file() and "bi-encoder" in (folder / "README.md").read_text()
    trained = load_file(str(next(folder.rglob("model.safetensors"))))
    base = load_file(str(tiny / "model.safetensors"))
    key = "embeddings.word_embeddings.weight"
    assert not np.allclose(trained[key].numpy(), base[key].numpy())


def test_fold_model_leaves_its_documents_out(home, data):
    from dsr.core.data import read_benchmark
    from dsr.training.folds import fold_documents

    card = json.loads((home / "models" / "bi-f1" / "dsr_model.json").read_text())
    expected = fold_documents(read_benchmark(data["train"]).dialogues, 3, 1)
    assert card["excluded_documents"] == expected and len(expected) == 2
    sel = card["training_data"]["selection"]
    assert sel["folds"] == 3 and sel["fold"] == 1 and sel["dropped_dialogues"] == 12
    assert card["training_data"]["train_dialogues"] + card["training_data"]["heldout_dialogues"] <= 24
    assert "Documents left out of training" in (home / "models" / "bi-f1" / "README.md").read_text()


def test_exclude_documents_drops_dialogues_and_their_sentences(data):
    from dsr.core.data import read_benchmark
    from dsr.training.folds import documents, exclude_documents, folds

    dialogues = read_benchmark(data["train"]).dialogues
    all_folds = folds(documents(dialogues), 3)
    assert sorted(d for f in all_folds for d in f) == sorted(DOCS) and all(len(f) == 2 for f in all_folds)
    kept, counts = exclude_documents(dialogues, ["Moon", "Sea"])
    assert {d.meta["document"] for d in kept} == set(DOCS) - {"Moon", "Sea"}
    assert not any(c.id.split("/")[0] in ("Moon", "Sea") for d in kept for c in d.candidates)
    assert counts["dropped_dialogues"] == 12 and counts["dropped_candidates"] > 0


def test_dense_run_with_the_trained_model_is_its_cosine_order(home, data, tmp_path, monkeypatch):
    from sentence_transformers import SentenceTransformer

    from dsr.core.data import read_benchmark
    from dsr.core.queries import query_text
    from dsr.core.run import Run

    monkeypatch.setenv("DSR_HOME", str(home))
    out = tmp_path / "bi.run"
    assert (
        main(
            [
                "run",
                str(data["dev"]),
                "--ranker",
                "dense",
                "--param",
                "model=dsr:bi",
                "--query",
                "title+recent",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    run = Run.read(out)
    model = SentenceTransformer(str(home / "models" / "bi"), device="cpu")
    for d in read_benchmark(data["dev"]).dialogues[:4]:
        q = model.encode([query_text(d, "title+recent")], normalize_embeddings=True)[0]
        c = model.encode([x.body for x in d.candidates], normalize_embeddings=True)
        cos = c @ q
        expected = [x.id for _, x in sorted(zip(-cos, d.candidates), key=lambda t: t[0])]
        assert run.top(d.id) == expected
    rerank = tmp_path / "bi-rerank.run"
    assert (
        main(
            [
                "rerank",
                str(data["dev"]),
                "--run",
                str(out),
                "--reranker",
                "bi-encoder",
                "--model",
                "dsr:bi",
                "--param",
                "query=title+recent",
                "--out",
                str(rerank),
            ]
        )
        == 0
    )
    assert Run.read(rerank).top(d.id) == run.top(d.id)


@pytest.mark.slow
def test_kfold_pools_fold_models_and_tests_against_zero_shot(data, tiny, tmp_path, monkeypatch):
    from dsr.core.run import Run

    home = tmp_path / "home"
    monkeypatch.setenv("DSR_HOME", str(home))
    out = tmp_path / "kfold"
    assert (
        main(
            [
                "kfold",
                str(data["train"]),
                "--eval",
                str(data["dev"]),
                "--folds",
                "3",
                "--name",
                "kf",
                "--base",
                str(tiny),
                "--out",
                str(out),
                "--train-param",
                *[f"{k}={v}" for k, v in TRAIN_SETTINGS.items()],
            ]
        )
        == 0
    )
    pooled = Run.read(out / "kfold.run")
    assert len(pooled.topics()) == 12  # every dev dialogue, each by the model that never saw it
    owners = {}
    for part in pooled.config["kfold"]:
        for doc in part["documents"]:
            owners[doc] = part["model"]
    assert sorted(owners) == sorted(DOCS) and len(set(owners.values())) == 3
    for i in range(3):
        card = json.loads((home / "models" / f"kf-fold{i}" / "dsr_model.json").read_text())
        assert card["training_data"]["selection"]["fold"] == i
    assert (out / "zero-shot.run").is_file() and (out / "report" / "results.md").is_file()
    assert "kfold" in (out / "report" / "results.md").read_text()
    # issue 41: per fold, the paired gain over zero-shot on the dialogues of its left-out
    # documents, checked against the runs measured plainly (tools/plain_eval.py)
    from dsr.core.data import read_benchmark
    from tools.plain_eval import plain_measure

    folds = json.loads((out / "folds.json").read_text())
    assert [g["fold"] for g in folds] == ["0", "1", "2", "all"]
    assert sum(g["dialogues"] for g in folds[:3]) == folds[3]["dialogues"] == 12
    collection = read_benchmark(data["dev"])
    qrels = {d.id: {c.id: c.label for c in d.candidates} for d in collection}
    zs, kf = (
        {
            q: plain_measure("nDCG@5", [doc for doc, _ in ranked], qrels[q])
            for q, ranked in Run.read(out / f"{n}.run").rankings.items()
        }
        for n in ("zero-shot", "kfold")
    )
    for g in folds[:3]:
        docs = {doc for part in pooled.config["kfold"] if part["model"] == g["model"] for doc in part["documents"]}
        ids = [d.id for d in collection if d.meta["document"] in docs]
        assert g["dialogues"] == len(ids)
        assert abs(g["diff"] - sum(kf[i] - zs[i] for i in ids) / len(ids)) < 1e-9
        assert g["ci_low"] <= g["diff"] <= g["ci_high"] and 0 <= g["t"] <= 1
    assert "| all | pooled | 12 |" in (out / "folds.md").read_text()


def test_kfold_out_is_a_set_and_other_files_are_refused_before_training(data, tiny, tmp_path, monkeypatch, capsys):
    """--out is replaced as a set (runs and report/), so a folder holding other
    files is refused (exit 2, kept) before any fold is trained."""
    home = tmp_path / "home"
    monkeypatch.setenv("DSR_HOME", str(home))
    out = tmp_path / "kfold"
    (out / "report").mkdir(parents=True)
    (out / "report" / "draft.docx").write_bytes(b"mine")
    (out / "kfold.run").write_text("earlier\n")
    assert (
        main(
            [
                "kfold",
                str(data["train"]),
                "--eval",
                str(data["dev"]),
                "--folds",
                "3",
                "--name",
                "kf",
                "--base",
                str(tiny),
                "--out",
                str(out),
                "--train-param",
                *[f"{k}={v}" for k, v in TRAIN_SETTINGS.items()],
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "report/draft.docx" in err and "Traceback" not in err
    assert not (home / "models").exists()  # nothing trained
    assert (out / "report" / "draft.docx").read_bytes() == b"mine" and (out / "kfold.run").read_text() == "earlier\n"


@pytest.mark.slow
def test_title_body_text_trains_and_is_recorded(data, tiny, tmp_path, monkeypatch):
    from dsr.core.data import read_benchmark
    from dsr.training.biencoder import make_triplets

    dialogues = read_benchmark(data["train"]).dialogues
    plain, _ = make_triplets(dialogues, lambda d: d.title)
    titled, _ = make_triplets(dialogues, lambda d: d.title, text="title: body")
    assert len(plain) == len(titled) == len(dialogues)
    for a, b in zip(plain, titled):  # same draws, the film's name before each sentence
        assert b.positive.endswith(": " + a.positive) and b.negative.endswith(": " + a.negative)
        assert b.positive.split(": ")[0] in DOCS
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    assert main(["train", str(data["train"]), "--name", "tb", "--base", str(tiny), "--text", "title: body", *TRAIN_FLAGS]) == 0
    card = json.loads((tmp_path / "home" / "models" / "tb" / "dsr_model.json").read_text())
    assert card["text"] == "title: body"
    # dsr reproduce's trained row reads the card's query strategy and candidate text
    out = tmp_path / "out"
    assert (
        main(
            [
                "reproduce",
                str(data["dev"]),
                "--no-cross-encoder",
                "--trained-dense",
                "dsr:tb",
                "--queries",
                "last",
                "--n-splits",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    (sidecar,) = (out / "runs").glob("trained*.run.gz.json")  # runs are written gzipped
    params = json.loads(sidecar.read_text())["params"]
    assert params["text"] == "title: body" and params["query"] == "title+recent"


def test_context_form_is_refused_for_a_cross_encoder(data, tiny, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "ce",
                "--base",
                str(tiny),
                "--model-type",
                "cross-encoder",
                "--text",
                "title: previous [SEP] body [SEP] next",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--text" in err and "Traceback" not in err
    assert not (tmp_path / "home" / "models" / "ce").exists()
    assert main(["train", str(data["train"]), "--name", "bi2", "--base", str(tiny), "--hard-negatives", "dsr:bi"]) == 2
    assert "--hard-negatives" in capsys.readouterr().err


def test_a_second_stage_trained_on_the_first_stages_hard_negatives(data, tiny, home, monkeypatch, tmp_path):
    """A cross-encoder with `title: body` text and negatives mined by the trained bi-encoder:
    the card records both, and `dsr rerank` reads candidates as the card says."""
    monkeypatch.setenv("DSR_HOME", str(home))
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "ce-hard",
                "--base",
                str(tiny),
                "--model-type",
                "cross-encoder",
                "--text",
                "title: body",
                "--hard-negatives",
                "dsr:bi",
                "--hard-depth",
                "2",
                "--neg-per-pos",
                "0.5",
                "--max-length",
                "64",
                *TRAIN_FLAGS,
            ]
        )
        == 0
    )
    card = json.loads((home / "models" / "ce-hard" / "dsr_model.json").read_text())
    assert card["text"] == "title: body" and card["parameters"]["hard_negatives"] == "dsr:bi"
    data_card = card["training_data"]
    miner = data_card["hard_negative_miner"]
    assert miner["depth"] == 2 and miner["query"] == "title+recent"  # the miner card's strategy
    assert miner["miner"]["weights_sha256"] and miner["text"] == "body"
    # every dialogue has 3 relevant candidates; 0.5 per positive -> 2 hard negatives each
    assert data_card["hard_negatives"] == data_card["list_negatives"] == 2 * data_card["train_dialogues"]
    out = tmp_path / "ce.run"
    assert main(["run", str(data["dev"]), "--ranker", "bm25", "--out", str(tmp_path / "bm25.run")]) == 0
    assert (
        main(
            [
                "rerank",
                str(data["dev"]),
                "--run",
                str(tmp_path / "bm25.run"),
                "--model",
                "dsr:ce-hard",
                "--top-k",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    params = json.loads(out.with_name("ce.run.json").read_text())["params"]
    assert params["text"] == "title: body" and params["query"] == card["query"]


@pytest.mark.parametrize(
    "second, message",
    [
        ({"query": "last", "text": "body"}, "different query strategies"),
        ({"query": "title+recent", "text": "title: body"}, "different candidate texts"),
    ],
)
def test_kfold_refuses_fold_models_trained_differently(data, tmp_path, monkeypatch, second, message):
    from dsr.core.data import read_benchmark
    from dsr.core.errors import InputError
    from dsr.training import kfold

    cards = {
        "dsr:a": {"query": "title+recent", "excluded_documents": ["Moon"]},  # no text: body
        "dsr:b": {**second, "excluded_documents": ["Sea"]},
    }
    monkeypatch.setattr(kfold, "card", lambda model, required=True: cards[model])
    with pytest.raises(InputError, match=message):
        kfold.kfold_evaluate(read_benchmark(data["dev"]), ["dsr:a", "dsr:b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_agreement_is_kendall_tau_over_systems(data, tmp_path, capsys):
    from dsr.core.run import Run

    dialogues = [json.loads(line) for line in data["dev"].read_text().splitlines()]
    # three systems: own-document candidates first (best under "own" labels), the pool order,
    # and own-document candidates last
    runs = []
    for name, key in (
        ("own-first", lambda c: c["id"].split("/")[0] != d["title"]),
        ("pool", lambda c: 0),
        ("own-last", lambda c: c["id"].split("/")[0] == d["title"]),
    ):
        rankings = {}
        for d in dialogues:
            ordered = sorted(d["candidates"], key=key)
            rankings[d["id"]] = [(c["id"], float(len(ordered) - i)) for i, c in enumerate(ordered)]
        path = tmp_path / f"{name}.run"
        Run(rankings, name).write(path)
        runs.append(str(path))
    assert main(["agreement", str(data["dev"]), str(data["dev"]), *runs, "--json"]) == 0
    same = json.loads(capsys.readouterr().out)
    assert same["tau"] == pytest.approx(1.0) and same["topics"] == 12
    assert main(["agreement", str(data["dev"]), str(data["reversed"]), *runs, "--json"]) == 0
    opposite = json.loads(capsys.readouterr().out)
    assert opposite["tau"] == pytest.approx(-1.0)
    assert main(["agreement", str(data["dev"]), str(data["reversed"]), runs[0]]) == 2
    assert "at least two runs" in capsys.readouterr().err


def test_agreement_follows_the_run_order_even_for_near_tied_scores():
    """Two scores one float64 ulp apart are one float32 value: measured from the raw scores,
    trec_eval would order them by id. Agreement measures the run's own order."""
    from dsr.core.data import Candidate, Collection, Dialogue, Turn
    from dsr.core.run import Run
    from dsr.evaluation.ordering_agreement import agreement

    def collection(labels):
        cands = [Candidate(cid, "", "text", None, lab) for cid, lab in zip(("a", "z"), labels)]
        return Collection("c", [Dialogue("q", "t", [Turn("u", "u", "hi")], None, cands)])

    silver, judged = collection([0, 1]), collection([0, 1])
    top = 1.0
    runs = {
        "z-first": Run({"q": [("z", top), ("a", float(np.nextafter(top, 0)))]}, "z"),
        "a-first": Run({"q": [("a", top), ("z", float(np.nextafter(top, 0)))]}, "a"),
    }
    result = agreement(silver, judged, runs)
    assert result.silver[0] == pytest.approx(1.0) and result.silver[1] < 1.0


@pytest.mark.slow
def test_training_drops_conversations_that_an_evaluation_split_holds(data, tiny, tmp_path, monkeypatch, capsys):
    """A CMU_DoG-shaped folder whose valid split holds one training conversation (its turns, with
    other case and spacing) and one sharing a single turn: the first is dropped, printed and in
    the card; the second is kept."""
    from dsr.core.data import read_benchmark

    dialogues = read_benchmark(data["train"]).dialogues
    conv = [d for d in dialogues if d.meta["conversation"] == "Moon-conv0"]
    turns = [t.body for d in conv for t in [*d.context, d.target]]
    other = next(d for d in dialogues if d.meta["conversation"] == "Sea-conv1")
    valid = tmp_path / "cmu" / "Conversations" / "valid"
    valid.mkdir(parents=True)
    (valid / "a.json").write_text(json.dumps({"history": [{"text": "  " + t.upper() + " "} for t in turns]}))
    (valid / "b.json").write_text(
        json.dumps({"history": [{"text": other.context[0].body}, {"text": "an unrelated long turn about films"}]})
    )
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "clean",
                "--base",
                str(tiny),
                "--eval-source",
                str(tmp_path / "cmu"),
                *TRAIN_FLAGS,
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "dropped 1 of 18 training conversations (2 dialogues)" in err and "1 valid" in err
    card = json.loads((tmp_path / "home" / "models" / "clean" / "dsr_model.json").read_text())
    overlap = card["training_data"]["selection"]["evaluation_overlap"]
    assert overlap["dropped_conversations"] == 1 and overlap["by_reason"] == {"valid": 1}
    assert card["training_data"]["train_dialogues"] + card["training_data"]["heldout_dialogues"] == 34
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "x",
                "--base",
                str(tiny),
                "--eval-source",
                str(tmp_path / "nowhere"),
                *TRAIN_FLAGS,
            ]
        )
        == 2
    )
    assert "--eval-source" in capsys.readouterr().err


def test_bi_encoder_second_round_draws_negatives_from_the_miners_top(data, tiny, home, monkeypatch):
    """--hard-negatives for a bi-encoder: each triplet's negative is among the miner's
    highest-ranked non-relevant candidates (depth 1: exactly its top one)."""
    from dsr.collections import load_collection
    from dsr.training.biencoder import make_triplets

    dialogues = load_collection(str(data["train"])).dialogues
    ranked = {d.id: [c.id for c in reversed(d.candidates)] for d in dialogues}  # miner: list reversed
    triplets, _ = make_triplets(dialogues, lambda d: d.id, seed=3, ranked=ranked, depth=1)
    last_negative = {d.id: next(c.body for c in reversed(d.candidates) if c.label <= 0) for d in dialogues}
    assert triplets and all(t.negative == last_negative[t.dialogue] for t in triplets)
    pool, _ = make_triplets(dialogues, lambda d: d.id, seed=3)
    assert any(t.negative != last_negative[t.dialogue] for t in pool)  # without a miner: any negative

    monkeypatch.setenv("DSR_HOME", str(home))
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "bi-round2",
                "--base",
                str(tiny),
                "--hard-negatives",
                "dsr:bi",
                "--hard-depth",
                "2",
                *TRAIN_FLAGS,
            ]
        )
        == 0
    )
    card = json.loads((home / "models" / "bi-round2" / "dsr_model.json").read_text())
    assert card["parameters"]["hard_negatives"] == "dsr:bi" and card["parameters"]["hard_depth"] == 2
    data_card = card["training_data"]
    assert data_card["hard_negatives"] == data_card["pairs"] > 0
    assert data_card["hard_negative_miner"]["depth"] == 2 and "mined hard" in card["recipe"]


def test_gist_loss_is_guided_by_the_base_model(data, tiny, home, monkeypatch, capsys):
    monkeypatch.setenv("DSR_HOME", str(home))
    assert main(["train", str(data["train"]), "--name", "bi-gist", "--base", str(tiny), "--loss", "gist", *TRAIN_FLAGS]) == 0
    card = json.loads((home / "models" / "bi-gist" / "dsr_model.json").read_text())
    assert card["parameters"]["loss"] == "GISTEmbedLoss" and "GISTEmbedLoss" in card["recipe"]
    assert card["parameters"]["padding"] == "column"  # GISTEmbedLoss's own pass
    assert card["parameters"]["guide"]["spec"] == str(tiny)
    assert main(["train", str(data["train"]), "--name", "x", "--base", str(tiny), "--guide", str(tiny), *TRAIN_FLAGS]) == 2
    assert "guide" in capsys.readouterr().err
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "x",
                "--base",
                str(tiny),
                "--model-type",
                "cross-encoder",
                "--loss",
                "gist",
                *TRAIN_FLAGS,
            ]
        )
        == 2
    )


def test_length_grouped_batches_keep_every_example_once_without_duplicates():
    import datasets
    import torch

    from dsr.training.batching import LengthGroupedBatchSampler, cut_batches

    rng = random.Random(5)
    shared = "a sentence that two examples share"
    rows = {
        "anchor": [" ".join(["w"] * rng.randint(1, 60)) + f" q{i}" for i in range(200)],
        "positive": [shared if i % 50 == 0 else f"p{i}" for i in range(200)],
        "negative": [f"n{i}" for i in range(200)],
    }

    def sampler():
        return LengthGroupedBatchSampler(
            datasets.Dataset.from_dict(rows), batch_size=16, drop_last=False, generator=torch.Generator(), seed=3
        )

    batches = list(sampler())
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(200))  # every example, once
    for b in batches:
        texts = [t for i in b for t in (rows["anchor"][i], rows["positive"][i], rows["negative"][i])]
        assert len(texts) == len(set(texts))  # no text twice in a batch
    assert sum(len(b) != 16 for b in batches) <= 3  # leftovers go to the next window
    spread = [max(len(rows["anchor"][i]) for i in b) - min(len(rows["anchor"][i]) for i in b) for b in batches]
    assert np.mean(spread) < 60  # random batches: ~110 characters apart
    assert batches == list(sampler())  # deterministic for a seed
    assert cut_batches([0, 1, 2], [{"x"}, {"x"}, {"y"}], 2, 2) == ([[0, 2], [1]], [])
    assert cut_batches([0, 1, 2], [{"x"}, {"x"}, {"x"}], 2, 2) == ([[0], [1]], [2])  # no room: left over


def test_by_length_batching_trains_and_is_recorded(data, tiny, home, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(home))
    assert (
        main(["train", str(data["train"]), "--name", "bi-bylength", "--base", str(tiny), "--batching", "by-length", *TRAIN_FLAGS])
        == 0
    )
    card = json.loads((home / "models" / "bi-bylength" / "dsr_model.json").read_text())
    assert card["parameters"]["batching"] == "by-length" and "grouped by length" in card["parameters"]["batch_sampler"]
    assert card["training"]["steps"] == 4


def test_chunked_forward_gives_the_padded_pass_embeddings_and_loss(tiny):
    """`--padding chunks` encodes a batch's texts in chunks of similar length: each text's
    embedding, and so the loss and its gradient, are the padded pass's (dropout off)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.losses.merged_forward import embed_columns
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from dsr.training.chunks import ChunkedMNRLoss, embed_in_chunks

    model = SentenceTransformer(str(tiny), device="cpu")
    model.eval()
    rng = random.Random(4)
    words = " ".join(DOCS.values()).split()
    columns = [[" ".join(rng.choices(words, k=rng.randint(2, 40 if c == 0 else 15))) for _ in range(12)] for c in range(3)]
    features = [model.preprocess(texts) for texts in columns]
    widths = {int(f["attention_mask"].sum(1).max()) for f in features}
    assert len(widths) > 1  # columns of different widths
    padded = embed_columns(model, [dict(f) for f in features])
    chunked = embed_in_chunks(model, [dict(f) for f in features], chunk=5)  # chunks cut across columns
    for a, b in zip(padded, chunked, strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-5)
    labels = torch.arange(12)
    plain = MultipleNegativesRankingLoss(model)([dict(f) for f in features], labels)
    ours = ChunkedMNRLoss(model)([dict(f) for f in features], labels)
    assert abs(float(plain) - float(ours)) < 1e-5
    plain.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    ours.backward()
    assert len(grads) > 10 and set(grads) == {name for name, p in model.named_parameters() if p.grad is not None}
    assert all(torch.allclose(p.grad, grads[name], atol=1e-5) for name, p in model.named_parameters() if name in grads)


def test_padding_is_recorded_and_column_padding_still_trains(data, tiny, home, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(home))
    assert (
        main(["train", str(data["train"]), "--name", "bi-column", "--base", str(tiny), "--padding", "column", *TRAIN_FLAGS]) == 0
    )
    card = json.loads((home / "models" / "bi-column" / "dsr_model.json").read_text())
    assert card["parameters"]["padding"] == "column" and card["training"]["steps"] == 4
