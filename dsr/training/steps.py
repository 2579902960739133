"""The steps both ``dsr train`` recipes share: what is trained on (selection, excluded
documents, the held-out split), the work folder, the model card's common parts and the
final move into place. The recipes are :mod:`dsr.training.biencoder` and
:mod:`dsr.training.crossencoder`; :func:`dsr.training.recipe.train` picks one.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dsr.core.atomic import replace_folder
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.models import ResolvedModel, resolve_model
from dsr.core.provenance import TRACKED_PACKAGES, machine, now, package_versions
from dsr.training import hygiene
from dsr.training.card import write_card
from dsr.training.folds import documents, exclude_documents, fold_documents
from dsr.training.pairs import split_heldout
from dsr.training.settings import TrainSettings, decided

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder, SentenceTransformer

#: what a work folder's loader gives (a SentenceTransformer, a CrossEncoder)
M = TypeVar("M")


@dataclass(frozen=True)
class Job:
    """One training: the model's name and final folder, its resolved base, and the data's origin
    (for the card)."""

    name: str
    final: Path
    base: ResolvedModel
    source: str | None = None
    split: str | None = None
    #: the pipeline this model is a stage of (:meth:`dsr.training.settings.Pipeline.describe`)
    pipeline: dict[str, Any] | None = None


def excluded_documents(dialogues: Sequence[Dialogue], settings: TrainSettings) -> tuple[list[str], dict[str, Any]]:
    """The documents ``exclude_docs`` or ``folds``/``fold`` leave out, and how (for the card)."""
    excluded: list[str] = []
    how: dict[str, Any] = {}
    if settings.folds is not None:
        excluded = fold_documents(dialogues, settings.folds, decided(settings.fold, "fold"))
        how = {"folds": settings.folds, "fold": settings.fold}
    if settings.exclude_docs:
        named = [d.strip() for d in settings.exclude_docs.split(",") if d.strip()]
        known = set(documents(dialogues))
        unknown = [d for d in named if d not in known]
        if unknown:
            raise InputError(
                f"unknown document(s) {', '.join(unknown)}; the collection has {', '.join(sorted(known))}", field="exclude_docs"
            )
        excluded = sorted(set(excluded) | set(named))
        how["exclude_docs"] = named
    return excluded, how


def training_dialogues(
    collection: Collection, settings: TrainSettings
) -> tuple[list[Dialogue], list[Dialogue], dict[str, Any], list[str]]:
    """(training dialogues, held-out dialogues, selection for the card, excluded documents):
    ``subset``/``val_of_split``, then the conversations also evaluated on
    (:mod:`dsr.training.hygiene`), then ``exclude_docs``/``folds``, then the held-out split."""
    dialogues, selection = _select(collection, settings)
    dialogues, selection["evaluation_overlap"] = hygiene.apply(dialogues, collection, settings.eval_source, conversation_of)
    excluded, how = excluded_documents(dialogues, settings)
    if excluded:
        dialogues, dropped = exclude_documents(dialogues, excluded)
        selection.update(how, excluded_documents=excluded, **dropped)
    train_part, heldout = split_heldout(
        dialogues, settings.holdout, seed=settings.seed, limit=settings.holdout_max, group=conversation_of
    )
    return train_part, heldout, selection, excluded


def start_work(final: Path, resume: bool, load: Callable[[], M]) -> tuple[Path, M]:
    """The ``.NAME.partial`` work folder (emptied unless resuming) and ``load()``'s model."""
    work = final.parent / f".{final.name}.partial"
    if work.exists() and not resume:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        return work, load()
    except InputError:
        shutil.rmtree(work, ignore_errors=True)  # nothing to resume from a model that never loaded
        raise


def finish(
    model: SentenceTransformer | CrossEncoder,
    work: Path,
    job: Job,
    card: dict[str, Any],
    figures: dict[str, Any],
    held: dict[str, Any] | None,
    started: float,
    train_seconds: float,
) -> dict[str, Any]:
    """Save the model and its card (training figures, held-out scores, machine, versions) in the
    work folder, then move it into place; returns the card."""
    out = work / "model"
    if out.exists():
        shutil.rmtree(out)
    model.save(str(out))
    card.update(
        {
            "training": {
                **figures,
                "device": str(model.device),
                "wall_seconds": round(train_seconds, 1),
                "total_seconds": round(time.monotonic() - started, 1),
            },
            "heldout": held,
            "machine": machine(),
            "versions": package_versions((*TRACKED_PACKAGES, "datasets", "accelerate")),
        }
    )
    write_card(out, card)
    _move_into_place(out, job.final)
    shutil.rmtree(work, ignore_errors=True)
    return card


def card_head(job: Job, settings: TrainSettings, kind: str, max_length: int | None, excluded: list[str]) -> dict[str, Any]:
    """The card's first entries, the same for both recipes."""
    return {
        "format": 1,
        "name": job.name,
        "kind": kind,
        "created": now(),
        "command": ["dsr", *sys.argv[1:]] if sys.argv and "dsr" in Path(sys.argv[0]).name else None,
        "named_recipe": settings.recipe,
        "query": settings.query,
        "text": settings.text,
        "max_length": max_length,
        "excluded_documents": excluded,
        **({"pipeline": job.pipeline} if job.pipeline else {}),
    }


def base_entry(job: Job, settings: TrainSettings, head: str) -> dict[str, Any]:
    return {"spec": settings.base, "path": job.base.path, **job.base.describe(), "head": head}


def data_entry(
    collection: Collection,
    job: Job,
    selection: dict[str, Any],
    train_part: Sequence[Dialogue],
    heldout: Sequence[Dialogue],
) -> dict[str, Any]:
    return {
        "collection": collection.name,
        "hash": collection.content_hash,
        "source": collection.meta.get("path") or job.source,
        "source_split": job.split,
        "selection": selection,
        "train_dialogues": len(train_part),
        "heldout_dialogues": len(heldout),
    }


def conversation_of(dialogue: Dialogue) -> str:
    """The conversation a dialogue (query point) was cut from, for grouping held-out data."""
    meta = dialogue.meta or {}
    for key in ("conversation", "conversation_id", "dialogue_id"):
        if meta.get(key):
            return str(meta[key])
    return dialogue.id


def resolve_base(spec: str) -> ResolvedModel:
    """``base`` -> a ResolvedModel with a local checkpoint folder (dsr.core.models, offline first)."""
    try:
        resolved = resolve_model(spec, "cross-encoder")
    except InputError as err:
        raise InputError(err.message, path=err.path, field="base") from None
    if not (Path(resolved.path) / "config.json").is_file():
        raise InputError(
            f"base model {spec!r} resolved to {resolved.path}, which is not a BERT-style checkpoint folder (no config.json)",
            path=resolved.path,
            field="base",
        )
    return resolved


def _select(collection: Collection, settings: TrainSettings) -> tuple[list[Dialogue], dict[str, Any]]:
    dialogues = list(collection.dialogues)
    selection: dict[str, Any] = {}
    split = settings.val_of_split
    if split is not None:
        splits = collection.splits
        if not splits:
            raise InputError(
                f"collection {collection.name!r} has no split file, so there is no val half to train on; leave val_of_split out",
                field="val_of_split",
            )
        if split >= len(splits):
            raise InputError(
                f"split {split} does not exist; the collection has splits 0..{len(splits) - 1}", field="val_of_split"
            )
        val = set(splits[split][0])
        dialogues = [d for d in dialogues if d.id in val]
        selection["val_of_split"] = split
    if settings.subset:
        if settings.subset not in collection.subsets:
            raise InputError(
                f"no subset {settings.subset!r} in {collection.name!r}; it has {', '.join(collection.subsets)}", field="subset"
            )
        dialogues = [d for d in dialogues if d.subset == settings.subset]
        selection["subset"] = settings.subset
    if not dialogues:
        raise InputError("no dialogues left to train on after the selection", field="subset")
    return dialogues, selection


def _move_into_place(out: Path, final: Path) -> None:
    """Swap the finished folder in as NAME (an old NAME, with overwrite, goes only after that
    works; a kill between the renames is finished by the next command: dsr.core.atomic)."""
    replace_folder(out, final)
