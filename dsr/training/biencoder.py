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
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import torch
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
from sentence_transformers.sentence_transformer.losses import GISTEmbedLoss, MultipleNegativesRankingLoss
from sentence_transformers.sentence_transformer.training_args import BatchSamplers
from transformers import set_seed

from dsr.collections.documents import DEFAULT_WINDOW, candidate_renderer
from dsr.core.candidate_text import CONTEXT_FORM, candidate_text
from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.queries import model_query_budget, query_text
from dsr.training import heldout as held_out
from dsr.training.batching import WINDOW, LengthGroupedBatchSampler
from dsr.training.chunks import CHUNK, ChunkedMNRLoss, DistilledMNRLoss
from dsr.training.finetune import resolve_precision, run_trainer, training_arguments
from dsr.training.mining import mine_negatives, teacher_scores
from dsr.training.pairs import ordered_negatives
from dsr.training.settings import OptimisationSettings, TrainSettings, decided
from dsr.training.steps import Job, base_entry, card_head, data_entry, finish, resolve_base, start_work, training_dialogues

#: the ``loss`` setting -> the loss named in the card
LOSS_NAMES = {
    "mnrl": "MultipleNegativesRankingLoss",
    "gist": "GISTEmbedLoss",
    "distill": "MultipleNegativesRankingLoss + KL divergence from the teacher's scores",
}


@dataclass(frozen=True)
class Triplet:
    """One example: the query text, a relevant sentence and its list (pool) negatives."""

    query: str
    positive: str
    negatives: tuple[str, ...]
    dialogue: str
    #: the candidates' ids: the positive's, then each list negative's
    ids: tuple[str, ...] = ()

    @property
    def negative(self) -> str:
        """The first list negative (the only one with one negative per example)."""
        return self.negatives[0]


def make_triplets(
    dialogues: Sequence[Dialogue],
    query: Callable[[Dialogue], str],
    *,
    seed: int = 0,
    source: str = "collection",
    text: str | Callable[[Candidate], str] = "body",
    ranked: Mapping[str, Sequence[str]] | None = None,
    depth: int = 10,
    negatives: int = 1,
) -> tuple[list[Triplet], dict[str, int]]:
    """One example per dialogue with a relevant and a non-relevant candidate (deterministic):
    the query, a top-graded positive and ``negatives`` distinct non-relevant candidates of its
    list (where it has fewer, all of them, then drawn again to fill the example: every example
    has as many columns); candidates as ``text`` (``body`` or ``title: body``, or a candidate ->
    text function such as the context form's
    :func:`dsr.collections.documents.candidate_renderer`) renders them. With ``ranked``
    (dialogue id -> candidate ids, best first: a miner's ranking), the negatives are drawn
    among the ``depth`` non-relevant candidates ranked highest there.

    Returns the triplets and counts for the model card. InputError when no
    dialogue has a relevant candidate.
    """
    render = text if callable(text) else (lambda c: candidate_text(c, text))
    rng = random.Random(seed)
    triplets: list[Triplet] = []
    without_positive = without_negative = short = 0
    for d in dialogues:
        positives = [c for c in d.candidates if c.label > 0]
        pool = ordered_negatives(d, ranked)
        if ranked is not None:
            pool = pool[: max(depth, negatives)]
        if not positives:
            without_positive += 1
            continue
        if not pool:
            without_negative += 1
            continue
        top = max(c.label for c in positives)
        positive = rng.choice([c for c in positives if c.label == top])
        drawn = (rng.choice(pool),) if negatives == 1 else tuple(rng.sample(pool, min(negatives, len(pool))))
        if len(drawn) < negatives:
            short += 1
            drawn += tuple(rng.choice(pool) for _ in range(negatives - len(drawn)))
        triplets.append(
            Triplet(query(d), render(positive), tuple(render(c) for c in drawn), d.id, (positive.id, *(c.id for c in drawn)))
        )
    if not triplets:
        raise InputError(
            f"{source}: no dialogue has both a relevant and a non-relevant candidate, "
            "so there is nothing to learn from; check the labels or the `split`",
            field="candidates[].label",
        )
    return triplets, {
        "triplets": len(triplets),
        "dialogues_without_positive": without_positive,
        "dialogues_without_negative": without_negative,
        "dialogues_short_of_negatives": short,
    }


def load_bi_encoder(path: str | Path, seed: int, max_seq_length: int | None = None) -> SentenceTransformer:
    """A SentenceTransformer from a local folder (a bare BERT gets mean pooling)."""
    set_seed(seed)
    try:
        model = SentenceTransformer(str(path), device=None if torch.cuda.is_available() else "cpu", local_files_only=True)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot load a bi-encoder from {path}: {err}", path=path, field="base") from None
    if max_seq_length:
        model.max_seq_length = max_seq_length
    return model


def example_columns(triplets: Sequence[Triplet], teacher: Sequence[Sequence[float]] | None = None) -> dict[str, list[Any]]:
    """The trainer's columns: anchor, positive, the list negatives (``negative``, or
    ``negative_1`` ... ``negative_N``) and, with ``teacher`` scores, ``label``."""
    width = len(triplets[0].negatives)
    names = ["negative"] if width == 1 else [f"negative_{i + 1}" for i in range(width)]
    columns: dict[str, list[Any]] = {
        "anchor": [t.query for t in triplets],
        "positive": [t.positive for t in triplets],
        **{name: [t.negatives[i] for t in triplets] for i, name in enumerate(names)},
    }
    if teacher is not None:
        columns["label"] = [list(map(float, scores)) for scores in teacher]
    return columns


def fine_tune_bi_encoder(
    model: SentenceTransformer,
    triplets: Sequence[Triplet],
    settings: OptimisationSettings,
    work_dir: Path,
    guide: SentenceTransformer | None = None,
    teacher: Sequence[Sequence[float]] | None = None,
) -> dict[str, Any]:
    """Train ``model`` in place (MNRL, in-batch + list negatives; with a ``guide`` model,
    GISTEmbedLoss; with ``teacher`` scores (per example: its positive's, then each list
    negative's), MNRL plus their distillation, :class:`dsr.training.chunks.DistilledMNRLoss`;
    ``settings.batching`` ``by-length``: batches of similar length, :mod:`dsr.training.batching`;
    ``settings.padding`` ``chunks``: MNRL's texts encoded in chunks of similar length,
    :mod:`dsr.training.chunks`); return the trainer's figures.

    ``settings`` is resolved (:func:`dsr.training.settings.resolve_settings`); checkpoints go
    to ``work_dir/checkpoints`` as for the cross-encoder, resumed from with ``settings.resume``.
    """
    datasets.disable_progress_bars()
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    dataset = datasets.Dataset.from_dict(example_columns(triplets, teacher))
    checkpoints = work_dir / "checkpoints"
    args = SentenceTransformerTrainingArguments(
        **training_arguments(settings, checkpoints),
        batch_sampler=LengthGroupedBatchSampler if settings.batching == "by-length" else BatchSamplers.NO_DUPLICATES,
    )
    chunked = settings.padding == "chunks"
    loss: MultipleNegativesRankingLoss | GISTEmbedLoss
    if guide is not None:
        loss = GISTEmbedLoss(model, guide=guide)
    elif teacher is not None:
        loss = DistilledMNRLoss(model, chunked=chunked)
    else:
        loss = ChunkedMNRLoss(model) if chunked else MultipleNegativesRankingLoss(model)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    return run_trainer(trainer, checkpoints, settings.resume, settings.precision)


def cosine_scorer(model: SentenceTransformer, batch_size: int = 64) -> Callable[[list[tuple[str, str]]], list[float]]:
    """score_pairs for :func:`dsr.training.heldout.evaluate_heldout`: cosine of the
    normalised embeddings, each distinct text encoded once."""

    def score(pairs: list[tuple[str, str]]) -> list[float]:
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        row = {t: i for i, t in enumerate(texts)}
        return [float(vectors[row[q]] @ vectors[row[s]]) for q, s in pairs]

    return score


def training_renderer(collection: Collection, settings: TrainSettings, job: Job) -> Callable[[Candidate], str]:
    """Candidate -> text in ``settings.text``; the context form with ``settings.context``
    neighbours from ``settings.documents``, fitted to the base model's length as `dsr run`
    fits it."""
    return candidate_renderer(
        collection,
        decided(settings.text, "text"),
        documents=settings.documents,
        window=settings.context or DEFAULT_WINDOW,
        model_path=job.base.path,
        max_length=settings.max_length,
    )


def load_guide(settings: TrainSettings, job: Job) -> tuple[SentenceTransformer, dict[str, Any]] | None:
    """With loss ``gist``: (the guide model, what the card records of it), else None. The guide
    is ``settings.guide`` or the base model (zero-shot), with the trained model's length."""
    if settings.loss != "gist":
        return None
    base = resolve_base(settings.guide) if settings.guide else job.base
    model = load_bi_encoder(base.path, settings.seed, settings.max_length)
    return model, {"spec": settings.guide or settings.base, **base.describe()}


@dataclass(frozen=True)
class Examples:
    """What a bi-encoder is trained on: the examples, how queries and candidates were read, and
    what the card records of their making (the miner of hard negatives, the teacher's scores)."""

    triplets: list[Triplet]
    counts: dict[str, int]
    query: Callable[[Dialogue], str]
    render: Callable[[Candidate], str]
    miner: dict[str, Any] | None = None
    teacher: tuple[list[list[float]], dict[str, Any]] | None = None


def bi_encoder_examples(collection: Collection, train_part: list[Dialogue], settings: TrainSettings, job: Job) -> Examples:
    """The triplets of ``train_part``: queries fitted to the model's sequence length (as `dsr run
    --ranker dense` fits them), candidates as ``settings.text``, negatives among the miner's top
    ``hard_depth`` with ``hard_negatives``; with a ``teacher``, its scores of each."""
    budget, count = model_query_budget(job.base.path, settings.max_length)
    strategy = decided(settings.query, "query")

    def query(d: Dialogue) -> str:
        return query_text(d, strategy, budget=budget, count=count)

    render = training_renderer(collection, settings, job)
    ranked, miner = mine_negatives(train_part, settings) if settings.hard_negatives else (None, None)
    triplets, counts = make_triplets(
        train_part,
        query,
        seed=settings.seed,
        source=str(collection.meta.get("path") or collection.name),
        text=render,
        ranked=ranked,
        depth=settings.hard_depth,
        negatives=decided(settings.list_negatives, "list_negatives"),
    )
    teacher = teacher_scores(train_part, triplets, settings.teacher) if settings.teacher else None
    return Examples(triplets, counts, query, render, miner, teacher)


def train_bi_encoder(collection: Collection, settings: TrainSettings, job: Job) -> dict[str, Any]:
    """The bi-encoder recipe of :func:`dsr.training.recipe.train`: select, exclude documents,
    make triplets, fine-tune, measure held-out dialogues, write the card, move into place;
    returns the card."""
    started = time.monotonic()
    train_part, heldout, selection, excluded = training_dialogues(collection, settings)
    examples = bi_encoder_examples(collection, train_part, settings, job)
    k = decided(settings.list_negatives, "list_negatives")
    print(
        f"dsr train: {len(train_part)} training dialogues -> {len(examples.triplets)} examples "
        f"(query, positive, {k} {'mined hard' if examples.miner else 'list'} negative{'s' if k > 1 else ''}); "
        f"{len(heldout)} held out" + (f"; {len(excluded)} documents excluded" if excluded else ""),
        file=sys.stderr,
    )
    resolve_precision(settings.precision)  # bf16 without bf16 units: refused before the model loads
    work, model = start_work(
        job.final, settings.resume, lambda: load_bi_encoder(job.base.path, settings.seed, settings.max_length)
    )
    guide = load_guide(settings, job)
    teacher = examples.teacher[0] if examples.teacher else None
    figures = fine_tune_bi_encoder(model, examples.triplets, settings, work, guide=guide and guide[0], teacher=teacher)
    train_seconds = time.monotonic() - started
    scorer = cosine_scorer(model)
    held = held_out.evaluate_heldout(scorer, heldout, examples.query, job.name, examples.render) if heldout else None
    loss = LOSS_NAMES[decided(settings.loss, "loss")]
    card = {
        **card_head(job, settings, "bi-encoder", model.max_seq_length, excluded),
        "recipe": f"bi-encoder: {loss}, silver positive + {k} "
        f"{'mined hard' if examples.miner else 'pool'} negative{'s' if k > 1 else ''} per query point",
        **({"context": settings.context or DEFAULT_WINDOW} if settings.text == CONTEXT_FORM else {}),
        "base": base_entry(job, settings, "No new head: the base encoder and its pooling are fine-tuned."),
        "training_data": {**data_entry(collection, job, selection, train_part, heldout), **examples_entry(examples, k)},
        "parameters": {**settings.card_parameters(model.max_seq_length), **parameters_entry(settings, loss, guide)},
    }
    return finish(model, work, job, card, figures, held, started, train_seconds)


def examples_entry(examples: Examples, k: int) -> dict[str, Any]:
    """What the card's ``training_data`` records of a bi-encoder's examples (``k`` list
    negatives each)."""
    counts = examples.counts
    return {
        "targets": "top-graded positive",
        "pairs": counts["triplets"],
        "positives": counts["triplets"],
        "list_negatives": k * counts["triplets"],
        "random_negatives": 0,
        "hard_negatives": k * counts["triplets"] if examples.miner else 0,
        **({"hard_negative_miner": examples.miner} if examples.miner else {}),
        **({"teacher": examples.teacher[1]} if examples.teacher else {}),
        **{
            key: counts[key]
            for key in ("dialogues_short_of_negatives", "dialogues_without_positive", "dialogues_without_negative")
        },
    }


def parameters_entry(settings: TrainSettings, loss: str, guide: tuple[Any, dict[str, Any]] | None) -> dict[str, Any]:
    """The card's ``parameters`` after the optimisation's (:meth:`card_parameters`): the loss,
    the negatives, the batches and the held-out split."""
    k = decided(settings.list_negatives, "list_negatives")
    return {
        "loss": loss,
        **({"guide": guide[1]} if guide else {}),
        **({"teacher": settings.teacher} if settings.teacher else {}),
        "hard_negatives": settings.hard_negatives,
        "hard_depth": settings.hard_depth,
        "list_negatives": k,
        "negatives": f"in-batch + {k} list negative{'s' if k > 1 else ''} per query point",
        "batch_sampler": "no_duplicates"
        + (f", grouped by length (windows of {WINDOW} batches)" if settings.batching == "by-length" else ""),
        "batching": settings.batching,
        # GISTEmbedLoss pads per column
        "padding": f"chunks ({CHUNK} texts a chunk)" if settings.padding == "chunks" and guide is None else "column",
        "holdout": settings.holdout,
        "holdout_max": settings.holdout_max,
    }
