"""``dsr validate``: check a run file against a collection before it is evaluated or submitted.

Unlike ``dsr.core.run.read_trec_run`` (which stops at the first problem), this
reports every problem with its line number. Lines are parsed as trec_eval
parses them, with the same rules as ``read_trec_run``
(``dsr.core.run.parse_run_line``); plain and gzip files are read.

Problems (the run is not valid, exit 2):

* six columns per line (``qid Q0 docid rank score tag``), the second ``Q0``
  or ``0``; a complete last line without a newline (ranx writes those) is
  fine, a shorter one is said to look truncated;
* the topic is a dialogue of the collection and the doc one of its candidates;
* no (topic, doc) pair twice;
* the score a plain decimal number (no ``1_000``, ``inf``, ``nan``) within
  the float32 range;
* the sidecar (when there is one and it is not stale) names this
  collection's hash (``allow_mismatch`` makes it a warning);
* every dialogue has lines (a missing one counts 0); ``allow_missing`` turns
  this into a note.

Warnings (valid, but said): topics holding scores that tie as float32;
trec_eval (and ``dsr evaluate``) orders those by doc id, descending. And the
rank column, which trec_eval ignores (it orders by score as a 32-bit float):
a rank that is not a whole number, repeats, or disagrees with the scores is
said, never refused; ranks from 0 (PyTerrier) are fine.
``strict`` makes them problems; ``dsr validate --fix-ties`` rewrites the run
with dsr's tie rule (initial rank, then id; scores distinct in float32).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import (
    MSMARCO_RULE,
    RUN_FORMAT,
    Run,
    detect_format,
    load_run,
    msmarco_as_trec,
    parse_run_line,
    read_sidecar,
)
from dsr.core.run_checks import check_collection_hash, recorded_collection_hash
from dsr.core.textfiles import read_bytes, without_bom


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
    #: things that do not make the run invalid (ties as float32, an allowed collection mismatch)
    warnings: list[Problem] = field(default_factory=list)
    #: topics holding scores that tie as float32
    tied_topics: list[str] = field(default_factory=list)
    #: validated against qrels (``pooled``): lines whose document has no judgement, and
    #: topics without judgements (ignored)
    unjudged: int = 0
    unjudged_topics: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        if self.valid:
            missing = f", {len(self.missing)} missing (they count 0)" if self.missing else ""
            tags = ", ".join(self.tags) or "-"
            ties = f", {len(self.tied_topics)} topic(s) with scores tied as float32" if self.tied_topics else ""
            ties += f", {self.unjudged} line(s) with unjudged documents" if self.unjudged else ""
            return (
                f"{self.path}: valid run for {self.collection}: {self.lines} lines, "
                f"{self.topics} of {self.expected_topics} topics{missing}{ties}, tag {tags}"
            )
        return f"{self.path}: {len(self.problems)} problem(s); the run is not valid"

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "collection": self.collection,
            "valid": self.valid,
            "lines": self.lines,
            "topics": self.topics,
            "expected_topics": self.expected_topics,
            "missing_topics": len(self.missing),
            "tags": self.tags,
            "tied_topics": len(self.tied_topics),
            "unjudged_lines": self.unjudged,
            "unjudged_topics": len(self.unjudged_topics),
            "problems": [{"line": p.line, "message": p.message} for p in self.problems],
            "warnings": [{"line": p.line, "message": p.message} for p in self.warnings],
        }


@dataclass
class _Entry:
    line: int
    doc: str
    rank: int | None
    score: float


def validate_run(
    collection: Collection,
    path: str | Path,
    allow_missing: bool = False,
    strict: bool = False,
    allow_mismatch: bool = False,
    pooled: bool = False,
    fmt: str = "auto",
) -> Validation:
    """Every problem (and warning) of the run file at ``path`` against ``collection``
    (``fmt``: TREC or MS MARCO, see :func:`dsr.core.run.read_trec_run`).

    ``strict``: ties as float32 are problems, not warnings. ``allow_mismatch``:
    a sidecar naming another collection hash is a warning, not a problem. ``pooled``: the
    collection is a qrels file's judgements (``dsr validate --qrels``): as trec_eval reads
    them, a document without a judgement is unjudged, not a problem (counted in
    ``unjudged``), and a topic without judgements is ignored (a warning).
    """
    fmt = RUN_FORMAT.check(fmt)
    path = Path(path)
    result = Validation(str(path), collection.name, expected_topics=len(collection))
    problems = result.problems
    data = _read(path, problems)
    if data is None:
        return result
    if not pooled:  # qrels carry no collection hash to check a sidecar against
        _check_sidecar(collection, path, allow_mismatch, result)
    text = without_bom(data).decode("utf-8", errors="replace")
    lines = text.split("\n")
    truncated = not text.endswith("\n")
    if not truncated:
        lines.pop()  # the empty string after the final newline
    candidates = {d.id: {c.id for c in d.candidates} for d in collection.dialogues}
    seen: dict[tuple[str, str], int] = {}
    msmarco = (detect_format(lines) if fmt == "auto" else fmt) == "msmarco"
    by_topic = _check_lines(lines, truncated, msmarco, candidates, seen, result, pooled)
    _check_topics(by_topic, strict, result)
    present = {qid for (qid, _doc) in seen if qid in candidates}
    result.topics = len(present)
    result.missing = [d for d in collection.ids if d not in present]
    if result.missing and not allow_missing:
        example = ", ".join(repr(m) for m in result.missing[:3])
        problems.append(
            Problem(None, f"{len(result.missing)} of {len(collection)} topics have no lines (e.g. {example}); they would count 0")
        )
    problems.sort(key=lambda p: (p.line is None, p.line or 0))
    result.warnings.sort(key=lambda p: (p.line is None, p.line or 0))
    return result


def _check_lines(
    lines: list[str],
    truncated: bool,
    msmarco: bool,
    candidates: dict[str, set[str]],
    seen: dict[tuple[str, str], int],
    result: Validation,
    pooled: bool,
) -> dict[str, list[_Entry]]:
    """Each line's problems and warnings (columns, text, ids, ranks, scores) into ``result``;
    the lines read, by topic."""
    problems = result.problems
    by_topic: dict[str, list[_Entry]] = {}
    tags: dict[str, None] = {}
    if msmarco:
        result.warnings.append(Problem(None, f"an MS MARCO run (qid docid rank): {MSMARCO_RULE}"))
    for lineno, line in enumerate(lines, start=1):
        if "\ufffd" in line:
            problems.append(Problem(lineno, "not UTF-8 text"))
        if not line.strip() or line.startswith("#"):
            continue  # comments: ir_metadata headers (dsr.core.ir_metadata)
        result.lines += 1
        parts = line.split()
        if msmarco:
            columns, wrong = msmarco_as_trec(parts)
            if columns is None:
                problems.append(Problem(lineno, wrong or "not an MS MARCO line"))
                continue
            parts = columns
        if len(parts) > 6:
            result.warnings.append(
                Problem(lineno, f"{len(parts) - 6} column(s) after the tag: ignored, as trec_eval ignores them")
            )
        elif len(parts) < 6:
            last = truncated and lineno == len(lines)
            hint = " (the file ends without a newline: truncated?)" if last else ""
            problems.append(Problem(lineno, f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}{hint}"))
            continue
        _check_line(lineno, parts, candidates, seen, by_topic, result, pooled)
        tags.setdefault(parts[5])
    result.tags = list(tags)
    return by_topic


def _check_topics(by_topic: dict[str, list[_Entry]], strict: bool, result: Validation) -> None:
    """Each topic's order and ties (ties as float32 are problems when ``strict``)."""
    for qid, entries in by_topic.items():
        _check_order(qid, entries, result.warnings)
        tie = _first_tie(entries)
        if tie is not None:
            result.tied_topics.append(qid)
            message = (
                f"topic {qid!r}: scores tie as 32-bit floats (e.g. line {tie[0]} and line "
                f"{tie[1]}); trec_eval and dsr evaluate order ties by doc id, descending "
                "(dsr validate --fix-ties rewrites the run with distinct scores)"
            )
            (result.problems if strict else result.warnings).append(Problem(tie[1], message))


def _read(path: Path, problems: list[Problem]) -> bytes | None:
    """The run file's text (gzip unpacked), or None with the problem that stops reading it."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        problems.append(Problem(None, "no such run file"))
        return None
    except IsADirectoryError:
        problems.append(Problem(None, "is a directory, not a run file"))
        return None
    except InputError as err:  # a damaged, cut or padded gzip file
        problems.append(Problem(None, err.message))
        return None
    if not data.strip():
        problems.append(Problem(None, "the run file is empty"))
        return None
    return data


def _check_sidecar(collection: Collection, path: Path, allow_mismatch: bool, result: Validation) -> None:
    """The sidecar's collection hash, when it records one, is the collection's."""
    try:
        config = read_sidecar(path)
        check_collection_hash(Run({}, config=config), path, collection, allow=allow_mismatch)
    except InputError as err:
        result.problems.append(Problem(None, str(err)))
        return
    if allow_mismatch and config and recorded_collection_hash(config) not in (None, collection.content_hash):
        result.warnings.append(
            Problem(None, "the sidecar names another collection hash (allowed by --allow-collection-mismatch)")
        )


def _as32(score: float) -> float:
    return float(np.float32(score))


def _first_tie(entries: list[_Entry]) -> tuple[int, int] | None:
    """Lines of the first two entries (in file order) whose scores are equal as float32."""
    first: dict[float, int] = {}
    for e in entries:
        key = _as32(e.score)
        if key in first:
            return first[key], e.line
        first[key] = e.line
    return None


def _check_line(
    lineno: int,
    parts: list[str],
    candidates: dict[str, set[str]],
    seen: dict[tuple[str, str], int],
    by_topic: dict[str, list[_Entry]],
    result: Validation,
    pooled: bool = False,
) -> None:
    """The problems of one six-column line; a good one joins its topic's entries."""
    problems = result.problems
    qid, _, doc = parts[:3]
    ok = True
    if qid not in candidates:
        if not pooled:
            problems.append(Problem(lineno, f"topic {qid!r} is not a dialogue of {result.collection}"))
        elif qid not in result.unjudged_topics:
            result.unjudged_topics.append(qid)
            result.warnings.append(
                Problem(lineno, f"topic {qid!r} has no judgements in the qrels: ignored, as trec_eval ignores it")
            )
        ok = False
    elif doc not in candidates[qid]:
        if pooled:
            result.unjudged += 1
        else:
            problems.append(Problem(lineno, f"doc {doc!r} is not a candidate of topic {qid!r}"))
    if (qid, doc) in seen:
        problems.append(Problem(lineno, f"duplicate line for topic {qid!r} and doc {doc!r} (first on line {seen[(qid, doc)]})"))
        ok = False
    else:
        seen[(qid, doc)] = lineno
    parsed, line_problems = parse_run_line(parts)
    problems.extend(Problem(lineno, message) for _, message in line_problems)
    if parsed is not None and parsed.rank is None:
        result.warnings.append(
            Problem(lineno, f"rank is not a whole number: {parts[3]!r} (trec_eval and dsr ignore the rank column: scores decide)")
        )
    if ok and parsed is not None:
        by_topic.setdefault(qid, []).append(_Entry(lineno, doc, parsed.rank, parsed.score))


def _check_order(qid: str, entries: list[_Entry], warnings: list[Problem]) -> None:
    """Ranks that repeat or disagree with the scores: warnings, as trec_eval ignores ranks."""
    ranked = [e for e in entries if e.rank is not None]
    ranks: dict[int | None, int] = {}
    for e in ranked:
        if e.rank in ranks:
            warnings.append(
                Problem(e.line, f"rank {e.rank} of topic {qid!r} repeats line {ranks[e.rank]} (ignored: scores decide the order)")
            )
        else:
            ranks[e.rank] = e.line
    ordered = sorted(ranked, key=lambda e: (e.rank, e.line))
    for prev, cur in zip(ordered, ordered[1:]):
        if cur.rank == prev.rank:
            continue
        if _as32(cur.score) > _as32(prev.score):
            warnings.append(
                Problem(
                    cur.line,
                    f"rank {cur.rank} has a higher score ({cur.score!r}) than "
                    f"rank {prev.rank} on line {prev.line} ({prev.score!r}) "
                    "as a 32-bit float: trec_eval and dsr order by score, "
                    "not by rank",
                )
            )


def fix_ties(collection: Collection, path: str | Path) -> tuple[Run, Run]:
    """(fixed, as read): the run at ``path`` rewritten with dsr's tie rule: scores as read, ties ordered
    by the collection's initial rank then id, scores made strictly decreasing as
    float32 (``dsr.core.run``). The caller writes it (``dsr validate --fix-ties``)."""

    run = load_run(path)
    order = {d.id: collection.candidate_ids(d.id) for d in collection}
    scores = {q: dict(ranked) for q, ranked in run.rankings.items()}  # as read, not yet float32
    return Run.from_scores(scores, tag=run.tag, initial_order=order), run
