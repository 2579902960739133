"""How well a trained model reranks dialogues it never saw, next to the baselines.

The held-out dialogues' own candidate lists are reranked (every candidate
scored), and nDCG@5 and MRR are computed with ir_measures against the
dialogues' labels, for the trained model, the collection's initial order and
BM25. The figures go into the model card; they are a sanity check on data
from the training distribution, not the benchmark result (``dsr evaluate``
on a collection never trained on is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dsr.core.candidate_text import candidate_text
from dsr.core.data import Candidate, Collection, Dialogue, initial_order
from dsr.core.run import Run
from dsr.evaluation.measures import Evaluator
from dsr.evaluation.qrels import qrels_from_collection
from dsr.rankers import make_ranker

MEASURES = ("nDCG@5", "RR")
BASELINES = ("initial", "bm25")


def model_run(
    score_pairs: Callable[[list[tuple[str, str]]], Sequence[float]],
    dialogues: Sequence[Dialogue],
    query: Callable[[Dialogue], str],
    tag: str,
    text: str | Callable[[Candidate], str] = "body",
) -> Run:
    """Score every candidate (as ``text`` renders it: a text form, or a candidate -> text
    function such as :func:`dsr.collections.documents.candidate_renderer`'s) of every
    dialogue in one batch call; ties by initial rank."""
    render = text if callable(text) else (lambda c: candidate_text(c, text))
    pairs, keys = [], []
    for d in dialogues:
        query_string = query(d)
        for c in d.candidates:
            pairs.append((query_string, render(c)))
            keys.append((d.id, c.id))
    scores: dict[str, dict[str, float]] = {}
    for (qid, cid), score in zip(keys, score_pairs(pairs)):
        scores.setdefault(qid, {})[cid] = float(score)
    return Run.from_scores(scores, tag=tag, initial_order=initial_order(dialogues))


def baseline_runs(collection: Collection) -> dict[str, Run]:
    """The registered initial and BM25 rankers on the held-out dialogues (default parameters)."""

    return {name: make_ranker(name).rank(collection) for name in BASELINES}


def evaluate_heldout(
    score_pairs: Callable[[list[tuple[str, str]]], Sequence[float]],
    dialogues: Sequence[Dialogue],
    query: Callable[[Dialogue], str],
    name: str,
    text: str | Callable[[Candidate], str] = "body",
) -> dict[str, Any]:
    """Figures for the model card: measures of the model and the baselines, per ranker."""

    subset = Collection(f"{name}-heldout", dialogues)
    evaluator = Evaluator(qrels_from_collection(subset), list(MEASURES), subset.ids)

    def measure(run: Run) -> dict[str, float]:
        return {m: round(float(v), 4) for m, v in zip(evaluator.names, evaluator(run).mean())}

    out: dict[str, Any] = {"dialogues": len(dialogues), "measures": list(MEASURES), "rankers": {}}
    for label, run in baseline_runs(subset).items():
        out["rankers"][label] = measure(run)
    out["rankers"]["model"] = measure(model_run(score_pairs, dialogues, query, name, text))
    return out
