"""Large run files for ``dsr evaluate``, read as arrays: :class:`ColumnRun`.

Reference: :func:`dsr.core.run.load_run` (a Python list of ``(doc, score)`` per topic, then
:class:`~dsr.evaluation.measures.Evaluator`'s ranked labels, or pytrec_eval), which makes a
run of millions of lines slow and large. A :class:`ColumnRun` is the same run
read by :mod:`dsr.evaluation.trec_eval_columns`: each line's topic and document id as numbers,
in the order the run is scored (trec_eval's: the score descending as float32, or as a double
under ``--trec-eval 10.0``; ties by doc id descending; ``-M`` applied). The evaluator asks it
for its values (:meth:`ColumnRun.measure`): the measures trec_eval computes (P, R, RR, AP,
nDCG, NumQ, NumRet, NumRel with ``rel`` and ``judged_only``) over the arrays of
:mod:`dsr.evaluation.trec_eval_arrays`, the same doubles as trec_eval's (tested equal to the
reference path in ``tests/evaluation/test_columns_run.py``). Anything else reads the file the
reference way when first asked (``rankings``), so every use of a Run still works.

What it covers: what :func:`~dsr.evaluation.trec_eval_columns.read_run_columns` reads, with
finite scores within the float32 range and no document twice in a topic (else the reference
reads the file, and names the line). Why: ``dsr evaluate --qrels`` on a large run in about the
time trec_eval takes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.ir_metadata import config_from_header, read_header
from dsr.core.provenance import sha256_file
from dsr.core.run import Run, read_sidecar, read_trec_run
from dsr.core.ties import F32_MAX
from dsr.evaluation import trec_eval_arrays as arrays
from dsr.evaluation import trec_eval_fast as fast
from dsr.evaluation.qrels import HELD_QRELS
from dsr.evaluation.trec_eval_columns import Columns, read_qrels_columns, read_run_columns, widen
from dsr.evaluation.trec_eval_measures import NONPOOL, select


class ColumnRun(Run):
    """A run file held as arrays (see the module docstring); ``rankings`` is read from the
    file, the reference way, the first time something asks for it."""

    def __init__(self, path: Path, columns: Columns, lines: np.ndarray, lengths: np.ndarray, tied: list[str], rules: tuple):
        super().__init__({}, columns.tag or "dsr", read_sidecar(path))
        if not self.config and _starts_with_hash(path):  # as Run.read: an ir_metadata header
            header = read_header(path)
            if header:
                self.config = config_from_header(header)
        self.__dict__["_rankings"] = None
        #: the trec_eval release and -M it is ordered and cut by (``dsr.evaluation.trec_eval.apply_rules``)
        self.rules = rules
        self.path = path
        self.columns = columns
        #: the kept lines (after -M) in scoring order, topic by topic (topics in ``columns.topics``' order)
        self.lines = lines
        self.lengths = lengths
        self.starts = np.cumsum(lengths) - lengths
        self._tied = tied
        #: the file's sha256, hashed while it was read (the run's info records it)
        self.sha256: str | None = None

    @classmethod
    def of_file(cls, path: str | Path, judged: Columns, release: str = "9.0.8", max_docs: int | None = None) -> ColumnRun | None:
        """The run at ``path`` as arrays, labelled by ``judged`` (the qrels it is evaluated
        with), or None where the reference reads it."""
        path = Path(path)
        digest: list[str] = []
        hashing = threading.Thread(target=lambda: digest.append(sha256_file(path)))  # beside the reading
        hashing.start()
        columns = read_run_columns(path)
        hashing.join()
        if columns is None or not np.isfinite(columns.values).all() or np.abs(columns.values).max(initial=0) > F32_MAX:
            return None
        as32 = fast.typed_scores(columns.values, "9.0.8")
        columns.values = as32 if release == "9.0.8" else fast.typed_scores(columns.values, "10.0")
        order, starts, full = fast._order(columns)
        tied = _tied_topics(columns, as32, order)
        del as32
        columns.values = np.zeros(0)  # the order is made: the scores are not needed again
        width = max(judged.words.shape[1], columns.words.shape[1])
        widen(judged, width)
        widen(columns, width)
        by_line, twice = fast._labels(judged, columns, fast._kept(order, starts, full, full))
        if twice:
            return None  # a document listed twice: the reference names the line
        lengths = full if max_docs is None else np.minimum(full, max_docs)
        lines = fast._kept(order, starts, lengths, full)
        kept = np.arange(len(columns.topic)) if lines is None else lines
        run = cls(path, columns, kept, lengths, tied, (release, max_docs))
        run.__dict__["_labels"] = (judged, by_line[kept])
        run.sha256 = digest[0]
        return run

    def __len__(self) -> int:
        return len(self.columns.topics)

    def topics(self) -> list[str]:
        return list(self.columns.topics)

    def tied_topics(self) -> list[str]:
        return list(self._tied)

    @property
    def rankings(self) -> dict[str, list[tuple[str, float]]]:
        """Read from the file the reference way, in the order of the rules it was read by (the
        release's, then -M): what ``apply_rules`` would have made of it."""
        held = self.__dict__.get("_rankings")
        if held is None:
            release, max_docs = self.rules
            held = read_trec_run(self.path, "trec").rankings
            if release == "10.0":
                held = {q: _double_order(r) for q, r in held.items()}
            if max_docs is not None:
                held = {q: r[:max_docs] for q, r in held.items()}
            self.__dict__["_rankings"] = held
        return held

    @rankings.setter
    def rankings(self, value: dict[str, list[tuple[str, float]]]) -> None:
        self.__dict__["_rankings"] = value

    def measure(self, judged: Columns, topics: Sequence[str], specs: Sequence) -> np.ndarray:
        """``(topics, specs)``: each measure (a :class:`dsr.evaluation.ranked.Spec`) on each of
        ``topics`` as ``judged`` grades them; a topic the run lacks holds 0 (NumQ 1, NumRel its
        count: the evaluator fills those in)."""
        rows = {q: i for i, q in enumerate(topics)}
        labels = self.labels(judged)
        out = np.zeros((len(topics), len(specs)))
        code_of = {q: i for i, q in enumerate(self.columns.topics)}
        ranked = [q for q in topics if q in code_of and self.lengths[code_of[q]] > 0]
        for (rel, only_judged), columns in _groups(specs).items():
            prepared = _topics(ranked, code_of, self, labels, judged, only_judged)
            values = _values(prepared, [specs[j] for j in columns], rel)
            out[np.ix_([rows[q] for q in ranked], columns)] = values
        return out

    @property
    def judged(self) -> Columns:
        """The qrels the run's lines were labelled with when read."""
        return self.__dict__["_labels"][0]

    def labels(self, judged: Columns) -> np.ndarray:
        """Each kept line's label (in scoring order) as ``judged`` grades it."""
        cached = self.__dict__["_labels"]
        if cached[0] is judged:
            return cached[1]
        width = max(judged.words.shape[1], self.columns.words.shape[1])
        widen(judged, width)
        widen(self.columns, width)
        by_line, _ = fast._labels(judged, self.columns, self.lines)
        labels = by_line[self.lines]
        self.__dict__["_labels"] = (judged, labels)
        return labels

    def judged_at(self, judged: Columns, topics: Sequence[str], k: int) -> tuple[np.ndarray, bool]:
        """(ir_measures' ``Judged@k`` on each of ``topics``: the share of the first ``k``
        documents retrieved that are judged, 0 for a topic the run lacks; whether every such
        document is judged)."""
        labels = self.labels(judged)
        code_of = {q: i for i, q in enumerate(self.columns.topics)}
        out = np.zeros(len(topics))
        every = True
        for i, qid in enumerate(topics):
            code = code_of.get(qid)
            if code is None:
                continue
            top = labels[self.starts[code] : self.starts[code] + min(k, int(self.lengths[code]))]
            out[i] = np.count_nonzero(top != NONPOOL) / len(top) if len(top) else 0.0
            every = every and bool((top != NONPOOL).all())
        return out, every


def _double_order(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval 10.0's order: scores as doubles, descending, ties by doc id descending
    (``dsr.evaluation.trec_eval.apply_rules``')."""
    by_doc = sorted(ranked, key=lambda ds: ds[0], reverse=True)
    order = np.argsort(-np.asarray([s for _, s in by_doc], dtype=np.float64), kind="stable")
    return [by_doc[i] for i in order]


def _starts_with_hash(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(1) == b"#"


def _groups(specs: Sequence) -> dict[tuple[int, bool], list[int]]:
    groups: dict[tuple[int, bool], list[int]] = {}
    for j, spec in enumerate(specs):
        groups.setdefault((spec.rel, spec.judged), []).append(j)
    return groups


def _topics(
    ranked: list[str], code_of: Mapping[str, int], run: ColumnRun, labels: np.ndarray, judged: Columns, only_judged: bool
) -> arrays.Topics:
    """The run's topics of ``ranked`` as the arrays' topics (their grades from ``judged``)."""
    codes = np.asarray([code_of[q] for q in ranked], dtype=np.int64)
    starts, lengths = run.starts[codes], run.lengths[codes]
    flat = labels
    if only_judged:  # trec_eval -J: the unjudged documents dropped, the order kept
        before = np.concatenate([[0], np.cumsum(flat >= 0)])
        lengths = before[starts + lengths] - before[starts]
        starts = before[starts]
        flat = flat[flat >= 0]
    grade, grade_starts, grade_lengths = fast._grades(judged, ranked)
    return arrays.Topics(ranked, flat, starts, lengths, grade, grade_starts, grade_lengths, np.zeros(len(ranked), bool))


#: ranked.Spec kinds -> the arrays' measure names
_NAMES = {
    "P": "P",
    "recall": "recall",
    "recip_rank": "recip_rank",
    "map": "map",
    "map_cut": "map_cut",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg_cut",
    "num_q": "num_q",
    "num_ret": "num_ret",
    "num_rel_ret": "num_rel_ret",
    "num_rel": "num_rel",
}


def _values(topics: arrays.Topics, specs: Sequence, rel: int) -> np.ndarray:
    """``(topics, specs)`` by the arrays, blocks of topics at a time."""
    chosen = [select([_NAMES[s.kind] if s.cutoff is None else f"{_NAMES[s.kind]}.{s.cutoff}"], "9.0.8")[0] for s in specs]
    out = np.zeros((len(topics), len(specs)))
    for rows in arrays.blocks(topics.lengths, topics.grade_lengths + 1):
        block = arrays.Block(topics, rows, rel, 0)
        for j, selected in enumerate(chosen):
            out[rows, j] = arrays.values(block, selected, "9.0.8")[0]
    return out


def _tied_topics(columns: Columns, as32: np.ndarray, order: np.ndarray | None) -> list[str]:
    """The topics whose scores tie as float32, in the run's order (``Run.tied_topics``)."""
    line = np.arange(len(columns)) if order is None else order
    score, topic = as32[line], columns.topic[line]
    tied = np.unique(topic[1:][(topic[1:] == topic[:-1]) & (score[1:] == score[:-1])])
    return [columns.topics[t] for t in tied.tolist()]


def qrels_columns(qrels: Mapping[str, Mapping[str, int]], held: Columns | None = None) -> Columns | None:
    """Qrels held as a dict, as :class:`Columns` (what the arrays match run lines against):
    ``held`` itself when it holds the same topics, judgement counts and grade sums (the qrels
    file the dict was read from, read as arrays); None when an id holds a NUL byte (zero-padded
    words would not tell it apart)."""
    topics = list(qrels)
    if held is not None and held.topics == topics:
        counts = np.bincount(held.topic, minlength=len(topics))
        sums = np.bincount(held.topic, weights=held.values.astype(np.float64), minlength=len(topics))
        if counts.tolist() == [len(qrels[q]) for q in topics] and sums.tolist() == [
            float(sum(qrels[q].values())) for q in topics
        ]:
            return held
    docs = [d.encode() for q in topics for d in qrels[q]]
    if any(b"\0" in d for d in docs):
        return None
    width = max(1, -(-max((len(d) for d in docs), default=1) // 8))
    raw = b"".join(d.ljust(8 * width, b"\0") for d in docs)
    words = np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(len(docs), width)
    topic = np.repeat(np.arange(len(topics), dtype=np.int32), [len(qrels[q]) for q in topics])
    grades = np.fromiter((g for q in topics for g in qrels[q].values()), dtype=np.int64, count=len(docs))
    return Columns(topics, topic, words, grades)


def read_qrels_file(path: str | Path) -> Columns | None:
    """A qrels file as arrays when the reader covers it and :func:`~dsr.evaluation.qrels.read_qrels`
    would accept it (no document judged twice); None otherwise (the reference reads it)."""
    columns = read_qrels_columns(path)
    if columns is None or fast._qrels_duplicates(columns):
        return None
    return columns


def collection_of(columns: Columns, name: str) -> Collection:
    """:func:`~dsr.evaluation.qrels.collection_from_qrels` of qrels read as arrays: the same
    dialogues and candidates in the same order, and the same content hash, made from the arrays
    (the reader's ids are printable ASCII without whitespace, which ``check_id`` accepts: each is
    not checked again, and the hash's JSON is written directly)."""
    width = columns.words.shape[1]
    raw = np.frombuffer(columns.words.astype(">u8").tobytes(), dtype=f"S{8 * width}").tolist()
    order = np.argsort(columns.topic, kind="stable")
    ends = np.cumsum(np.bincount(columns.topic, minlength=len(columns.topics))).tolist()
    docs = [raw[i].decode("ascii") for i in order.tolist()]
    grades = columns.values[order].tolist()
    quoted = [_json(d) for d in docs]
    dialogues, digest, start = [], hashlib.sha256(), 0
    new = object.__new__
    for qid, end in zip(columns.topics, ends):
        candidates = []
        for doc, grade in zip(docs[start:end], grades[start:end]):
            candidate = new(Candidate)
            candidate.__dict__ = {"id": doc, "title": "", "body": "", "score": None, "label": grade}
            candidates.append(candidate)
        dialogue = new(Dialogue)
        dialogue.__dict__ = {
            "id": qid, "title": "", "context": [], "target": None, "candidates": candidates,
            "subset": "all", "subreddit": "", "source": "", "meta": {},
        }  # fmt: skip
        dialogues.append(dialogue)
        judged = ",".join(
            [f'{{"body":"","id":{q},"label":{g},"score":null,"title":""}}' for q, g in zip(quoted[start:end], grades[start:end])]
        )
        digest.update(
            f'{{"candidates":[{judged}],"context":[],"id":{_json(qid)},"source":"","subreddit":"","subset":"all",'
            f'"target":null,"title":""}}\n'.encode()
        )
        start = end
    collection = Collection(name, dialogues, meta={"from": "qrels"})
    collection.__dict__["content_hash"] = digest.hexdigest()  # Collection.content_hash's value, cached
    collection.__dict__[HELD_QRELS] = {
        qid: dict(zip(docs[start:end], grades[start:end])) for qid, start, end in zip(columns.topics, [0, *ends], ends)
    }
    return collection


def _made(kind: Any, **fields: Any) -> Any:
    """A dataclass instance of ``fields`` without its ``__post_init__`` (ids already checked)."""
    made = kind.__new__(kind)
    made.__dict__.update(fields)
    return made


def _json(text: str) -> str:
    """``json.dumps`` of an id (printable ASCII: only a quote or a backslash is escaped)."""
    return json.dumps(text, ensure_ascii=False) if '"' in text or "\\" in text else f'"{text}"'
