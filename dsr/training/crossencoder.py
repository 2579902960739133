"""The cross-encoder recipe of ``dsr train``: BinaryCrossEntropyLoss on (query, sentence,
target) pairs (:mod:`dsr.training.pairs`) with sentence-transformers' trainer.

The model starts from a BERT-style checkpoint folder; a sentence-transformers
bi-encoder folder (such as all-MiniLM-L6-v2) is converted by
sentence-transformers, keeping the encoder and adding a one-logit
classification head that starts untrained (random, from the seed).

With ``hard_negatives`` (a bi-encoder, e.g. the trained ``dsr:NAME`` that the
cross-encoder is to rerank), the training dialogues are first ranked by that model with the
query strategy and candidate text of its card, and each dialogue's negatives are drawn
among the non-relevant candidates it ranks highest (:func:`dsr.training.pairs.make_pairs`).

This module imports torch and sentence-transformers: import it only where training runs.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import datasets
from sentence_transformers import CrossEncoder
from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
from transformers import set_seed

from dsr.core.errors import InputError
from dsr.core.queries import query_text
from dsr.rerankers.cross_encoder import score_pairs
from dsr.training import heldout as held_out
from dsr.training.finetune import FitSettings, fit_settings, run_trainer, training_arguments
from dsr.training.mining import mine_negatives
from dsr.training.pairs import make_pairs
from dsr.training.settings import TrainSettings
from dsr.training.steps import Job, base_entry, card_head, data_entry, finish, start_work, training_dialogues


def load_base(path: str | Path, max_length: int, seed: int):
    """A CrossEncoder with one output logit from a local checkpoint folder.

    The seed is set first because the classification head is initialised
    randomly when the checkpoint has none.
    """
    set_seed(seed)
    try:
        return CrossEncoder(str(path), num_labels=1, max_length=max_length, local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot load a BERT-style checkpoint from {path}: {err}", path=path, field="base") from None


def fine_tune(model, columns: dict[str, list], settings: FitSettings, work_dir: Path, resume: bool = False) -> dict[str, Any]:
    """Train ``model`` in place on ``columns`` (query, sentence, label); return trainer figures.

    Checkpoints go to ``work_dir/checkpoints`` every ``save_steps`` steps and
    at each epoch end; ``resume`` continues from the newest complete one there.
    """
    datasets.disable_progress_bars()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    dataset = datasets.Dataset.from_dict(columns)
    checkpoints = work_dir / "checkpoints"
    args = CrossEncoderTrainingArguments(**training_arguments(settings, checkpoints))
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset, loss=BinaryCrossEntropyLoss(model))
    return run_trainer(trainer, checkpoints, resume, settings)


def train_cross_encoder(collection, settings: TrainSettings, job: Job) -> dict[str, Any]:
    """Select, pair, fine-tune, measure, write the card, move into place; returns the card."""
    started = time.monotonic()
    train_part, heldout, selection, excluded = training_dialogues(collection, settings)
    source = str(collection.meta.get("path") or collection.name)

    def query(d):
        return query_text(d, settings.query)

    ranked, miner = mine_negatives(train_part, settings) if settings.hard_negatives else (None, None)
    pairset = make_pairs(
        train_part,
        query,
        neg_per_pos=settings.neg_per_pos,
        random_negatives=settings.random_negatives,
        targets=settings.targets,
        seed=settings.seed,
        source=source,
        text=settings.text,
        ranked=ranked,
        depth=settings.hard_depth,
    )
    print(
        f"dsr train: {len(train_part)} training dialogues ({pairset.dialogues_used} with a "
        f"relevant candidate) -> {len(pairset.pairs)} pairs; {len(heldout)} held out",
        file=sys.stderr,
    )

    fit = fit_settings(settings)
    work, model = start_work(job.final, settings.resume, lambda: load_base(job.base.path, settings.max_length, settings.seed))
    figures = fine_tune(model, pairset.columns(), fit, work, resume=settings.resume)
    train_seconds = time.monotonic() - started
    # Scored exactly as `dsr rerank` scores (raw logits, same batching).
    held = (
        held_out.evaluate_heldout(lambda pairs: score_pairs(model, pairs, 32), heldout, query, job.name, settings.text)
        if heldout
        else None
    )
    card = {
        **card_head(job, settings, "cross-encoder", settings.max_length, excluded),
        "base": base_entry(
            job,
            settings,
            "The classification head (one logit) is not part of the "
            "base checkpoint: it starts untrained, randomly initialised from the seed.",
        ),
        "training_data": {
            **data_entry(collection, job, selection, train_part, heldout),
            "targets": settings.targets,
            **pairset.stats(),
            **({"hard_negative_miner": miner} if miner else {}),
        },
        "parameters": {
            **fit.as_dict(),
            "neg_per_pos": settings.neg_per_pos,
            "random_negatives": settings.random_negatives,
            "hard_negatives": settings.hard_negatives,
            "hard_depth": settings.hard_depth,
            "holdout": settings.holdout,
            "holdout_max": settings.holdout_max,
            "loss": "BinaryCrossEntropyLoss",
        },
    }
    return finish(model, work, job, card, figures, held, started, train_seconds)
