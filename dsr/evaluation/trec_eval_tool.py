"""``dsr trec_eval``: trec_eval's command, its output byte for byte, under either release.

:func:`trec_eval` reads a qrels file and a run as trec_eval reads them, evaluates each topic
as the release named does (which topics, in which order, the ranking's order, ``-M``,
``-J``, ``-c``, ``-l``, ``-N``, ``-Z``) and returns the text trec_eval prints: one
``measure<TAB>topic<TAB>value`` line per value (the measure name padded to 22 characters,
counts as whole numbers, everything else with 4 decimals), the per-topic lines with ``-q``
and the summary over ``all`` (counts summed, ``gm_`` measures averaged geometrically, the
others averaged) unless ``-n``. The measures are :mod:`dsr.evaluation.trec_eval_measures`'.

Where the releases differ, ``release`` decides:

* 9.0.8 reads run scores as 32-bit floats, 10.0 as doubles (a run with 0.30000001 and 0.3
  is a tie in 9.0.8, two ranks in 10.0); ties go to the doc id, descending, in both;
* 9.0.8 evaluates the run's topics that have judgements; 10.0 the qrels' topics, stopping
  on one the run lacks unless ``-c``, which then scores it as trec_eval 10.0 does (a ranking
  of one unjudged document, then counts cleared) and prints it with ``-q``;
* 10.0 rounds ``iprec_at_recall`` and ``11pt_avg`` cutoffs with ``lround`` (9.0.8: + 0.9,
  truncated), and has ``rbp``, ``rbp_resid`` and ``unj`` in ``all_trec``.

As trec_eval, scores are read as C's ``atof`` reads them, ``nan``, ``inf`` and ``infinity``
in any case included (a NaN compares neither above nor below any score, so its place is
where glibc's merge sort leaves it: replayed here), a level ``-l`` of 0 or below makes
judged non-relevant documents (0), then unpooled (-1) and unjudged ones (-2) relevant where
the C compares with the level, and where trec_eval stops in its loop over topics (10.0 on a
qrels topic the run lacks, a document listed twice among a topic's first ``-M``, a document
judged twice) dsr prints the ``-q`` lines trec_eval printed before and stops with its exit
status, 4 (:class:`Stopped`).

Two paths, one output: :mod:`dsr.evaluation.trec_eval_fast` (files read as arrays, the
measures over arrays) for the files and options it covers, and the reference below (a
Python object per line; pytrec_eval, i.e. trec_eval's C, for the measures it computes, a port
of the C for the others and for levels below 1, which pytrec_eval refuses) for the rest.
``tests/evaluation/test_trec_eval_arrays.py`` holds them equal.

One difference from both binaries: ``#`` lines of a qrels file are comments under either
release (10.0 reads them so; 9.0.8 stops with "malformed line"), as ``dsr evaluate --qrels``
reads them. Input that trec_eval reads by accident (a score such as ``1.5abc``, which C's
``atof`` reads as 1.5) is an error naming the line here.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.textfiles import read_lines
from dsr.evaluation import trec_eval_arrays, trec_eval_fast
from dsr.evaluation.qrels import read_qrels_as_trec_eval
from dsr.evaluation.trec_eval_fast import BOGUS_DOC, Evaluated, Stop
from dsr.evaluation.trec_eval_measures import (
    MIN_GEO_MEAN,
    NONPOOL,
    RELEASES,
    UNJUDGED,
    Ranked,
    Selected,
    _atol,
    c_merge_sort,
    empty_values,
    ported,
    ported_values,
    select,
)

#: what trec_eval prints for a value it cannot turn into a z-score (MISSING_ZSCORE_VALUE)
MISSING_ZSCORE = -1000000.0
#: what C's atof reads in full as a decimal number
DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


#: trec_eval's options that carry a value (``dsr trec_eval``'s flags, trec_eval's names):
#: :class:`Options` checks its fields through them
OPTION_PARAMS = (
    Param("release", "9.0.8", "str", "whose rules: 9.0.8 (default) or 10.0 (see below)", choices=RELEASES),
    Param(
        "level",
        1,
        "int",
        "the lowest grade that is relevant (default 1; 0 or below as trec_eval reads them: "
        "-l 0 makes grade 0 relevant, -l -1 also documents the qrels do not hold)",
        metavar="N",
        flags=("-l", "--level_for_rel"),
    ),
    Param(
        "max_docs",
        None,
        "int",
        "only the first N documents of each topic",
        low=0,
        metavar="N",
        flags=("-M", "--Max_retrieved_per_topic"),
    ),
    Param(
        "num_docs",
        0,
        "int",
        "documents in the collection (utility's fourth coefficient reads it)",
        low=0,
        metavar="N",
        flags=("-N", "--Number_docs_in_coll"),
    ),
    Param(
        "rel_format",
        "qrels",
        "str",
        "qrels (the only one supported; prefs, qrels_prefs and qrels_jg are not)",
        metavar="FORMAT",
        flags=("-R", "--Rel_info_format"),
    ),
    Param(
        "results_format",
        "trec_results",
        "str",
        "trec_results (the only format)",
        metavar="FORMAT",
        flags=("-T", "--Results_format"),
    ),
)
OPTION = {p.name: p for p in OPTION_PARAMS}


@dataclass
class Options:
    """trec_eval's options (``dsr trec_eval``'s flags); those with a value checked when made,
    by :data:`OPTION_PARAMS`."""

    release: str = "9.0.8"
    #: -m: measures and nicknames, with parameters (``P.5,10``); None: ``official``
    measures: Sequence[str] | None = None
    #: -q: a line per topic too
    per_topic: bool = False
    #: -c: average over every topic of the qrels (a topic the run lacks scores 0)
    complete: bool = False
    #: -l: the lowest grade that is relevant
    level: int = 1
    #: -M: only the first N documents of each topic
    max_docs: int | None = None
    #: -J: only judged documents (unjudged ones are dropped from the ranking)
    judged_only: bool = False
    #: -n: False prints no summary
    summary: bool = True
    #: -N: documents in the collection (read by utility's fourth coefficient)
    num_docs: int = 0
    #: -Z: a file of ``topic measure mean sd`` lines: print z-scores
    zscores: str | Path | None = None

    #: -R: the qrels' format (qrels only: the others are refused by name)
    rel_format: str = "qrels"
    #: -T: the run's format (trec_results, trec_eval's only one)
    results_format: str = "trec_results"

    def __post_init__(self) -> None:
        for p in OPTION_PARAMS:
            setattr(self, p.name, p.check(getattr(self, p.name)))
        _check_formats(self.rel_format, self.results_format)


@dataclass
class Printed:
    """What ``dsr trec_eval`` prints: trec_eval's output, and notes for stderr."""

    text: str
    notes: list[str]


class Stopped(InputError):
    """trec_eval stopped in its loop over topics (exit 4): ``printed`` is what it had printed
    on standard output by then (the ``-q`` lines of the topics before), ``words`` what it
    printed on stderr."""

    status = 4

    def __init__(self, message: str, printed: str, words: str, path: str | Path | None = None):
        super().__init__(f"{message}; trec_eval: {words!r}", path=path)
        self.printed = printed
        self.words = words


#: who evaluates: the arrays where they cover the input (``auto``), or always the reference
ENGINES = ("auto", "reference")
ENGINE = Param(
    "engine",
    "auto",
    "str",
    "who evaluates: auto (default: the arrays for a plain file they read, else the reference) or reference "
    "(a Python object per line: pytrec_eval and the ports); the same output",
    choices=ENGINES,
    flags=("--engine",),
)


def trec_eval(qrels_path: str | Path, run_path: str | Path, options: Options | None = None, engine: str = "auto") -> Printed:
    """What trec_eval ``options.release`` prints for ``qrels_path`` and ``run_path`` (and the notes
    on where a trec_eval binary's value is not defined, for stderr). Where trec_eval stops on a
    topic, :class:`Stopped` carries what it printed before. ``engine``: :data:`ENGINES`."""
    options = options or Options()
    _check(options)
    ENGINE.check(engine)
    selected = select(options.measures, options.release)
    notes: set[str] = set()
    evaluated = trec_eval_fast.evaluate(qrels_path, run_path, options, selected, notes) if engine == "auto" else None
    if evaluated is None:
        evaluated = _reference(qrels_path, run_path, options, selected, notes)
    z = options.zscores is not None
    stop = evaluated.stop
    shown = evaluated.ids if stop is None else evaluated.ids[: stop.at]
    text = _topic_lines(selected, shown, evaluated.columns, z) if options.per_topic else ""
    if stop is not None:
        where = qrels_path if "judge" in stop.message else run_path
        raise Stopped(stop.message, text, stop.words, path=where)
    if options.summary:
        text += "".join(line + "\n" for line in _summary(selected, evaluated, options, z))
    return Printed(text, sorted(notes))


def reference_engine(qrels_path: str | Path, run_path: str | Path, options: Options | None = None) -> Printed:
    """:func:`trec_eval` by the reference alone (``engine="reference"``): the fast path's
    reference in ``dsr/core/providers.py``."""
    return trec_eval(qrels_path, run_path, options, engine="reference")


def _reference(
    qrels_path: str | Path, run_path: str | Path, options: Options, selected: list[Selected], notes: set[str]
) -> Evaluated:
    """The reference path: a Python object per line, pytrec_eval and the ports."""
    qrels, judged_twice, relevant = read_qrels_as_trec_eval(qrels_path)
    run_tag, rankings_read = read_run_as_trec_eval(run_path)
    zscores = read_zscores(options.zscores) if options.zscores is not None else None
    rankings = {q: _ordered(r, options.release) for q, r in rankings_read.items()}
    topics, missing = _evaluated(qrels, rankings, options, run_path)
    stop = _first_stop(topics, missing, qrels, judged_twice, options, selected)
    if stop is not None:
        topics = topics[: stop.at]
    ranked = {qid: _ranked(qrels[qid], docs, options) for qid, docs in topics}
    if options.level < 1 or _stale_gains(topics, qrels, selected):  # what pytrec_eval cannot give
        columns = trec_eval_fast.compute(_as_arrays(topics, ranked, qrels), selected, options, notes)
        values = {qid: {name: columns[name][i] for name in columns} for i, (qid, _) in enumerate(topics)}
    else:
        values = _values(selected, qrels, dict(topics), ranked, options, notes)
        for qid, docs in topics:
            if docs is None:  # 10.0's stand-in for a topic the run lacks (-c)
                _clear_bogus(values[qid])
    if zscores is not None:
        for qid, _ in topics:
            _to_zscores(values[qid], zscores.get(qid))
    ids = [qid for qid, _ in topics]
    names = [name for s in selected if s.name != "runid" for name in s.names]
    columns = {name: [values[qid][name] for qid in ids] for name in names}
    return Evaluated(ids, columns, len(qrels), relevant, run_tag, stop)


def _stale_gains(
    topics: list[tuple[str, list[str] | None]], qrels: Mapping[str, Mapping[str, int]], selected: list[Selected]
) -> bool:
    """Whether a topic judged only with grade -1 meets a gain named for a negative label: its
    value then reads the grade counts of the topic before (in trec_eval's order), which
    pytrec_eval, evaluating in its own order, does not reproduce."""
    gained = ("ndcg", "ndcg_rel", "Rndcg", "G")
    named = any(_atol(name) < 0 for s in selected if s.name in gained for name, _ in s.params)
    return named and any(max(qrels[qid].values()) < 0 for qid, _ in topics)


def _as_arrays(
    topics: list[tuple[str, list[str] | None]], ranked: Mapping[str, Ranked], qrels: Mapping[str, Mapping[str, int]]
) -> trec_eval_arrays.Topics:
    """The reference's rankings (after -M and -J) as the arrays' topics."""
    rels = [ranked[qid].rels for qid, _ in topics]
    lengths = np.asarray([len(r) for r in rels], dtype=np.int64)
    grades = [sorted((g for g in qrels[qid].values() if g >= 0), reverse=True) for qid, _ in topics]
    grade_lengths = np.asarray([len(g) for g in grades], dtype=np.int64)
    highest = np.asarray([max(qrels[qid].values()) for qid, _ in topics], dtype=np.int64)
    source = np.maximum(trec_eval_fast.stale_grades(highest), 0)
    return trec_eval_arrays.Topics(
        [qid for qid, _ in topics],
        np.asarray([r for rel in rels for r in rel], dtype=np.int64),
        (np.cumsum(lengths) - lengths),
        lengths,
        np.asarray([g for grade in grades for g in grade], dtype=np.int64),
        (np.cumsum(grade_lengths) - grade_lengths)[source],
        grade_lengths[source],
        np.asarray([docs is None for _, docs in topics], dtype=bool),
        highest >= 0,
    )


def _check_formats(rel_format: str, results_format: str) -> None:
    """-R and -T: the one format of each that dsr reads; the others refused by name."""
    if rel_format != "qrels":
        known = rel_format in ("prefs", "qrels_prefs", "qrels_jg")
        raise InputError(
            f"not supported: -R {rel_format}"
            + (
                " (dsr trec_eval reads qrels only; the preference and judgement-group formats and their "
                "measures are not computed)"
                if known
                else " (trec_eval has no such format; qrels is the one dsr reads)"
            ),
            field="rel_format",
        )
    if results_format != "trec_results":
        raise InputError(
            f"not supported: -T {results_format} (trec_results is trec_eval's only results format)", field="results_format"
        )


def _check(options: Options) -> None:
    """An Options changed after it was made, checked again."""
    Options(**{p.name: getattr(options, p.name) for p in OPTION_PARAMS})


# --- reading as trec_eval reads -------------------------------------------------------

#: the non-finite forms C's ``strtod`` reads (any case, a sign, ``nan(chars)``)
_NOT_FINITE = re.compile(r"[+-]?(?:inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)", re.IGNORECASE)


def c_score(text: str) -> float | None:
    """A run's score as trec_eval's ``atof`` reads the whole text: a decimal (beyond a double's
    range: infinite, as ``strtod`` gives), ``inf``, ``infinity`` or ``nan``; None otherwise."""
    if DECIMAL.fullmatch(text):
        return float(text)
    if _NOT_FINITE.fullmatch(text):
        return math.nan if "n" in text.lower().lstrip("+-")[:1] else math.copysign(math.inf, -1.0 if text[0] == "-" else 1.0)
    return None


def read_run_as_trec_eval(path: str | Path) -> tuple[str, dict[str, list[tuple[str, float]]]]:
    """A TREC run as trec_eval reads it: (the tag, each topic's (doc, score) lines in file
    order). Unlike :func:`dsr.core.run.read_trec_run`, a document may appear twice (trec_eval
    stops only where that falls within a topic's first ``-M``) and a score may be ``nan``,
    ``inf`` or beyond the float32 range (9.0.8 reads it as infinite). Six columns, the second
    ``Q0`` or ``0``; blank and ``#`` lines skipped; a score C reads only in part (``1.5abc``) is
    an error naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such run file", path=path)
    rankings: dict[str, list[tuple[str, float]]] = {}
    tag = None
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < 6:
            raise InputError(f"expected 6 columns (qid Q0 docid rank score tag), got {len(parts)}", path=path, line=lineno)
        qid, iteration, doc, _, score_text, tag = parts[:6]
        if iteration not in ("Q0", "0"):
            raise InputError(f"the second column must be Q0 (or 0), got {iteration!r}", path=path, line=lineno, field="Q0")
        score = c_score(score_text)
        if score is None:
            raise InputError(
                f"score is not a number as trec_eval reads it: {score_text!r} (digits, one '.', an optional "
                "exponent, or inf/nan; no '_', hex or trailing text)",
                path=path,
                line=lineno,
                field="score",
            )
        rankings.setdefault(qid, []).append((doc, score))
    if not rankings:
        raise InputError("the run file is empty", path=path)
    return tag or "dsr", rankings


def _ordered(ranked: Sequence[tuple[str, float]], release: str) -> list[str]:
    """A topic's documents in the release's order: the score (float32 in 9.0.8, a double in
    10.0) descending, ties by doc id descending (``comp_sim_docno``). With a NaN score that
    comparison orders nothing consistently, so its result is glibc's merge sort's on
    trec_eval's input (the topic's lines sorted by doc id): :func:`c_merge_sort` replays it."""
    dtype = np.float32 if release == "9.0.8" else np.float64
    with np.errstate(over="ignore"):
        held = np.asarray([s for _, s in ranked], dtype=np.float64).astype(dtype)
    if np.isnan(held).any():
        lines = sorted(zip([d for d, _ in ranked], held.tolist()), key=lambda ds: ds[0].encode())
        return [d for d, _ in c_merge_sort(lines, _compare_sim_docno)]
    by_id = sorted(zip([d for d, _ in ranked], held.tolist()), key=lambda ds: ds[0].encode(), reverse=True)
    scores = np.asarray([s for _, s in by_id], dtype=dtype)
    return [by_id[i][0] for i in np.argsort(np.negative(scores), kind="stable")]


def _compare_sim_docno(a: tuple[str, float], b: tuple[str, float]) -> int:
    """trec_eval's ``comp_sim_docno``: the higher score first, then the higher doc id."""
    if a[1] > b[1]:
        return -1
    if a[1] < b[1]:
        return 1
    x, y = b[0].encode(), a[0].encode()
    return (x > y) - (x < y)


def _evaluated(
    qrels: Mapping[str, Mapping[str, int]], rankings: Mapping[str, list[str]], options: Options, run_path: Any
) -> tuple[list[tuple[str, list[str] | None]], int | None]:
    """The topics evaluated, in trec_eval's order (its ids compared as bytes), with their
    rankings (None: 10.0's stand-in for a topic the run lacks), and where 10.0 stops on a
    topic the run lacks (without -c; None: it does not): 9.0.8 walks the run's topics that
    have judgements; 10.0 the qrels' topics."""
    if options.release == "9.0.8":
        topics: list[tuple[str, list[str] | None]] = [(q, rankings[q]) for q in sorted(rankings, key=str.encode) if q in qrels]
        missing = None
    else:
        topics = [(q, rankings.get(q)) for q in sorted(qrels, key=str.encode)]
        missing = None if options.complete else next((i for i, (q, _) in enumerate(topics) if q not in rankings), None)
    if not topics:
        raise InputError(
            'no topic has both run lines and judgements (trec_eval: "No queries with both results and relevance info")',
            path=run_path,
        )
    return topics, missing


def _first_stop(
    topics: list[tuple[str, list[str] | None]],
    missing: int | None,
    qrels: Mapping[str, Mapping[str, int]],
    judged_twice: Mapping[str, str],
    options: Options,
    selected: list[Selected],
) -> Stop | None:
    """Where trec_eval stops in its loop (exit 4), in its order of checks: a topic the run
    lacks (10.0); then, in the first measure that reads the ranking, a document listed twice
    among the first -M, one judged twice, a topic with no grade of 0 or more."""
    named = trec_eval_fast.ranking_reader(selected)
    for i, (qid, docs) in enumerate(topics):
        if i == missing:
            return trec_eval_fast.missing_stop(i, qid)
        if named is None:
            continue
        cut = docs if docs is None or options.max_docs is None else docs[: options.max_docs]
        if cut and len(set(cut)) < len(cut):
            counts = Counter(cut)
            twice = [d for d, n in counts.items() if n > 1]
            return trec_eval_fast.listed_twice_stop(i, qid, min(twice, key=str.encode), named)
        if qid in judged_twice:
            return trec_eval_fast.judged_twice_stop(i, qid, judged_twice[qid], named)
        highest = max(qrels[qid].values())
        if highest < 0:
            stop = trec_eval_fast.negative_stop(i, qid, highest, named)
            if stop is not None:
                return stop
    return None


def _ranked(judged: Mapping[str, int], docs: list[str] | None, options: Options) -> Ranked:
    """``te_form_res_rels``: each retrieved document's grade in rank order, after -M and -J."""
    docs = [BOGUS_DOC] if docs is None else docs
    if options.max_docs is not None:
        docs = docs[: options.max_docs]
    rels = [NONPOOL if d not in judged else UNJUDGED if judged[d] < 0 else judged[d] for d in docs]
    if options.judged_only:
        rels = [r for r in rels if r >= 0]
    top = max((g for g in judged.values() if g >= 0), default=-1)
    levels = [0] * (top + 1)
    for grade in judged.values():
        if grade >= 0:
            levels[grade] += 1
    while levels and not levels[-1]:
        levels.pop()
    num_rel = sum(n for grade, n in enumerate(levels) if grade >= options.level)
    return Ranked(rels, num_rel, levels, options.level)


# --- per-topic values -------------------------------------------------------------------


def _values(
    selected: list[Selected],
    qrels: Mapping[str, Mapping[str, int]],
    rankings: dict[str, list[str] | None],
    ranked: dict[str, Ranked],
    options: Options,
    notes: set[str],
) -> dict[str, dict]:
    """Every selected value of every evaluated topic: pytrec_eval's (trec_eval's C) for the
    measures it computes, the ported ones' for the rest and for empty rankings."""
    release = options.release
    values: dict[str, dict] = {qid: {} for qid in rankings}
    native = [s for s in selected if s.name != "runid" and not ported(s, release)]
    kept = _judged_docs(qrels, rankings, options)
    computed = {}
    if native and any(kept.values()):
        evaluator = _pytrec().RelevanceEvaluator(
            {q: dict(qrels[q]) for q in rankings}, {s.pytrec_name() for s in native}, options.level, 0
        )
        computed = evaluator.evaluate(
            {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in kept.items() if docs}
        )
    for qid in rankings:
        for s in selected:
            if s.name == "runid":
                continue
            if ported(s, release):
                found = ported_values(s, ranked[qid], release, options.num_docs, notes)
            elif not kept[qid]:
                found = empty_values(s, ranked[qid], release)
            else:
                found = [computed[qid][key] for key in s.pytrec_keys()]
            values[qid].update(zip(s.names, found))
    return values


def _judged_docs(
    qrels: Mapping[str, Mapping[str, int]], rankings: dict[str, list[str] | None], options: Options
) -> dict[str, list[str]]:
    """The ranking pytrec_eval is given: in order, cut by -M, without unjudged documents under -J
    (``te_form_res_rels`` drops them after ranking, so the order is kept)."""
    out = {}
    for qid, docs in rankings.items():
        docs = [BOGUS_DOC] if docs is None else docs
        if options.max_docs is not None:
            docs = docs[: options.max_docs]
        if options.judged_only:
            docs = [d for d in docs if qrels[qid].get(d, -1) >= 0]
        out[qid] = docs
    return out


def _clear_bogus(values: dict) -> None:
    """10.0's clean-up after scoring its stand-in ranking: the names it compares exactly."""
    for name in values:
        if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
            values[name] = 0.0
        elif name == "relstring":
            values[name] = ""


def _pytrec() -> ModuleType:
    """pytrec_eval's extension (trec_eval's C), imported on first use in this one place; its
    Python wrapper would refuse trec_eval's own parameter forms (``ndcg.1=3``, ``utility.2,-1,0,0``)."""
    import pytrec_eval_ext

    return pytrec_eval_ext


# --- z-scores (-Z) ------------------------------------------------------------------


def read_zscores(path: str | Path) -> dict[str, dict[str, tuple[float, float]]]:
    """trec_eval's ``-Z`` file: ``topic measure mean sd`` lines -> {topic: {measure: (mean, sd)}}."""
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for lineno, line in enumerate(read_lines(path), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise InputError(f"expected 4 columns (topic measure mean sd), got {len(parts)}", path=path, line=lineno)
        try:
            mean, sd = float(parts[2]), float(parts[3])
        except ValueError:
            raise InputError("mean and sd must be numbers", path=path, line=lineno) from None
        out.setdefault(parts[0], {})[parts[1]] = (mean, sd)
    return out


def _to_zscores(values: dict, known: Mapping[str, tuple[float, float]] | None) -> None:
    """``te_convert_to_zscore``: each value as (value - mean) / sd; -1000000 where the file has
    no mean for it (or a zero sd and another value)."""
    for name, value in values.items():
        if isinstance(value, str):
            continue
        if known is None or name not in known:
            values[name] = MISSING_ZSCORE
            continue
        mean, sd = known[name]
        values[name] = (value - mean) / sd if sd else 0.0 if value == mean else MISSING_ZSCORE


# --- printing -------------------------------------------------------------------------


def c_float(value: float) -> str:
    """C's ``%6.4f`` (NaN as glibc prints it: ``nan``, or ``-nan`` with the sign bit set)."""
    if math.isnan(value):
        return ("-nan" if math.copysign(1.0, value) < 0 else "nan").rjust(6)
    return f"{value:6.4f}"


def _line(name: str, qid: str, text: str, z: bool = False) -> str:
    return f"{'Z' if z else ''}{name:<22}\t{qid}\t{text}"


def _topic_lines(selected: list[Selected], ids: list[str], columns: Mapping[str, Sequence], z: bool) -> str:
    """``print_single_meas`` of every measure of every topic (-q), topic by topic."""
    printed = []
    for s in selected:
        kind = s.measure.kind
        if kind in ("runid", "num_q", "gm"):
            continue
        if kind == "relstring":
            printed.append([_line(s.names[0], qid, f"'{v}'") for qid, v in zip(ids, columns[s.names[0]])])
        elif kind == "long" and not z:
            printed.append([_line(s.names[0], qid, str(int(v))) for qid, v in zip(ids, _floats(columns[s.names[0]]))])
        else:
            printed += [_float_lines(name, ids, columns[name], z) for name in s.names]
    return "".join(f"{line}\n" for line in itertools.chain.from_iterable(zip(*printed)))


def _floats(column: Sequence) -> list[float]:
    return column.tolist() if isinstance(column, np.ndarray) else [float(v) for v in column]


def _float_lines(name: str, ids: list[str], column: Sequence, z: bool) -> list[str]:
    """``%6.4f`` lines of one value for every topic (C's ``-nan`` where the sign is set)."""
    head = f"{'Z' if z else ''}{name:<22}\t"
    values = _floats(column)
    if np.isnan(np.asarray(values, dtype=np.float64)).any():
        return [f"{head}{qid}\t{c_float(v)}" for qid, v in zip(ids, values)]
    return [f"{head}{qid}\t{v:6.4f}" for qid, v in zip(ids, values)]


def _summary(selected: list[Selected], evaluated: Evaluated, options: Options, z: bool) -> list[str]:
    """``calc_avg_meas`` and ``print_final_meas`` of every measure, over ``all``."""
    topics = len(evaluated.ids)
    count = evaluated.qrels_topics if options.complete else topics
    lines = []
    for s in selected:
        kind = s.measure.kind
        if kind == "runid":
            lines.append(_line("runid", "all", evaluated.tag))
            continue
        if kind == "relstring":
            continue
        for name in s.names:
            column = np.asarray(_floats(evaluated.columns[name]), dtype=np.float64)
            total = float(np.cumsum(column)[-1]) if len(column) else 0.0  # in topic order, as trec_eval adds
            if kind == "num_q":
                value = float(count)
            elif s.name == "num_rel" and options.complete:
                value = float(evaluated.qrels_relevant)
            elif kind == "long":
                value = total
            elif kind == "gm":
                value = math.exp((total + (count - topics) * math.log(MIN_GEO_MEAN)) / count)
            else:
                value = total / count
            text = str(int(value)) if kind in ("long", "num_q") and not z else c_float(value)
            lines.append(_line(name, "all", text, z))
    return lines
