"""Hard negatives mined by a bi-encoder: the training dialogues ranked by a model (``dsr train
--hard-negatives MODEL``) so that each dialogue's negatives can be drawn among the
non-relevant candidates that model ranks highest. Used by both recipes.

This module imports the dense ranker (torch): import it only where training runs.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.rankers import make_ranker
from dsr.training.card import ranking_params, read_card
from dsr.training.settings import TrainSettings


def mine_negatives(dialogues, settings: TrainSettings) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The training dialogues ranked by the bi-encoder ``settings.hard_negatives`` with the
    query strategy and candidate text of its card (``title+recent`` and ``body`` for a model
    without one): dialogue id -> candidate ids, best first; and what the card records of it."""
    try:
        model = resolve_model(settings.hard_negatives, "bi-encoder")
    except InputError as err:
        raise InputError(f"the hard-negative miner: {err}", field="hard_negatives") from None
    params = ranking_params(read_card(model.path) or {})
    started = time.monotonic()
    print(f"dsr train: ranking {len(dialogues)} training dialogues with {settings.hard_negatives} "
          f"({', '.join(f'{k} {v}' for k, v in params.items())}) for hard negatives", file=sys.stderr)
    run = make_ranker("dense", model=settings.hard_negatives, **params).rank(
        Collection("hard-negatives", dialogues))
    ranked = {qid: [doc for doc, _ in docs] for qid, docs in run.rankings.items()}
    return ranked, {"miner": model.describe(), **params, "depth": settings.hard_depth,
                    "seconds": round(time.monotonic() - started, 1)}
