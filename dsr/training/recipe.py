"""``dsr train`` as a function: :func:`train` fine-tunes a bi-encoder or a cross-encoder on a
collection's (weak) labels and saves it as ``DSR_HOME/models/NAME`` with a model card.

``model_type="bi-encoder"`` (the default recipe) fine-tunes a
sentence-transformers bi-encoder with MultipleNegativesRankingLoss (in-batch
and in-pool negatives, :mod:`dsr.training.biencoder`), usable with
``dsr run --ranker dense --param model=dsr:NAME``;
``model_type="cross-encoder"`` fine-tunes a reranker (:func:`train_cross_encoder`)
for ``dsr rerank --model dsr:NAME``. ``folds=K, fold=I`` or ``exclude_docs``
leave documents out of training (:mod:`dsr.training.folds`). The judged
development set is refused. The settings are declared once in
:class:`dsr.training.settings.TrainSettings`, which ``dsr train`` parses its flags into.

Training pairs come from a collection's training part (for example CMU_DoG
train with its silver labels, or the val half of one official split of a
collection with a split file). The model is trained in
``DSR_HOME/models/.NAME.partial`` (checkpoints included, so ``resume=True`` can
continue an interrupted run) and renamed to ``NAME`` only when it and its card
are complete.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsr.collections import load_collection
from dsr.collections.cmu_dog_judged import is_judged, judged_points
from dsr.core.atomic import recover_folder
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.home import models_dir
from dsr.training.card import read_card
from dsr.training.settings import Pipeline, Stage, TrainSettings, pipeline_named, resolve_settings
from dsr.training.steps import Job, resolve_base

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def train(
    collection: Collection | str | Path,
    name: str,
    settings: TrainSettings | None = None,
    *,
    source: str | Path | None = None,
    split: str | None = None,
    **given: Any,
) -> dict[str, Any]:
    """Fine-tune a model on ``collection``'s labels with ``settings`` (a
    :class:`~dsr.training.settings.TrainSettings`; keywords of its fields build or change one:
    ``dsr.train(c, NAME, max_steps=120)``) and save it as ``DSR_HOME/models/NAME``.

    ``collection`` is a :class:`~dsr.core.data.Collection`, a registered name
    (``source``/``split`` as for :func:`~dsr.collections.load_collection`)
    or a benchmark file. ``dsr train --help`` lists the settings with their defaults; one
    left ``None`` (a keyword given as ``None`` too) takes the named ``recipe``'s value
    (:data:`~dsr.training.settings.RECIPES`; ``"recommended"``: the one the decision rule
    chose), else the model type's (:data:`~dsr.training.settings.MODEL_DEFAULTS`).
    A wrong value is an InputError naming the setting, before anything loads.
    Returns the model card (``dsr_model.json``).
    """
    settings = TrainSettings.of(settings, {key: value for key, value in given.items() if value is not None})
    pipeline = pipeline_named(settings.recipe)
    if pipeline is not None:
        return train_pipeline(collection, name, pipeline, settings, source, split)
    return train_one(collection, name, settings, source, split)


def train_pipeline(
    collection: Collection | str | Path,
    name: str,
    pipeline: Pipeline,
    settings: TrainSettings,
    source: str | Path | None,
    split: str | None,
) -> dict[str, Any]:
    """Every stage of ``pipeline`` in turn (stage i as ``NAME + suffix``, with ``settings`` and
    its stage's recipe; a setting the stage ``uses`` takes an earlier stage's model). With
    ``resume``, a stage already trained is kept. Returns the first stage's card with
    ``pipeline`` (what it is) and ``stages`` (every stage's card)."""

    def staged(stage: Stage, model_of: Callable[[str], str]) -> TrainSettings:
        uses = {key: model_of(suffix) for key, suffix in stage.uses.items()}
        return TrainSettings.of(settings, {"recipe": stage.recipe, **uses})

    for stage in pipeline.stages:  # every stage's settings checked before the first trains
        resolve_settings(staged(stage, lambda suffix: "dsr:x"))
    if not isinstance(collection, Collection):  # read once for every stage
        collection = load_collection(collection, source, split)
    described, cards = pipeline.describe(name), []
    for stage, model in zip(pipeline.stages, pipeline.models(name), strict=True):
        kept = models_dir() / model / "dsr_model.json"
        if settings.resume and kept.is_file():
            print(f"dsr train: {model} (stage {stage.recipe} of {pipeline.name}) is trained already: kept", file=sys.stderr)
            cards.append(read_card(kept.parent) or {})
            continue
        print(
            f"dsr train: stage {len(cards) + 1} of {len(pipeline.stages)} ({pipeline.name}): {model}, recipe {stage.recipe}",
            file=sys.stderr,
        )
        stage_settings = staged(stage, lambda suffix: f"dsr:{name}{suffix}")
        cards.append(train_one(collection, model, stage_settings, source, split, pipeline=described))
    return {**cards[0], "pipeline": described, "stages": cards}


def train_one(
    collection: Collection | str | Path,
    name: str,
    given: TrainSettings,
    source: str | Path | None,
    split: str | None,
    pipeline: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One training (:func:`train` without a pipeline); ``pipeline``: what its card records of
    the pipeline it is a stage of."""
    settings = resolve_settings(given)
    if not _NAME.match(name):
        raise InputError(f"model name {name!r} must be letters, digits, '.', '_' or '-' (it becomes a folder name)", field="name")
    final = models_dir() / name
    recover_folder(final)  # a swap of NAME cut by a kill: finished or undone first
    if final.exists() and not settings.overwrite:
        raise InputError(
            f"model {name!r} already exists at {final}; overwrite it (`overwrite`) or choose another name", field="name"
        )
    job = Job(name, final, resolve_base(settings.base), str(source) if source else None, split, pipeline)
    spec = None if isinstance(collection, Collection) else str(collection)
    if not isinstance(collection, Collection):
        collection = load_collection(collection, source, split)
    refuse_judged(collection, spec)
    # the recipes import torch and sentence-transformers: only now, after the cheap checks
    if settings.model_type == "bi-encoder":
        from dsr.training.biencoder import train_bi_encoder

        return train_bi_encoder(collection, settings, job)
    from dsr.training.crossencoder import train_cross_encoder

    return train_cross_encoder(collection, settings, job)


def refuse_judged(collection: Collection, spec: str | None = None) -> None:
    """InputError for the judged development set: its labels must never be trained on.

    Recognised by name, file, hash or content (dsr.collections.cmu_dog_judged); a
    collection that holds judged query points with other (silver) labels, such as CMU_DoG
    valid, is trained on with a warning: a model trained on it is not held out from the
    judged set.
    """
    points, carrying = judged_points(collection)
    if is_judged(collection, spec):
        found = f" ({len(carrying)} of its dialogues carry the judged set's labels, e.g. {carrying[0]})" if carrying else ""
        raise InputError(
            f"{collection.name!r} is the judged development set{found}: it is for evaluation "
            "only and is never trained on; train on the silver labels, e.g. "
            "`dsr train cmu_dog --source DIR --split train`",
            field="collection",
        )
    if points:
        print(
            f"dsr: warning: {len(points)} of {len(collection)} training dialogues are query points of the "
            f"judged development set (cmu_dog_judged: CMU_DoG valid conversations), e.g. {points[0]}: "
            "a model trained on them is not held out from it, so do not compare it with others "
            "on cmu_dog_judged",
            file=sys.stderr,
        )
