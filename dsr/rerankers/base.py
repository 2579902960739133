"""What every reranker is: (collection, run) in, a Run out.

A reranker rescores the top ``top_k`` sentences of each topic of a run (all
when ``top_k`` is None) and keeps the rest below them in their original order,
so its output is still a full ranking of every candidate.
"""

from __future__ import annotations

from typing import Any

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.core.stage import Stage
from dsr.core.ties import strictly_decreasing


class Reranker(Stage):
    """A reranker: ``reranker(collection, run)`` (or ``reranker.rerank(collection, run,
    top_k)``) -> Run; its ``top_k`` parameter, when it declares one, is the depth."""

    kind = "reranker"

    def __call__(self, collection: Collection, *runs: Run) -> Run:
        if len(runs) != 1:
            raise InputError(f"reranker {self.name!r} takes exactly one input run, got {len(runs)}")
        return self.rerank(collection, runs[0], top_k=self.params.get("top_k"))

    def rerank(self, collection: Collection, run: Run, top_k: int | None = None) -> Run:
        raise NotImplementedError  # pragma: no cover - abstract


def rerank_top_k(collection: Collection, run: Run, new_scores: Any, k: int | None) -> Run:
    """Apply rescored values to a run's top ``k`` per topic (all when None).

    ``new_scores`` maps ``(topic, doc)`` to the reranker's score and must hold
    every pair of the reranked block. The block is sorted by the new score
    (ties: initial rank, then id, the run tie rule); the rest of the ranking
    keeps its order below the block, at ``floor - 1, floor - 2, ...`` where
    ``floor`` is the block's lowest score. Rerankers and ``dsr reproduce``
    (which varies ``k`` over one table of scores) share this rule.
    """

    rankings: dict[str, list[tuple[str, float]]] = {}
    for qid, ranked in run.rankings.items():
        head, tail = (ranked, []) if k is None else (ranked[:k], ranked[k:])
        order = {doc: i for i, doc in enumerate(collection.candidate_ids(qid))} if qid in collection else {}
        block = sorted(
            ((doc, float(new_scores[qid, doc])) for doc, _ in head), key=lambda ds: (-ds[1], order.get(ds[0], len(order)), ds[0])
        )
        block = strictly_decreasing(block)
        floor = block[-1][1] if block else 0.0
        rest = [(doc, floor - i) for i, (doc, _) in enumerate(tail, start=1)]
        # strictly_decreasing again: far from 0, floor - i can round back to floor
        rankings[qid] = strictly_decreasing(block + rest)
    return Run(rankings, tag=run.tag)
