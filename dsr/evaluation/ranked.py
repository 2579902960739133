"""trec_eval's common measures computed with numpy from arrays of ranked labels.

A run is turned once into a matrix of *ranked labels* (one row per topic it ranks, the
grade of the document at each rank; :data:`NONPOOL` for a document the qrels do not hold,
:data:`UNJUDGED` for a negative grade, as trec_eval's ``form_res_rels`` marks them), and
every measure below is a few numpy operations on that matrix for all topics at once:
no ``{qid: {doc: score}}`` dict per run, no call into trec_eval per run. A tuning grid of
hundreds of configurations is measured in the time pytrec_eval took for a few.

The measures are exactly the ones :func:`dsr.evaluation.measures.Evaluator` hands to
trec_eval (``P@k``, ``R@k``, ``RR``, ``AP``, ``AP@k``, ``nDCG``, ``nDCG@k``, ``NumQ``,
``NumRet``, ``NumRel``, with ``rel`` and ``judged_only``), computed with trec_eval 9.0.8's
own arithmetic so that every value is the same double, not only close: counts divided as
doubles, sums accumulated rank by rank (``np.cumsum`` adds in order; a pairwise ``np.sum``
would round differently), the DCG discount ``log2(rank + 1)`` taken from the C library's
``log2`` (``math.log2``), as trec_eval's code calls it. The tests check every value equal to
ir_measures (pytrec_eval) on random runs with near-ties (``tests/evaluation/
test_ranked_measures.py``) and to a plain walk of the run (``tools/plain_eval.py``); any
other measure, and a run these arrays cannot describe exactly (a hand-made run naming a
document twice in a topic), is computed by ir_measures as before.

The order scored is the order a :class:`~dsr.core.run.Run` holds, which is the order
trec_eval gives its written file (strictly decreasing float32 scores; see
:mod:`dsr.core.run`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dsr.core.run import Run
from dsr.core.ties import _strict_scores

#: trec_eval's RELVALUE_NONPOOL: a retrieved document the qrels do not hold (also the padding
#: after a topic's last rank)
NONPOOL = -1
#: trec_eval's RELVALUE_UNJUDGED: a document whose grade in the qrels is negative
UNJUDGED = -2
#: trec_eval's measures computed here, by the name trec_eval gives them (``P_5``: ``P``)
KINDS = ("P", "recall", "recip_rank", "map", "map_cut", "ndcg", "ndcg_cut", "num_q", "num_ret", "num_rel_ret", "num_rel")
#: the grades of a topic the qrels do not hold
_no_grades: dict[str, int] = {}
#: flat label arrays kept per evaluator (a grid's runs share a few layouts of documents)
LAYOUTS_KEPT = 8


@dataclass(frozen=True)
class Spec:
    """One measure as trec_eval computes it: its kind (trec_eval's name without the cutoff),
    cutoff (None: the whole ranking), relevance level, judged documents only."""

    kind: str
    cutoff: int | None
    rel: int
    judged: bool


def spec_of(native: tuple[tuple[int, bool], str] | None) -> Spec | None:
    """The :class:`Spec` of a measure the evaluator hands to trec_eval (``native``: its
    ``((relevance level, judged only), trec_eval name)``, e.g. ``((1, False), "P_5")``)."""
    if native is None:
        return None
    (rel, judged), name = native
    kind, _, cutoff = name.rpartition("_")
    if not cutoff.isdigit():
        kind, cutoff = name, ""
    if kind not in KINDS:
        return None
    return Spec(kind, int(cutoff) if cutoff else None, int(rel), bool(judged))


class Labels:
    """The qrels as arrays, over the evaluator's topics (in its order)."""

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], topics: Sequence[str]) -> None:
        self.topics = list(topics)
        self.index = {t: i for i, t in enumerate(self.topics)}
        #: per topic, doc -> the label a ranked row holds (a negative grade: UNJUDGED)
        self.grades = [{d: (int(g) if g >= 0 else UNJUDGED) for d, g in qrels.get(t, {}).items()} for t in self.topics]
        #: topics with at least one judgement (trec_eval evaluates no other). A topic judged only
        #: with negative grades is one with nothing relevant here; trec_eval 9.0.8 leaves it
        #: undefined (it sizes its array of grade levels 0 and reads past it: zeros, the
        #: counts, or a loop that never ends, by what it evaluated before)
        self.judged = np.array([bool(g) for g in self.grades], dtype=bool)
        positive = [sorted((g for g in grades.values() if g > 0), reverse=True) for grades in self.grades]
        width = max((len(p) for p in positive), default=0)
        gains = np.zeros((len(positive), max(width, 1)))
        for i, p in enumerate(positive):
            gains[i, : len(p)] = p
        #: the ideal DCG after each rank (rank by rank, as trec_eval adds)
        self.ideal = np.cumsum(gains / discounts(gains.shape[1]), axis=1)
        self._relevant: dict[int, np.ndarray] = {}
        self._layouts: list[tuple[list[str], list[str], np.ndarray, np.ndarray]] = []

    def relevant(self, rel: int) -> np.ndarray:
        """Per topic, how many documents the qrels grade ``rel`` or more (trec_eval num_rel)."""
        if rel not in self._relevant:
            self._relevant[rel] = np.array(
                [sum(1 for g in grades.values() if g >= rel) for grades in self.grades], dtype=np.int64
            )
        return self._relevant[rel]

    def layout(self, topics: list[str], docs: list[str], sizes: np.ndarray) -> np.ndarray:
        """The label of each of ``docs`` (topic ``topics[i]`` holding the next ``sizes[i]``),
        kept for the next run of the same documents (a grid's runs share them: checked by
        equality, which costs a pass over shared string objects)."""
        for held_topics, held_docs, held_sizes, labels in self._layouts:
            if held_docs == docs and held_topics == topics and np.array_equal(held_sizes, sizes):
                return labels
        labels = np.empty(len(docs), dtype=np.int64)
        start = 0
        for qid, size in zip(topics, sizes.tolist()):
            i = self.index.get(qid)
            get = self.grades[i].get if i is not None else _no_grades.get
            labels[start : start + size] = [get(d, NONPOOL) for d in docs[start : start + size]]
            start += size
        self._layouts = [(topics, docs, sizes, labels), *self._layouts[: LAYOUTS_KEPT - 1]]
        return labels


@dataclass
class Ranked:
    """A run as ranked labels: ``labels[r, i]`` is the label at rank ``i + 1`` of the topic
    ``rows[r]`` (an index into the evaluator's topics), ``lengths[r]`` how many it ranks."""

    rows: np.ndarray
    labels: np.ndarray
    lengths: np.ndarray


def ranked(run: Run, labels: Labels) -> Ranked | None:
    """``run`` as :class:`Ranked` (topics of the evaluator the run ranks, each with at least
    one document); None when the arrays cannot describe it as trec_eval would read it (a
    topic naming a document twice: the reference path decides)."""
    flat = run.flat_ranking()
    if flat is not None:
        sizes = flat.sizes
        flat_labels = labels.layout(flat.topics, flat.docs, sizes)[flat.order]
        topics = flat.topics
    else:
        rankings = run.rankings
        topics = list(rankings)
        lists = list(rankings.values())
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        if getattr(run, "_normalised", None) is not rankings:
            # the scores as_dict would give the evaluator (the same errors for scores that are
            # not finite, or too many ties at the bottom of the float32 range)
            values = np.fromiter((float(s) for ranked in lists for _, s in ranked), dtype=np.float64, count=int(sizes.sum()))
            ends = np.cumsum(sizes)
            _strict_scores(values, ends, lambda i: _entry(lists, ends, i))
        parts = []
        for qid, ranked_docs in zip(topics, lists):
            i = labels.index.get(qid)
            docs = [d for d, _ in ranked_docs]
            if len(set(docs)) != len(docs):
                return None
            get = labels.grades[i].get if i is not None else _no_grades.get
            parts.append([get(d, NONPOOL) for d in docs])
        flat_labels = np.fromiter((g for part in parts for g in part), dtype=np.int64, count=int(sizes.sum()))
    rows = np.fromiter((labels.index.get(q, -1) for q in topics), dtype=np.int64, count=len(topics))
    return _matrix(rows, sizes, flat_labels, labels)


def _entry(lists: Sequence[Sequence[tuple[str, float]]], ends: np.ndarray, i: int) -> tuple[str, float]:
    which = int(np.searchsorted(ends, i, side="right"))
    return lists[which][i - (int(ends[which - 1]) if which else 0)]


def _matrix(rows: np.ndarray, sizes: np.ndarray, flat_labels: np.ndarray, labels: Labels) -> Ranked:
    """The labels laid end to end as one padded row per topic the evaluator knows, judges
    and the run ranks (with a document)."""
    keep = (rows >= 0) & (sizes > 0)
    keep[keep] = labels.judged[rows[keep]]
    width = int(sizes.max(initial=0))
    if keep.all() and len(sizes) and (sizes == width).all():
        return Ranked(rows, flat_labels.reshape(len(sizes), width), sizes)
    starts = np.cumsum(sizes) - sizes
    rows, sizes, starts = rows[keep], sizes[keep], starts[keep]
    width = int(sizes.max(initial=0))
    matrix = np.full((len(rows), width), NONPOOL, dtype=np.int64)
    column = np.arange(width)
    inside = column[None, :] < sizes[:, None]
    matrix[inside] = flat_labels[(starts[:, None] + column[None, :])[inside]]
    return Ranked(rows, matrix, sizes)


_DISCOUNTS = np.zeros(0)


def discounts(width: int) -> np.ndarray:
    """``log2(rank + 1)`` for ranks 1..width, by the C library's log2 (trec_eval's)."""
    global _DISCOUNTS
    if len(_DISCOUNTS) < width:
        _DISCOUNTS = np.array([math.log2(i + 2) for i in range(max(width, 2 * len(_DISCOUNTS)))])
    return _DISCOUNTS[:width]


def _judged_only(run: Ranked) -> Ranked:
    """The ranking without the documents that are not judged (trec_eval -J: the judged ones
    move up, keeping their order)."""
    judged = run.labels >= 0
    order = np.argsort(~judged, axis=1, kind="stable")
    labels = np.take_along_axis(run.labels, order, axis=1)
    lengths = judged.sum(axis=1)
    labels[np.arange(labels.shape[1])[None, :] >= lengths[:, None]] = NONPOOL
    return Ranked(run.rows, labels, lengths)


def _at(cumulative: np.ndarray, cutoff: int | None) -> np.ndarray:
    """The cumulative value at rank ``cutoff`` (or the last), for every row; 0 with no column."""
    width = cumulative.shape[1]
    if not width:
        return np.zeros(cumulative.shape[0], dtype=cumulative.dtype)
    return cumulative[:, (width if cutoff is None else min(cutoff, width)) - 1]


class _Cache:
    """What several measures of one run share, made once: per relevance level, the hits and
    their running count; the running sums of AP and DCG."""

    def __init__(self, run: Ranked, labels: Labels) -> None:
        self.run, self.labels = run, labels
        self.parts: dict[Hashable, np.ndarray] = {}

    def get(self, key: Hashable, make: Callable[[], np.ndarray]) -> np.ndarray:
        if key not in self.parts:
            self.parts[key] = make()
        return self.parts[key]

    def hits(self, rel: int) -> np.ndarray:
        return self.get(("hits", rel), lambda: np.cumsum(self.run.labels >= rel, axis=1))

    def precision_sums(self, rel: int) -> np.ndarray:
        def make() -> np.ndarray:
            hits = self.run.labels >= rel
            ranks = np.arange(1, hits.shape[1] + 1, dtype=np.float64)
            return np.cumsum(np.where(hits, self.hits(rel) / ranks, 0.0), axis=1)

        return self.get(("ap", rel), make)

    def dcg(self) -> np.ndarray:
        def make() -> np.ndarray:
            gains = np.where(self.run.labels > 0, self.run.labels, 0).astype(np.float64)
            return np.cumsum(gains / discounts(gains.shape[1]), axis=1)

        return self.get("dcg", make)


def compute(run: Ranked, labels: Labels, specs: Sequence[Spec]) -> np.ndarray:
    """``(len(run.rows), len(specs))``: each measure on each topic the run ranks."""
    out = np.zeros((len(run.rows), len(specs)))
    caches = {False: _Cache(run, labels)}
    for j, spec in enumerate(specs):
        if spec.judged not in caches:
            caches[spec.judged] = _Cache(_judged_only(run), labels)
        out[:, j] = _value(spec, caches[spec.judged])
    return out


def _value(spec: Spec, cache: _Cache) -> np.ndarray:
    """One measure on every row, with trec_eval's arithmetic (see the module docstring)."""
    run, labels, kind, k, rel = cache.run, cache.labels, spec.kind, spec.cutoff, spec.rel
    with np.errstate(invalid="ignore", divide="ignore"):
        if kind == "P":
            assert k is not None, "P is always cut off"
            return _at(cache.hits(rel), k) / float(k)
        if kind in ("recall", "map", "map_cut"):
            relevant = labels.relevant(rel)[run.rows]
            if kind == "recall":
                return np.where(relevant > 0, _at(cache.hits(rel), k) / relevant, 0.0)
            sums = _at(cache.precision_sums(rel), k)
            # map: 0 unless a relevant document is retrieved; map_cut: unless one is judged
            counted = _at(cache.hits(rel), None) if kind == "map" else relevant
            return np.where(counted > 0, sums / relevant, 0.0)
        if kind == "recip_rank":
            hits = run.labels >= rel
            first = hits.argmax(axis=1) if hits.shape[1] else np.zeros(len(run.rows), dtype=np.int64)
            return np.where(hits.any(axis=1), 1.0 / (first + 1.0), 0.0)
        if kind in ("ndcg", "ndcg_cut"):
            ideal = _at(labels.ideal[run.rows], k)
            return np.where(ideal > 0, _at(cache.dcg(), k) / ideal, 0.0)
        if kind == "num_q":
            return np.ones(len(run.rows))
        if kind == "num_ret":
            return run.lengths.astype(np.float64)
        if kind == "num_rel_ret":
            return _at(cache.hits(rel), None).astype(np.float64)
        if kind == "num_rel":
            return labels.relevant(rel)[run.rows].astype(np.float64)
    raise ValueError(f"not an array measure: {spec}")
