"""``dsr train``'s settings record: the fields are the flags, a keyword builds the same record, and
what a set of settings resolves to (and what the model card records of it) stays what the
settings made before the record was static.

The expected values below were computed by the previous implementation (a record made at run
time from the Params, the trainer's own copy of the optimisation settings), not by the code
under test: a change here changes what users' existing command lines train and what their
cards say.
"""

from __future__ import annotations

import pytest

import dsr
from dsr.cli import build_parser
from dsr.core.errors import InputError
from dsr.training.settings import GROUPS, PARAMS, TrainSettings, decided, resolve_settings

#: every setting's default, as the previous declaration had it
DEFAULTS = {
    "recipe": None,
    "base": "all-MiniLM-L6-v2",
    "model_type": None,
    "query": None,
    "text": None,
    "loss": None,
    "guide": None,
    "teacher": None,
    "context": None,
    "documents": None,
    "subset": None,
    "val_of_split": None,
    "neg_per_pos": 3.0,
    "list_negatives": None,
    "random_negatives": 0,
    "hard_negatives": None,
    "hard_depth": 10,
    "targets": "binary",
    "eval_source": None,
    "exclude_docs": None,
    "folds": None,
    "fold": None,
    "holdout": 0.1,
    "holdout_max": 100,
    "seed": 42,
    "epochs": None,
    "batch_size": None,
    "max_length": None,
    "lr": None,
    "warmup": 0.1,
    "max_steps": None,
    "save_steps": None,
    "batching": None,
    "padding": None,
    "precision": "auto",
    "resume": False,
    "overwrite": False,
}

QUICK = {"recipe": "quick", "model_type": "bi-encoder", "query": "title+recent", "text": "body", "loss": "mnrl"}
QUICK_OPT = {"epochs": 1.0, "batch_size": 32, "lr": 5e-05, "max_steps": 120, "save_steps": 60}
BI = {"list_negatives": 1, "batching": "random", "padding": "chunks"}
FULL = {"recipe": "full", "model_type": "bi-encoder", "query": "title+recent", "text": "title: body", "loss": "mnrl"}
FULL_OPT = {"list_negatives": 4, "batch_size": 64, "lr": 5e-05, "max_steps": -1, "save_steps": 50}
CE = {"model_type": "cross-encoder", "query": "weighted", "text": "body", "batching": "random", "padding": "column"}
CE_OPT = {"epochs": 1.0, "batch_size": 16, "max_length": 128, "lr": 5e-05, "max_steps": 400, "save_steps": 100}

#: (given, what resolution changes from DEFAULTS, the card's optimisation parameters' changes
#: from the quick recipe's)
CASES = [
    ({}, {**QUICK, **QUICK_OPT, **BI}, {}),
    (
        {"recipe": "full"},
        {**FULL, **FULL_OPT, "epochs": 3.0, **BI, "list_negatives": 4},
        {"epochs": 3.0, "batch_size": 64, "max_steps": -1, "save_steps": 50},
    ),
    (
        {"recipe": "ce-hard", "hard_negatives": "dsr:p"},
        {
            **CE,
            **CE_OPT,
            "recipe": "ce-hard",
            "text": "title: body",
            "loss": "listwise",
            "list_negatives": 4,
            "hard_negatives": "dsr:p",
            "batch_size": 8,
            "save_steps": 50,
        },
        {"batch_size": 8, "max_length": 128, "max_steps": 400, "save_steps": 50},
    ),
    (
        {"model_type": "cross-encoder"},
        {**CE, **CE_OPT, "loss": "bce"},
        {"batch_size": 16, "max_length": 128, "max_steps": 400, "save_steps": 100},
    ),
    (
        {"model_type": "cross-encoder", "loss": "listwise", "seed": 7, "warmup": 5},
        {**CE, **CE_OPT, "loss": "listwise", "list_negatives": 4, "seed": 7, "warmup": 5},
        {"seed": 7, "batch_size": 16, "max_length": 128, "warmup": 5, "max_steps": 400, "save_steps": 100},
    ),
    (
        {"max_steps": 56, "max_length": 128, "lr": 1e-4, "batching": "by-length", "precision": "fp32"},
        {
            **QUICK,
            **QUICK_OPT,
            **BI,
            "max_length": 128,
            "lr": 1e-4,
            "max_steps": 56,
            "batching": "by-length",
            "precision": "fp32",
        },
        {"max_length": 128, "lr": 1e-4, "max_steps": 56, "precision": "fp32"},
    ),
    (
        {"recipe": "recommended", "epochs": 1, "text": "title: body"},
        {**FULL, **FULL_OPT, "epochs": 1, **BI, "list_negatives": 4},
        {"epochs": 1, "batch_size": 64, "max_steps": -1, "save_steps": 50},
    ),
]

#: the card's optimisation parameters of the quick recipe (the trainer's settings as the card has
#: always recorded them: ``max_length`` 0 where the model's own is used)
QUICK_CARD = {
    "seed": 42,
    "epochs": 1.0,
    "batch_size": 32,
    "max_length": 0,
    "lr": 5e-05,
    "warmup": 0.1,
    "max_steps": 120,
    "save_steps": 60,
    "logging_steps": 50,
    "precision": "auto",
}


@pytest.mark.parametrize(("given", "changed", "card"), CASES)
def test_a_set_of_settings_resolves_and_is_carded_as_before(given, changed, card):
    resolved = resolve_settings(TrainSettings(**given))
    assert resolved.values() == {**DEFAULTS, **changed}
    assert list(resolved.values()) == list(DEFAULTS)  # the flags' and the card's order
    assert resolved.card_parameters(resolved.max_length) == {**QUICK_CARD, **card}
    assert list(resolved.card_parameters(None)) == list(QUICK_CARD)


def test_the_fields_are_the_flags_and_the_command_line_builds_the_record_python_builds():
    parser = build_parser()
    train = next(a for a in parser._actions if a.dest == "command").choices["train"]
    by_flag = {o: a for a in train._actions for o in a.option_strings}
    for p in PARAMS:
        action = by_flag["--" + p.name.replace("_", "-")]
        assert action.param == p and action.default == p.default  # add_param_flags keeps the Param
    assert [p for group in GROUPS.values() for p in group] == list(PARAMS)
    args = parser.parse_args(
        ["train", "sample", "--name", "x", "--max-steps", "7", "--lr", "1e-4", "--model-type", "cross-encoder", "--resume"]
    )
    assert TrainSettings.from_values(args) == TrainSettings(max_steps=7, lr=1e-4, model_type="cross-encoder", resume=True)
    assert TrainSettings.of(TrainSettings(max_steps=7), {"lr": 1e-4}) == TrainSettings(max_steps=7, lr=1e-4)


def test_a_wrong_setting_is_refused_when_the_record_is_made_naming_it():
    with pytest.raises(InputError) as err:
        TrainSettings(lr=-1)
    assert err.value.field == "lr" and "parameter lr of dsr train must be a number > 0" in err.value.message
    with pytest.raises(InputError) as err:
        dsr.train("sample", "x", max_stepz=3)  # refused before the collection is read
    assert err.value.field == "max_stepz" and "max_steps" in err.value.message
    with pytest.raises(InputError) as err:
        dsr.train("sample", "x", TrainSettings(), holdout=1.0)
    assert err.value.field == "holdout"


def test_a_keyword_given_as_none_takes_the_recipes_value(monkeypatch):
    seen = []
    monkeypatch.setattr("dsr.training.recipe.train_one", lambda collection, name, settings, *a, **k: seen.append(settings))
    dsr.train("sample", "x", seed=None, max_steps=None, lr=3e-5)
    assert seen == [TrainSettings(lr=3e-5)] and resolve_settings(seen[0]).max_steps == 120


def test_decided_refuses_an_unresolved_setting():
    assert decided(resolve_settings(TrainSettings()).text, "text") == "body"
    with pytest.raises(ValueError, match="text is unresolved"):
        decided(TrainSettings().text, "text")
