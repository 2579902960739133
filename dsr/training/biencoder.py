"""Fine-tune a bi-encoder (sentence-transformers) on silver labels with in-batch and pool negatives.

One training example per query point that has a relevant candidate: (query
text, one relevant candidate, one non-relevant candidate of the same pool).
``MultipleNegativesRankingLoss`` then scores the query against every positive
and negative sentence of the batch: the other examples' sentences are the
in-batch negatives, the pool sentence is a hard negative (BM25 retrieved it
for this very context). The positive is drawn among the top-graded
candidates, the negative among the label-0 ones, both with the seed.

The batch sampler keeps a sentence from appearing twice in one batch
(``NO_DUPLICATES``): query points of one film often share a relevant
sentence, which would otherwise be another example's "negative".

This module imports torch and sentence-transformers: import it only where training runs.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from retrieval.data import Dialogue
from retrieval.errors import InputError
from retrieval.rankers.dense import candidate_text

LOSS = "MultipleNegativesRankingLoss"


@dataclass(frozen=True)
class Triplet:
    """One example: the query text, a relevant sentence and a pool negative."""

    query: str
    positive: str
    negative: str
    dialogue: str


def make_triplets(dialogues: Sequence[Dialogue], query: Callable[[Dialogue], str], *,
                  seed: int = 0, source: str = "collection", text: str = "body",
                  ) -> tuple[list[Triplet], dict[str, int]]:
    """One triplet per dialogue with a relevant and a non-relevant candidate (deterministic);
    candidates as ``text`` (``body`` or ``title: body``) renders them.

    Returns the triplets and counts for the model card. InputError when no
    dialogue has a relevant candidate.
    """
    rng = random.Random(seed)
    triplets: list[Triplet] = []
    without_positive = without_negative = 0
    for d in dialogues:
        positives = [c for c in d.candidates if c.label > 0]
        negatives = [c for c in d.candidates if c.label <= 0]
        if not positives:
            without_positive += 1
            continue
        if not negatives:
            without_negative += 1
            continue
        top = max(c.label for c in positives)
        positive = rng.choice([c for c in positives if c.label == top])
        negative = rng.choice(negatives)
        triplets.append(Triplet(query(d), candidate_text(positive, text), candidate_text(negative, text), d.id))
    if not triplets:
        raise InputError(f"{source}: no dialogue has both a relevant and a non-relevant candidate, "
                         "so there is nothing to learn from; check the labels or the --split",
                         field="candidates[].label")
    return triplets, {"triplets": len(triplets), "dialogues_without_positive": without_positive,
                      "dialogues_without_negative": without_negative}


def load_bi_encoder(path: str | Path, seed: int, max_seq_length: int | None = None):
    """A SentenceTransformer from a local folder (a bare BERT gets mean pooling)."""
    from sentence_transformers import SentenceTransformer
    from transformers import set_seed

    set_seed(seed)
    try:
        model = SentenceTransformer(str(path), device="cpu" if not _cuda() else None,
                                    local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot load a bi-encoder from {path}: {err}", path=path,
                         field="--base") from None
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def fine_tune_bi_encoder(model, triplets: Sequence[Triplet], settings, work_dir: Path,
                         resume: bool = False) -> dict[str, Any]:
    """Train ``model`` in place (MNRL, in-batch + pool negatives); return the trainer's figures.

    ``settings`` is a :class:`dsr.training.finetune.FitSettings`;
    checkpoints go to ``work_dir/checkpoints`` as for the cross-encoder.
    """
    import datasets
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.training_args import BatchSamplers
    from dsr.training.finetune import run_trainer, training_arguments

    datasets.disable_progress_bars()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    dataset = datasets.Dataset.from_dict({"anchor": [t.query for t in triplets],
                                          "positive": [t.positive for t in triplets],
                                          "negative": [t.negative for t in triplets]})
    checkpoints = work_dir / "checkpoints"
    args = SentenceTransformerTrainingArguments(**training_arguments(settings, checkpoints),
                                                batch_sampler=BatchSamplers.NO_DUPLICATES)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset,
                                         loss=MultipleNegativesRankingLoss(model))
    return run_trainer(trainer, checkpoints, resume, settings)


def cosine_scorer(model, batch_size: int = 64) -> Callable[[list[tuple[str, str]]], list[float]]:
    """score_pairs for :func:`dsr.training.heldout.evaluate_heldout`: cosine of the
    normalised embeddings, each distinct text encoded once."""
    def score(pairs: list[tuple[str, str]]) -> list[float]:
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        row = {t: i for i, t in enumerate(texts)}
        return [float(vectors[row[q]] @ vectors[row[s]]) for q, s in pairs]
    return score


def train_bi_encoder(collection, args, base, final: Path) -> dict[str, Any]:
    """``dsr train --model-type bi-encoder``: select, exclude documents, make triplets,
    fine-tune, measure held-out dialogues, write the card, move into place; returns the card."""
    import shutil
    import sys
    import time

    from retrieval.queries import model_query_budget, query_text
    from dsr.training.recipe import _move_into_place, fit_settings, start_work, training_dialogues
    from dsr.training.finetune import FitSettings

    started = time.monotonic()
    train_part, heldout, selection, excluded = training_dialogues(collection, args)
    source = str(collection.meta.get("path") or collection.name)
    # The query text is fitted to the model's sequence length, as `dsr run --ranker dense` fits it.
    budget, count = model_query_budget(base.path, args.max_length)

    def query(d):
        return query_text(d, args.query, budget=budget, count=count)

    text = getattr(args, "text", "body")
    triplets, counts = make_triplets(train_part, query, seed=args.seed, source=source, text=text)
    print(f"dsr train: {len(train_part)} training dialogues -> {len(triplets)} triplets "
          f"(query, positive, pool negative); {len(heldout)} held out"
          + (f"; {len(excluded)} documents excluded" if excluded else ""), file=sys.stderr)

    settings = fit_settings(args, FitSettings)
    work, model = start_work(final, args.resume,
                             lambda: load_bi_encoder(base.path, args.seed, args.max_length))
    figures = fine_tune_bi_encoder(model, triplets, settings, work, resume=args.resume)
    train_seconds = time.monotonic() - started

    held = None
    if heldout:
        from dsr.training.heldout import evaluate_heldout

        held = evaluate_heldout(cosine_scorer(model), heldout, query, args.name, text)
    out = work / "model"
    if out.exists():
        shutil.rmtree(out)
    model.save(str(out))
    card = bi_encoder_card(args, collection, selection, excluded, base, counts, train_part,
                           heldout, settings, model, figures, held, train_seconds,
                           time.monotonic() - started)
    from dsr.training.card import write_card

    write_card(out, card)
    _move_into_place(out, final)
    shutil.rmtree(work, ignore_errors=True)
    return card


def bi_encoder_card(args, collection, selection, excluded, base, counts, train_part, heldout,
                    settings, model, figures, held, train_seconds, wall_seconds) -> dict[str, Any]:
    """The model card (``dsr_model.json``) of a trained bi-encoder; the same layout as the
    cross-encoder's, so ``dsr.training.card`` renders both."""
    import sys
    from datetime import datetime, timezone

    from retrieval.provenance import TRACKED_PACKAGES, machine, package_versions

    params = {**settings.as_dict(), "max_length": model.max_seq_length, "loss": LOSS,
              "negatives": "in-batch + one pool negative per query point",
              "batch_sampler": "no_duplicates", "holdout": args.holdout,
              "holdout_max": args.holdout_max}
    return {
        "format": 1,
        "name": args.name,
        "kind": "bi-encoder",
        "recipe": "bi-encoder: MultipleNegativesRankingLoss, silver positive + one pool "
                  "negative per query point",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": ["dsr", *sys.argv[1:]] if sys.argv and "dsr" in Path(sys.argv[0]).name else None,
        "query": args.query,
        "text": getattr(args, "text", "body"),
        "max_length": model.max_seq_length,
        "excluded_documents": excluded,
        "base": {"spec": args.base, "path": base.path, **base.describe(),
                 "head": "No new head: the base encoder and its pooling are fine-tuned."},
        "training_data": {
            "collection": collection.name, "hash": collection.content_hash,
            "source": collection.meta.get("path") or args.source, "source_split": args.split,
            "selection": selection, "train_dialogues": len(train_part),
            "heldout_dialogues": len(heldout), "targets": "top-graded positive",
            "pairs": counts["triplets"], "positives": counts["triplets"],
            "list_negatives": counts["triplets"], "random_negatives": 0,
            "dialogues_without_positive": counts["dialogues_without_positive"],
            "dialogues_without_negative": counts["dialogues_without_negative"],
        },
        "parameters": params,
        "training": {**figures, "device": str(model.device), "wall_seconds": round(train_seconds, 1),
                     "total_seconds": round(wall_seconds, 1)},
        "heldout": held,
        "machine": machine(),
        "versions": package_versions((*TRACKED_PACKAGES, "datasets", "accelerate")),
    }
