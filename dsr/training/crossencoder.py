"""The cross-encoder recipe of ``dsr train``: BinaryCrossEntropyLoss on (query, sentence,
target) pairs (:mod:`dsr.training.pairs`, ``loss`` bce, the default) or, with ``loss``
listwise, a softmax cross-entropy over each training point's own list (:class:`ListwiseLoss`:
its top-graded positive against ``list_negatives`` of its non-relevant candidates, every pair
scored by the model: the localised contrastive estimation of Gao, Dai and Callan, ECIR 2021,
which trains a reranker on its first stage's hard negatives), with sentence-transformers'
trainer.

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
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets
from sentence_transformers import CrossEncoder
from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MultipleNegativesRankingLoss
from transformers import set_seed

from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.queries import query_text
from dsr.rerankers.cross_encoder import score_pairs
from dsr.training import heldout as held_out
from dsr.training.biencoder import example_columns, make_triplets
from dsr.training.finetune import resolve_precision, run_trainer, training_arguments
from dsr.training.mining import mine_negatives
from dsr.training.pairs import make_pairs
from dsr.training.settings import TrainSettings, decided
from dsr.training.steps import Job, base_entry, card_head, data_entry, finish, start_work, training_dialogues


def load_base(path: str | Path, max_length: int, seed: int) -> CrossEncoder:
    """A CrossEncoder with one output logit from a local checkpoint folder.

    The seed is set first because the classification head is initialised
    randomly when the checkpoint has none.
    """
    set_seed(seed)
    try:
        return CrossEncoder(str(path), num_labels=1, max_length=max_length, local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot load a BERT-style checkpoint from {path}: {err}", path=path, field="base") from None


class ListwiseLoss(MultipleNegativesRankingLoss):
    """Softmax cross-entropy of each example's positive against its own list negatives, on the
    model's raw logits: columns (query, positive, negative_1 ... negative_N), no in-batch
    negatives (another point's sentences are easy ones; the point's own are what a reranker
    has to tell apart). sentence-transformers' cross-encoder MultipleNegativesRankingLoss with
    the in-batch draw left out, no activation and scale 1."""

    def __init__(self, model: CrossEncoder) -> None:
        # scale 1 (the raw logits): sentence-transformers annotates scale as int, yet multiplies
        # the scores by it as a number
        super().__init__(model, num_negatives=None, scale=1, activation_fn=None)

    def get_in_batch_negatives(self, anchors: list[str], candidates: list[list[str]]) -> Generator[list[str], None, None]:
        yield from ()


#: the ``loss`` setting -> the loss named in the card
LOSS_NAMES = {
    "bce": "BinaryCrossEntropyLoss",
    "listwise": "listwise softmax cross-entropy over the point's positive and its list negatives (LCE)",
}


def fine_tune(model: CrossEncoder, columns: dict[str, list[Any]], settings: TrainSettings, work_dir: Path) -> dict[str, Any]:
    """Train ``model`` in place on ``columns`` (query, sentence, label for ``loss`` ``bce``;
    query, positive, negative_1... for ``listwise``); return trainer figures.

    Checkpoints go to ``work_dir/checkpoints`` every ``save_steps`` steps and
    at each epoch end; ``resume`` continues from the newest complete one there.
    """
    datasets.disable_progress_bars()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    dataset = datasets.Dataset.from_dict(columns)
    checkpoints = work_dir / "checkpoints"
    args = CrossEncoderTrainingArguments(**training_arguments(settings, checkpoints))
    objective = ListwiseLoss(model) if settings.loss == "listwise" else BinaryCrossEntropyLoss(model)
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset, loss=objective)
    return run_trainer(trainer, checkpoints, settings.resume, settings.precision)


def training_examples(
    train_part: Sequence[Dialogue],
    settings: TrainSettings,
    query: Callable[[Dialogue], str],
    source: str,
    ranked: Mapping[str, Sequence[str]] | None,
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The trainer's columns and what the card records of them: BCE pairs (``loss`` bce) or one
    listwise example per point with a relevant and a non-relevant candidate (``listwise``: its
    top-graded positive and ``list_negatives`` of its own non-relevant candidates, among the
    miner's top ``hard_depth`` with ``hard_negatives``), drawn with the seed."""
    text = decided(settings.text, "text")
    if settings.loss == "listwise":
        k = decided(settings.list_negatives, "list_negatives")
        examples, counts = make_triplets(
            train_part,
            query,
            seed=settings.seed,
            source=source,
            text=text,
            ranked=ranked,
            depth=settings.hard_depth,
            negatives=k,
        )
        columns = example_columns(examples)
        columns = {("query" if name == "anchor" else name): values for name, values in columns.items()}
        stats = {
            "pairs": len(examples) * (k + 1),
            "examples": len(examples),
            "positives": len(examples),
            "list_negatives": k * len(examples),
            "hard_negatives": k * len(examples) if ranked else 0,
            "random_negatives": 0,
            "dialogues_used": len(examples),
            **{
                key: counts[key]
                for key in ("dialogues_without_positive", "dialogues_without_negative", "dialogues_short_of_negatives")
            },
        }
        return columns, stats
    pairset = make_pairs(
        train_part,
        query,
        neg_per_pos=settings.neg_per_pos,
        random_negatives=settings.random_negatives,
        targets=settings.targets,
        seed=settings.seed,
        source=source,
        text=text,
        ranked=ranked,
        depth=settings.hard_depth,
    )
    return pairset.columns(), pairset.stats()


def train_cross_encoder(collection: Collection, settings: TrainSettings, job: Job) -> dict[str, Any]:
    """Select, pair, fine-tune, measure, write the card, move into place; returns the card."""
    started = time.monotonic()
    train_part, heldout, selection, excluded = training_dialogues(collection, settings)
    source = str(collection.meta.get("path") or collection.name)
    strategy, text, max_length = decided(settings.query, "query"), decided(settings.text, "text"), settings.max_length

    def query(d: Dialogue) -> str:
        return query_text(d, strategy)

    ranked, miner = mine_negatives(train_part, settings) if settings.hard_negatives else (None, None)
    columns, stats = training_examples(train_part, settings, query, source, ranked)
    shape = f"{stats['examples']} listwise examples ({settings.list_negatives} negatives each), " if "examples" in stats else ""
    print(
        f"dsr train: {len(train_part)} training dialogues ({stats['dialogues_used']} with a "
        f"relevant candidate) -> {shape}{stats['pairs']} pairs; {len(heldout)} held out",
        file=sys.stderr,
    )

    resolve_precision(settings.precision)  # bf16 without bf16 units: refused before the model loads
    work, model = start_work(
        job.final, settings.resume, lambda: load_base(job.base.path, decided(max_length, "max_length"), settings.seed)
    )
    figures = fine_tune(model, columns, settings, work)
    train_seconds = time.monotonic() - started
    # Scored exactly as `dsr rerank` scores (raw logits, same batching).
    held = (
        held_out.evaluate_heldout(lambda pairs: score_pairs(model, pairs, 32), heldout, query, job.name, text)
        if heldout
        else None
    )
    card = {
        **card_head(job, settings, "cross-encoder", max_length, excluded),
        "base": base_entry(
            job,
            settings,
            "The classification head (one logit) is not part of the "
            "base checkpoint: it starts untrained, randomly initialised from the seed.",
        ),
        "training_data": {
            **data_entry(collection, job, selection, train_part, heldout),
            "targets": settings.targets if settings.loss == "bce" else "the top-graded positive first in its list",
            **stats,
            **({"hard_negative_miner": miner} if miner else {}),
        },
        "parameters": {
            **settings.card_parameters(max_length),
            **(
                {"neg_per_pos": settings.neg_per_pos, "random_negatives": settings.random_negatives}
                if settings.loss == "bce"
                else {"list_negatives": settings.list_negatives}
            ),
            "hard_negatives": settings.hard_negatives,
            "hard_depth": settings.hard_depth,
            "holdout": settings.holdout,
            "holdout_max": settings.holdout_max,
            "loss": LOSS_NAMES[decided(settings.loss, "loss")],
        },
    }
    return finish(model, work, job, card, figures, held, started, train_seconds)
