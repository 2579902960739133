"""The second stage: a cross-encoder trained with the listwise loss on a first stage's hard
negatives, pipelines of several stages (``dsr train --recipe full+ce``, and ``recommended`` when
the rule chose several stages), the ``trained pipeline`` row of ``dsr reproduce
--trained-reranker``, and ``dsr kfold`` with a pipeline.

The trainings use the tiny random BERT built from a config (tests/support/tiny_bert.py) on the
CMU_DoG-shaped fixture of test_biencoder_train.py, each recipe cut down by flags given beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.training import settings as train_settings
from dsr.training.settings import PIPELINES, RECIPES, TrainSettings, pipeline_named, resolve_settings
from tests.support.tiny_bert import make_tiny_bert
from tests.training.test_biencoder_train import DOCS, FILLER, _dialogues, _write

pytestmark = pytest.mark.xdist_group("pipeline")  # one worker sets up the module fixtures (tests/support/order.py GROUPS)

#: every stage cut down to the fixture (flags given beside a pipeline apply to each stage)
SMALL = ["--epochs", "1", "--batch-size", "6", "--max-steps", "3", "--lr", "1e-3", "--save-steps", "2", "--holdout", "0.2"]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("data")
    return {
        "train": _write(folder / "train.jsonl", _dialogues(4, seed=1)),
        "dev": _write(folder / "dev.jsonl", _dialogues(2, seed=2)),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    texts = [*DOCS.values(), *DOCS, " ".join(FILLER), "0 1 2 3 4 5 6 7 8 9 ."]
    return make_tiny_bert(tmp_path_factory.mktemp("tiny"), texts, num_labels=None, max_position_embeddings=128)


# --- settings (no training) ------------------------------------------------------------------


def test_a_cross_encoder_takes_its_own_losses_and_listwise_its_list_negatives():
    ce = resolve_settings(TrainSettings(model_type="cross-encoder"))
    assert ce.loss == "bce" and ce.list_negatives is None
    listwise = resolve_settings(TrainSettings(model_type="cross-encoder", loss="listwise"))
    assert listwise.list_negatives == train_settings.LISTWISE_NEGATIVES
    assert resolve_settings(TrainSettings()).loss == "mnrl"
    hard = resolve_settings(TrainSettings(recipe="ce-hard"))
    assert (hard.model_type, hard.loss, hard.list_negatives, hard.text) == ("cross-encoder", "listwise", 4, "title: body")


@pytest.mark.parametrize(
    ("given", "field", "words"),
    [
        ({"model_type": "cross-encoder", "loss": "mnrl"}, "loss", "not a cross-encoder loss"),
        ({"loss": "listwise"}, "loss", "not a bi-encoder loss"),
        ({"model_type": "cross-encoder", "list_negatives": 3}, "list_negatives", "loss listwise"),
        ({"model_type": "cross-encoder", "loss": "listwise", "teacher": "dsr:t"}, "teacher", "bi-encoder training only"),
        ({"recipe": "ce-hard", "model_type": "bi-encoder"}, "recipe", "trains a cross-encoder"),
    ],
)
def test_losses_that_do_not_fit_the_model_name_the_setting(given, field, words):
    with pytest.raises(InputError) as err:
        resolve_settings(TrainSettings(**given))
    assert err.value.field == field and words in err.value.message


def test_a_pipeline_names_its_stages_models_and_recommended_is_one_only_when_it_has_several(monkeypatch):
    pipeline = PIPELINES["full+ce"]
    assert pipeline.models("m") == ["m", "m-ce"] and pipeline.describe("m")["top_k"] == 20
    assert [s.recipe for s in pipeline.stages] == ["full", "ce-hard"] and all(s.recipe in RECIPES for s in pipeline.stages)
    assert pipeline_named("full+ce") is pipeline and pipeline_named("full") is None
    # recommended resolves to its first stage's recipe for one training, and is a pipeline with several
    assert resolve_settings(TrainSettings(recipe="recommended")).recipe == train_settings.RECOMMENDED.stages[0].recipe
    monkeypatch.setattr(train_settings, "RECOMMENDED", pipeline)
    assert pipeline_named("recommended") is pipeline
    assert resolve_settings(TrainSettings(recipe="recommended")).recipe == "full"


def test_help_lists_the_pipelines_and_what_recommended_is(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "full+ce (a pipeline)" in out and "full as NAME then ce-hard as NAME-ce" in out
    assert "recommended: " + " then ".join(s.recipe for s in train_settings.RECOMMENDED.stages) in out


def test_the_listwise_loss_is_the_softmax_cross_entropy_of_each_points_own_list(tiny):
    """ListwiseLoss against a plain computation: per example, -log softmax(logits)[positive]
    over its positive and its list negatives, averaged (dropout off)."""
    import torch

    from dsr.rerankers.cross_encoder import score_pairs
    from dsr.training.crossencoder import ListwiseLoss, load_base

    model = load_base(tiny, 64, seed=0)
    model.eval()
    rng = np.random.default_rng(0)
    words = " ".join(DOCS.values()).split()
    columns = [[" ".join(rng.choice(words, 5)) for _ in range(3)] for _ in range(4)]  # query, positive, 2 negatives
    with torch.no_grad():
        ours = float(ListwiseLoss(model)(columns, torch.zeros(3)))
        plain = 0.0
        for i in range(3):
            logits = np.array(score_pairs(model, [(columns[0][i], columns[j][i]) for j in (1, 2, 3)]))
            plain += -(logits[0] - logits.max() - np.log(np.exp(logits - logits.max()).sum())) / 3
    assert abs(ours - plain) < 1e-5


# --- trainings on the tiny BERT ------------------------------------------------------------


@pytest.fixture(scope="module")
def pipeline_home(data, tiny, tmp_path_factory):
    """``dsr train --recipe full+ce`` cut down: the first stage, then its cross-encoder."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSR_HOME", str(home))
        args = ["train", str(data["train"]), "--name", "p", "--base", str(tiny), "--recipe", "full+ce", "--max-length", "64"]
        assert main([*args, *SMALL]) == 0
    return home


@pytest.mark.slow
def test_a_pipeline_trains_its_first_stage_then_a_listwise_cross_encoder_on_its_hard_negatives(pipeline_home, data):
    first = json.loads((pipeline_home / "models" / "p" / "dsr_model.json").read_text())
    second = json.loads((pipeline_home / "models" / "p-ce" / "dsr_model.json").read_text())
    assert first["kind"] == "bi-encoder" and first["named_recipe"] == "full"
    assert second["kind"] == "cross-encoder" and second["named_recipe"] == "ce-hard"
    for card in (first, second):
        assert card["pipeline"] == {"name": "full+ce", "models": ["p", "p-ce"], "recipes": ["full", "ce-hard"], "top_k": 20}
        assert card["training"]["steps"] == 3
        assert 0 < card["training"]["steps_seconds"] <= card["training"]["wall_seconds"]  # the trainer's own time
    # the cross-encoder's negatives were mined by the first stage, 4 per point, listwise
    miner = second["training_data"]["hard_negative_miner"]
    assert miner["miner"]["spec"] == "dsr:p" and miner["text"] == "title: body"
    trained = second["training_data"]
    assert trained["examples"] == trained["dialogues_used"] == trained["train_dialogues"]
    assert trained["list_negatives"] == trained["hard_negatives"] == 4 * trained["examples"]
    assert trained["pairs"] == 5 * trained["examples"]
    assert second["parameters"]["loss"].startswith("listwise") and second["parameters"]["list_negatives"] == 4
    assert "neg_per_pos" not in second["parameters"]


@pytest.mark.slow
def test_the_listwise_negatives_are_the_first_stages_top_non_relevant_candidates(pipeline_home, data, monkeypatch):
    """Each listwise example: the point's top-graded positive first, then 4 distinct
    non-relevant candidates of its own list among the 10 the first stage ranks highest."""
    from dsr.training import crossencoder
    from dsr.training.mining import mine_negatives

    monkeypatch.setenv("DSR_HOME", str(pipeline_home))
    dialogues = read_benchmark(data["train"]).dialogues
    settings = resolve_settings(TrainSettings(recipe="ce-hard", hard_negatives="dsr:p", hard_depth=3))
    ranked, _ = mine_negatives(dialogues, settings)
    columns, stats = crossencoder.training_examples(dialogues, settings, lambda d: d.title, "fixture", ranked)
    assert list(columns) == ["query", "positive", "negative_1", "negative_2", "negative_3", "negative_4"]
    assert stats["examples"] == len(dialogues) and stats["dialogues_short_of_negatives"] == 0
    for i, d in enumerate(dialogues):
        text = {f"{c.title}: {c.body}": c for c in d.candidates}
        positive = text[columns["positive"][i]]
        assert positive.label == max(c.label for c in d.candidates)
        negatives = [text[columns[f"negative_{j}"][i]] for j in range(1, 5)]
        assert all(c.label == 0 for c in negatives) and len({c.id for c in negatives}) == 4
        order = [cid for cid in ranked[d.id] if text_label(d, cid) == 0][:4]  # depth 3 < 4 negatives: the top 4
        assert {c.id for c in negatives} == set(order)


def text_label(dialogue, cid: str) -> int:
    return next(c.label for c in dialogue.candidates if c.id == cid)


@pytest.mark.slow
def test_the_summary_names_every_stage_and_how_to_run_the_pipeline(pipeline_home, data, tiny, monkeypatch, capsys):
    monkeypatch.setenv("DSR_HOME", str(pipeline_home))
    args = ["train", str(data["train"]), "--name", "p", "--base", str(tiny), "--recipe", "full+ce", "--max-length", "64"]
    assert main([*args, *SMALL, "--resume"]) == 0  # both stages trained already: kept, not trained again
    captured = capsys.readouterr()
    assert captured.err.count("is trained already: kept") == 2
    assert "model:" in captured.out and "p-ce" in captured.out
    assert "--model dsr:p-ce --top-k 20" in captured.out
    # without --resume an existing stage is refused, as a single training is
    assert main([*args, *SMALL]) == 2
    assert "already exists" in capsys.readouterr().err


@pytest.mark.slow
def test_recommended_trains_every_stage_the_rule_chose(data, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(train_settings, "RECOMMENDED", PIPELINES["full+ce"])
    args = ["train", str(data["train"]), "--name", "r", "--base", str(tiny), "--recipe", "recommended", "--max-length", "64"]
    assert main([*args, *SMALL]) == 0
    assert json.loads((tmp_path / "home" / "models" / "r-ce" / "dsr_model.json").read_text())["named_recipe"] == "ce-hard"


@pytest.mark.slow
def test_reproduce_adds_the_trained_pipelines_row(pipeline_home, data, tmp_path, monkeypatch):
    """`dsr reproduce --trained-dense dsr:M --trained-reranker dsr:CE`: the cross-encoder reranks
    the trained bi-encoder's own run, its top k tuned on val; the run is that run reranked."""
    from dsr.rerankers import make_reranker

    monkeypatch.setenv("DSR_HOME", str(pipeline_home))
    out = tmp_path / "out"
    common = ["reproduce", str(data["dev"]), "--no-cross-encoder", "--queries", "last", "--n-splits", "3"]
    assert main([*common, "--trained-dense", "dsr:p", "--trained-reranker", "dsr:p-ce", "--out", str(out)]) == 0
    report = json.loads((out / "results.json").read_text())
    assert "trained pipeline" in json.dumps(report)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["trained_reranker"]["spec"] == "dsr:p-ce"
    assert manifest["parameters"]["systems"]["trained pipeline"]["first stage"] == "trained bi-encoder"
    pipeline_run, first_run = out / "runs" / "trained_pipeline.run.gz", out / "runs" / "trained_bi-encoder.run.gz"
    k = json.loads(Path(str(pipeline_run) + ".json").read_text())["top_k"]  # the k chosen most often (None: all)
    collection = read_benchmark(data["dev"])
    expected = make_reranker("cross-encoder", model="dsr:p-ce").rerank(collection, Run.read(first_run), k)
    got = Run.read(pipeline_run)
    for qid, ranked in expected.rankings.items():
        assert [d for d, _ in got.rankings[qid]] == [d for d, _ in ranked]
    # without the trained bi-encoder there is nothing to rerank: exit 2 naming the flag
    assert main([*common, "--trained-dense", "none", "--trained-reranker", "dsr:p-ce", "--out", str(tmp_path / "o2")]) == 2


@pytest.mark.slow
def test_kfold_with_a_pipeline_reranks_each_folds_run_with_that_folds_cross_encoder(data, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    out = tmp_path / "kf"
    argv = ["kfold", str(data["train"]), "--eval", str(data["dev"]), "--folds", "2", "--name", "kf", "--base", str(tiny)]
    argv += ["--out", str(out), "--recipe", "full+ce", "--train-param", "max_steps=2", "batch_size=6", "max_length=64"]
    assert main(argv) == 0
    folds = json.loads((out / "kfold.run.json").read_text())["kfold"]
    assert [f["reranker"] for f in folds] == ["dsr:kf-fold0-ce", "dsr:kf-fold1-ce"] and {f["top_k"] for f in folds} == {20}
    for i in range(2):
        card = json.loads((tmp_path / "home" / "models" / f"kf-fold{i}-ce" / "dsr_model.json").read_text())
        assert card["training_data"]["selection"]["fold"] == i
        assert card["training_data"]["hard_negative_miner"]["miner"]["spec"] == f"dsr:kf-fold{i}"
