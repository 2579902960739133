"""Synthetic, SIGIR 2022-shaped collections and runs, for tests, benchmarks and smoke runs.

Shape of the real set: dialogues with 50 candidates each, ids like
``t5_2qh1i.iixjd.2.3`` (subreddit.submission.turn.n), subsets "plain" and
"grounded". :func:`make_collection` and :func:`make_run` make small collections
with graded labels (0..2, so graded gains are exercised) and runs of a chosen
quality for the evaluator; :func:`text_collection` makes one with text of real
length for the retrieval benchmarks. Everything is seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.models import resolve_model
from dsr.core.run import Run


def make_collection(
    ids: Sequence[str] | None = None,
    n: int = 60,
    candidates: int = 50,
    seed: int = 0,
    grades: Sequence[int] = (0, 0, 0, 0, 1, 2),
    splits: list[tuple[list[str], list[str]]] | None = None,
    name: str = "synthetic",
) -> Collection:
    rng = np.random.default_rng(seed)
    if ids is None:
        ids = [f"t5_2q{k % 7}x.{k:05x}.{k % 5}.3" for k in range(n)]
    dialogues = []
    for k, did in enumerate(ids):
        labels = rng.choice(grades, size=candidates)
        if k % 11 != 5 and not labels.any():  # most dialogues have a relevant candidate
            labels[rng.integers(candidates)] = 1
        cands = [
            Candidate(f"{did}_s{j:02d}", "Title", f"sentence {j} of {did}", float(candidates - j), int(labels[j]))
            for j in range(candidates)
        ]
        dialogues.append(
            Dialogue(
                did,
                f"title {k}",
                [Turn("a", "A", "hello there")],
                Turn("b", "B", "the answer"),
                cands,
                subset="grounded" if k % 2 else "plain",
            )
        )
    return Collection(name, dialogues, splits=splits)


def make_run(
    collection: Collection,
    seed: int = 0,
    quality: float = 0.0,
    ties: bool = False,
    drop_topics: int = 0,
    drop_docs: float = 0.0,
    tag: str = "synthetic",
) -> Run:
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


def text_collection(n_dialogues: int = 846, n_candidates: int = 50, seed: int = 0) -> Collection:
    """SIGIR-shaped with text of real length: every dialogue has its own 50 distinct candidates.

    Words are whole English words of MiniLM's WordPiece vocabulary drawn with a Zipf
    law, so BM25 statistics and encoder input lengths behave like real text (for the
    retrieval and reproduce benchmarks); 3 relevant candidates per dialogue.
    """

    rng = np.random.default_rng(seed)
    # Whole English words of MiniLM's WordPiece vocabulary (one word piece each, so
    # encoder input lengths are like real text), in a seeded order for the Zipf ranks.
    vocab_file = Path(resolve_model("all-MiniLM-L6-v2").path) / "vocab.txt"
    words = [w for w in vocab_file.read_text(encoding="utf-8").split("\n") if w.isalpha() and w.isascii() and len(w) > 1]
    vocab = [words[i] for i in rng.permutation(len(words))]
    cdf = np.cumsum(1.0 / np.arange(1, len(vocab) + 1) ** 1.05)  # Zipf: a few very common words
    cdf /= cdf[-1]

    def sentence(low: int, high: int) -> str:
        picks = np.searchsorted(cdf, rng.random(int(rng.integers(low, high))))
        return " ".join(vocab[i] for i in picks).capitalize() + "."

    dialogues = []
    for d in range(n_dialogues):
        # Reddit-like turns of 10-60 words, Wikipedia-like sentences of 10-40
        turns = [Turn(f"u{t % 2}", f"user{t % 2}", sentence(10, 60)) for t in range(int(rng.integers(2, 8)))]
        cands = [Candidate(f"d{d}-s{c}", f"Article {d % 97}", sentence(10, 40), None, int(c < 3)) for c in range(n_candidates)]
        dialogues.append(Dialogue(f"d{d}", sentence(4, 10), turns, None, cands, subset="grounded" if d % 2 else "plain"))
    return Collection("synthetic-sigir-shape", dialogues)
