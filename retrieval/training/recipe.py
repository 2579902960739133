"""The training recipe behind ``dsr train``: fine-tune a cross-encoder reranker on a
collection's (weak) labels.

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
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def train(collection, args: argparse.Namespace, base, final: Path) -> dict[str, Any]:
    """Select, pair, fine-tune, measure, write the card, move into place; returns the card."""
    from retrieval.queries import query_text
    from retrieval.training.pairs import make_pairs, split_heldout

    started = time.monotonic()
    dialogues, selection = _select(collection, args)
    train_part, heldout = split_heldout(dialogues, args.holdout, seed=args.seed,
                                        limit=args.holdout_max, group=conversation_of)
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
    from retrieval.training.finetune import FitSettings, fine_tune, load_base

    settings = FitSettings(seed=args.seed, epochs=args.epochs, batch_size=args.batch_size,
                           max_length=args.max_length, lr=args.lr, warmup=args.warmup,
                           max_steps=args.max_steps, save_steps=args.save_steps)
    work = final.parent / f".{final.name}.partial"
    if work.exists() and not args.resume:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        model = load_base(base.path, args.max_length, args.seed)
    except InputError:
        shutil.rmtree(work, ignore_errors=True)  # nothing to resume from a model that never loaded
        raise
    figures = fine_tune(model, pairset.columns(), settings, work, resume=args.resume)
    train_seconds = time.monotonic() - started

    held = None
    if heldout:
        from retrieval.rerankers.cross_encoder import score_pairs
        from retrieval.training.heldout import evaluate_heldout

        # Scored exactly as `dsr rerank` scores (raw logits, same batching).
        held = evaluate_heldout(lambda pairs: score_pairs(model, pairs, 32), heldout, query,
                                args.name)

    out = work / "model"
    if out.exists():
        shutil.rmtree(out)
    model.save(str(out))
    card = _card(args, collection, selection, base, pairset, train_part, heldout, settings,
                 figures, held, str(model.device), train_seconds, time.monotonic() - started)
    from retrieval.training.card import write_card

    write_card(out, card)
    _move_into_place(out, final)
    shutil.rmtree(work, ignore_errors=True)
    return card


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
        if value < low:
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
