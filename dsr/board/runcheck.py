"""A submitted run parsed once, validated with numpy, and handed on to scoring.

The board used to read every run three times: ``intake.ranking_digest``, ``dsr validate``'s
line-by-line checks (``dsr.evaluation.validate.validate_run``, 61 % of a SIGIR-sized
submission) and ``dsr.core.run.read_trec_run`` for the evaluator (30 %). Here the bytes
are split once and every check is a vectorised test over whole columns:

* the plain case is recognised: UTF-8 text (no whitespace beyond ASCII's, no U+FFFD), no
  comment line, six whitespace-separated columns on every non-blank line (counted per
  line with numpy), the second ``Q0`` or ``0``, every score a plain decimal
  (``dsr.core.run``'s pattern, checked over the whole column) that is finite and within
  the float32 range, every (topic, doc) a candidate pair of the phase (numbered once per
  phase: :class:`PairIndex`), no pair twice, and every topic present;
* anything else (``None`` from :func:`parse`) goes to the line-by-line validator, which
  gives the same messages as ``dsr validate``: invalid runs are rare and their messages are
  the contract, so the fast path only ever *proves* a run valid, never explains a problem.

From the one parse come the ranking digest (equal to ``intake.ranking_digest`` of the
same bytes), the topics whose scores tie as float32, and the evaluator's input: each
topic in trec_eval's order (score as float32 descending, ties by doc id descending) with
the tie rule's strictly decreasing scores, exactly what ``read_trec_run(...).as_dict()``
gives (``tests/board/test_board_speed.py`` compares both on runs with ties).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from dsr.core.data import Collection
from dsr.core.textfiles import without_bom
from dsr.core.ties import F32_MAX, _strict_scores

#: what a plain decimal score (``dsr.core.run._DECIMAL``) is made of, and the space joining them
_DECIMAL_CHARS = b"0123456789+-.eE "
#: whitespace ``str.split()`` splits on beyond ASCII's (then fields are not counted by bytes)
_OTHER_SPACE = re.compile(r"[^\S \t\n\r\x0b\x0c\x1c-\x1f]")
#: the ASCII bytes ``str.split()`` splits on
_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


@dataclass
class PairIndex:
    """A phase's (topic, candidate) pairs numbered once, for :func:`parse`."""

    topics: list[str]
    pair: dict[tuple[str, str], int]
    docs: list[str]  # pair -> doc id
    topic_of: np.ndarray  # pair -> topic number
    doc_order: np.ndarray  # pair -> rank of its doc id (str order), for trec_eval's ties
    digest_order: np.ndarray  # pair -> rank of (topic, doc) (str order), for the digest
    pair_json: list[str]  # pair -> '["topic","doc"' as json.dumps writes it
    id_chars: int  # the ids' characters, all pairs together

    @classmethod
    def of(cls, collection: Collection) -> PairIndex:
        keys = [(d.id, c.id) for d in collection.dialogues for c in d.candidates]
        topic_of = np.repeat(np.arange(len(collection.dialogues)), [len(d.candidates) for d in collection.dialogues])
        docs = [doc for _, doc in keys]
        return cls(
            [d.id for d in collection.dialogues],
            {k: i for i, k in enumerate(keys)},
            docs,
            topic_of,
            _ranks(sorted(range(len(docs)), key=docs.__getitem__), docs),
            _ranks(sorted(range(len(keys)), key=keys.__getitem__), keys),
            [json.dumps([t, d], separators=(",", ":"))[:-1] for t, d in keys],
            sum(len(t) + len(d) for t, d in keys),
        )


def _ranks(order: list[int], keys: list) -> np.ndarray:
    """Each item's place in ``order`` (equal keys share a place)."""
    ranks = np.empty(len(order), dtype=np.int64)
    place, previous = -1, object()
    for i in order:
        if keys[i] != previous:
            place, previous = place + 1, keys[i]
        ranks[i] = place
    return ranks


@dataclass
class Parsed:
    """A valid run, parsed once: what validation, the digest and the evaluator need."""

    lines: int
    tags: list[str]
    tied_topics: list[str]
    ranking_sha256: str
    scores: dict[str, dict[str, float]]  # the evaluator's input (tie rule applied)


def parse(index: PairIndex, text: bytes) -> Parsed | None:
    """The run's lines checked and parsed in one pass, or None when the run is not the plain
    case (see the module's doc: the line-by-line validator then decides and explains)."""
    text = without_bom(text)
    if text.startswith(b"#") or b"\n#" in text:
        return None
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.isascii() and ("\ufffd" in decoded or _OTHER_SPACE.search(decoded)):
        return None
    tokens = decoded.split()
    if not tokens or len(tokens) % 6 or not _six_per_line(text):
        return None
    values = _scores_column(tokens[4::6])
    if values is None or not set(tokens[1::6]) <= {"Q0", "0"}:
        return None
    found = list(map(index.pair.get, zip(tokens[0::6], tokens[2::6])))
    if None in found:
        return None
    pairs = np.array(found, dtype=np.int64)
    per_topic = np.bincount(index.topic_of[pairs], minlength=len(index.topics))
    if np.bincount(pairs).max() > 1 or not per_topic.all():  # a pair twice, a topic missing
        return None
    tags = tokens[5::6]
    return Parsed(
        len(pairs),
        sorted(set(tags)),
        _tied(index, pairs, values),
        _digest(index, pairs, values, tags),
        _scores(index, pairs, values, per_topic),
    )


def _scores_column(column: list[str]) -> np.ndarray | None:
    """The scores, or None unless each is a plain decimal (``dsr.core.run``'s pattern: made of
    digits, signs, '.' and 'e' and read by ``float``, which then reads just that pattern: no
    '_', 'inf' or 'nan' can be left) that is finite in the float32 range."""
    if " ".join(column).encode("utf-8").translate(None, _DECIMAL_CHARS):
        return None
    try:
        values = np.fromiter(map(float, column), dtype=np.float64, count=len(column))
    except ValueError:
        return None
    return values if np.all(np.abs(values) <= F32_MAX) else None  # inf is not


def _six_per_line(text: bytes) -> bool:
    """Whether every line (split on ``\\n``) holds six whitespace-separated fields or none."""
    data = np.frombuffer(text, dtype=np.uint8)
    space = _WHITESPACE[data]
    starts = ~space
    starts[1:] &= space[:-1]  # a field starts after whitespace
    line = np.searchsorted(np.flatnonzero(data == 10), np.flatnonzero(starts))
    counts = np.bincount(line)
    return bool(np.all((counts == 0) | (counts == 6)))


def _tied(index: PairIndex, pairs: np.ndarray, values: np.ndarray) -> list[str]:
    """Topics holding two scores equal as float32 (``dsr validate``'s tie warning)."""
    topic = index.topic_of[pairs]
    as32 = values.astype(np.float32)
    order = np.lexsort((as32, topic))
    same = (topic[order][1:] == topic[order][:-1]) & (as32[order][1:] == as32[order][:-1])
    tied = set(topic[order][1:][same].tolist())
    return [index.topics[t] for t in sorted(tied)]


def _digest(index: PairIndex, pairs: np.ndarray, values: np.ndarray, tags: list[str]) -> str:
    """``intake.ranking_digest`` of the same run: the JSON of its sorted (topic, doc,
    repr(score), tag) records, written piece by piece from the pairs' JSON."""
    order = np.argsort(index.digest_order[pairs], kind="stable")
    pair_json = _pick(index.pair_json, pairs[order].tolist())
    scores = map(repr, values[order].tolist())
    distinct = set(tags)
    if len(distinct) == 1:
        tag_json = [json.dumps(distinct.pop())] * len(tags)
    else:
        tag_json = list(map(json.dumps, _pick(tags, order.tolist())))
    records = ",".join(map('{},"{}",{}]'.format, pair_json, scores, tag_json))
    return hashlib.sha256(f"[{records}]".encode()).hexdigest()


def _scores(index: PairIndex, pairs: np.ndarray, values: np.ndarray, per_topic: np.ndarray) -> dict[str, dict[str, float]]:
    """``read_trec_run(...).as_dict()``: each topic in trec_eval's order, scores made strictly
    decreasing as float32 by the tie rule (``dsr.core.ties``)."""
    topic = index.topic_of[pairs]
    order = np.lexsort((-index.doc_order[pairs], -values.astype(np.float32), topic))
    ranked, docs = values[order], _pick(index.docs, pairs[order].tolist())
    ends = np.cumsum(per_topic)
    strict = _strict_scores(ranked, ends, lambda i: (docs[i], float(ranked[i]))).tolist()
    out, start = {}, 0
    for qid, end in zip(index.topics, ends.tolist()):
        out[qid] = dict(zip(docs[start:end], strict[start:end]))
        start = end
    return out


def _pick(items: list, at: list[int]) -> list:
    """``[items[i] for i in at]`` in C."""
    if len(at) == 1:
        return [items[at[0]]]
    return list(itemgetter(*at)(items)) if at else []
