"""What ``dsr train`` takes, declared once as the fields of :class:`TrainSettings` (each
carries its :class:`~dsr.core.params.Param`), and the named recipes (:data:`RECIPES`),
declared once as :class:`Recipe`\\ s.

``dsr train``'s flags (``--max-steps``...), :func:`dsr.train`'s record and keyword
arguments, their checks (exit 2 naming the setting) and the model card's parameters all come
from :class:`TrainSettings` (:data:`PARAMS`: its fields as Params). A setting a recipe or the
model type decides (``text``, ``epochs``, ``query``, ``batch_size``, ``max_length``,
``max_steps``, ``save_steps``, ``lr``, ``batching``, ``list_negatives``...) is declared with
default ``None`` and filled (:func:`resolve_settings`), in this order, by what was given, by
the named recipe (``recipe``: :data:`RECIPES`, ``recommended`` being :data:`RECOMMENDED`),
then by :data:`MODEL_DEFAULTS` for ``model_type``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from dsr.core import registry
from dsr.core.candidate_text import CONTEXT_FORM, TEXT_FORMS
from dsr.core.errors import InputError
from dsr.core.params import Settings, setting
from dsr.core.queries import STRATEGIES
from dsr.training.pairs import TARGETS

DEFAULT_BASE = "all-MiniLM-L6-v2"
MODEL_TYPES = ("bi-encoder", "cross-encoder")
#: each model type's losses, its default first
MODEL_LOSSES = {"bi-encoder": ("mnrl", "gist", "distill"), "cross-encoder": ("bce", "listwise")}
LOSSES = (*MODEL_LOSSES["bi-encoder"], *MODEL_LOSSES["cross-encoder"])
#: the list negatives of a listwise cross-encoder example where none are given
LISTWISE_NEGATIVES = 4
DEFAULT_MODEL_TYPE = "bi-encoder"


@dataclass(frozen=True)
class Recipe:
    """A named set of ``dsr train`` settings (``dsr train --recipe NAME``): what it sets (names
    of :data:`PARAMS`), in a line for ``--help`` and the docs, and what it costs."""

    name: str
    summary: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    cost: str = ""

    @property
    def model_type(self) -> str:
        return self.settings.get("model_type", DEFAULT_MODEL_TYPE)

    def flags(self) -> str:
        """The recipe as ``dsr train`` flags (``--max-steps -1 --epochs 3 ...``)."""

        def shown(value: Any) -> str:
            text = f"{value:g}".replace("e-0", "e-") if isinstance(value, float) else str(value)
            return f'"{text}"' if " " in text else text

        return " ".join(f"--{k.replace('_', '-')} {shown(v)}" for k, v in self.settings.items())


#: the named recipes, the quick default first (``dsr train --recipe NAME``; docs/training.md
#: lists them from here, ``python tools/docs_lists.py --write``)
RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "quick",
            "the default: 120 steps of 32 (3,840 of the 7,046 CMU_DoG training points, "
            "about half a pass), one list negative per point, lr 5e-5, candidates as bodies",
            cost="minutes of training on a laptop CPU; its time is on the docs' Benchmarks page",
        ),
        Recipe(
            "full",
            "every training point, 3 passes, 4 list negatives per point from its own "
            "candidate list, batches of 64, candidates as 'title: body'",
            {
                "text": "title: body",
                "max_steps": -1,
                "epochs": 3.0,
                "batch_size": 64,
                "list_negatives": 4,
                "lr": 5e-5,
                "save_steps": 50,
            },
            cost="333 steps, bf16 autocast where the CPU has it: several times the quick recipe's time",
        ),
        Recipe(
            "ce-hard",
            "a cross-encoder reranker for a trained first stage: MiniLM-L6 with a new one-logit "
            "head, a listwise loss over each point's positive and 4 negatives drawn among the "
            "10 non-relevant candidates the first stage (--hard-negatives) ranks highest, "
            "batches of 8 points (40 pairs), candidates as 'title: body'",
            {
                "model_type": "cross-encoder",
                "loss": "listwise",
                "text": "title: body",
                "list_negatives": 4,
                "hard_depth": 10,
                "batch_size": 8,
                "max_steps": 400,
                "lr": 5e-5,
                "save_steps": 50,
            },
        ),
    )
}
# the registry's recipes (kind ``recipe``): these, then other packages' (entry points ``dsr.recipes``)
for _recipe in RECIPES.values():
    registry.register("recipe", _recipe.name, _recipe)
DEFAULT_RECIPE = "quick"


@dataclass(frozen=True)
class Stage:
    """One model of a :class:`Pipeline`: trained with the recipe ``recipe`` as ``NAME +
    suffix``; ``uses`` names the settings that take an earlier stage's model (setting -> that
    stage's suffix: ``{"hard_negatives": ""}`` mines with the first stage, ``dsr:NAME``);
    ``top_k``, for a reranker, is how many of the first stage's candidates it reranks."""

    recipe: str
    suffix: str = ""
    uses: Mapping[str, str] = field(default_factory=dict)
    top_k: int | None = None


@dataclass(frozen=True)
class Pipeline:
    """Models trained one after the other (``dsr train --recipe NAME`` trains every stage):
    a first stage, then e.g. a cross-encoder on its hard negatives."""

    name: str
    summary: str
    stages: tuple[Stage, ...]

    def models(self, name: str) -> list[str]:
        """The models' names for a pipeline trained as ``name``."""
        return [name + stage.suffix for stage in self.stages]

    def describe(self, name: str) -> dict[str, Any]:
        """What each stage's card records of the pipeline."""
        return {
            "name": self.name,
            "models": self.models(name),
            "recipes": [stage.recipe for stage in self.stages],
            "top_k": next((stage.top_k for stage in self.stages if stage.top_k), None),
        }


#: the named pipelines (``dsr train --recipe NAME`` trains each stage in turn)
PIPELINES: dict[str, Pipeline] = {
    p.name: p
    for p in (
        Pipeline(
            "full+ce",
            "the full bi-encoder recipe, then the ce-hard cross-encoder on its hard negatives "
            "reranking its top 20: models NAME and NAME-ce",
            (Stage("full"), Stage("ce-hard", "-ce", {"hard_negatives": ""}, top_k=20)),
        ),
    )
}
#: what the decision rule chose (``dsr train --recipe recommended``; the training-recipes study,
#: experiments/training_recipes.py: ``full`` beat the quick recipe on title: body candidates on
#: the judged development set and on silver valid, Holm-corrected; the second-stage study,
#: experiments/second_stage.py, judges what builds on it): the full bi-encoder recipe alone
RECOMMENDED = Pipeline("recommended", "the full bi-encoder recipe (the rule's choice)", (Stage("full"),))
#: every recipe's and pipeline's name, and ``recommended`` (read when used)
RECIPE_NAMES = registry.Names("recipe", extra=(*PIPELINES, "recommended"))


class _TrainPart(Settings):
    """A part of ``dsr train``'s settings: a wrong value is refused ``of dsr train``."""

    WHAT: ClassVar[str] = "dsr train"


@dataclass(frozen=True, kw_only=True)
class ChoiceSettings(_TrainPart):
    """The named recipe whose settings fill those not given."""

    recipe: str | None = setting(
        None,
        "a named recipe (listed below): its settings fill those not "
        f"given; a pipeline ({', '.join(PIPELINES)}) trains each of its stages; recommended is "
        f"what the decision rule chose ({' then '.join(s.recipe for s in RECOMMENDED.stages)}); "
        f"default {DEFAULT_RECIPE} for a bi-encoder, none for a cross-encoder",
        choices=RECIPE_NAMES,
        metavar="NAME",
    )


@dataclass(frozen=True, kw_only=True)
class ModelSettings(_TrainPart):
    """The model: what is trained, from what, on which query and candidate text."""

    base: str = setting(
        DEFAULT_BASE,
        "starting checkpoint: a short name, a local folder or "
        "dsr:NAME (a BERT-style encoder; a cross-encoder's classification head starts "
        "untrained)",
        metavar="MODEL",
    )
    model_type: str | None = setting(
        None, "bi-encoder (MultipleNegativesRankingLoss; the default) or cross-encoder (BCE)", choices=MODEL_TYPES
    )
    query: str | None = setting(
        None,
        "query strategy (default: title+recent for a bi-encoder, weighted for a cross-encoder)",
        choices=STRATEGIES,
        metavar="STRATEGY",
    )
    text: str | None = setting(
        None,
        "what a candidate's text is in training (default body, or the "
        "recipe's; a cross-encoder: body or 'title: body'); the card records it and `dsr "
        "run`/`dsr rerank` read candidates so",
        choices=TEXT_FORMS,
    )
    loss: str | None = setting(
        None,
        "bi-encoder loss: mnrl (MultipleNegativesRankingLoss, the default), gist "
        "(GISTEmbedLoss: in-batch negatives the guide model scores above the positive are "
        "masked) or distill (mnrl plus the KL divergence from the teacher cross-encoder's "
        "scores of each example's positive and list negatives); cross-encoder loss: bce "
        "(binary cross-entropy on pairs, the default) or listwise (softmax cross-entropy of "
        "the point's positive against its list_negatives, all scored by the model)",
        choices=LOSSES,
    )
    guide: str | None = setting(None, "with loss gist: the guide model (default: the base model, zero-shot)", metavar="MODEL")
    teacher: str | None = setting(
        None,
        "with loss distill: the cross-encoder whose scores are "
        "distilled (dsr:NAME from `dsr train --model-type cross-encoder`, or a folder)",
        metavar="MODEL",
    )
    context: int | None = setting(
        None,
        "with text 'title: previous [SEP] body [SEP] next': neighbouring sentences on each side (default 1; the card records it)",
        low=1,
        high=20,
        metavar="N",
    )
    documents: str | None = setting(
        None,
        "with the context text form: the documents' folder (CMU_DoG: "
        "its folder with WikiData/; default: the collection's source, else "
        "$DSR_HOME/data/cmu_dog)",
        metavar="DIR",
    )


@dataclass(frozen=True, kw_only=True)
class DataSettings(_TrainPart):
    """The training data: which dialogues, which negatives, what is held out."""

    subset: str | None = setting(None, "train only on dialogues of this subset", metavar="NAME")
    val_of_split: int | None = setting(
        None,
        "train on the val half of official split K (collections with a split file, e.g. sigir2022: the supervised setting)",
        low=0,
        metavar="K",
    )
    neg_per_pos: float = setting(
        3.0, "cross-encoder with loss bce: in-list negatives per positive (sampled; -1 keeps all)", low=-1, metavar="R"
    )
    list_negatives: int | None = setting(
        None,
        "bi-encoder, and a cross-encoder with loss listwise: negatives per training point "
        "drawn from its own candidate list (default 1, or the recipe's; listwise 4), beside "
        "a bi-encoder's in-batch ones",
        low=1,
        high=49,
        metavar="N",
    )
    random_negatives: int = setting(
        0, "cross-encoder: random sentences from other dialogues added as negatives, per dialogue", low=0, metavar="N"
    )
    hard_negatives: str | None = setting(
        None,
        "a bi-encoder (a model name or dsr:NAME) that picks the "
        "pool negatives: drawn among the non-relevant candidates it ranks highest (its top "
        "--hard-depth) rather than among all of them",
        metavar="MODEL",
    )
    hard_depth: int = setting(
        10,
        "with hard_negatives: how deep in the miner's ranking of a dialogue's non-relevant candidates negatives are drawn",
        low=1,
        metavar="N",
    )
    targets: str = setting("binary", "cross-encoder: binary (label > 0 -> 1) or graded (label / highest label)", choices=TARGETS)
    eval_source: str | None = setting(
        None,
        "a CMU_DoG folder whose evaluation splits (valid, test) are "
        "read: training conversations that also appear there are dropped, as are the judged "
        "development set's (default: the collection's source, else $DSR_HOME/data/cmu_dog)",
        metavar="DIR",
    )
    exclude_docs: str | None = setting(
        None,
        "leave these documents (meta.document, e.g. CMU_DoG films) "
        "out of training: their dialogues and their sentences in every pool",
        metavar="DOC[,DOC...]",
    )
    folds: int | None = setting(None, "document folds (with fold): train without fold I's documents", low=2, metavar="K")
    fold: int | None = setting(None, "the fold left out (0..K-1)", low=0, metavar="I")
    holdout: float = setting(
        0.1,
        "fraction of dialogues (whole conversations) kept out for the card's metrics",
        low=0,
        below=1,
        metavar="FRACTION",
    )
    holdout_max: int = setting(100, "at most this many held-out dialogues (scoring them takes time on CPU)", low=1, metavar="N")


#: the trainer's loss lines come every this many steps (not a setting; the card records it)
LOGGING_STEPS = 50


@dataclass(frozen=True, kw_only=True)
class OptimisationSettings(_TrainPart):
    """The optimisation: what sentence-transformers' trainer is given
    (:func:`dsr.training.finetune.training_arguments`)."""

    seed: int = setting(42, "seed of the head, dropout, data order and sampling")
    epochs: float | None = setting(
        None, "passes over the training data (default 1, or the recipe's; reached when max_steps is -1)", above=0
    )
    batch_size: int | None = setting(None, "examples per step (default: 32 bi-encoder, 16 cross-encoder)", low=1, metavar="N")
    max_length: int | None = setting(
        None,
        "word pieces of query + sentence (cross-encoder) or of one "
        "text (bi-encoder); default: the bi-encoder's own (256 for all-MiniLM-L6-v2), 128 "
        "cross-encoder",
        low=8,
        metavar="L",
    )
    lr: float | None = setting(None, "peak learning rate (default 5e-5)", above=0)
    warmup: float = setting(0.1, "linear warm-up: a fraction of the steps when < 1, else steps", low=0, metavar="W")
    max_steps: int | None = setting(
        None,
        "stop after N optimiser steps (-1: run all epochs; default 120 bi-encoder, 400 cross-encoder)",
        low=-1,
        metavar="N",
    )
    save_steps: int | None = setting(None, "checkpoint every N steps (the last two are kept until the end)", low=1, metavar="N")
    batching: str | None = setting(
        None,
        "bi-encoder: random (no-duplicate batches) or by-length "
        "(the same, each batch re-cut among examples of similar length: less padding, other "
        "in-batch negatives); default random",
        choices=("random", "by-length"),
    )
    padding: str | None = setting(
        None,
        "bi-encoder: column (each column of a batch padded to its "
        "longest text, as sentence-transformers does) or chunks (the batch's texts sorted by "
        "length and encoded in chunks, each padded to its own longest: the same embeddings "
        "and loss for about half the computation; the bi-encoder's default; a "
        "cross-encoder's is column)",
        choices=("column", "chunks"),
    )
    precision: str = setting(
        "auto",
        "auto: bf16 autocast where the CPU (amx_bf16, avx512_bf16) or "
        "GPU has bf16 units, else fp32; bf16 insists (refused without such units); the card "
        "records the choice",
        choices=("auto", "bf16", "fp32"),
    )
    resume: bool = setting(False, "continue from the newest checkpoint of an interrupted run of NAME")
    overwrite: bool = setting(False, "replace an existing model NAME")

    def card_parameters(self, max_length: int | None) -> dict[str, Any]:
        """The optimisation as the model card's ``parameters`` open (``max_length``: what the
        model was trained at; 0 when unknown), in the order cards have always had it."""
        return {
            "seed": self.seed,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "max_length": max_length or 0,
            "lr": self.lr,
            "warmup": self.warmup,
            "max_steps": self.max_steps,
            "save_steps": self.save_steps,
            "logging_steps": LOGGING_STEPS,
            "precision": self.precision,
        }


@dataclass(frozen=True, kw_only=True)
class TrainSettings(OptimisationSettings, DataSettings, ModelSettings, ChoiceSettings):
    """Every setting of one training (``dsr.train``, ``dsr train``), each checked when made: an
    InputError naming the field and what it accepts. A field declared ``None`` is decided by
    the recipe or the model type (:func:`resolve_settings`, which also checks the rules between
    settings); the trainers read a resolved record."""


#: every field of :class:`TrainSettings` as a Param, in order (the parts' fields in turn)
PARAMS = TrainSettings.params()
#: the groups ``dsr train --help`` shows the settings in
GROUPS = {
    "recipe": ChoiceSettings.params(),
    "model": ModelSettings.params(),
    "data": DataSettings.params(),
    "optimisation": OptimisationSettings.params(),
}

#: what each model type defaults to where a setting is declared without a default and neither
#: the call nor the recipe sets it
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "cross-encoder": {
        "loss": "bce",
        "query": "weighted",
        "batch_size": 16,
        "max_steps": 400,
        "max_length": 128,
        "save_steps": 100,
        "lr": 5e-5,
        "batching": "random",
        "padding": "column",
        "text": "body",
        "epochs": 1.0,
    },
    # the earlier recipe stays (shorter ones, e.g. 56 steps of 32 at 128 word pieces, are
    # lower on the judged development set), computed without most of its padding (`padding`
    # chunks, dsr.training.chunks: the same embeddings and loss, about half the time of padding
    # per column), which `dsr decide` finds not significantly different
    # on either label set (the training-levers study, experiments/training_levers.py)
    "bi-encoder": {
        "loss": "mnrl",
        "query": "title+recent",
        "batch_size": 32,
        "max_steps": 120,
        "max_length": None,
        "save_steps": 60,
        "lr": 5e-5,
        "batching": "random",
        "padding": "chunks",
        "text": "body",
        "epochs": 1.0,
        "list_negatives": 1,
    },
}


def pipeline_named(name: str | None) -> Pipeline | None:
    """The pipeline ``name`` stands for when it trains several models (``recommended`` with
    several stages, or a name of :data:`PIPELINES`), else None (one training)."""
    pipeline = RECOMMENDED if name == "recommended" else PIPELINES.get(name or "")
    return pipeline if pipeline is not None and len(pipeline.stages) > 1 else None


def recipe_named(name: str) -> Recipe:
    """The recipe ``name`` (``recommended``, or a pipeline: its first stage's)."""
    if name == "recommended":
        name = RECOMMENDED.stages[0].recipe
    elif name in PIPELINES:
        name = PIPELINES[name].stages[0].recipe
    found: Recipe | None = registry.find("recipe", name)
    if found is None:
        raise InputError(f"unknown recipe {name!r}; choose from {', '.join(RECIPE_NAMES)}", field="recipe")
    return found


def resolve_settings(settings: TrainSettings) -> TrainSettings:
    """``settings`` with the named recipe's settings and the model type's defaults filled in
    where nothing was given (a field left ``None``), the rules between settings checked: a
    record whose ``recipe`` is the recipe's own name (``recommended`` resolved) and whose
    fields :func:`decided` reads are set. InputError names the setting at fault."""
    values = settings.values()
    if values["recipe"] is None and values["model_type"] in (None, DEFAULT_MODEL_TYPE):
        values["recipe"] = DEFAULT_RECIPE
    if values["recipe"] is not None:
        recipe = recipe_named(values["recipe"])
        values["recipe"] = recipe.name
        if values["model_type"] not in (None, recipe.model_type):
            raise InputError(
                f"recipe {recipe.name!r} trains a {recipe.model_type}, not a "
                f"{values['model_type']}; leave `model_type` out or choose another "
                "recipe",
                field="recipe",
            )
        values.update({key: value for key, value in recipe.settings.items() if values[key] is None})
    values["model_type"] = values["model_type"] or DEFAULT_MODEL_TYPE
    for key, value in MODEL_DEFAULTS[values["model_type"]].items():
        if values[key] is None:
            values[key] = value
    if values["model_type"] == "cross-encoder" and values["loss"] == "listwise" and values["list_negatives"] is None:
        values["list_negatives"] = LISTWISE_NEGATIVES
    check_combinations(values)
    return TrainSettings(**values)


T = TypeVar("T")


def decided(value: T | None, name: str) -> T:
    """A setting :func:`resolve_settings` always fills (``query``, ``text``, ``loss``,
    ``epochs``...; :data:`MODEL_DEFAULTS`), read by a trainer: ValueError when ``None``, a
    record that did not pass through :func:`resolve_settings` (the code's mistake)."""
    if value is None:
        raise ValueError(f"setting {name} is unresolved: the trainers take resolve_settings' record")
    return value


def check_combinations(values: dict[str, Any]) -> None:
    """InputError for settings that do not go together (``values``: every setting resolved)."""
    if values["max_steps"] == 0:
        raise InputError("must be a positive number of steps or -1, got 0", field="max_steps")
    if (values["folds"] is None) != (values["fold"] is None):
        raise InputError("folds K and fold I go together", field="folds")
    if values["text"] != CONTEXT_FORM and (values["context"] is not None or values["documents"] is not None):
        raise InputError(
            f"context and documents apply to text {CONTEXT_FORM!r} only",
            field="context" if values["context"] is not None else "documents",
        )
    own = MODEL_LOSSES[values["model_type"]]
    if values["loss"] not in own:
        raise InputError(
            f"loss {values['loss']!r} is not a {values['model_type']} loss; choose from {', '.join(own)}", field="loss"
        )
    if values["model_type"] == "bi-encoder":
        if values["loss"] == "distill" and values["teacher"] is None:
            raise InputError(
                "loss 'distill' needs a teacher: the cross-encoder whose scores are "
                "distilled (e.g. dsr:NAME from `dsr train --model-type cross-encoder`)",
                field="teacher",
            )
        if values["teacher"] is not None and values["loss"] != "distill":
            raise InputError("teacher applies to loss 'distill' only", field="teacher")
        if values["guide"] is not None and values["loss"] != "gist":
            raise InputError("guide applies to loss 'gist' only", field="guide")
        return
    bi_only = [
        (
            "text",
            values["text"] == CONTEXT_FORM,
            f"text {CONTEXT_FORM!r} applies to bi-encoder training only (a cross-encoder reads 'body' or 'title: body')",
        ),
        ("batching", values["batching"] != "random", "batching applies to bi-encoder training only"),
        ("padding", values["padding"] != "column", "padding 'chunks' applies to bi-encoder training only"),
        (
            "list_negatives",
            values["list_negatives"] is not None and values["loss"] != "listwise",
            "list_negatives applies to bi-encoder training and to a cross-encoder with loss "
            "listwise (with loss bce its negatives are neg_per_pos per positive)",
        ),
    ]
    bi_only += [
        (
            name,
            values[name] is not None,
            "guide and teacher apply to bi-encoder training only (a cross-encoder learns from the labels)",
        )
        for name in ("guide", "teacher")
    ]
    for name, wrong, why in bi_only:
        if wrong:
            raise InputError(why, field=name)


def _check_recipes() -> None:
    """A recipe sets only declared settings, to allowed values; a pipeline's stages name
    recipes and earlier stages (a mistake here is the code's)."""
    table = {p.name: p for p in PARAMS}
    for recipe in RECIPES.values():
        for key, value in recipe.settings.items():
            if key not in table or key == "recipe":
                raise ValueError(f"recipe {recipe.name!r} sets {key!r}, not a setting it can set")
            table[key].check(value, f"recipe {recipe.name!r}")
    for pipeline in (*PIPELINES.values(), RECOMMENDED):
        seen: list[str] = []
        for stage in pipeline.stages:
            if stage.recipe not in RECIPES or stage.suffix in seen:
                raise ValueError(f"pipeline {pipeline.name!r}: stage {stage.recipe!r} (suffix {stage.suffix!r})")
            if any(key not in table or suffix not in seen for key, suffix in stage.uses.items()):
                raise ValueError(f"pipeline {pipeline.name!r}: stage {stage.recipe!r} uses {dict(stage.uses)}")
            seen.append(stage.suffix)


_check_recipes()
