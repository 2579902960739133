"""Synthetic, SIGIR 2022-shaped collections and runs for the evaluator's tests and bench.

Shape of the real set: dialogues with 50 candidates each, ids like
``t5_2qh1i.iixjd.2.3`` (subreddit.submission.turn.n), subsets "plain" and
"grounded", labels 0/1 (graded 0..2 here, so graded gains are exercised).
"""

from __future__ import annotations

import numpy as np

from retrieval.data import Candidate, Collection, Dialogue, Turn
from retrieval.run import Run


def make_collection(ids=None, n: int = 60, candidates: int = 50, seed: int = 0,
                    grades=(0, 0, 0, 0, 1, 2), splits=None, name: str = "synthetic") -> Collection:
    rng = np.random.default_rng(seed)
    if ids is None:
        ids = [f"t5_2q{k % 7}x.{k:05x}.{k % 5}.3" for k in range(n)]
    dialogues = []
    for k, did in enumerate(ids):
        labels = rng.choice(grades, size=candidates)
        if k % 11 != 5 and not labels.any():   # most dialogues have a relevant candidate
            labels[rng.integers(candidates)] = 1
        cands = [Candidate(f"{did}_s{j:02d}", "Title", f"sentence {j} of {did}",
                           float(candidates - j), int(labels[j])) for j in range(candidates)]
        dialogues.append(Dialogue(did, f"title {k}", [Turn("a", "A", "hello there")],
                                  Turn("b", "B", "the answer"), cands,
                                  subset="grounded" if k % 2 else "plain"))
    return Collection(name, dialogues, splits=splits)


def make_run(collection: Collection, seed: int = 0, quality: float = 0.0, ties: bool = False,
             drop_topics: int = 0, drop_docs: float = 0.0, tag: str = "synthetic") -> Run:
    """Scores = quality * label + noise; ``ties`` draws small integer scores (many ties)."""
    rng = np.random.default_rng(seed)
    scores = {}
    for k, d in enumerate(collection.dialogues):
        if k < drop_topics:
            continue
        doc_scores = {}
        for c in d.candidates:
            if drop_docs and rng.random() < drop_docs:
                continue
            noise = float(rng.integers(0, 4)) if ties else float(rng.normal())
            doc_scores[c.id] = quality * c.label + noise
        scores[d.id] = doc_scores
    if ties:
        # keep the ties (Run.from_scores would break them): order by score only
        rankings = {q: sorted(s.items(), key=lambda x: -x[1]) for q, s in scores.items()}
        return Run(rankings, tag)
    return Run.from_scores(scores, tag)
