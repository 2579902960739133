"""``initial``: the collection's own candidate scores (for SIGIR 2022, its initial ranker)."""

from __future__ import annotations

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.rankers.base import Ranker, ranker_config


class InitialRanker(Ranker):
    """Ranks each dialogue's candidates by ``Candidate.score`` (ties by initial rank, then id).

    An InputError names the first candidate without a score: collections built
    without a first-stage ranker (e.g. CMU_DoG) have none.
    """

    name = "initial"

    def rank(self, collection: Collection) -> Run:
        scores: dict[str, dict[str, float]] = {}
        for dialogue in collection:
            scores[dialogue.id] = topic = {}
            for i, cand in enumerate(dialogue.candidates):
                if cand.score is None:
                    raise InputError(
                        f"collection {collection.name!r} has no initial ranker score here; use another ranker (bm25, dense)",
                        record=dialogue.id,
                        field=f"candidates[{i}].score",
                    )
                topic[cand.id] = float(cand.score)
        return Run.from_scores(
            scores, tag=self.tag, config=ranker_config(self, collection), initial_order=collection.initial_order()
        )
