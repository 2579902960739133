"""``dsr trec_eval``'s fast path: files read as arrays (:mod:`dsr.evaluation.trec_eval_columns`),
each topic's ranking put in trec_eval's order with one sort of the whole run (or none when the
file is in that order already, as runs usually are), each retrieved document's label found by
one sort of hashed (topic, document) keys, and the measures computed over arrays
(:mod:`dsr.evaluation.trec_eval_arrays`).

The reference is :func:`dsr.evaluation.trec_eval_tool.trec_eval`'s own path, which this one
falls back to (:func:`evaluate` returns None) for what it does not cover: files the columnar
reader does not read, a NaN score (trec_eval's sort then depends on glibc's merge sort, which
the reference replays), z-scores, a gain named twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from dsr.core.errors import InputError
from dsr.evaluation import trec_eval_arrays as arrays
from dsr.evaluation.trec_eval_columns import Columns, read_qrels_columns, read_run_columns, widen
from dsr.evaluation.trec_eval_measures import NONPOOL, UNJUDGED, Selected


class Options(Protocol):
    """What the fast path reads of trec_eval's options (:class:`dsr.evaluation.trec_eval_tool.Options`
    is one; that module calls this one, so the options are named here rather than imported)."""

    @property
    def release(self) -> str: ...
    @property
    def level(self) -> int: ...
    @property
    def num_docs(self) -> int: ...
    @property
    def max_docs(self) -> int | None: ...
    @property
    def complete(self) -> bool: ...
    @property
    def judged_only(self) -> bool: ...
    @property
    def zscores(self) -> str | Path | None: ...


#: the highest grade whose gain table (named gains) the arrays build
MAX_NAMED_GRADE = 1 << 12
#: 10.0's stand-in ranking for a qrels topic the run lacks, under -c: one unjudged document
BOGUS_DOC = "ceci_nest_pas_un_docno"


@dataclass
class Stop:
    """Where trec_eval stops in its loop over topics (exit 4): before topic ``at``."""

    at: int
    #: what trec_eval prints on stderr
    words: str
    #: dsr's message
    message: str


@dataclass
class Evaluated:
    """What the printing needs: the topics evaluated, each value per topic, and the counts the
    summary reads."""

    ids: list[str]
    #: name -> one value per topic (relstring: strings)
    columns: dict[str, Sequence]
    #: topics of the qrels, and their lines graded above 0 (-c's num_rel)
    qrels_topics: int
    qrels_relevant: int
    tag: str
    stop: Stop | None = None


def covers(selected: list[Selected], options: Options) -> bool:
    """Whether the fast path computes these measures (the gains of each named once; no -Z)."""
    if options.zscores is not None:
        return False
    gained = [s for s in selected if s.name in ("ndcg", "ndcg_rel", "Rndcg", "G")]
    return all(arrays.Gains.of(s, options.release) is not None for s in gained)


def evaluate(
    qrels_path: str | Path, run_path: str | Path, options: Options, selected: list[Selected], notes: set[str]
) -> Evaluated | None:
    """``dsr trec_eval`` on the files by arrays, or None where the reference decides."""
    if not covers(selected, options):
        return None
    qrels = read_qrels_columns(qrels_path)
    if qrels is None:
        return None
    run = read_run_columns(run_path)
    if run is None or np.isnan(run.values).any():
        return None
    run.values = typed_scores(run.values, options.release)
    width = max(qrels.words.shape[1], run.words.shape[1])
    widen(qrels, width)
    widen(run, width)
    prepared = _topics(qrels, run, options, selected, run_path)
    if prepared is None:
        return None
    topics, stop = prepared
    if stop is not None:
        topics = topics.first(stop.at)
    if any(s.params for s in selected if s.name in ("ndcg", "ndcg_rel", "Rndcg", "G")) and len(topics.grades):
        if int(topics.grades.max()) > MAX_NAMED_GRADE:
            return None  # a table per grade: the reference's
    columns = compute(topics, selected, options, notes)
    return Evaluated(topics.ids, columns, len(qrels.topics), int(np.count_nonzero(qrels.values > 0)), run.tag or "dsr", stop)


def compute(topics: arrays.Topics, selected: list[Selected], options: Options, notes: set[str]) -> dict[str, Sequence]:
    """Every selected value of every topic, by blocks of topics."""
    columns: dict[str, list] = {name: [] for s in selected if s.name != "runid" for name in s.names}
    widths = topics.grade_lengths + 1
    for rows in arrays.blocks(topics.lengths, widths):
        block = arrays.Block(topics, rows, options.level, options.num_docs)
        for s in selected:
            if s.name == "runid":
                continue
            for name, value in zip(s.names, arrays.values(block, s, options.release, notes)):
                columns[name].append(value)
    out: dict[str, Sequence] = {}
    for name, parts in columns.items():
        if parts and isinstance(parts[0], list):
            out[name] = [text for part in parts for text in part]
        else:
            out[name] = np.concatenate(parts) if parts else np.zeros(0, np.float64)  # type: ignore[assignment]
    if topics.bogus.any():
        _clear_bogus(out, topics.bogus)
    return out


def _clear_bogus(columns: dict[str, Sequence], bogus: np.ndarray) -> None:
    """10.0's clean-up after scoring its stand-in ranking: the names it compares exactly."""
    for name, column in columns.items():
        if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
            assert isinstance(column, np.ndarray)
            column[bogus] = 0.0
        elif name == "relstring":
            assert isinstance(column, list)
            for i in np.flatnonzero(bogus).tolist():
                column[i] = ""


# --- the topics evaluated -----------------------------------------------------------------


def _topics(
    qrels: Columns, run: Columns, options: Options, selected: list[Selected], run_path: str | Path
) -> tuple[arrays.Topics, Stop | None] | None:
    """The evaluated topics as :class:`~dsr.evaluation.trec_eval_arrays.Topics`, and where
    trec_eval stops (None: it does not); None where the reference decides."""
    judged = set(qrels.topics)
    in_run = {q: i for i, q in enumerate(run.topics)}
    if options.release == "9.0.8":
        ids = sorted((q for q in run.topics if q in judged), key=str.encode)
    else:
        ids = sorted(qrels.topics, key=str.encode)
    if not ids:
        raise InputError(
            'no topic has both run lines and judgements (trec_eval: "No queries with both results and relevance info")',
            path=run_path,
        )
    order, starts, full = _order(run)
    lengths = full if options.max_docs is None else np.minimum(full, options.max_docs)
    labels, run_dups = _labels(qrels, run, _kept(order, starts, lengths, full))
    highest = _highest(qrels, ids)
    grades = (*_grades(qrels, ids), highest)
    stop = _stop(ids, in_run, run, qrels, (run_dups, _qrels_duplicates(qrels)), highest, options, selected)
    topics = _assemble(ids, in_run, labels if order is None else labels[order], starts, lengths, grades, qrels, options)
    return topics, stop


def _order(run: Columns) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """The run's lines in trec_eval's order (topic by topic, the score descending, ties by doc
    id descending; ``run.values`` holds the scores as the release reads them) as line numbers
    (None: the file's own order, as runs are usually written), and each run topic's start and
    length in it."""
    topic, score = run.topic, run.values
    boundary = topic[1:] != topic[:-1]
    order = None if np.count_nonzero(boundary) == len(run.topics) - 1 else np.argsort(topic, kind="stable")
    t, s = (topic, score) if order is None else (topic[order], score[order])
    same = ~boundary if order is None else t[1:] == t[:-1]
    if np.any(same & (s[1:] > s[:-1])):
        key = _descending(s)
        if key.dtype == np.uint32:
            by = np.argsort((t.astype(np.uint64) << np.uint64(32)) | key.astype(np.uint64), kind="stable")
        else:
            by = np.lexsort((key, t))
        order = by if order is None else order[by]
        t, s = topic[order], score[order]
        same = t[1:] == t[:-1]
    tied = np.flatnonzero(same & (s[1:] == s[:-1]))
    if len(tied):
        lines = tied if order is None else order[tied]
        if not _greater(run.words[lines], run.words[lines + 1] if order is None else run.words[order[tied + 1]]).all():
            order = _ties_by_doc(np.arange(len(topic)) if order is None else order, tied, run.words)
    lengths = np.bincount(topic, minlength=len(run.topics)).astype(np.int64)
    starts = np.zeros(len(run.topics), np.int64)
    first = np.flatnonzero(np.concatenate([[True], t[1:] != t[:-1]]))
    starts[t[first]] = first
    return order, starts, lengths


def typed_scores(scores: np.ndarray, release: str) -> np.ndarray:
    """The scores as the release holds them: float32 (9.0.8; beyond its range: infinite) or
    doubles (10.0); -0.0 as 0.0 (C compares them equal)."""
    with np.errstate(over="ignore"):
        held = scores.astype(np.float32) if release == "9.0.8" else scores
    return held + held.dtype.type(0.0)


def _descending(score: np.ndarray) -> np.ndarray:
    """An unsigned key whose ascending order is the scores' descending order (NaN excluded)."""
    raw: Any = score.view(np.uint32 if score.dtype == np.float32 else np.uint64)
    top = raw.dtype.type(1 << (8 * raw.dtype.itemsize - 1))
    ascending = np.where(raw & top, ~raw, raw | top)
    return ~ascending


def _greater(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row by row, whether the words ``a`` compare above ``b`` (``strcmp(a, b) > 0``)."""
    out = np.zeros(len(a), bool)
    decided = np.zeros(len(a), bool)
    for k in range(a.shape[1]):
        out |= ~decided & (a[:, k] > b[:, k])
        decided |= a[:, k] != b[:, k]
    return out


def _ties_by_doc(order: np.ndarray, tied: np.ndarray, words: np.ndarray) -> np.ndarray:
    """``order`` with each run of tied lines sorted by doc id, descending."""
    inside = np.zeros(len(order) + 1, bool)
    inside[tied] = True
    inside[tied + 1] = True
    where = np.flatnonzero(inside[:-1])
    group = np.cumsum(~np.isin(where - 1, tied))  # a group starts where no tie joins it to the line before
    lines = order[where]
    keys = [~words[lines, k] for k in range(words.shape[1] - 1, -1, -1)]
    out = order.copy()
    out[where] = lines[np.lexsort((*keys, group))]
    return out


def _kept(order: np.ndarray | None, starts: np.ndarray, lengths: np.ndarray, full: np.ndarray) -> np.ndarray | None:
    """The lines within each topic's first ``lengths`` (after -M), as line numbers (None:
    every line)."""
    if np.array_equal(lengths, full):
        return order
    seg, offset = arrays.segments(starts, lengths)
    at = np.repeat(starts, lengths) + offset
    return at if order is None else order[at]


# --- labels and duplicates, by sorted hashes ------------------------------------------------

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(31))


def _hash(topic: np.ndarray, words: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each line's topic and document words."""
    h = topic.astype(np.uint64) * _MIX[0]
    for k in range(words.shape[1]):
        h ^= words[:, k]
        h *= _MIX[1]
        h ^= h >> _MIX[2]
    return h


@dataclass
class _Sorted:
    """Lines sorted by their hash's top bits, each keeping its position in the low bits: one
    sort finds the duplicates and the lines a qrels line names."""

    top: np.ndarray
    position: np.ndarray
    shift: np.uint64

    @classmethod
    def of(cls, hashes: np.ndarray) -> _Sorted:
        """(``hashes`` is reused.)"""
        bits = max(1, len(hashes).bit_length())
        shift = np.uint64(bits)
        hashes >>= shift
        hashes <<= shift
        hashes |= np.arange(len(hashes), dtype=np.uint64)
        hashes.sort()
        position = (hashes & np.uint64((1 << bits) - 1)).view(np.int64)
        hashes >>= shift
        return cls(hashes, position, shift)


def _duplicates(topic: np.ndarray, words: np.ndarray, ordered: _Sorted, lines: np.ndarray | None) -> dict[int, int]:
    """{topic: a line holding its smallest document id listed twice}, over the lines hashed
    (``lines``: their line numbers; None: the hashed ones are lines 0, 1, ...)."""
    top = ordered.top
    equal = np.flatnonzero(top[1:] == top[:-1])
    if not len(equal):
        return {}
    position = ordered.position if lines is None else lines[ordered.position]
    twice = []
    starts = equal[np.concatenate([[True], equal[1:] != equal[:-1] + 1])]
    for start in starts.tolist():  # a run of equal hashes (a duplicate, or a rare collision)
        end = start + 1
        while end + 1 < len(top) and top[end + 1] == top[start]:
            end += 1
        seen: set[tuple] = set()
        for line in position[start : end + 1].tolist():
            key = (int(topic[line]), *words[line].tolist())
            if key in seen:
                twice.append(line)
            seen.add(key)
    out: dict[int, int] = {}
    for line in twice:
        t = int(topic[line])
        if t not in out or tuple(words[line].tolist()) < tuple(words[out[t]].tolist()):
            out[t] = line
    return out


def _labels(qrels: Columns, run: Columns, kept: np.ndarray | None) -> tuple[np.ndarray, dict[int, int]]:
    """Each run line's label (its grade, UNJUDGED for a negative one, NONPOOL when the qrels do
    not judge it; only the kept lines are looked up), and the run topics listing a document
    twice among their kept lines ({run topic: a line of the smallest such id})."""
    in_run = {q: i for i, q in enumerate(run.topics)}
    if kept is None:
        ordered = _Sorted.of(_hash(run.topic, run.words))
    else:
        ordered = _Sorted.of(_hash(run.topic[kept], run.words[kept]))
    dups = _duplicates(run.topic, run.words, ordered, kept)
    as_run = np.asarray([in_run.get(q, -1) for q in qrels.topics], dtype=np.int64)[qrels.topic]
    lines = np.flatnonzero(as_run >= 0)
    wanted = _hash(as_run[lines], qrels.words[lines]) >> ordered.shift
    by = np.argsort(wanted)  # sorted keys: numpy's search then walks forward
    lines, wanted = lines[by], wanted[by]
    low = np.searchsorted(ordered.top, wanted, side="left")
    count = np.searchsorted(ordered.top, wanted, side="right") - low
    seg, offset = arrays.segments(low, count)
    q_line = lines[seg]
    r_line = ordered.position[np.repeat(low, count) + offset]
    if kept is not None:
        r_line = kept[r_line]
    match = (as_run[q_line] == run.topic[r_line]) & (qrels.words[q_line] == run.words[r_line]).all(axis=1)
    labels = np.full(len(run), NONPOOL, np.int32)
    grade = qrels.values[q_line[match]]
    labels[r_line[match]] = np.where(grade < 0, UNJUDGED, grade)
    return labels, dups


def _qrels_duplicates(qrels: Columns) -> dict[int, int]:
    """{qrels topic: a line of its smallest document judged twice}."""
    return _duplicates(qrels.topic, qrels.words, _Sorted.of(_hash(qrels.topic, qrels.words)), None)


def _grades(qrels: Columns, ids: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each evaluated topic's judged grades (0 or more), highest first, end to end, with their
    starts and counts."""
    at = {q: i for i, q in enumerate(ids)}
    row = np.asarray([at.get(q, -1) for q in qrels.topics], dtype=np.int64)[qrels.topic]
    keep = (row >= 0) & (qrels.values >= 0)
    row, grade = row[keep], qrels.values[keep]
    order = np.lexsort((-grade, row))
    lengths = np.bincount(row, minlength=len(ids)).astype(np.int64)
    return grade[order].astype(np.int64), np.cumsum(lengths) - lengths, lengths


def missing_stop(at: int, qid: str) -> Stop:
    return Stop(
        at,
        f"trec_eval: result qid '{qid}' not found in qrels",
        f"topic {qid!r} of the qrels has no line in the run; trec_eval 10.0 stops here "
        '("result qid not found", exit 4): `complete` scores it 0, `release` 9.0.8 skips it',
    )


def listed_twice_stop(at: int, qid: str, doc: str, named: str) -> Stop:
    return Stop(
        at,
        f"trec_eval.form_res_qrels: duplicate docs {doc}trec_eval: Can't calculate measure '{named}'",
        f'topic {qid!r} lists document {doc!r} twice (trec_eval stops here: "duplicate docs", exit 4)',
    )


def judged_twice_stop(at: int, qid: str, doc: str, named: str) -> Stop:
    return Stop(
        at,
        f"trec_eval.form_res_rels: duplicate docs {doc}\ntrec_eval: Can't calculate measure '{named}'",
        f'topic {qid!r} judges document {doc!r} twice in the qrels (trec_eval stops here: "duplicate docs", exit 4)',
    )


def negative_stop(at: int, qid: str, highest: int, named: str) -> Stop | None:
    """Where a topic judged only with negative grades (the highest: ``highest``) stops trec_eval.
    Its buffer of grade counts is sized by the highest grade + 1 (``te_chk_and_malloc``): the
    first topic gets none and stops it; after another, -2 or below hands ``memset`` a negative
    size and trec_eval crashes (dsr stops), while -1 leaves the buffer (and the count of grade
    levels) as the topic before filled them (:func:`stale_grades`)."""
    if at == 0:
        return Stop(
            at,
            f"trec_eval: Can't calculate measure '{named}'",
            f"topic {qid!r} has only negative grades and no topic before it has another; trec_eval "
            'stops on it ("Can\'t calculate measure", exit 4)',
        )
    if highest < -1:
        return Stop(
            at,
            "(none: it crashes)",
            f"topic {qid!r} has only grades of -2 or below, which crash trec_eval after another topic "
            "(memset of a negative size in te_form_res_rels); dsr stops here",
        )
    return None


def stale_grades(highest: np.ndarray) -> np.ndarray:
    """For each topic, the topic whose grade counts trec_eval's measures read: its own, or for
    a topic whose highest grade is -1 (after the first), those of the last topic before it with
    a grade of 0 or more (its buffer and ``num_rel_levels``, left as they were; its own count of
    relevant documents is 0)."""
    own = highest >= 0
    last = np.where(own, np.arange(len(highest)), -1)
    return np.maximum.accumulate(last) if len(last) else last


def ranking_reader(selected: list[Selected]) -> str | None:
    """The measure trec_eval names when it cannot compute a topic: the first that reads its
    ranking (all but runid and num_q); None when none does (then nothing stops it)."""
    return next((s.name for s in selected if s.name not in ("runid", "num_q")), None)


def _highest(qrels: Columns, ids: list[str]) -> np.ndarray:
    """Each evaluated topic's highest grade (only the order against 0, -1 and -2 matters)."""
    at = {q: i for i, q in enumerate(ids)}
    row = np.asarray([at.get(q, -1) for q in qrels.topics], dtype=np.int64)[qrels.topic]
    keep = row >= 0
    grade = np.clip(qrels.values[keep], -3, 0)
    out = np.full(len(ids), -3, np.int64)
    for value in (-2, -1, 0):
        out[np.unique(row[keep][grade >= value])] = value
    return out


def _stop(
    ids: list[str],
    in_run: Mapping[str, int],
    run: Columns,
    qrels: Columns,
    dups: tuple[dict[int, int], dict[int, int]],
    highest: np.ndarray,
    options: Options,
    selected: list[Selected],
) -> Stop | None:
    """The first topic trec_eval stops on (exit 4) in its order of checks: one the run lacks
    (10.0 without -c); then, in the first measure that reads the ranking, a document listed
    twice among the topic's kept lines, one judged twice, no grade of 0 or more."""
    run_dups, qrels_dups = dups
    named = ranking_reader(selected)
    qrels_at = {q: i for i, q in enumerate(qrels.topics)}
    for i, qid in enumerate(ids):
        code = in_run.get(qid)
        if code is None and options.release == "10.0" and not options.complete:
            return missing_stop(i, qid)
        if named is None:
            continue
        if code is not None and code in run_dups:
            return listed_twice_stop(i, qid, run.doc(run_dups[code]), named)
        line = qrels_dups.get(qrels_at[qid])
        if line is not None:
            return judged_twice_stop(i, qid, qrels.doc(line), named)
        if highest[i] < 0:
            stop = negative_stop(i, qid, int(highest[i]), named)
            if stop is not None:
                return stop
    return None


def _assemble(
    ids: list[str],
    in_run: Mapping[str, int],
    ordered_labels: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    grades: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    qrels: Columns,
    options: Options,
) -> arrays.Topics:
    """The evaluated topics' labels (10.0's stand-in ranking for those the run lacks, -J's
    drop of unjudged documents) and grades, as arrays."""
    n = len(ids)
    codes = np.asarray([in_run.get(q, -1) for q in ids], dtype=np.int64)
    bogus = codes < 0
    topic_starts = np.where(bogus, 0, starts[np.maximum(codes, 0)])
    stand_in = 1 if options.max_docs is None else min(1, options.max_docs)  # -M cuts it too
    topic_lengths = np.where(bogus, stand_in, lengths[np.maximum(codes, 0)])
    labels = ordered_labels
    if bogus.any():
        extra = np.asarray([_bogus_label(qrels, q) for q in np.asarray(ids, dtype=object)[bogus].tolist()], dtype=np.int64)
        topic_starts[bogus] = len(labels) + np.arange(len(extra))
        labels = np.concatenate([labels, extra])
    if options.judged_only:
        before = np.concatenate([[0], np.cumsum(labels >= 0)])
        topic_lengths = before[topic_starts + topic_lengths] - before[topic_starts]
        topic_starts = before[topic_starts]
        labels = labels[labels >= 0]
    grade, grade_starts, grade_lengths, highest = grades
    source = np.maximum(stale_grades(highest), 0)
    del n
    return arrays.Topics(
        ids, labels, topic_starts, topic_lengths, grade, grade_starts[source], grade_lengths[source], bogus, highest >= 0
    )


def _bogus_label(qrels: Columns, qid: str) -> int:
    """The label of 10.0's stand-in document in a topic's qrels (nearly always not judged)."""
    raw = BOGUS_DOC.encode().ljust(8 * qrels.words.shape[1], b"\0")
    if len(BOGUS_DOC) > 8 * qrels.words.shape[1]:
        return NONPOOL
    target = np.frombuffer(raw, dtype=">u8").astype(np.uint64)
    code = qrels.topics.index(qid)
    hit = np.flatnonzero((qrels.topic == code) & (qrels.words == target).all(axis=1))
    if not len(hit):
        return NONPOOL
    grade = int(qrels.values[hit[0]])
    return UNJUDGED if grade < 0 else grade
