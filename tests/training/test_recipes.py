"""Issue 41: named recipes (``dsr train --recipe NAME``), several list negatives per point,
distillation of a cross-encoder into the bi-encoder, where training ran and its peak memory,
and a full recipe interrupted (killed) and resumed to the same weights.

The trainings use the tiny random BERT (tests/support/tiny_bert.py) on the CMU_DoG-shaped fixture of
test_biencoder_train.py, with each recipe's size cut down by flags given beside it (which is
also what these tests check: a flag given beside a recipe wins over the recipe's value).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark
from dsr.core.errors import InputError
from dsr.training.finetune import _incomplete
from dsr.training.settings import MODEL_DEFAULTS, RECIPES, RECOMMENDED, TrainSettings, resolve_settings
from tests.support.tiny_bert import make_tiny_bert
from tests.training.test_biencoder_train import DOCS, FILLER, _dialogues, _write

pytestmark = pytest.mark.xdist_group("recipes")  # one worker sets up the module fixtures (tests/support/order.py GROUPS)

ROOT = Path(__file__).resolve().parents[2]
#: the full recipe cut down to the fixture: 2 passes over 18 training points in batches of 6
SMALL = ["--epochs", "2", "--batch-size", "6", "--lr", "1e-3", "--save-steps", "2", "--holdout", "0.2"]


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


# --- the registry and how a recipe's settings are resolved (no training) ---------------------


def test_a_recipe_fills_what_is_not_given_and_a_given_setting_wins():
    quick = resolve_settings(TrainSettings())
    assert quick.recipe == "quick" and quick.model_type == "bi-encoder"
    assert (quick.max_steps, quick.batch_size, quick.list_negatives, quick.text, quick.epochs) == (
        120,
        32,
        1,
        "body",
        1.0,
    )  # the default, unchanged
    full = resolve_settings(TrainSettings(recipe="full"))
    for key, value in RECIPES["full"].settings.items():
        assert getattr(full, key) == value
    assert full.padding == MODEL_DEFAULTS["bi-encoder"]["padding"]  # what the recipe leaves alone
    mine = resolve_settings(TrainSettings(recipe="full", epochs=1, text="body"))
    assert (mine.epochs, mine.text, mine.list_negatives) == (1, "body", 4)
    assert resolve_settings(TrainSettings(recipe="recommended")).recipe == RECOMMENDED.stages[0].recipe
    cross = resolve_settings(TrainSettings(model_type="cross-encoder"))
    assert cross.recipe is None and cross.max_steps == 400 and cross.list_negatives is None


@pytest.mark.parametrize(
    ("given", "field", "words"),
    [
        ({"recipe": "fulll"}, "recipe", "must be one of quick, full"),
        ({"recipe": "full", "model_type": "cross-encoder"}, "recipe", "trains a bi-encoder"),
        ({"model_type": "cross-encoder", "list_negatives": 3}, "list_negatives", "neg_per_pos"),
        ({"list_negatives": 0}, "list_negatives", ""),
        ({"loss": "distill"}, "teacher", "needs a teacher"),
        ({"teacher": "dsr:ce"}, "teacher", "loss 'distill' only"),
        ({"model_type": "cross-encoder", "teacher": "dsr:ce"}, "teacher", "bi-encoder training only"),
    ],
)
def test_settings_that_do_not_go_together_name_the_setting(given, field, words):
    with pytest.raises(InputError) as err:
        resolve_settings(TrainSettings(**given))
    assert err.value.field == field and words in str(err.value)


def test_help_lists_every_recipe_from_the_registry(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for recipe in RECIPES.values():
        assert f"{recipe.name}: " in out and " ".join(recipe.flags().split()) in out
    assert "recommended: " + " then ".join(s.recipe for s in RECOMMENDED.stages) in out


def test_a_bad_recipe_on_the_command_line_is_exit_2_naming_the_flag(data, capsys, dsr_home):
    assert main(["train", str(data["train"]), "--name", "x", "--recipe", "fulll"]) == 2
    err = capsys.readouterr().err
    assert "--recipe" in err and "Traceback" not in err
    assert not (dsr_home / "models").exists()


def test_examples_have_distinct_list_negatives_from_their_own_list():
    from dsr.training.biencoder import make_triplets

    dialogues = read_benchmark_dialogues()
    examples, counts = make_triplets(dialogues, lambda d: d.id, seed=5, negatives=4)
    by_id = {d.id: d for d in dialogues}
    assert len(examples) == len(dialogues) and counts["dialogues_short_of_negatives"] == 0
    for e in examples:
        labels = {c.id: c.label for c in by_id[e.dialogue].candidates}
        texts = {c.id: c.body for c in by_id[e.dialogue].candidates}
        assert len(e.ids) == 5 and len(set(e.ids[1:])) == 4  # 4 distinct negatives
        assert labels[e.ids[0]] == max(labels.values())  # a top-graded positive
        assert all(labels[i] == 0 for i in e.ids[1:])  # from its own list
        assert (e.positive, *e.negatives) == tuple(texts[i] for i in e.ids)
    # the one-negative draw is the earlier recipe's, example for example
    one, _ = make_triplets(dialogues, lambda d: d.id, seed=5)
    assert all(len(e.negatives) == 1 for e in one)
    # fewer non-relevant candidates than asked: all of them, then drawn again (same width)
    wide, counts = make_triplets(dialogues[:3], lambda d: d.id, seed=5, negatives=7)
    assert counts["dialogues_short_of_negatives"] == 3
    assert all(len(e.negatives) == 7 and len(set(e.ids[1:])) == 5 for e in wide)


def read_benchmark_dialogues():
    """The fixture's dialogues (8 candidates each: 3 relevant, 5 not)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        return read_benchmark(_write(Path(folder) / "d.jsonl", _dialogues(2, seed=3))).dialogues


def test_distillation_loss_is_mnrl_plus_the_kl_divergence_computed_plainly(tiny):
    """DistilledMNRLoss = MNRL + KL(teacher || student) over each example's own candidates,
    checked against a plain computation (dropout off)."""
    import torch
    from sentence_transformers import SentenceTransformer

    from dsr.training.chunks import ChunkedMNRLoss, DistilledMNRLoss

    model = SentenceTransformer(str(tiny), device="cpu")
    model.eval()
    rng = np.random.default_rng(0)
    words = " ".join(DOCS.values()).split()
    columns = [[" ".join(rng.choice(words, 6)) for _ in range(4)] for _ in range(4)]  # q, pos, 2 negs
    features = [model.preprocess(texts) for texts in columns]
    teacher = torch.tensor(rng.normal(size=(4, 3)) * 3, dtype=torch.float32)
    ours = DistilledMNRLoss(model)(features, teacher)
    mnrl = ChunkedMNRLoss(model)(features, None)
    with torch.no_grad():
        emb = [torch.nn.functional.normalize(model.encode(t, convert_to_tensor=True), dim=-1) for t in columns]
    kl = 0.0
    for i in range(4):
        student = np.array([20 * float(emb[0][i] @ emb[j][i]) for j in (1, 2, 3)])
        p = np.exp(teacher[i].numpy() - teacher[i].numpy().max())
        p /= p.sum()
        log_q = student - student.max() - np.log(np.exp(student - student.max()).sum())
        kl += float((p * (np.log(p) - log_q)).sum()) / 4
    assert abs(float(ours.detach()) - float(mnrl.detach()) - kl) < 1e-4
    assert kl > 0.01  # the teacher's order is not the student's: the term is not vacuous


# --- trainings on the tiny BERT ------------------------------------------------------------


@pytest.fixture(scope="module")
def full(data, tiny, tmp_path_factory):
    """The full recipe cut down to the fixture (2 passes, 4 list negatives, batches of 6)."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSR_HOME", str(home))
        assert main(["train", str(data["train"]), "--name", "full", "--base", str(tiny), "--recipe", "full", *SMALL]) == 0
    return home


@pytest.mark.slow
def test_full_recipe_trains_every_point_for_its_passes_with_its_list_negatives(full, capsys):
    card = json.loads((full / "models" / "full" / "dsr_model.json").read_text())
    data, params, run = card["training_data"], card["parameters"], card["training"]
    assert card["named_recipe"] == "full" and card["text"] == "title: body"
    assert params["list_negatives"] == 4 and params["batch_size"] == 6 and params["epochs"] == 2
    assert data["list_negatives"] == 4 * data["pairs"] and data["pairs"] == data["train_dialogues"]
    # every training point, twice: steps = 2 passes of ceil(points / 6) batches
    assert run["epochs"] == 2 and run["steps"] == 2 * -(-data["pairs"] // 6)
    assert run["hardware"]["device"] in ("cpu", "cuda") and run["hardware"]["name"]
    memory = run["memory"]
    assert memory["peak_rss_mib"] >= memory["peak_rss_before_training_mib"] > 50
    readme = (full / "models" / "full" / "README.md").read_text()
    assert "peak RSS" in readme and "recipe `full`" in readme


@pytest.mark.slow
def test_the_summary_says_where_it_trained_how_long_and_its_peak_memory(data, tiny, dsr_home, capsys):
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "q",
                "--base",
                str(tiny),
                "--max-steps",
                "2",
                "--batch-size",
                "6",
                "--holdout",
                "0.2",
            ]
        )
        == 0
    )
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("train:"))
    card = json.loads((dsr_home / "models" / "q" / "dsr_model.json").read_text())
    where = card["training"]["hardware"]
    assert f"on {where['device']} ({where['name']}" in line and "peak RSS" in line
    assert f"{card['training']['wall_seconds']:.0f} s" in line and "(recipe quick)" in line


@pytest.mark.slow
def test_distillation_trains_from_a_cross_encoder_teachers_scores(data, tiny, full, monkeypatch):
    """A cross-encoder trained on the bi-encoder's hard negatives, then distilled back into a
    bi-encoder: the teacher's scores are those `dsr rerank` gives the same pairs."""
    from dsr.core.run import Run
    from dsr.training import mining

    monkeypatch.setenv("DSR_HOME", str(full))
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
                "--hard-negatives",
                "dsr:full",
                "--text",
                "title: body",
                "--max-steps",
                "4",
                "--batch-size",
                "8",
                "--max-length",
                "64",
                "--holdout",
                "0.2",
            ]
        )
        == 0
    )
    seen = {}
    real = mining.teacher_scores

    def recording(dialogues, examples, teacher):
        seen["scores"], seen["info"] = real(dialogues, examples, teacher)
        seen["examples"] = examples
        return seen["scores"], seen["info"]

    monkeypatch.setattr("dsr.training.biencoder.teacher_scores", recording)
    assert (
        main(
            [
                "train",
                str(data["train"]),
                "--name",
                "distilled",
                "--base",
                str(tiny),
                "--recipe",
                "full",
                *SMALL,
                "--list-negatives",
                "3",
                "--loss",
                "distill",
                "--teacher",
                "dsr:ce",
            ]
        )
        == 0
    )
    card = json.loads((full / "models" / "distilled" / "dsr_model.json").read_text())
    assert card["parameters"]["teacher"] == "dsr:ce" and "KL" in card["parameters"]["loss"]
    assert card["training_data"]["teacher"]["pairs"] == 4 * len(seen["examples"])
    # the teacher's scores are `dsr rerank`'s for the same (dialogue, sentence) pairs
    example = seen["examples"][0]
    run = Run({example.dialogue: [(cid, -float(i)) for i, cid in enumerate(example.ids)]}, "x")
    path = full / "one.run"
    run.write(path)
    out = full / "ce.run"
    assert main(["rerank", str(data["train"]), "--run", str(path), "--model", "dsr:ce", "--out", str(out)]) == 0
    reranked = dict(Run.read(out).rankings[example.dialogue])
    assert np.allclose(seen["scores"][0], [reranked[c] for c in example.ids], atol=1e-4)


def _tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.mark.slow
def test_a_killed_full_recipe_resumes_from_its_last_checkpoint_to_the_same_weights(data, tiny, tmp_path):
    """The full recipe (cut down: 3 passes of 6 steps) is SIGKILLed mid-training, in its second
    pass, as soon as a checkpoint past step 7 is complete; `--resume` continues from it, and the
    weights equal an uninterrupted run's."""
    args = [
        "train",
        str(data["train"]),
        "--base",
        str(tiny),
        "--recipe",
        "full",
        "--epochs",
        "3",
        "--batch-size",
        "3",
        "--lr",
        "1e-3",
        "--save-steps",
        "4",
        "--holdout",
        "0.2",
        "--precision",
        "fp32",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    done = subprocess.run(
        [sys.executable, "-m", "dsr.cli", *args, "--name", "m"],
        cwd=ROOT,
        text=True,
        env={**env, "DSR_HOME": str(whole)},
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    steps = json.loads((whole / "models" / "m" / "dsr_model.json").read_text())["training"]["steps"]
    assert steps >= 12
    checkpoints = cut / "models" / ".m.partial" / "checkpoints"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dsr.cli", *args, "--name", "m"],
        cwd=ROOT,
        env={**env, "DSR_HOME": str(cut)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    # complete as --resume judges it (trainer_state.json, written last, reads back with step 8):
    # a file that merely exists may still be half written, and a kill then leaves a checkpoint
    # that --resume rightly drops for the one before it
    while _incomplete(checkpoints / "checkpoint-8", 8) is not None:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it was killed"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (cut / "models" / "m").exists()
    resumed = subprocess.run(
        [sys.executable, "-m", "dsr.cli", *args, "--name", "m", "--resume"],
        cwd=ROOT,
        text=True,
        env={**env, "DSR_HOME": str(cut)},
        capture_output=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    card = json.loads((cut / "models" / "m" / "dsr_model.json").read_text())
    assert card["training"]["resumed_from"] in ("checkpoint-8", "checkpoint-12") and card["training"]["steps"] == steps
    a, b = _tensors(whole / "models" / "m"), _tensors(cut / "models" / "m")
    assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)


@pytest.mark.slow
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU (CI has none)")
def test_on_a_gpu_the_model_and_loss_train_on_cuda_in_bf16(data, tiny, dsr_home):
    import torch

    assert main(["train", str(data["train"]), "--name", "g", "--base", str(tiny), "--recipe", "full", *SMALL]) == 0
    card = json.loads((dsr_home / "models" / "g" / "dsr_model.json").read_text())
    run = card["training"]
    assert run["device"].startswith("cuda") and run["hardware"]["device"] == "cuda"
    assert run["hardware"]["name"] == torch.cuda.get_device_name()
    assert run["memory"]["cuda_peak_mib"] > 0
    assert run["precision"]["used"] == ("bf16" if torch.cuda.is_bf16_supported() else "fp32")


def test_kfold_trains_every_fold_with_the_recipe_named(data, tiny, tmp_path, monkeypatch):
    """`dsr kfold --recipe NAME` passes the recipe to every fold's training (checked before the
    first fold trains, as --train-param is)."""
    import dsr.cli.kfold as kfold_cli

    calls = []

    def fake_train(collection, name, settings, **where):
        calls.append(settings)
        raise InputError("stop here", field="recipe")

    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(kfold_cli, "train", fake_train)
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
                str(tmp_path / "out"),
                "--recipe",
                "full",
                "--train-param",
                "epochs=2",
            ]
        )
        == 2
    )
    assert calls and (calls[0].recipe, calls[0].epochs, calls[0].fold, calls[0].base) == ("full", 2, 0, str(tiny))
    with pytest.raises(SystemExit) as exit_:
        main(
            [
                "kfold",
                str(data["train"]),
                "--eval",
                str(data["dev"]),
                "--name",
                "kf",
                "--out",
                str(tmp_path / "out"),
                "--recipe",
                "fulll",
            ]
        )
    assert exit_.value.code == 2
