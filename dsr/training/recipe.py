"""The training recipes behind ``dsr train``: fine-tune a bi-encoder or a cross-encoder on a
collection's (weak) labels.

``--model-type bi-encoder`` (the default recipe) fine-tunes a
sentence-transformers bi-encoder with MultipleNegativesRankingLoss (in-batch
and in-pool negatives, :mod:`dsr.training.biencoder`), usable with
``dsr run --ranker dense --param model=dsr:NAME``;
``--model-type cross-encoder`` fine-tunes a reranker (below).
``--folds K --fold I`` or ``--exclude-docs`` leave documents out of training
(:mod:`dsr.training.folds`). The judged development set is refused.

Training pairs come from a collection's training part (for example CMU_DoG
train with its silver labels, or the val half of one official split of a
collection with a split file), a cross-encoder is fine-tuned on them with
sentence-transformers, and the result is saved as ``DSR_HOME/models/NAME``
with a model card, ready for ``dsr rerank --model dsr:NAME``.

The model is trained in ``DSR_HOME/models/.NAME.partial`` (checkpoints
included, so ``--resume`` can continue an interrupted run) and renamed to
``NAME`` only when it and its card are complete.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from retrieval.errors import InputError
from retrieval.provenance import now

DEFAULT_BASE = "all-MiniLM-L6-v2"
#: Most recent turn first: cross-encoders truncate the end of a long input,
#: so this keeps the latest turns (see retrieval.queries).
DEFAULT_QUERY = "weighted"
DEFAULTS: dict[str, Any] = {
    "seed": 42, "epochs": 1.0, "batch_size": 16, "max_length": 128, "lr": 5e-5, "warmup": 0.1,
    "max_steps": 400, "neg_per_pos": 3.0, "random_negatives": 0, "targets": "binary",
    "holdout": 0.1, "holdout_max": 100, "save_steps": 100,
}
MODEL_TYPES = ("bi-encoder", "cross-encoder")
DEFAULT_MODEL_TYPE = "bi-encoder"
#: the bi-encoder recipe's defaults where they differ from the cross-encoder's
#: (max_length None: the base model's own max sequence length, 256 for MiniLM)
BI_ENCODER_DEFAULTS: dict[str, Any] = {"query": "title+recent", "batch_size": 32, "max_steps": 120,
                                       "max_length": None, "save_steps": 60}
#: what each recipe defaults to, by model type (flags left unset take these)
RECIPES: dict[str, dict[str, Any]] = {
    "cross-encoder": {"query": DEFAULT_QUERY, **{k: DEFAULTS[k] for k in
                                                 ("batch_size", "max_steps", "max_length", "save_steps")}},
    "bi-encoder": BI_ENCODER_DEFAULTS,
}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def apply_recipe(args: argparse.Namespace) -> None:
    """Fill the flags left unset with the defaults of ``--model-type``'s recipe."""
    for key, value in RECIPES[args.model_type].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    for key in ("exclude_docs", "folds", "fold"):
        if not hasattr(args, key):
            setattr(args, key, None)
    if not hasattr(args, "model_type"):
        args.model_type = DEFAULT_MODEL_TYPE


def refuse_judged(collection, spec: str | None = None) -> None:
    """InputError for the judged development set: its labels must never be trained on."""
    from retrieval.collections.cmu_dog_judged import is_judged

    if is_judged(collection, spec):
        raise InputError(f"{collection.name!r} is the judged development set: it is for evaluation "
                         "only and is never trained on; train on the silver labels, e.g. "
                         "`dsr train cmu_dog --source DIR --split train`", field="COLLECTION")


def excluded_documents(dialogues, args: argparse.Namespace) -> tuple[list[str], dict[str, Any]]:
    """The documents ``--exclude-docs`` or ``--folds K --fold I`` leave out, and how (for the card)."""
    from dsr.training.folds import documents, fold_documents

    if (args.folds is None) != (args.fold is None):
        raise InputError("--folds K and --fold I go together", field="--folds/--fold")
    excluded: list[str] = []
    how: dict[str, Any] = {}
    if args.folds is not None:
        excluded = fold_documents(dialogues, args.folds, args.fold)
        how = {"folds": args.folds, "fold": args.fold}
    if args.exclude_docs:
        named = [d.strip() for d in args.exclude_docs.split(",") if d.strip()]
        known = set(documents(dialogues))
        unknown = [d for d in named if d not in known]
        if unknown:
            raise InputError(f"unknown document(s) {', '.join(unknown)}; the collection has "
                             f"{', '.join(sorted(known))}", field="--exclude-docs")
        excluded = sorted(set(excluded) | set(named))
        how["exclude_docs"] = named
    return excluded, how


def training_dialogues(collection, args: argparse.Namespace):
    """(training dialogues, held-out dialogues, selection for the card, excluded documents):
    ``--subset``/``--val-of-split``, then ``--exclude-docs``/``--folds``, then the held-out split."""
    from dsr.training.pairs import split_heldout

    dialogues, selection = _select(collection, args)
    excluded, how = excluded_documents(dialogues, args)
    if excluded:
        from dsr.training.folds import exclude_documents

        dialogues, dropped = exclude_documents(dialogues, excluded)
        selection.update(how, excluded_documents=excluded, **dropped)
    train_part, heldout = split_heldout(dialogues, args.holdout, seed=args.seed,
                                        limit=args.holdout_max, group=conversation_of)
    return train_part, heldout, selection, excluded


def train(collection, args: argparse.Namespace, base, final: Path) -> dict[str, Any]:
    """Select, pair, fine-tune, measure, write the card, move into place; returns the card."""
    from retrieval.queries import query_text
    from dsr.training.pairs import make_pairs

    started = time.monotonic()
    train_part, heldout, selection, _ = training_dialogues(collection, args)
    source = str(collection.meta.get("path") or collection.name)

    def query(d):
        return query_text(d, args.query)

    pairset = make_pairs(train_part, query, neg_per_pos=args.neg_per_pos,
                         random_negatives=args.random_negatives, targets=args.targets,
                         seed=args.seed, source=source)
    print(f"dsr train: {len(train_part)} training dialogues ({pairset.dialogues_used} with a "
          f"relevant candidate) -> {len(pairset.pairs)} pairs; {len(heldout)} held out",
          file=sys.stderr)

    # torch and transformers load only now, after the cheap checks passed.
    from dsr.training.finetune import FitSettings, fine_tune, load_base

    settings = fit_settings(args, FitSettings)
    work, model = start_work(final, args.resume, lambda: load_base(base.path, args.max_length, args.seed))
    figures = fine_tune(model, pairset.columns(), settings, work, resume=args.resume)
    train_seconds = time.monotonic() - started

    held = None
    if heldout:
        from retrieval.rerankers.cross_encoder import score_pairs
        from dsr.training.heldout import evaluate_heldout

        # Scored exactly as `dsr rerank` scores (raw logits, same batching).
        held = evaluate_heldout(lambda pairs: score_pairs(model, pairs, 32), heldout, query,
                                args.name)

    out = work / "model"
    if out.exists():
        shutil.rmtree(out)
    model.save(str(out))
    card = _card(args, collection, selection, base, pairset, train_part, heldout, settings,
                 figures, held, str(model.device), train_seconds, time.monotonic() - started)
    from dsr.training.card import write_card

    write_card(out, card)
    _move_into_place(out, final)
    shutil.rmtree(work, ignore_errors=True)
    return card


def fit_settings(args: argparse.Namespace, cls):
    """The optimisation flags as a ``FitSettings`` (``cls``, imported by the caller with torch)."""
    return cls(seed=args.seed, epochs=args.epochs, batch_size=args.batch_size,
               max_length=args.max_length or 0, lr=args.lr, warmup=args.warmup,
               max_steps=args.max_steps, save_steps=args.save_steps,
               precision=getattr(args, "precision", None) or "auto")


def start_work(final: Path, resume: bool, load):
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


def conversation_of(dialogue) -> str:
    """The conversation a dialogue (query point) was cut from, for grouping held-out data."""
    meta = dialogue.meta or {}
    for key in ("conversation", "conversation_id", "dialogue_id"):
        if meta.get(key):
            return str(meta[key])
    return dialogue.id


# --- helpers -----------------------------------------------------------------

def check_settings(args: argparse.Namespace) -> None:
    if not _NAME.match(args.name):
        raise InputError(f"model name {args.name!r} must be letters, digits, '.', '_' or '-' "
                         "(it becomes a folder name)", field="--name")
    for flag, value, low in (("--batch-size", args.batch_size, 1), ("--max-length", args.max_length, 8),
                             ("--save-steps", args.save_steps, 1), ("--holdout-max", args.holdout_max, 1)):
        if value is not None and value < low:
            raise InputError(f"must be at least {low}, got {value}", field=flag)
    if args.epochs <= 0:
        raise InputError(f"must be > 0, got {args.epochs}", field="--epochs")
    if not args.lr > 0:
        raise InputError(f"must be > 0, got {args.lr}", field="--lr")
    if args.warmup < 0:
        raise InputError(f"must be >= 0, got {args.warmup}", field="--warmup")
    if args.max_steps == 0 or args.max_steps < -1:
        raise InputError(f"must be a positive number of steps or -1, got {args.max_steps}",
                         field="--max-steps")
    if args.random_negatives < 0:
        raise InputError(f"must be >= 0, got {args.random_negatives}", field="--random-negatives")


def resolve_base(spec: str):
    """``--base`` -> a ResolvedModel with a local checkpoint folder (retrieval.models, offline first)."""
    from retrieval.models import resolve_model

    try:
        resolved = resolve_model(spec, "cross-encoder")
    except InputError as err:
        raise InputError(err.message, path=err.path, field="--base") from None
    if not (Path(resolved.path) / "config.json").is_file():
        raise InputError(f"base model {spec!r} resolved to {resolved.path}, which is not a "
                         "BERT-style checkpoint folder (no config.json)", path=resolved.path,
                         field="--base")
    return resolved


def _select(collection, args: argparse.Namespace) -> tuple[list, dict[str, Any]]:
    dialogues = list(collection.dialogues)
    selection: dict[str, Any] = {}
    if args.val_of_split is not None:
        splits = collection.splits
        if not splits:
            raise InputError(f"collection {collection.name!r} has no split file, so there is no "
                             "val half to train on; drop --val-of-split", field="--val-of-split")
        if not 0 <= args.val_of_split < len(splits):
            raise InputError(f"split {args.val_of_split} does not exist; the collection has "
                             f"splits 0..{len(splits) - 1}", field="--val-of-split")
        val = set(splits[args.val_of_split][0])
        dialogues = [d for d in dialogues if d.id in val]
        selection["val_of_split"] = args.val_of_split
    if args.subset:
        if args.subset not in collection.subsets:
            raise InputError(f"no subset {args.subset!r} in {collection.name!r}; it has "
                             f"{', '.join(collection.subsets)}", field="--subset")
        dialogues = [d for d in dialogues if d.subset == args.subset]
        selection["subset"] = args.subset
    if not dialogues:
        raise InputError("no dialogues left to train on after the selection", field="--subset")
    return dialogues, selection


def _card(args, collection, selection, base, pairset, train_part, heldout, settings,
          figures, held, device, train_seconds, wall_seconds) -> dict[str, Any]:
    from retrieval.provenance import TRACKED_PACKAGES, machine, package_versions

    return {
        "format": 1,
        "name": args.name,
        "kind": "cross-encoder",
        "created": now(),
        "command": ["dsr", *sys.argv[1:]] if sys.argv and "dsr" in Path(sys.argv[0]).name else None,
        "query": args.query,
        "max_length": args.max_length,
        "excluded_documents": selection.get("excluded_documents", []),
        "base": {
            "spec": args.base,
            "path": base.path,
            **base.describe(),
            "head": "The classification head (one logit) is not part of the base checkpoint: "
                    "it starts untrained, randomly initialised from the seed.",
        },
        "training_data": {
            "collection": collection.name,
            "hash": collection.content_hash,
            "source": collection.meta.get("path") or args.source,
            "source_split": args.split,
            "selection": selection,
            "train_dialogues": len(train_part),
            "heldout_dialogues": len(heldout),
            "targets": args.targets,
            **pairset.stats(),
        },
        "parameters": {
            **settings.as_dict(),
            "neg_per_pos": args.neg_per_pos,
            "random_negatives": args.random_negatives,
            "holdout": args.holdout,
            "holdout_max": args.holdout_max,
            "loss": "BinaryCrossEntropyLoss",
        },
        "training": {**figures, "device": device, "wall_seconds": round(train_seconds, 1),
                     "total_seconds": round(wall_seconds, 1)},
        "heldout": held,
        "machine": machine(),
        "versions": package_versions((*TRACKED_PACKAGES, "datasets", "accelerate")),
    }


def _move_into_place(out: Path, final: Path) -> None:
    """Rename the finished folder to NAME; an old NAME (--overwrite) goes only after that works."""
    old = None
    if final.exists():
        old = final.parent / f".{final.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
    out.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
