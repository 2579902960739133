"""Synthetic, SIGIR 2022-shaped collections and runs for the evaluator's tests and bench.

Shape of the real set: dialogues with 50 candidates each, ids like
``t5_2qh1i.iixjd.2.3`` (subreddit.submission.turn.n), subsets "plain" and
"grounded", labels 0/1 (graded 0..2 here, so graded gains are exercised).
"""

from __future__ import annotations

import math

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


def plain_measure(measure: str, ranked: list[str], labels: dict[str, int]) -> float:
    """trec_eval's definitions written out plainly: ``measure`` (RR, AP, P@k, R@k, nDCG@k
    with gain = label and a log2(rank + 1) discount) of the ranking ``ranked``."""
    gains = [labels.get(d, 0) for d in ranked]
    n_rel = sum(1 for g in labels.values() if g >= 1)
    if measure == "RR":
        return next((1 / (i + 1) for i, g in enumerate(gains) if g >= 1), 0.0)
    if measure == "AP":
        hits, total = 0, 0.0
        for i, g in enumerate(gains):
            if g >= 1:
                hits += 1
                total += hits / (i + 1)
        return total / n_rel if n_rel else 0.0
    name, k = measure.split("@")
    k = int(k)
    if name == "P":
        return sum(1 for g in gains[:k] if g >= 1) / k
    if name == "R":
        return sum(1 for g in gains[:k] if g >= 1) / n_rel if n_rel else 0.0
    if name == "nDCG":   # trec_eval: gain = label, discount log2(rank + 1)
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
        ideal = sorted(labels.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg if idcg > 0 else 0.0
    raise AssertionError(measure)
