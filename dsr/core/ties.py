"""The tie rule: a ranking's scores made strictly decreasing as float32 (each tie stepped
just below the score before it, in a stated order), and trec_eval's own order of a run's lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

#: largest finite float32, and the smallest normal one
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)


def float32(score: float) -> float:
    """``score`` as the float32 a run file holds (a Python float): rounded to
    nearest, clamped to the float32 range, subnormals and -0.0 made 0.0."""
    return float(_float32_array(np.array([score], dtype=np.float64))[0])


def _float32_array(values: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.clip(values, -F32_MAX, F32_MAX).astype(np.float32).astype(np.float64)
    out[np.abs(out) < F32_TINY] = 0.0
    return out


def _step_below(value: float) -> float:
    """The next float32 below ``value``, skipping subnormals."""
    if value == 0.0:
        return -F32_TINY
    if value == F32_TINY:
        return 0.0
    below = float(np.nextafter(np.float32(value), np.float32(-np.inf)))
    if below < -F32_MAX:
        raise ValueError("too many tied scores at the bottom of the float32 range")
    return below


def strictly_decreasing(ranked: Iterable[tuple[str, float]]) -> list[tuple[str, float]]:
    """The ranking with each score rounded to float32 and, when it is not below its
    predecessor, lowered to the next float32 below it (see the tie rule)."""
    ranked = list(ranked)
    values = np.array([float(s) for _, s in ranked], dtype=np.float64)
    scores = _strict_scores(values, np.array([len(ranked)]), lambda i: ranked[i])
    return list(zip([doc for doc, _ in ranked], scores.tolist()))


def _strict_scores(values: np.ndarray, ends: np.ndarray, entry: Callable[[int], tuple[str, float]]) -> np.ndarray:
    """The tie rule's scores for rankings laid end to end (ranking i ends before ``ends[i]``):
    float32-rounded, and stepped below a predecessor they do not go below. One numpy pass for
    all rankings (a run's hundreds of topics cost about what one did). ValueError naming
    ``entry(i)`` (doc, score) for the first score that is not finite."""
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        doc, score = entry(int(bad[0]))
        raise ValueError(f"score of {doc!r} is not finite: {score!r}")
    scores = _float32_array(values)
    not_below = np.flatnonzero(scores[1:] >= scores[:-1]) + 1
    sizes = np.diff(ends, prepend=0)
    starts = np.zeros(len(scores), dtype=bool)
    starts[(ends - sizes)[sizes > 0]] = True  # a ranking's first score has no predecessor
    not_below = not_below[~starts[not_below]]
    if len(not_below):
        fixed = scores.tolist()
        for which in np.unique(np.searchsorted(ends, not_below, side="right")).tolist():
            prev = math.inf
            for i in range(int(ends[which - 1]) if which else 0, int(ends[which])):
                if fixed[i] >= prev:
                    fixed[i] = _step_below(prev)
                prev = fixed[i]
        scores = np.array(fixed, dtype=np.float64)
    return scores


def _entry(rankings: list[list[tuple[str, float]]], ends: np.ndarray, i: int) -> tuple[str, float]:
    """The (doc, score) at flat position ``i`` of rankings laid end to end."""
    which = int(np.searchsorted(ends, i, side="right"))
    return rankings[which][i - (int(ends[which - 1]) if which else 0)]


def _tie_rule_flat(scores: Mapping[str, Mapping[str, float]], initial_order: Mapping[str, list[str]]) -> FlatRanking:
    """Each topic's scores ranked by the tie rule: the scores laid end to end, with each doc's
    initial rank (ids not in the initial order after those that are), for :func:`rank_flat`."""
    topics = list(scores)
    docs: list[str] = []
    positions: list[int] = []
    sizes = np.zeros(len(topics), dtype=np.int64)
    for n, qid in enumerate(topics):
        keys = list(scores[qid])
        initial = initial_order.get(qid, ())
        if keys == initial:  # scores given in the initial order (the usual case): rank = place
            positions += range(len(keys))
        else:
            position = {d: i for i, d in enumerate(initial)}
            missing = len(position)
            positions += [position.get(d, missing) for d in keys]
        docs += keys
        sizes[n] = len(keys)
    values = np.fromiter((float(v) for qid in topics for v in scores[qid].values()), dtype=np.float64, count=len(docs))
    return rank_flat(topics, docs, sizes, values, np.asarray(positions, dtype=np.int64))


class FlatRanking:
    """Rankings laid end to end, as numpy arrays: topic ``topics[i]`` holds the next
    ``sizes[i]`` of ``docs`` (in the order given, not ranked); ``order`` lists the positions
    in ``docs`` topic by topic in ranked order, and ``scores`` the tie rule's scores in that
    order (float32 values, strictly decreasing within a topic). What an evaluator needs
    (the ranked order) without a Python list per topic; :meth:`rankings` builds those."""

    __slots__ = ("topics", "docs", "sizes", "order", "scores")

    def __init__(self, topics: list[str], docs: list[str], sizes: np.ndarray, order: np.ndarray, scores: np.ndarray) -> None:
        self.topics, self.docs, self.sizes, self.order, self.scores = topics, docs, sizes, order, scores

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.topics, self.docs, self.sizes, self.order, self.scores)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.topics, self.docs, self.sizes, self.order, self.scores = state

    def rankings(self) -> dict[str, list[tuple[str, float]]]:
        """``{topic: [(doc, score), ...]}`` in ranked order."""
        docs = self.docs
        ranked_docs = [docs[i] for i in self.order.tolist()]
        strict = self.scores.tolist()
        rankings, start = {}, 0
        for qid, end in zip(self.topics, np.cumsum(self.sizes).tolist()):
            rankings[qid] = list(zip(ranked_docs[start:end], strict[start:end]))
            start = end
        return rankings


#: a sort of topics laid end to end is done row by row (one topic per row, padded to the
#: longest) when the padding adds at most this share of cells: an order of magnitude faster
#: than one lexsort of everything
PADDED_SORT_WASTE = 1.0


def _sort_order(topic: np.ndarray, values: np.ndarray, position_of: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The flat positions ordered by (topic, -value, position): ``np.lexsort`` of the three,
    done per topic on a padded matrix when the topics are of similar sizes (the same order:
    the padding sorts last and is dropped)."""
    n, width = len(values), int(sizes.max(initial=0))
    if not n or len(sizes) * width > (1 + PADDED_SORT_WASTE) * n or not np.isfinite(values).all():
        return np.lexsort((position_of, -values, topic))
    starts = np.cumsum(sizes) - sizes
    column = np.arange(n) - np.repeat(starts, sizes)
    neg = np.full((len(sizes), width), np.inf)
    pos = np.full((len(sizes), width), np.iinfo(np.int64).max, dtype=np.int64)
    neg[topic, column] = -values
    pos[topic, column] = position_of
    within = np.lexsort((pos, neg), axis=1)
    flat = within + starts[:, None]
    kept: np.ndarray = flat[np.arange(width)[None, :] < sizes[:, None]]
    return kept


def rank_flat(topics: list[str], docs: list[str], sizes: np.ndarray, values: np.ndarray, position_of: np.ndarray) -> FlatRanking:
    """The tie rule over topics laid end to end (topic i holds the next ``sizes[i]`` docs,
    their scores ``values`` and initial ranks ``position_of``): score descending, then initial
    rank, then id, scores made strictly decreasing. One numpy sort of all topics' (topic,
    -score, initial rank); topics where that leaves a tie (ids outside the initial order with
    equal scores) are sorted again with the id."""
    topic = np.repeat(np.arange(len(topics)), sizes)
    order = _sort_order(topic, values, position_of, sizes)
    keys = (topic[order], -values[order], position_of[order])
    tied = np.flatnonzero((keys[0][1:] == keys[0][:-1]) & (keys[1][1:] == keys[1][:-1]) & (keys[2][1:] == keys[2][:-1]))
    ends = np.cumsum(sizes)
    for n in np.unique(keys[0][tied + 1]).tolist():  # the id decides: sort that topic in Python
        start = int(ends[n - 1]) if n else 0
        within = sorted(range(start, int(ends[n])), key=lambda i: (-values[i], position_of[i], docs[i]))
        order[start : int(ends[n])] = within
    ranked_values = values[order]
    strict = _strict_scores(ranked_values, ends, lambda i: (docs[int(order[i])], ranked_values[i]))
    return FlatRanking(topics, docs, sizes, order, strict)


def _has_float32_ties(scores: list[float]) -> bool:
    as32 = np.asarray(scores, dtype=np.float64).astype(np.float32)
    return len(np.unique(as32)) < len(as32)


def trec_eval_order(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The order trec_eval evaluates: score as float32 descending, ties by doc id descending."""
    by_doc = sorted(ranked, key=lambda ds: ds[0], reverse=True)
    as32 = np.asarray([s for _, s in by_doc], dtype=np.float64).astype(np.float32)
    order = np.argsort(-as32, kind="stable")
    return [by_doc[i] for i in order]
