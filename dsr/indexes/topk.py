"""The best ``k`` of scored rows, ties by row: what a sharded search keeps of each shard
(:func:`top_rows`) and how it merges them (:func:`merge_top_k`), for BM25 and dense search
over a corpus and for open retrieval's settled near ties (:mod:`dsr.indexes.embeddings`)."""

from __future__ import annotations

import numpy as np

__all__ = ["top_rows", "merge_top_k"]


def top_rows(scores: np.ndarray, k: int, margin: float = 0.0) -> np.ndarray:
    """The positions of the ``k`` best scores and of every score within ``margin`` of the k-th
    (``margin`` 0: every row tied with it, so that a merge of shards breaks ties by global row,
    as one index would; all of them when there are ``k`` or fewer, none when ``k`` is 0)."""
    if len(scores) <= k:
        return np.arange(len(scores), dtype=np.int64)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    threshold = scores[np.argpartition(-scores, k - 1)[:k]].min()
    return np.flatnonzero(scores >= threshold - margin).astype(np.int64)


def merge_top_k(rows: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Best ``k`` of the shards' lists: score descending, then global row ascending."""
    order = np.lexsort((rows, -scores))[:k]
    return [(int(rows[i]), float(scores[i])) for i in order]
