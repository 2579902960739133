"""``dsr validate``: check a run file against a collection before it is evaluated or submitted.

Unlike ``retrieval.run.read_trec_run`` (which stops at the first problem), this
reports every problem with its line number:

* six columns per line (``qid Q0 docid rank score tag``); a last line without
  a newline (a truncated file) is reported too;
* the topic is a dialogue of the collection and the doc one of its candidates;
* no (topic, doc) pair twice;
* the rank is a whole number, the score a finite number;
* ranks agree with scores: trec_eval ignores the rank column and orders by
  score (ties by doc id, descending), so a rank order that differs from that
  order is not the ranking that will be evaluated;
* every dialogue has lines (a missing one counts 0); ``allow_missing`` turns
  this into a note.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from retrieval.data import Collection


@dataclass
class Problem:
    line: int | None
    message: str

    def format(self, path: str) -> str:
        return f"{path}:{self.line}: {self.message}" if self.line is not None else f"{path}: {self.message}"


@dataclass
class Validation:
    """The outcome: problems (empty when valid) and what the run holds."""

    path: str
    collection: str
    problems: list[Problem] = field(default_factory=list)
    lines: int = 0
    topics: int = 0
    expected_topics: int = 0
    missing: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        if self.valid:
            missing = f", {len(self.missing)} missing (they count 0)" if self.missing else ""
            tags = ", ".join(self.tags) or "-"
            return (f"{self.path}: valid run for {self.collection}: {self.lines} lines, "
                    f"{self.topics} of {self.expected_topics} topics{missing}, tag {tags}")
        return f"{self.path}: {len(self.problems)} problem(s); the run is not valid"

    def to_json(self) -> dict:
        return {"path": self.path, "collection": self.collection, "valid": self.valid,
                "lines": self.lines, "topics": self.topics, "expected_topics": self.expected_topics,
                "missing_topics": len(self.missing), "tags": self.tags,
                "problems": [{"line": p.line, "message": p.message} for p in self.problems]}


@dataclass
class _Entry:
    line: int
    doc: str
    rank: int
    score: float


def validate_run(collection: Collection, path: str | Path, allow_missing: bool = False) -> Validation:
    """Every problem of the run file at ``path`` against ``collection``."""
    path = Path(path)
    result = Validation(str(path), collection.name, expected_topics=len(collection))
    problems = result.problems
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        problems.append(Problem(None, "no such run file"))
        return result
    except IsADirectoryError:
        problems.append(Problem(None, "is a directory, not a run file"))
        return result
    if not data.strip():
        problems.append(Problem(None, "the run file is empty"))
        return result
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    truncated = not text.endswith("\n")
    if not truncated:
        lines.pop()  # the empty string after the final newline
    candidates = {d.id: {c.id for c in d.candidates} for d in collection.dialogues}
    seen: dict[tuple[str, str], int] = {}
    by_topic: dict[str, list[_Entry]] = {}
    tags: dict[str, None] = {}
    for lineno, line in enumerate(lines, start=1):
        if "\ufffd" in line:
            problems.append(Problem(lineno, "not UTF-8 text"))
        if not line.strip() or line.startswith("#"):
            continue  # comments: ir_metadata headers (retrieval.ir_metadata)
        result.lines += 1
        last = truncated and lineno == len(lines)
        parts = line.split()
        if len(parts) != 6:
            hint = " (the file ends without a newline: truncated?)" if last else ""
            problems.append(Problem(lineno, f"expected 6 columns (qid Q0 docid rank score tag), "
                                            f"got {len(parts)}{hint}"))
            continue
        if last:
            problems.append(Problem(lineno, "the file ends without a newline: the last line "
                                            "may be truncated"))
        qid, _, doc, rank_text, score_text, tag = parts
        tags.setdefault(tag)
        ok = True
        if qid not in candidates:
            problems.append(Problem(lineno, f"topic {qid!r} is not a dialogue of {collection.name}"))
            ok = False
        elif doc not in candidates[qid]:
            problems.append(Problem(lineno, f"doc {doc!r} is not a candidate of topic {qid!r}"))
        if (qid, doc) in seen:
            problems.append(Problem(lineno, f"duplicate line for topic {qid!r} and doc {doc!r} "
                                            f"(first on line {seen[(qid, doc)]})"))
            ok = False
        else:
            seen[(qid, doc)] = lineno
        try:
            rank = int(rank_text)
        except ValueError:
            problems.append(Problem(lineno, f"rank is not a whole number: {rank_text!r}"))
            ok = False
        try:
            score = float(score_text)
        except ValueError:
            problems.append(Problem(lineno, f"score is not a number: {score_text!r}"))
            ok = False
        else:
            if not math.isfinite(score):
                problems.append(Problem(lineno, f"score is not finite: {score_text!r}"))
                ok = False
        if ok:
            by_topic.setdefault(qid, []).append(_Entry(lineno, doc, rank, score))
    result.tags = list(tags)
    for qid, entries in by_topic.items():
        _check_order(qid, entries, problems)
    present = {qid for (qid, _doc) in seen if qid in candidates}
    result.topics = len(present)
    result.missing = [d for d in collection.ids if d not in present]
    if result.missing and not allow_missing:
        example = ", ".join(repr(m) for m in result.missing[:3])
        problems.append(Problem(None, f"{len(result.missing)} of {len(collection)} topics have no "
                                      f"lines (e.g. {example}); they would count 0"))
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    return result


def _check_order(qid: str, entries: list[_Entry], problems: list[Problem]) -> None:
    ranks: dict[int, int] = {}
    for e in entries:
        if e.rank in ranks:
            problems.append(Problem(e.line, f"rank {e.rank} of topic {qid!r} repeats line {ranks[e.rank]}"))
        else:
            ranks[e.rank] = e.line
    ordered = sorted(entries, key=lambda e: (e.rank, e.line))
    for prev, cur in zip(ordered, ordered[1:]):
        if cur.rank == prev.rank:
            continue
        if cur.score > prev.score:
            problems.append(Problem(cur.line, f"rank {cur.rank} has a higher score ({cur.score!r}) than "
                                              f"rank {prev.rank} on line {prev.line} ({prev.score!r}): "
                                              "trec_eval orders by score, not by rank"))
        elif cur.score == prev.score and cur.doc > prev.doc:
            problems.append(Problem(cur.line, f"score ties with rank {prev.rank} on line {prev.line}; "
                                              f"trec_eval breaks ties by doc id (descending) and would "
                                              f"put {cur.doc!r} first: give distinct scores"))
