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
:mod:`dsr.training.settings` (the flags of ``dsr train`` come from there too).

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
from pathlib import Path
from typing import Any

from dsr.collections import load_collection
from dsr.collections.cmu_dog_judged import is_judged, judged_points
from dsr.core.atomic import recover_folder
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.home import models_dir
from dsr.training.card import read_card
from dsr.training.settings import Pipeline, pipeline_named, resolve_settings
from dsr.training.steps import Job, resolve_base

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def train(
    collection: Collection | str | Path,
    name: str,
    *,
    source: str | Path | None = None,
    split: str | None = None,
    recipe: str | None = None,
    base: str | None = None,
    model_type: str | None = None,
    query: str | None = None,
    text: str | None = None,
    loss: str | None = None,
    guide: str | None = None,
    teacher: str | None = None,
    context: int | None = None,
    documents: str | None = None,
    subset: str | None = None,
    val_of_split: int | None = None,
    neg_per_pos: float | None = None,
    list_negatives: int | None = None,
    random_negatives: int | None = None,
    hard_negatives: str | None = None,
    hard_depth: int | None = None,
    targets: str | None = None,
    eval_source: str | None = None,
    exclude_docs: str | None = None,
    folds: int | None = None,
    fold: int | None = None,
    holdout: float | None = None,
    holdout_max: int | None = None,
    seed: int | None = None,
    epochs: float | None = None,
    batch_size: int | None = None,
    max_length: int | None = None,
    lr: float | None = None,
    warmup: float | None = None,
    max_steps: int | None = None,
    save_steps: int | None = None,
    batching: str | None = None,
    padding: str | None = None,
    precision: str | None = None,
    resume: bool | None = None,
    overwrite: bool | None = None,
) -> dict[str, Any]:
    """Fine-tune a model on ``collection``'s labels and save it as ``DSR_HOME/models/NAME``.

    ``collection`` is a :class:`~dsr.core.data.Collection`, a registered name
    (``source``/``split`` as for :func:`~dsr.collections.load_collection`)
    or a benchmark file. Every other keyword is a setting of
    :data:`dsr.training.settings.PARAMS` (``dsr train --help`` lists them with
    their defaults); ``None`` takes the named ``recipe``'s value
    (:data:`~dsr.training.settings.RECIPES`; ``"recommended"``: the one the decision rule
    chose), else the declared default or the model type's
    (:data:`~dsr.training.settings.MODEL_DEFAULTS`).
    A wrong value is an InputError naming the setting, before anything loads.
    Returns the model card (``dsr_model.json``).
    """
    given = {
        key: value
        for key, value in locals().items()
        if key not in ("collection", "name", "source", "split") and value is not None
    }
    pipeline = pipeline_named(given.get("recipe"))
    if pipeline is not None:
        return train_pipeline(collection, name, pipeline, given, source, split)
    return train_one(collection, name, given, source, split)


def train_pipeline(collection, name: str, pipeline: Pipeline, given: dict[str, Any], source, split) -> dict[str, Any]:
    """Every stage of ``pipeline`` in turn (stage i as ``NAME + suffix``, with the settings
    given and its stage's recipe; a setting the stage ``uses`` takes an earlier stage's model).
    With ``resume``, a stage already trained is kept. Returns the first stage's card with
    ``pipeline`` (what it is) and ``stages`` (every stage's card)."""
    for stage in pipeline.stages:  # every stage's settings checked before the first trains
        resolve_settings({**given, "recipe": stage.recipe, **{k: "dsr:x" for k in stage.uses}})
    if not isinstance(collection, Collection):  # read once for every stage
        collection = load_collection(collection, source, split)
    described, cards = pipeline.describe(name), []
    for stage, model in zip(pipeline.stages, pipeline.models(name), strict=True):
        kept = models_dir() / model / "dsr_model.json"
        if given.get("resume") and kept.is_file():
            print(f"dsr train: {model} (stage {stage.recipe} of {pipeline.name}) is trained already: kept", file=sys.stderr)
            cards.append(read_card(kept.parent) or {})
            continue
        settings = {**given, "recipe": stage.recipe, **{key: f"dsr:{name}{suffix}" for key, suffix in stage.uses.items()}}
        print(
            f"dsr train: stage {len(cards) + 1} of {len(pipeline.stages)} ({pipeline.name}): {model}, recipe {stage.recipe}",
            file=sys.stderr,
        )
        cards.append(train_one(collection, model, settings, source, split, pipeline=described))
    return {**cards[0], "pipeline": described, "stages": cards}


def train_one(collection, name: str, given: dict[str, Any], source, split, pipeline: dict | None = None) -> dict[str, Any]:
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


def refuse_judged(collection, spec: str | None = None) -> None:
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
