"""What trained models add to the training data: hard negatives mined by a bi-encoder (the
training dialogues ranked by a model, ``dsr train --hard-negatives MODEL``, so that each
dialogue's negatives can be drawn among the non-relevant candidates that model ranks highest;
used by both recipes), and a teacher cross-encoder's scores of each example's candidates
(``dsr train --loss distill --teacher MODEL``).

This module imports the dense ranker (torch): import it only where training runs.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any, Protocol

from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.core.run import Run
from dsr.rankers import make_ranker
from dsr.rerankers.cross_encoder import CrossEncoderReranker
from dsr.training.card import ranking_params, read_card
from dsr.training.settings import TrainSettings, decided


class Example(Protocol):
    """A training example whose candidates a teacher scores (a
    :class:`dsr.training.biencoder.Triplet`): its dialogue, its candidates' ids."""

    @property
    def dialogue(self) -> str: ...

    @property
    def ids(self) -> tuple[str, ...]: ...


def mine_negatives(dialogues: Sequence[Dialogue], settings: TrainSettings) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The training dialogues ranked by the bi-encoder ``settings.hard_negatives`` with the
    query strategy and candidate text of its card (``title+recent`` and ``body`` for a model
    without one): dialogue id -> candidate ids, best first; and what the card records of it."""
    miner = decided(settings.hard_negatives, "hard_negatives")
    try:
        model = resolve_model(miner, "bi-encoder")
    except InputError as err:
        raise InputError(f"the hard-negative miner: {err}", field="hard_negatives") from None
    params = ranking_params(read_card(model.path) or {})
    started = time.monotonic()
    print(
        f"dsr train: ranking {len(dialogues)} training dialogues with {miner} "
        f"({', '.join(f'{k} {v}' for k, v in params.items())}) for hard negatives",
        file=sys.stderr,
    )
    run = make_ranker("dense", model=miner, **params).rank(Collection("hard-negatives", dialogues))
    ranked = {qid: [doc for doc, _ in docs] for qid, docs in run.rankings.items()}
    return ranked, {
        "miner": model.describe(),
        **params,
        "depth": settings.hard_depth,
        "seconds": round(time.monotonic() - started, 1),
    }


def teacher_scores(
    dialogues: Sequence[Dialogue], examples: Sequence[Example], teacher: str
) -> tuple[list[list[float]], dict[str, Any]]:
    """Each example's candidates (``example.ids``: its positive, then its list negatives) scored
    by the cross-encoder ``teacher`` exactly as ``dsr rerank --model TEACHER`` scores them (the
    query strategy, length and candidate text of its card); and what the card records of it."""
    try:
        reranker = CrossEncoderReranker(model=teacher)
        model_info = reranker.resolve()
    except InputError as err:
        raise InputError(f"the teacher: {err.message}", field="teacher") from None
    started = time.monotonic()
    by_id = {d.id: d for d in dialogues}
    wanted = {e.dialogue: list(dict.fromkeys(e.ids)) for e in examples}
    print(
        f"dsr train: scoring {sum(map(len, wanted.values()))} (query, sentence) pairs of "
        f"{len(wanted)} training dialogues with the teacher {teacher}",
        file=sys.stderr,
    )
    run = Run({qid: [(cid, float(-i)) for i, cid in enumerate(ids)] for qid, ids in wanted.items()}, "teacher-input")
    scored = reranker.rerank(Collection("teacher", [by_id[qid] for qid in wanted]), run)
    table = {qid: dict(ranked) for qid, ranked in scored.rankings.items()}
    scores = [[table[e.dialogue][cid] for cid in e.ids] for e in examples]
    return scores, {
        "teacher": model_info.describe(),
        "spec": teacher,
        **{k: reranker.params[k] for k in ("query", "text", "max_length")},
        "backend": reranker.backend(),
        "pairs": sum(map(len, wanted.values())),
        "seconds": round(time.monotonic() - started, 1),
    }
