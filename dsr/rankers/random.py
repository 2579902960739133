"""``random``: a seeded random order of each dialogue's candidates (the floor of a table)."""

from __future__ import annotations

import hashlib

import numpy as np

from dsr.core.data import Collection
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.rankers.base import Ranker, ranker_config


class RandomRanker(Ranker):
    """Uniform random scores, seeded by ``seed`` and the dialogue id.

    A dialogue's order depends only on the seed and its own id, not on which
    other dialogues the collection holds or their order, so subsets and
    splits of a collection get the same rankings.
    """

    name = "random"
    PARAMS = (Param("seed", 0, "int", "random seed (with the dialogue id)", low=0),)

    def rank(self, collection: Collection) -> Run:
        seed = int(self.params["seed"])
        scores = {}
        for dialogue in collection:
            salt = int.from_bytes(hashlib.sha256(dialogue.id.encode("utf-8")).digest()[:8], "little")
            rng = np.random.default_rng([seed, salt])
            values = rng.random(len(dialogue.candidates))
            scores[dialogue.id] = {c.id: float(v) for c, v in zip(dialogue.candidates, values)}
        return Run.from_scores(
            scores, tag=self.tag, config=ranker_config(self, collection), initial_order=collection.initial_order()
        )
