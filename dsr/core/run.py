"""The one shape for rankings: a run maps a topic (dialogue) id to a ranked list
of (sentence id, score). Every ranker, reranker and fusion returns one; the
evaluator takes them.

On disk a run is a TREC run file (``qid Q0 docid rank score tag``, gzipped
when the name ends in ``.gz``) plus a JSON sidecar ``RUN.json`` with the full
configuration, the collection's hash and the run file's sha256.

Tie rule
--------
trec_eval 9.0.8 (and pytrec_eval, ir_measures) keeps each score as a 32-bit float,
orders by it and breaks ties by document id, descending (10.0 reads doubles; a run
strictly decreasing in float32 is so in doubles too). So every run dsr
writes is strictly decreasing *in 32 bits*: when scores tie, the order is
decided by the topic's *initial rank* (the candidate's position in the
collection's candidate list) and then by sentence id; every score is rounded
to float32 and, when it is not below its predecessor, lowered to the next
float32 below it. Subnormal float32 values (and -0.0) become 0.0 and the step
below 0 is the smallest normal float32, so no reader that flushes subnormals
to zero sees a tie. Scores beyond the float32 range are clamped to it. The
order a Run holds is the order written, evaluated and read back.

A score is written as the shortest decimal of its (float32-exact) value as a
64-bit float: C ``atof`` then a cast to float32 (trec_eval), ``strtof`` and
Python's ``float`` all give back exactly that value, so a run read back is
identical to the one written.

Reading a run (any run, also users') follows trec_eval: scores are ordered as
float32, ties by doc id descending; :func:`tied_topics` counts the topics
where that tie-break decides. Lines are parsed as trec_eval parses them (see
:func:`parse_run_line`).

Sidecar consistency: the run is written first, then the sidecar with the run
file's sha256 (``run_sha256``). A sidecar whose hash is not the file's (a
process killed between the two writes, a run edited by hand) is stale: it is
not used, and a warning names both files.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.atomic import FullDisk, check_output_path, disk_full, full_disk_error, write_json
from dsr.core.errors import InputError
from dsr.core.ir_metadata import config_from_header, format_header, read_header
from dsr.core.jsonio import load_json
from dsr.core.params import Param
from dsr.core.provenance import sha256_file
from dsr.core.textfiles import atomic_write_text, read_lines
from dsr.core.ties import (
    F32_MAX,
    FlatRanking,
    _entry,
    _has_float32_ties,
    _strict_scores,
    _tie_rule_flat,
    rank_flat,
    strictly_decreasing,
    trec_eval_order,
)

#: sidecar key holding the run file's sha256
RUN_SHA256 = "run_sha256"


@dataclass
class Run:
    """topic id -> [(doc id, score)], in ranked order (see the tie rule above)."""

    rankings: dict[str, list[tuple[str, float]]]
    tag: str = "dsr"
    config: dict[str, Any] = field(default_factory=dict)
    #: caches, not part of the value: the rankings when they already hold the tie rule's scores
    #: (as_dict and write_trec_run need not redo it), and dsr.core.fusion's initial ranks
    _normalised: Any = field(default=None, init=False, repr=False, compare=False)
    _initial_ranks: Any = field(default=None, init=False, repr=False, compare=False)
    #: for a run read from a file, the topics whose scores tie (as float32), in the file's line
    #: order: what ranx sorts when it reads the file (``fuse(..., backend="ranx")``)
    line_order: dict[str, list[tuple[str, float]]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_scores(
        cls,
        scores: Mapping[str, Mapping[str, float]],
        tag: str = "dsr",
        config: dict[str, Any] | None = None,
        initial_order: Mapping[str, list[str]] | None = None,
    ) -> Run:
        """Build a run from unordered scores, applying the tie rule.

        ``initial_order`` gives each topic's candidate ids in initial-rank
        order (usually ``collection.candidate_ids(topic)``); ids not in it
        come after those that are, then by id.
        """
        return cls._from_ranking(_tie_rule_flat(scores, initial_order or {}), tag, config)

    @classmethod
    def from_flat(
        cls,
        topics: list[str],
        docs: list[str],
        sizes: np.ndarray,
        values: np.ndarray,
        positions: np.ndarray,
        tag: str = "dsr",
        config: dict[str, Any] | None = None,
    ) -> Run:
        """``from_scores`` for scores laid end to end: topic ``topics[i]`` holds the next
        ``sizes[i]`` of ``docs``, with their ``values`` and initial ranks ``positions`` (a doc
        outside the initial order: the topic's initial order's length). The same Run as
        ``from_scores`` of the same scores, without building dicts."""
        ranking = rank_flat(
            list(topics),
            list(docs),
            np.asarray(sizes, dtype=np.int64),
            np.asarray(values, dtype=np.float64),
            np.asarray(positions, dtype=np.int64),
        )
        return cls._from_ranking(ranking, tag, config)

    @classmethod
    def _from_ranking(cls, ranking: FlatRanking, tag: str, config: dict[str, Any] | None) -> Run:
        """A run holding ``ranking`` (the tie rule applied: ordered and scored): its ``rankings``
        are built from it when first read, so a run only evaluated (a tuning grid's) never
        builds a Python list per topic. A topic named twice is built now (as a dict keeps it)."""
        run = cls({}, tag, dict(config or {}))
        if len(set(ranking.topics)) == len(ranking.topics):
            run.__dict__.update(_rankings=None, _flat=ranking)
        else:
            run.rankings = ranking.rankings()
            run._normalised = run.rankings  # strictly decreasing float32 already: as_dict need not redo it
        return run

    def flat_ranking(self) -> FlatRanking | None:
        """The run's rankings laid end to end (:class:`dsr.core.ties.FlatRanking`) while they
        are not yet built as lists (``from_scores``/``from_flat`` runs whose ``rankings`` were
        never read); else None: then ``rankings`` is what the run holds."""
        return self.__dict__.get("_flat") if self.__dict__.get("_rankings") is None else None

    def __len__(self) -> int:
        flat = self.flat_ranking()
        return len(flat.topics) if flat is not None else len(self.rankings)

    def __repr__(self) -> str:
        """One line, whatever the size: tag, topics, lines, what the configuration names."""
        lines = sum(len(r) for r in self.rankings.values())
        made = next((f", {k} {self.config[k]!r}" for k in ("ranker", "fusion", "reranker") if k in self.config), "")
        return f"Run({self.tag!r}: {len(self.rankings)} topics, {lines} lines{made})"

    def topics(self) -> list[str]:
        flat = self.flat_ranking()
        return list(flat.topics) if flat is not None else list(self.rankings)

    def scores(self, qid: str) -> dict[str, float]:
        return dict(self.rankings.get(qid, ()))

    def top(self, qid: str, k: int | None = None) -> list[str]:
        ranked = self.rankings.get(qid, [])
        return [d for d, _ in (ranked if k is None else ranked[:k])]

    def as_dict(self) -> dict[str, dict[str, float]]:
        """The ir_measures / pytrec_eval shape ``{qid: {docid: score}}``, with the scores
        the file would hold (strictly decreasing in float32), so an evaluator scores
        exactly the order this Run holds, as it would score the written file. (A Run made by
        ``from_scores`` holds such scores already; one whose ``rankings`` were replaced since,
        or that was built by hand, is normalised here. Rankings are not changed in place.)"""
        held = self.rankings  # read first: a flat ranking built now is normalised
        if getattr(self, "_normalised", None) is held:
            return {q: dict(r) for q, r in held.items()}
        rankings = list(self.rankings.values())
        sizes = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
        values = np.fromiter((float(s) for ranked in rankings for _, s in ranked), dtype=np.float64, count=int(sizes.sum()))
        ends = np.cumsum(sizes)
        scores = _strict_scores(values, ends, lambda i: _entry(rankings, ends, i))
        changed = set(np.searchsorted(ends, np.flatnonzero(scores != values), side="right").tolist())
        return {
            qid: dict(zip([d for d, _ in ranked], scores[end - size : end].tolist())) if n in changed else dict(ranked)
            for n, (qid, ranked, end, size) in enumerate(zip(self.rankings, rankings, ends.tolist(), sizes.tolist()))
        }

    def tied_topics(self) -> list[str]:
        """Topics where two scores are equal as float32 (trec_eval breaks those ties by doc id)."""
        return [q for q, r in self.rankings.items() if _has_float32_ties([s for _, s in r])]

    def write(self, path: str | Path, sidecar: bool = True, ir_metadata: bool = False) -> None:
        """Write the TREC file (the tie rule applied to the order held), then its
        JSON sidecar with the file's sha256; each atomically, in that order.
        ``ir_metadata``: the file starts with an ir_metadata header made from the
        configuration (``dsr.core.ir_metadata``), and the sidecar says so."""
        header: list[str] = []
        if ir_metadata:
            self.config["ir_metadata_header"] = True
            header = format_header({"tag": self.tag, **self.config}, self.tag)
        write_trec_run(self, path, header)
        if sidecar:
            write_json(sidecar_path(path), {"tag": self.tag, **self.config, RUN_SHA256: sha256_file(path)})

    # --- other libraries' shapes (the order is always trec_eval's, see the module docstring)

    @classmethod
    def from_dict(cls, scores: Mapping[str, Any], tag: str = "dsr") -> Run:
        """From ``{qid: {docno: score}}`` (ir_measures, pytrec_eval, ranx's ``to_dict``) or
        ``{qid: [(docno, score), ...]}``, ordered as trec_eval orders a file of those scores
        (float32 descending, ties by doc id descending), so it is scored as that file."""
        rankings = {}
        for qid, docs in scores.items():
            pairs = docs.items() if isinstance(docs, Mapping) else docs
            ranked = [(str(doc), float(score)) for doc, score in pairs]
            if len({d for d, _ in ranked}) != len(ranked):
                raise InputError(f"topic {qid!r} lists a document twice", record=str(qid))
            rankings[str(qid)] = trec_eval_order(ranked)
        return cls(rankings, tag)

    @classmethod
    def from_frame(cls, frame: Any, tag: str | None = None) -> Run:
        """From a pandas DataFrame in PyTerrier's result shape: ``qid``, ``docno``, ``score``
        (``rank`` is ignored, as trec_eval ignores it; without ``score``, ``-rank`` ranks).
        The tag is ``tag``, else the frame's ``name`` column when it has one value."""
        missing = [c for c in ("qid", "docno") if c not in frame.columns]
        if missing or ("score" not in frame.columns and "rank" not in frame.columns):
            raise InputError(
                f"a run frame needs columns qid, docno and score (or rank); it has {', '.join(map(str, frame.columns))}",
                field=(missing or ["score"])[0],
            )
        scores = frame["score"] if "score" in frame.columns else -frame["rank"].astype(float)
        if scores.isna().any():
            row = int(np.flatnonzero(scores.isna().to_numpy())[0])
            raise InputError(f"row {row} has no score", record=str(frame["qid"].iloc[row]), field="score")
        rankings: dict[str, list[tuple[str, float]]] = {}
        for qid, doc, score in zip(frame["qid"].astype(str), frame["docno"].astype(str), scores):
            rankings.setdefault(qid, []).append((doc, float(score)))
        if tag is None and "name" in frame.columns and frame["name"].nunique() == 1:
            tag = str(frame["name"].iloc[0])
        return cls.from_dict(rankings, tag or "dsr")

    def to_frame(self) -> Any:
        """A pandas DataFrame in PyTerrier's result shape: ``qid``, ``docno``, ``score`` (as a
        file would hold them), ``rank`` (from 0, as PyTerrier counts), in ranked order."""
        import pandas as pd

        rows = [(q, d, s, r) for q, ranked in self.rankings.items() for r, (d, s) in enumerate(strictly_decreasing(ranked))]
        return pd.DataFrame(rows, columns=["qid", "docno", "score", "rank"])

    @classmethod
    def from_ranx(cls, run: Any) -> Run:
        """From a ``ranx.Run`` (its name becomes the tag)."""
        return cls.from_dict(run.to_dict(), getattr(run, "name", None) or "dsr")

    def to_ranx(self) -> Any:
        """A ``ranx.Run`` with the scores a file would hold, named by the tag (needs ranx)."""
        try:
            from ranx import Run as RanxRun
        except ImportError:
            raise InputError("to_ranx needs ranx: pip install ranx") from None
        return RanxRun(self.as_dict(), name=self.tag)

    @classmethod
    def read(cls, path: str | Path, fmt: str = "auto") -> Run:
        """Read a run file (``fmt``: see :func:`read_trec_run`) and its sidecar (a stale
        sidecar is reported and left out)."""
        run = read_trec_run(path, fmt)
        run.config = read_sidecar(path)
        if not run.config:
            header = read_header(path)  # a run from elsewhere may carry an ir_metadata header
            if header:
                run.config = config_from_header(header)
        return run


def _get_rankings(run: Run) -> dict[str, list[tuple[str, float]]]:
    held = run.__dict__
    rankings = held.get("_rankings")
    if rankings is None and "rankings" in held:  # a Run pickled before rankings became a property
        rankings = held["_rankings"] = held.pop("rankings")
    if rankings is None:
        flat = held.get("_flat")
        rankings = held["_rankings"] = flat.rankings() if flat is not None else {}
        if flat is not None:
            held["_normalised"] = rankings  # strictly decreasing float32 already: as_dict need not redo it
    return rankings


def _set_rankings(run: Run, rankings: dict[str, list[tuple[str, float]]]) -> None:
    run.__dict__["_rankings"] = rankings
    run.__dict__.pop("_flat", None)  # replaced: the flat ranking no longer describes it


#: ``Run.rankings`` is a field of the dataclass read through this property: a run made by
#: ``from_scores``/``from_flat`` holds its ranking as arrays and builds the lists when first read
#: (setattr, not an assignment: mypy sees the field)
setattr(  # noqa: B010
    Run,
    "rankings",
    property(
        _get_rankings,
        _set_rankings,
        doc="topic id -> [(doc id, score)], in ranked order (see the tie rule)",
    ),
)


def read_sidecar(path: str | Path, warn: bool = True) -> dict[str, Any]:
    """The configuration in the sidecar of the run file at ``path`` ({} when there is
    none, or when it is stale: its ``run_sha256`` is not the file's; then a warning
    naming both files is printed unless ``warn`` is False)."""
    side = sidecar_path(path)
    if not side.exists():
        return {}

    config = load_json(side)
    if not isinstance(config, dict):
        raise InputError("a run sidecar must be a JSON object", path=side)
    config.pop("tag", None)
    recorded = config.pop(RUN_SHA256, None)
    if recorded is not None and recorded != sha256_file(path):
        if warn:
            print(
                f"dsr: warning: the sidecar {side} is stale: the sha256 it records is not "
                f"that of {path}; its configuration is not used",
                file=sys.stderr,
            )
        return {}
    return config


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".json")


def write_trec_run(run: Run, path: str | Path, header: Iterable[str] = ()) -> None:
    """Write the TREC file atomically (gzipped for ``.gz``), the tie rule applied,
    after the ``header`` lines (``#`` comments, e.g. an ir_metadata header)."""
    tag = run.tag.replace(" ", "_") or "dsr"
    # a Run made by from_scores/from_flat holds the tie rule's scores already (as_dict's check)
    rankings = run.rankings  # read first: a flat ranking built now is normalised
    normalised = getattr(run, "_normalised", None) is rankings
    with atomic_write_text(path) as handle:
        for line in header:
            handle.write(line + "\n")
        for qid, ranked in run.rankings.items():
            # one write per topic; a score is written as repr(float), which C atof + a float32
            # cast, strtof and Python's float all read back exactly
            handle.write(
                "".join(
                    [
                        f"{qid} Q0 {doc} {rank} {float(score)!r} {tag}\n"
                        for rank, (doc, score) in enumerate(ranked if normalised else strictly_decreasing(ranked), 1)
                    ]
                )
            )


# --- parsing, as trec_eval parses -------------------------------------------------

# What C atof reads in full as a decimal number; Python's float() also takes
# "1_000", " 1", "inf", "nan" and "0x1p3"-like text, which trec_eval reads differently.
_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NOT_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


@dataclass
class RunLine:
    qid: str
    doc: str
    rank: int | None  # None: not a whole number >= 0 (trec_eval ignores the column)
    score: float
    tag: str


def parse_rank(text: str) -> int | None:
    """The rank column as a whole number >= 0, or None. trec_eval ignores this column (it
    orders by score), so no reader refuses a line for it: ``dsr validate`` warns."""
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        return None
    return int(text)


def parse_run_line(parts: list[str]) -> tuple[RunLine | None, list[tuple[str, str]]]:
    """One split line of a run -> (the line, or None) and its problems ``[(field, message)]``.

    Six whitespace-separated columns (text after the sixth is ignored, as trec_eval 9.0.8
    and 10.0 ignore it: their own test file ``results.trunc`` has such lines); the second
    is ``Q0`` or ``0``; the score
    a plain decimal number (no ``_``, hex, ``inf``, ``nan``) within the float32
    range trec_eval keeps scores in. The rank column is read (``RunLine.rank``)
    but, as trec_eval ignores it, never a problem: PyTerrier writes ranks from
    0, and ranks that disagree with the scores are scored by the scores.
    """
    if len(parts) < 6:
        return None, [("columns", f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}")]
    qid, iteration, doc, rank_text, score_text, tag = parts[:6]
    problems = []
    if iteration not in ("Q0", "0"):
        problems.append(("Q0", f"the second column must be Q0 (or 0), got {iteration!r}"))
    score = math.nan
    if score_text.lower() in _NOT_FINITE:
        problems.append(("score", f"score is not finite: {score_text!r}"))
    elif not _DECIMAL.fullmatch(score_text):
        problems.append(
            (
                "score",
                f"score is not a number as trec_eval reads it: {score_text!r} "
                "(digits, one '.', an optional exponent; no '_', hex or words)",
            )
        )
    else:
        score = float(score_text)
        if not math.isfinite(score):
            problems.append(("score", f"score is not finite: {score_text!r}"))
        elif abs(score) > F32_MAX:
            problems.append(
                ("score", f"score {score_text} is outside the float32 range trec_eval keeps scores in (|score| <= {F32_MAX:.7g})")
            )
    if problems:
        return None, problems
    return RunLine(qid, doc, parse_rank(rank_text), score, tag), []


#: the run file formats read: TREC's six columns, MS MARCO's three (``auto``: by the first line)
RUN_FORMATS = ("auto", "trec", "msmarco")
#: the run file format as a setting: the readers' ``fmt`` (``read_trec_run``, ``load_run``,
#: ``validate_run``), the command line's ``--run-format`` (dsr evaluate, validate, fuse)
RUN_FORMAT = Param(
    "fmt",
    "auto",
    "str",
    "trec (qid Q0 docid rank score tag), msmarco (qid docid rank, as pyserini's "
    "--output-format msmarco writes: each score is minus the rank, ties in rank go "
    "to the doc id, descending) or auto (default: three columns whose last is a "
    "whole number are msmarco)",
    choices=RUN_FORMATS,
    flags=("--run-format",),
)
#: the tag of a run read from an MS MARCO file (which has none)
MSMARCO_TAG = "msmarco"
#: how an MS MARCO run (``qid<TAB>docid<TAB>rank``, no score: pyserini's ``--output-format
#: msmarco``, the MS MARCO evaluation scripts' input) becomes a run
MSMARCO_RULE = (
    "each line's score is minus its rank (rank 1 -> -1.0), so the run's order is its "
    "ranks'; two lines of a topic with the same rank tie and go to the doc id, "
    "descending, as trec_eval orders ties"
)


def detect_format(lines: Iterable[str]) -> str:
    """``msmarco`` when the first line that is not blank or a ``#`` comment has three columns,
    the last a whole number (``qid docid rank``); else ``trec``."""
    for line in lines:
        if line.strip() and not line.startswith("#"):
            parts = line.split()
            return "msmarco" if len(parts) == 3 and parse_rank(parts[2]) is not None else "trec"
    return "trec"


def msmarco_as_trec(parts: list[str]) -> tuple[list[str] | None, str | None]:
    """An MS MARCO line's columns as a TREC line's (score = -rank, :data:`MSMARCO_RULE`), or
    None and what is wrong with it."""
    if len(parts) != 3:
        return None, f"expected 3 columns (qid docid rank) in an MS MARCO run, got {len(parts)}"
    qid, doc, rank = parts
    if parse_rank(rank) is None:
        return None, f"rank is not a whole number of 0 or more: {rank!r}"
    return [qid, "Q0", doc, rank, repr(-float(rank)), MSMARCO_TAG], None


def read_trec_run(path: str | Path, fmt: str = "auto") -> Run:
    """Read a TREC run (plain or gzip) strictly; the first problem raises an InputError
    with its line. Each topic is ordered as trec_eval orders it. ``fmt``: ``trec``,
    ``msmarco`` (three columns, scores from the ranks: :data:`MSMARCO_RULE`) or ``auto``
    (:func:`detect_format`).

    ``dsr validate`` reports every problem of a file at once; this reader is
    for files that should already be valid.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such run file", path=path)
    fmt = RUN_FORMAT.check(fmt)
    rankings: dict[str, list[tuple[str, float]]] = {}
    seen: set[tuple[str, str]] = set()
    tag = None
    lines = read_lines(path)  # plain or gzip
    msmarco = (detect_format(lines) if fmt == "auto" else fmt) == "msmarco"
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue  # comments: ir_metadata headers (dsr.core.ir_metadata)
        parts = line.split()
        if msmarco:
            columns, wrong = msmarco_as_trec(parts)
            if columns is None:
                raise InputError(
                    wrong or "not an MS MARCO line",
                    path=path,
                    line=lineno,
                    field="rank" if wrong and "rank is" in wrong else None,
                )
            parts = columns
        parsed, problems = parse_run_line(parts)
        if problems:
            name, message = problems[0]
            raise InputError(message, path=path, line=lineno, field=None if name == "columns" else name)
        assert parsed is not None, "parse_run_line gives the line when it finds no problem"
        if (parsed.qid, parsed.doc) in seen:
            raise InputError(
                f"duplicate line for topic {parsed.qid!r} and doc {parsed.doc!r}", path=path, line=lineno, field="docid"
            )
        seen.add((parsed.qid, parsed.doc))
        tag = parsed.tag
        rankings.setdefault(parsed.qid, []).append((parsed.doc, parsed.score))
    if not rankings:
        raise InputError("the run file is empty", path=path)
    run = Run({q: trec_eval_order(r) for q, r in rankings.items()}, tag or "dsr")
    run.line_order = {q: rankings[q] for q in run.tied_topics()}
    return run


# --- the collection a run was made for ----------------------------------------------


# --- runs read for a collection, and written as a pair -------------------------


def load_run(path: str | Path, fmt: str = "auto") -> Run:
    """Read a run (TREC, or MS MARCO's three columns: ``fmt``, :func:`read_trec_run`) and its
    sidecar; anything unreadable is an InputError naming the file."""
    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder, not a run file", path=path)
    try:
        return Run.read(path, fmt)  # the sidecar's errors name the sidecar
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None


def as_run(value: Any, name: str | None = None) -> Run:
    """A :class:`Run` from what a notebook holds: a run file's path, a Run, a pandas
    DataFrame in PyTerrier's shape (qid, docno, score[, rank]), a ``ranx.Run``, or a dict
    ``{qid: {docno: score}}``. Anything else is an InputError naming ``name``."""
    if isinstance(value, Run):
        return value
    if isinstance(value, (str, Path)):
        return load_run(value)
    if hasattr(value, "columns") and hasattr(value, "iloc"):
        return Run.from_frame(value, tag=name)
    if type(value).__module__.split(".")[0] == "ranx":
        return Run.from_ranx(value)
    if isinstance(value, Mapping):
        return Run.from_dict(value, name or "dsr")
    raise InputError(
        f"cannot read a run from a {type(value).__name__}: give a path, a Run, a "
        "DataFrame (qid, docno, score), a ranx.Run or a dict {qid: {docno: score}}",
        record=name,
    )


def write_run(run: Run, out: str | Path, ir_metadata: bool = False) -> None:
    """Write the run and its sidecar as a pair: both go to temporary names beside
    ``out`` first, so a failure leaves the previous pair (or nothing) in place;
    then the run is renamed into place, then the sidecar (which records the run's
    sha256), so a kill between the two leaves a stale sidecar that readers detect.
    An unwritable ``out`` is an InputError naming it."""
    out = Path(out)
    check_output_path(out, "out")  # a folder, or a parent that is a file: exit 2
    # the temporary name keeps a .gz ending: Run.write gzips by name
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial" + (".gz" if out.name.endswith(".gz") else ""))
    try:
        run.write(tmp, ir_metadata=ir_metadata)
        os.replace(tmp, out)
        os.replace(sidecar_path(tmp), sidecar_path(out))
    except (OSError, FullDisk) as err:
        if disk_full(err):
            raise full_disk_error(out, err) from None
        reason = err.strerror if isinstance(err, OSError) else None
        raise InputError(f"cannot write: {reason or err}", path=out, field="out") from None
    finally:
        for leftover in (tmp, sidecar_path(tmp)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
