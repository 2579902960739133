"""trec_eval's measures over arrays: ``dsr trec_eval``'s fast path for large files.

Reference: :mod:`dsr.evaluation.trec_eval_tool`'s own evaluation, which gives each topic to
pytrec_eval (trec_eval 9.0.x's C) and computes the measures pytrec_eval lacks or gets wrong
in Python, a Python object per run line. Here every evaluated topic's ranking is one column
of a matrix of *labels* (what trec_eval's ``te_form_res_rels`` makes of each retrieved
document: its grade, :data:`NONPOOL` or :data:`UNJUDGED`), and each measure is a few numpy
operations on a block of such columns, with trec_eval's own arithmetic so that every value is
the same double: counts divided as doubles, sums accumulated rank by rank (``np.cumsum`` adds
in order, as the C does), ``log2`` and ``log`` from the C library (``math``, on the distinct
arguments), the C's branches kept (``map`` is 0 unless a relevant document is retrieved,
``ndcg_cut`` is not normalised when the topic has no positive grade...).

What it covers: every measure of ``all_trec`` of both releases with any parameters, every
option but ``-Z``, any ``-l`` (pytrec_eval refuses levels below 1: for those the reference
hands its rankings to these arrays too), a topic judged only with grade -1 after another (it
reads the grade counts the topic before left, as trec_eval does). What it does not, and
leaves to the reference: gain parameters that name a grade twice, z-scores. Why: the
reference's Python object per run line makes a run of millions of lines slow and large,
where trec_eval is neither.
``tests/evaluation/test_trec_eval_arrays.py`` holds the two equal on random and adversarial
files; ``tools/trec_eval_differential.py`` holds both to the binaries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from dsr.evaluation.trec_eval_measures import (
    MIN_GEO_MEAN,
    NONPOOL,
    RBP_NOTE,
    UNJUDGED,
    Ranked,
    Selected,
    _atol,
    _gains,
    _persistence,
    c_lround,
    c_merge_sort,
)

_T = TypeVar("_T")

#: trec_eval's INFAP_EPSILON
INFAP_EPSILON = 0.00001
#: the label past a ranking's end: below every level (levels are clamped to -3 and up)
PAD = -4
#: cells of one block of topics (ranks x topics): bounds the memory of each measure's arrays
BLOCK_CELLS = 1 << 18


@dataclass
class Topics:
    """The evaluated topics, in trec_eval's order, as arrays: what every measure reads."""

    ids: list[str]
    #: int64: the labels of every topic's ranking in rank order, end to end (after -M and -J)
    labels: np.ndarray
    #: where each topic's labels start, and how many (num_ret)
    starts: np.ndarray
    lengths: np.ndarray
    #: int64: each topic's judged grades (>= 0) in descending order, end to end
    grades: np.ndarray
    grade_starts: np.ndarray
    grade_lengths: np.ndarray
    #: 10.0 under -c: the topics scored with trec_eval's stand-in ranking (their values cleared)
    bogus: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: False for a topic judged only with grade -1 (and below): its grade segment is the topic
    #: before's, whose counts trec_eval reads there (:func:`~dsr.evaluation.trec_eval_fast.
    #: stale_grades`), while it counts no relevant document
    own: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def first(self, n: int) -> Topics:
        """The first ``n`` topics (those trec_eval evaluates before it stops)."""
        return Topics(
            self.ids[:n],
            self.labels,
            self.starts[:n],
            self.lengths[:n],
            self.grades,
            self.grade_starts[:n],
            self.grade_lengths[:n],
            self.bogus[:n],
            None if self.own is None else self.own[:n],
        )


def segments(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment, offset in it) of every element of the segments laid end to end."""
    seg = np.repeat(np.arange(len(lengths)), lengths)
    offset = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return seg, offset


def count_in(flags: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many of ``flags`` are set in each segment (exact: integers)."""
    total = np.concatenate([[0], np.cumsum(flags, dtype=np.int64)])
    return total[starts + lengths] - total[starts]


# --- blocks ---------------------------------------------------------------------------


def blocks(lengths: np.ndarray, widths: np.ndarray, cells: int = BLOCK_CELLS) -> list[slice]:
    """Consecutive topics whose matrix (their longest ranking or ideal list, times their count)
    stays within ``cells``."""
    out, start, longest = [], 0, 0
    for i, width in enumerate(np.maximum(lengths, widths).tolist()):
        longest_here = max(longest, width, 1)
        if i > start and longest_here * (i - start + 1) > cells:
            out.append(slice(start, i))
            start, longest_here = i, max(width, 1)
        longest = longest_here
    if start < len(lengths) or not out:
        out.append(slice(start, len(lengths)))
    return out


class Block:
    """Some consecutive topics as matrices, ranks down and topics across: ``R[i, t]`` is the
    label at rank ``i + 1`` of topic ``t`` (:data:`PAD` past its end); the qrels' figures the
    measures need, per topic; what several measures share, made once."""

    def __init__(self, topics: Topics, rows: slice, level: int, num_docs: int):
        self.level = level
        #: the level as compared with labels: clamped, which no label's comparison notices
        self.lev = max(min(level, 2**31), -3)
        self.num_docs = num_docs
        self.num_ret = topics.lengths[rows].astype(np.int64)
        n = len(self.num_ret)
        self.w = int(self.num_ret.max(initial=0))
        self.R = np.full((self.w, n), PAD, np.int64)
        seg, offset = segments(topics.starts[rows], self.num_ret)
        self.R[offset, seg] = topics.labels[np.repeat(topics.starts[rows], self.num_ret) + offset]
        self.g_starts, self.g_lengths = topics.grade_starts[rows], topics.grade_lengths[rows]
        self.grades = topics.grades
        self.num_rel = count_in(topics.grades >= max(level, 0), self.g_starts, self.g_lengths)
        self.num_nonrel = self.g_lengths - self.num_rel if level > 0 else np.zeros(n, np.int64)
        if topics.own is not None:
            self.num_rel = np.where(topics.own[rows], self.num_rel, 0)
        #: the highest judged grade + 1 (trec_eval's num_rel_levels)
        self.num_rel_levels = np.where(
            self.g_lengths > 0, topics.grades[np.minimum(self.g_starts, len(topics.grades) - 1)] + 1, 0
        )
        self.ranks = np.arange(1, self.w + 1, dtype=np.float64)[:, None]
        self.cols = np.arange(n)
        self._made: dict[Hashable, Any] = {}

    def made(self, key: Hashable, make: Callable[[], _T]) -> _T:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    @property
    def rel(self) -> np.ndarray:
        return self.made("rel", lambda: self.R >= self.lev)

    @property
    def hits(self) -> np.ndarray:
        """Relevant documents (label >= the level) down to each rank."""
        return self.made("hits", lambda: np.cumsum(self.rel, axis=0, dtype=np.int32))

    @property
    def judged(self) -> np.ndarray:
        return self.made("judged", lambda: self.R >= 0)

    @property
    def num_rel_ret(self) -> np.ndarray:
        """``te_form_res_rels``' count: judged documents at or above the level (not the
        unjudged or unpooled ones a level below 0 makes relevant)."""
        return self.made("nrr", lambda: (self.judged & self.rel).sum(axis=0, dtype=np.int64))

    @property
    def total_hits(self) -> np.ndarray:
        return self.at(self.hits, None)

    @property
    def precision_sums(self) -> np.ndarray:
        """Sum of the precision at each relevant document, down to each rank (map's sum)."""
        return self.made("ps", lambda: np.cumsum(np.where(self.rel, self.hits / self.ranks, 0.0), axis=0))

    def at(self, cumulative: np.ndarray, k: int | np.ndarray | None) -> np.ndarray:
        """The running value at rank ``k`` (a number or one per topic; None: the last rank; past
        the ranking: its last), 0 at rank 0."""
        n = cumulative.shape[1]
        if not cumulative.shape[0]:
            return np.zeros(n, cumulative.dtype)
        if k is None:
            return cumulative[-1]
        if isinstance(k, (int, np.integer)):
            whole = int(k)
            return cumulative[min(whole, cumulative.shape[0]) - 1] if whole > 0 else np.zeros(n, cumulative.dtype)
        cut = np.minimum(np.asarray(k, dtype=np.int64), cumulative.shape[0])
        return np.where(cut > 0, cumulative[np.maximum(cut - 1, 0), self.cols[: len(cut)]], 0)

    def first_at(self, count: np.ndarray) -> np.ndarray:
        """The row of the ``count``-th relevant document of each topic (count >= 1; -1 where
        the topic has fewer)."""
        rows, starts, found = self.made("relevant rows", self._relevant_rows)
        inside = (count >= 1) & (count <= found)
        return np.where(inside, rows[np.where(inside, starts + count - 1, 0)] if len(rows) else 0, -1)

    def _relevant_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows of each topic's relevant documents, topic after topic."""
        topic, rows = np.nonzero(self.rel.T)
        found = np.bincount(topic, minlength=len(self.num_ret)).astype(np.int64)
        return rows.astype(np.int64), np.cumsum(found) - found, found


# --- helpers with C's arithmetic -------------------------------------------------------

_LOG2: list[float] = []


def log2_of_whole(values: np.ndarray) -> np.ndarray:
    """C's ``log2`` of whole numbers >= 1 (a table made with :func:`math.log2`)."""
    top = int(values.max(initial=1))
    if len(_LOG2) <= top:
        _LOG2.extend(math.log2(i) if i else -math.inf for i in range(len(_LOG2), max(top + 1, 2 * len(_LOG2))))
    return np.asarray(_LOG2)[values]


def c_map(function: Callable[[float], float], values: np.ndarray) -> np.ndarray:
    """``function`` (a C library function, from :mod:`math`) of each value, computed once per
    distinct value."""
    flat = np.ravel(values)
    distinct, inverse = np.unique(flat, return_inverse=True)
    return np.asarray([function(v) for v in distinct.tolist()], dtype=np.float64)[inverse].reshape(np.shape(values))


def c_log2(value: float) -> float:
    """C's ``log2``: -inf at 0, NaN below (``math.log2`` raises there)."""
    return math.log2(value) if value > 0 else -math.inf if value == 0 else math.nan


def c_log(value: float) -> float:
    return math.log(value) if value > 0 else -math.inf if value == 0 else math.nan


def discounts(w: int) -> np.ndarray:
    """``log2(rank + 1)`` for ranks 1..w, as a column."""
    return log2_of_whole(np.arange(2, w + 2))[:, None]


def _geo(values: np.ndarray) -> np.ndarray:
    """``log(MAX(value, MIN_GEO_MEAN))``, by the C library's log."""
    return c_map(c_log, np.maximum(values, MIN_GEO_MEAN))


# --- gains (ndcg, ndcg_rel, Rndcg, G) ---------------------------------------------------


def c_int(value: float) -> int:
    """C's conversion of a double to an ``int`` on x86-64 (``cvttsd2si``): truncated toward 0;
    out of range or NaN: INT_MIN."""
    if value != value or not -(2**31) <= value < 2**31:
        return -(2**31)
    return int(value)


@dataclass(frozen=True)
class Gains:
    """trec_eval's ``setup_gains``: a table of (grade, gain), the grade itself unless a
    ``grade=gain`` parameter names it, sorted by ``qsort`` with ``comp_rel_gain``, which
    returns the difference of two gains *as an int*: gains less than 1 apart compare equal, so
    the table's order is what glibc's merge sort makes of the entries in their order (the
    parameters first, then the grades not named). The ideal ranking walks the table from its
    end, each grade as often as it is judged, and stops at the first gain of 0 or less; a label
    not in the table (unpooled, unjudged) gains 0 unless a parameter names it."""

    #: (grade, gain) of the parameters, in their order (10.0 skips a name that is not a
    #: whole number; 9.0.8 reads it with atol)
    named: tuple[tuple[int, float], ...]

    @classmethod
    def of(cls, selected: Selected, release: str) -> Gains | None:
        """The gains of ``selected``'s parameters; None when a grade is named twice (the C
        then keeps two entries: the reference decides)."""
        pairs = [(name, value) for name, value in selected.params if release == "9.0.8" or _WHOLE.fullmatch(name)]
        levels = [_atol(name) for name, _ in pairs]
        if len(set(levels)) != len(levels):
            return None
        return cls(tuple((level, float(value)) for level, (_, value) in zip(levels, pairs)))

    def table(self, levels: int) -> list[tuple[int, float]]:
        """The sorted table of a topic whose highest grade is ``levels - 1``."""
        named = {level for level, _ in self.named}
        entries = [*self.named, *((i, float(i)) for i in range(levels) if i not in named)]
        return c_merge_sort(entries, lambda a, b: c_int(a[1] - b[1]))

    def of_labels(self, labels: np.ndarray) -> np.ndarray:
        """Each label's gain (a grade: the grade, unless named; other labels: 0 unless named)."""
        out = np.where(labels >= 0, labels, 0).astype(np.float64)
        for level, gain in self.named:
            out[labels == level] = gain
        return out

    def ideal(self, block: Block) -> tuple[np.ndarray, np.ndarray]:
        """(the ideal ranking's positive gains in the walk's order, as a matrix whose row L
        holds the gain that stopped the walk: trec_eval's ``ideal_gain`` from there on; L, their
        count, per topic)."""
        n = len(block.num_ret)
        if not self.named:  # the grades in order: the positive ones, highest first, then 0
            positive = count_in(block.grades > 0, block.g_starts, block.g_lengths)
            seg, offset = segments(block.g_starts, positive)
            matrix = np.zeros((int(positive.max(initial=0)) + 1, n))
            matrix[offset, seg] = block.grades[np.repeat(block.g_starts, positive) + offset].astype(np.float64)
            return matrix, positive
        seg, offset = segments(block.g_starts, block.g_lengths)
        grade = block.grades[np.repeat(block.g_starts, block.g_lengths) + offset]
        top = int(block.num_rel_levels.max(initial=0))
        counts = np.bincount(seg * (top + 1) + grade, minlength=n * (top + 1)).reshape(n, top + 1)
        matrix = np.zeros((int(block.g_lengths.max(initial=0)) + 1, n))
        count = np.zeros(n, np.int64)
        for levels in np.unique(block.num_rel_levels).tolist():
            cols = np.flatnonzero(block.num_rel_levels == levels)
            stopped = np.zeros(len(cols), bool)
            for level, gain in reversed(self.table(levels)):
                times = counts[cols, level] if 0 <= level < levels else np.zeros(len(cols), np.int64)
                active = ~stopped & (times > 0)
                if gain <= 0:
                    matrix[count[cols[active]], cols[active]] = gain
                    stopped |= active
                    continue
                at, offset = segments(count[cols[active]], times[active])
                matrix[np.repeat(count[cols[active]], times[active]) + offset, cols[active][at]] = gain
                count[cols[active]] += times[active]
        return matrix, count


_WHOLE = re.compile(r"[+-]?\d+")


def _ideal_cumulative(matrix: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The ideal DCG after each position (positions past the positive gains add nothing)."""
    inside = np.arange(matrix.shape[0])[:, None] < count[None, :]
    return np.cumsum(np.where(inside, matrix / discounts(matrix.shape[0]), 0.0), axis=0)


def _results(block: Block, gains: Gains) -> tuple[np.ndarray, np.ndarray]:
    """(each rank's gain, the results' DCG down to each rank)."""

    def make() -> tuple[np.ndarray, np.ndarray]:
        rg = np.where(block.R == PAD, 0.0, gains.of_labels(block.R))
        return rg, np.cumsum(np.where(rg != 0, rg / discounts(block.w), 0.0), axis=0)

    return block.made(("results", gains), make)


def _ideal(block: Block, gains: Gains) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the ideal's gains, their count, the ideal DCG after each position)."""

    def make() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        matrix, count = gains.ideal(block)
        return matrix, count, _ideal_cumulative(matrix, count)

    return block.made(("ideal", gains), make)


def ndcg(block: Block, gains: Gains) -> np.ndarray:
    """``te_calc_ndcg``: the results' DCG over the ideal's, when the ideal's is positive."""
    _, rdcg = _results(block, gains)
    ideal = _ideal(block, gains)[2][-1]
    return np.where(ideal > 0, block.at(rdcg, None) / np.where(ideal > 0, ideal, 1.0), 0.0)


def ndcg_rel(block: Block, gains: Gains) -> np.ndarray:
    """``te_calc_ndcg_rel``: nDCG averaged over the ranks of relevant documents, and the
    final nDCG for each relevant document not retrieved."""
    rg, rdcg = _results(block, gains)
    _, count, cumulative = _ideal(block, gains)
    n = len(count)
    rows = np.minimum(np.arange(block.w)[:, None], np.maximum(count - 1, 0)[None, :])
    ideal_at = np.where(count[None, :] > 0, cumulative[np.minimum(rows, cumulative.shape[0] - 1), np.arange(n)], 0.0)
    total = block.at(np.cumsum(np.where(rg > 0, rdcg / ideal_at, 0.0), axis=0), None)
    retrieved = (rg > 0).sum(axis=0)
    final_ideal = np.where(count > 0, cumulative[-1], 0.0)
    total = total + (count - retrieved).astype(np.float64) * block.at(rdcg, None) / final_ideal
    return np.where(total > 0, total / count, 0.0)


def rndcg(block: Block, gains: Gains) -> np.ndarray:
    """``te_calc_Rndcg``: nDCG averaged at each rank where the ideal gain changes (and at the
    ranking's end when it is longer than the ideal's positive gains and one)."""
    _, rdcg = _results(block, gains)
    matrix, count, cumulative = _ideal(block, gains)
    n = len(count)
    height = matrix.shape[0]
    # the start's gain only decides a change at rank 1, which counts nothing (no ideal DCG yet)
    before = np.vstack([matrix[:1], matrix[:-1]])
    position = np.arange(height)[:, None]
    change = (matrix != before) & (position >= 1) & (position <= count[None, :])
    exclusive = np.vstack([np.zeros((1, n)), rdcg])  # results' DCG before each rank
    done = np.minimum(position, block.num_ret[None, :])
    ideal_before = np.where(position >= 1, cumulative[np.maximum(position - 1, 0), np.arange(n)], 0.0)
    terms = np.where(change, exclusive[done, np.arange(n)] / np.where(change, ideal_before, 1.0), 0.0)
    total = np.cumsum(terms, axis=0)[-1]
    events = change.sum(axis=0)
    tail = (count + 1 < block.num_ret) & (cumulative[-1] > 0)
    total = np.where(tail, total + block.at(rdcg, None) / np.where(tail, cumulative[-1], 1.0), total)
    events = events + tail
    return np.where(block.num_rel == 0, 0.0, total / events)


def g_measure(block: Block, gains: Gains) -> np.ndarray:
    """``te_calc_G``: gains discounted by log2 of the cost spent beyond them (the ideal's
    gains, at least 1 a document) over the ideal's total gain."""
    rg, _ = _results(block, gains)
    matrix, count, _ = _ideal(block, gains)
    w = block.w
    ideal = np.zeros((w, len(count)))
    rows = min(w, matrix.shape[0])
    ideal[:rows] = np.where(np.arange(rows)[:, None] < count[None, :], matrix[:rows], 0.0)
    cost = np.where(ideal >= 1.0, ideal, 1.0)
    spent = np.cumsum(cost, axis=0)
    gained = np.cumsum(rg, axis=0)
    argument = np.where(rg != 0, (2 + spent) - gained, 2.0)
    whole = bool(np.all(argument == np.round(argument))) and (argument.min(initial=1) >= 1)
    logs = log2_of_whole(argument.astype(np.int64)) if whole else c_map(c_log2, argument)
    total = block.at(np.cumsum(np.where(rg != 0, rg / logs, 0.0), axis=0), None)
    ideal_total = _ideal_cumulative_sum(matrix, count)
    return np.where(ideal_total > 0, total / np.where(ideal_total > 0, ideal_total, 1.0), 0.0)


def _ideal_cumulative_sum(matrix: np.ndarray, count: np.ndarray) -> np.ndarray:
    inside = np.arange(matrix.shape[0])[:, None] < count[None, :]
    return np.cumsum(np.where(inside, matrix, 0.0), axis=0)[-1]


# --- the interpolated and R-based measures ---------------------------------------------


def recall_cutoffs(percents: Sequence[float], num_rel: np.ndarray, release: str) -> np.ndarray:
    """(cutoffs, topics): each recall level as a number of relevant documents (9.0.8: + 0.9,
    truncated; 10.0: ``lround``)."""
    scaled = np.asarray(percents, dtype=np.float64)[:, None] * num_rel[None, :].astype(np.float64)
    if release == "9.0.8":
        return (scaled + 0.9).astype(np.int64)
    return c_map(c_lround, scaled).astype(np.int64)


def interpolated(block: Block, percents: Sequence[float], release: str) -> np.ndarray:
    """``te_calc_iprec_at_recall`` (cutoffs, topics): the interpolated precision where the
    ranking reaches each recall level. The C walks up from the last rank keeping the best
    precision seen (``int_precis``, from ``num_rel_ret / num_ret``) and hands it to a cutoff
    at the relevant document that brings its running count (from ``num_rel_ret`` down) to it;
    cutoffs of 0 or less get the value the walk ends with."""
    nrr = block.num_rel_ret
    cutoffs = recall_cutoffs(percents, block.num_rel, release)
    # relevant documents a level below 0 counts that num_rel_ret does not (unjudged, unpooled)
    extra = block.total_hits - nrr
    initial = nrr / block.num_ret.astype(np.float64)  # 0/0 for an empty ranking: C's -nan too
    if block.w:
        precision = np.where(block.R != PAD, (block.hits - extra[None, :]) / block.ranks, -np.inf)
        best = np.maximum(np.maximum.accumulate(precision[::-1], axis=0)[::-1], initial[None, :])
    else:
        best = np.zeros((0, len(nrr)))
    n = len(nrr)
    end = np.where(nrr > 0, _best_at(best, block.first_at(extra + 1)), initial)
    out = np.zeros(cutoffs.shape)
    for j, cut in enumerate(cutoffs):
        value = np.where(cut >= 1, _best_at(best, block.first_at(np.maximum(cut, 1) + extra)), end)
        out[j] = np.where(cut > nrr, 0.0, value)
    del n
    return out


def _best_at(best: np.ndarray, rows: np.ndarray) -> np.ndarray:
    if not best.shape[0]:
        return np.zeros(len(rows))
    return best[np.maximum(rows, 0), np.arange(len(rows))]


def eleven_point(block: Block, percents: Sequence[float], release: str) -> np.ndarray:
    """``te_calc_11ptavg``: the interpolated precisions summed as the C adds them (the last
    cutoff first), over their number."""
    values = interpolated(block, percents, release)
    total = np.zeros(values.shape[1])
    for value in values[::-1]:
        total = total + value
    return total / len(percents)


def rprec_mult(block: Block, percents: Sequence[float]) -> np.ndarray:
    """``te_calc_Rprec_mult`` (cutoffs, topics): precision at each multiple of R. Past the
    ranking, num_rel_ret over the cutoff; inside it, the precision the upward walk (from
    num_rel_ret down, stopping when that count reaches 0) finds at the cutoff's rank."""
    nrr = block.num_rel_ret
    cutoffs = recall_cutoffs(percents, block.num_rel, "9.0.8")
    extra = block.total_hits - nrr
    last = np.where(nrr > 0, block.first_at(extra + 1) + 1, np.iinfo(np.int64).max)  # where the walk stops
    out = np.zeros(cutoffs.shape)
    for j, cut in enumerate(cutoffs):
        inside = (cut >= 1) & (cut >= last) & (cut <= block.num_ret)
        hits = block.at(block.hits, np.maximum(cut, 1))
        out[j] = np.where(
            cut > block.num_ret,
            nrr / np.where(cut > block.num_ret, cut, 1).astype(np.float64),
            np.where(inside, (hits - extra) / np.maximum(cut, 1).astype(np.float64), 0.0),
        )
    return out


def bpref_sum(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """(bpref's running sum over the judged relevant documents, the judged non-relevant
    retrieved down to each rank)."""
    nonrel = block.judged & (block.R < block.lev)
    relevant = block.judged & block.rel
    seen = np.cumsum(nonrel, axis=0, dtype=np.int64)
    num_rel = block.num_rel[None, :]
    term = np.where(seen > 0, 1.0 - np.minimum(seen, num_rel) / np.minimum(block.num_nonrel, block.num_rel)[None, :], 1.0)
    return block.at(np.cumsum(np.where(relevant, term, 0.0), axis=0), None), seen


def bpref(block: Block) -> np.ndarray:
    def make() -> np.ndarray:
        total, _ = bpref_sum(block)
        return np.where(block.num_rel > 0, total / np.where(block.num_rel > 0, block.num_rel, 1), total)

    return block.made("bpref", make)


def inf_ap(block: Block) -> np.ndarray:
    """``te_calc_infap``, term by term in the C's order of operations."""
    nonrel = block.judged & (block.R < block.lev)
    relevant = block.judged & block.rel
    rel_so_far = np.cumsum(relevant, axis=0, dtype=np.int64)
    nonrel_so_far = np.cumsum(nonrel, axis=0, dtype=np.int64)
    unjudged_so_far = np.cumsum(block.R == UNJUDGED, axis=0, dtype=np.int64)
    fj = np.arange(block.w, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel_so_far - 1 + nonrel_so_far + unjudged_so_far) / fj) * (
            (rel_so_far - 1 + INFAP_EPSILON) / ((rel_so_far - 1 + nonrel_so_far) + 2 * INFAP_EPSILON)
        )
    term = np.where(fj == 0, 1.0, later)
    total = block.at(np.cumsum(np.where(relevant, term, 0.0), axis=0), None)
    return np.where(block.num_rel > 0, total / np.where(block.num_rel > 0, block.num_rel, 1), total)


def bin_g(block: Block) -> np.ndarray:
    """``te_calc_binG``: 1 / log2(3 + i - relevant so far) at each relevant rank i (from 0)."""
    position = np.arange(block.w, dtype=np.int64)[:, None]
    argument = np.where(block.rel, 3 + position - block.hits, 2)
    total = block.at(np.cumsum(np.where(block.rel, 1.0 / log2_of_whole(argument), 0.0), axis=0), None)
    return np.where(block.total_hits > 0, total / block.num_rel, 0.0)


def ndcg_cut(block: Block, cutoffs: Sequence[int]) -> list[np.ndarray]:
    """``te_calc_ndcg_cut``: DCG of the grades at each cutoff over the ideal DCG at it (the
    grades themselves as gains, whatever the level); not normalised without a positive grade."""
    gains = np.where(block.R > 0, block.R, 0).astype(np.float64)
    dcg = np.cumsum(np.where(block.R > 0, gains / discounts(block.w), 0.0), axis=0)
    positive = count_in(block.grades > 0, block.g_starts, block.g_lengths)
    height = int(positive.max(initial=0))
    seg, offset = segments(block.g_starts, positive)
    ideal_gains = np.zeros((height, len(positive)))
    ideal_gains[offset, seg] = block.grades[np.repeat(block.g_starts, positive) + offset]
    ideal = np.cumsum(ideal_gains / discounts(height), axis=0)
    out = []
    for k in cutoffs:
        value = block.at(dcg, k)
        norm = block.at(ideal, np.minimum(k, positive))
        out.append(np.where(positive > 0, value / np.where(positive > 0, norm, 1.0), value))
    return out


# --- 10.0's rbp, rbp_resid and unj -------------------------------------------------------


def _weights(p: float, w: int) -> np.ndarray:
    """``cur_p`` at each rank and after the last: 1, p, p*p, ... multiplied in order."""
    out = np.empty(w + 1)
    weight = 1.0
    for i in range(w + 1):
        out[i] = weight
        weight = weight * p
    return out


def rbp(block: Block, selected: Selected, notes: set[str] | None) -> np.ndarray:
    """10.0's ``te_calc_rbp`` with the reference's gains (:func:`dsr.evaluation.
    trec_eval_measures.rbp`): one gain table per number of grade levels."""
    p = _persistence(selected.params)
    weights = _weights(p, block.w)[:-1, None]
    out = np.zeros(len(block.num_ret))
    for levels in np.unique(block.num_rel_levels).tolist():
        gains = _gains(Ranked([], 0, [0] * levels, block.level), selected.params)
        low, high = min([0.0, *gains.values()]), max([0.0, *gains.values()])
        if low < 0 or high > 1:
            if notes is not None:
                notes.add(RBP_NOTE)
            gains = {g: (v - low) / (high - low) for g, v in gains.items()}
        cols = np.flatnonzero(block.num_rel_levels == levels)
        labels = block.R[:, cols]
        gain = np.zeros(labels.shape)
        for grade, value in gains.items():
            gain[labels == grade] = value
        total = np.cumsum(np.where(gain != 0, gain * weights, 0.0), axis=0)
        out[cols] = (1.0 - p) * (total[-1] if block.w else 0.0)
    return out


def rbp_resid(block: Block, selected: Selected) -> np.ndarray:
    """10.0's ``te_calc_rbp_resid``: p to the ranking's length plus (1 - p) times the weights
    of its unjudged documents (0 when none is)."""
    p = _persistence(selected.params)
    weights = _weights(p, block.w)
    unjudged = (block.R < 0) & (block.R != PAD)
    total = block.at(np.cumsum(np.where(unjudged, weights[:-1, None], 0.0), axis=0), None)
    return np.where(unjudged.any(axis=0), weights[block.num_ret] + (1 - p) * total, 0.0)


def unj(block: Block, cutoffs: Sequence[int]) -> list[np.ndarray]:
    unjudged = np.cumsum((block.R == NONPOOL) | (block.R == UNJUDGED), axis=0, dtype=np.int64)
    return [block.at(unjudged, k) / k for k in cutoffs]


def relstring(block: Block, length: float) -> list[str]:
    """``te_calc_relstring``: a character per document of the top ``length``."""
    n = max(0, min(int(length), block.w))
    top = block.R[:n]
    chars = np.where(top > 9, ord(">"), np.where(top >= 0, ord("0") + np.clip(top, 0, 9), 0))
    chars = np.where(top == NONPOOL, ord("-"), np.where(top == UNJUDGED, ord("."), chars))
    chars = np.where((top < 0) & (top != NONPOOL) & (top != UNJUDGED), ord("<"), chars)
    keep = np.minimum(block.num_ret, n)
    text = chars.T.astype(np.uint8)
    return [bytes(row[:k]).decode("ascii") for row, k in zip(text, keep.tolist())]


# --- one measure on a block --------------------------------------------------------------


def values(block: Block, selected: Selected, release: str, notes: set[str] | None = None) -> list:
    """``selected``'s values on every topic of the block, one array per name (relstring: one
    string per topic)."""
    name, params = selected.name, selected.params
    with np.errstate(divide="ignore", invalid="ignore"):
        if name in _CUT:
            return [_CUT[name](block, k) for k in params]
        if name in _SIMPLE:
            return [_SIMPLE[name](block)]
        if name in ("ndcg", "ndcg_rel", "Rndcg", "G"):
            gains = Gains.of(selected, release)
            assert gains is not None, "covers() sends a gain named twice to the reference"
            return [_GAINED[name](block, gains)]
        if name == "iprec_at_recall":
            return list(interpolated(block, params, release))
        if name == "11pt_avg":
            return [eleven_point(block, params, release)]
        if name == "Rprec_mult":
            return list(rprec_mult(block, params))
        if name == "ndcg_cut":
            return ndcg_cut(block, params)
        if name == "set_F":
            return [_set_f(block, params[0])]
        if name == "utility":
            return [_utility(block, params)]
        if name == "relstring":
            return [relstring(block, params[0])]
        if name == "rbp":
            return [rbp(block, selected, notes)]
        if name == "rbp_resid":
            return [rbp_resid(block, selected)]
        if name == "unj":
            return unj(block, params)
    raise AssertionError(f"no array form for {name}")


def _map(block: Block) -> np.ndarray:
    total = block.at(block.precision_sums, None)
    return np.where(block.total_hits > 0, total / block.num_rel, 0.0)


def _gm_map(block: Block) -> np.ndarray:
    total = block.at(block.precision_sums, None)
    return _geo(np.where(block.total_hits > 0, total / block.num_rel, total))


def _rprec(block: Block) -> np.ndarray:
    k = np.minimum(block.num_ret, block.num_rel)
    return np.where(k > 0, block.at(block.hits, k) / block.num_rel, 0.0)


def _recip_rank(block: Block) -> np.ndarray:
    if not block.w:
        return np.zeros(len(block.num_ret))
    return np.where(block.rel.any(axis=0), 1.0 / (block.rel.argmax(axis=0) + 1.0), 0.0)


def _set_f(block: Block, x: float) -> np.ndarray:
    nrr = block.num_rel_ret
    precision = nrr / block.num_ret.astype(np.float64)
    recall = nrr / block.num_rel.astype(np.float64)
    return np.where(nrr > 0, (x + 1.0) * precision * recall / (x * precision + recall), 0.0)


def _utility(block: Block, params: Sequence[float]) -> np.ndarray:
    a, b, c, d = params
    nrr, ret, rel = block.num_rel_ret, block.num_ret, block.num_rel
    return a * nrr + b * (ret - nrr) + c * (rel - nrr) + d * (block.num_docs + nrr - ret - rel)


def _ratio(top: np.ndarray, bottom: np.ndarray, when: np.ndarray) -> np.ndarray:
    return np.where(when, top / np.where(when, bottom, 1).astype(np.float64), 0.0)


_SIMPLE: dict[str, Callable[[Block], np.ndarray]] = {
    "num_q": lambda b: np.ones(len(b.num_ret)),
    "num_ret": lambda b: b.num_ret.astype(np.float64),
    "num_rel": lambda b: b.num_rel.astype(np.float64),
    "num_rel_ret": lambda b: b.num_rel_ret.astype(np.float64),
    "map": _map,
    "gm_map": _gm_map,
    "Rprec": _rprec,
    "bpref": bpref,
    "gm_bpref": lambda b: _geo(bpref(b)),
    "recip_rank": _recip_rank,
    "infAP": inf_ap,
    "binG": bin_g,
    "set_P": lambda b: _ratio(b.num_rel_ret, b.num_ret, b.num_ret > 0),
    "set_recall": lambda b: _ratio(b.num_rel_ret, b.num_rel, b.num_rel > 0),
    "set_relative_P": lambda b: _ratio(b.num_rel_ret, np.minimum(b.num_ret, b.num_rel), (b.num_ret > 0) & (b.num_rel > 0)),
    "set_map": lambda b: _ratio(
        b.num_rel_ret.astype(np.float64) * b.num_rel_ret.astype(np.float64),
        b.num_ret.astype(np.float64) * b.num_rel.astype(np.float64),
        (b.num_ret > 0) & (b.num_rel > 0),
    ),
    "num_nonrel_judged_ret": lambda b: (b.judged.sum(axis=0) - b.num_rel_ret).astype(np.float64),
}
_CUT: dict[str, Callable[[Block, int], np.ndarray]] = {
    "P": lambda b, k: b.at(b.hits, k) / float(k),
    "recall": lambda b, k: _ratio(b.at(b.hits, k), b.num_rel, b.num_rel > 0),
    "relative_P": lambda b, k: _ratio(b.at(b.hits, k), np.minimum(k, b.num_rel), b.num_rel > 0),
    "success": lambda b, k: np.where(b.at(b.hits, k) > 0, 1.0, 0.0),
    "map_cut": lambda b, k: _ratio(b.at(b.precision_sums, k), b.num_rel, b.num_rel > 0),
}
_GAINED: dict[str, Callable[[Block, Gains], np.ndarray]] = {"ndcg": ndcg, "ndcg_rel": ndcg_rel, "Rndcg": rndcg, "G": g_measure}
