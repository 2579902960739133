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

One difference from both binaries: ``#`` lines of a qrels file are comments under either
release (10.0 reads them so; 9.0.8 stops with "malformed line"), as ``dsr evaluate --qrels``
reads them. Input that trec_eval reads by accident (a score such as ``1.5abc``, which C's
``atof`` reads as 1.5) is an error naming the line here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.run import read_trec_run
from dsr.core.textfiles import read_lines
from dsr.evaluation.qrels import read_qrels
from dsr.evaluation.trec_eval_measures import (
    MIN_GEO_MEAN,
    NONPOOL,
    RELEASES,
    UNJUDGED,
    Ranked,
    Selected,
    empty_values,
    ported,
    ported_values,
    select,
)

#: what trec_eval prints for a value it cannot turn into a z-score (MISSING_ZSCORE_VALUE)
MISSING_ZSCORE = -1000000.0
#: 10.0's stand-in ranking for a qrels topic the run lacks, under -c: one unjudged document
BOGUS_DOC = "ceci_nest_pas_un_docno"


#: trec_eval's options that carry a value (``dsr trec_eval``'s flags, trec_eval's names):
#: :class:`Options` checks its fields through them
OPTION_PARAMS = (
    Param("release", "9.0.8", "str", "whose rules: 9.0.8 (default) or 10.0 (see below)", choices=RELEASES),
    Param(
        "level",
        1,
        "int",
        "the lowest grade that is relevant (default 1; pytrec_eval, which computes trec_eval's "
        "measures for dsr, takes levels of 1 or more)",
        low=1,
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


def trec_eval(qrels_path: str | Path, run_path: str | Path, options: Options | None = None) -> Printed:
    """What trec_eval ``options.release`` prints for ``qrels_path`` and ``run_path`` (and the notes
    on where a trec_eval binary's value is not defined, for stderr)."""
    options = options or Options()
    _check(options)
    selected = select(options.measures, options.release)
    qrels = read_qrels(qrels_path)
    run = read_trec_run(run_path, "trec")  # trec_eval reads six columns only
    zscores = read_zscores(options.zscores) if options.zscores is not None else None
    rankings = {q: _ordered(r, options.release) for q, r in run.rankings.items()}
    topics = _evaluated(qrels, rankings, options, run_path)
    _check_grades(topics, qrels, qrels_path)
    ranked = {qid: _ranked(qrels[qid], docs, options) for qid, docs in topics}
    notes: set[str] = set()
    values = _values(selected, qrels, dict(topics), ranked, options, notes)
    for qid, docs in topics:
        if docs is None:  # 10.0's stand-in for a topic the run lacks (-c)
            _clear_bogus(values[qid])
        if zscores is not None:
            _to_zscores(values[qid], zscores.get(qid))
    lines = []
    if options.per_topic:
        for qid, _ in topics:
            lines += [line for s in selected for line in _topic_lines(s, qid, values[qid], zscores is not None)]
    if options.summary:
        lines += _summary(selected, values, qrels, options, run.tag, zscores is not None)
    return Printed("".join(line + "\n" for line in lines), sorted(notes))


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


def _ordered(ranked: Sequence[tuple[str, float]], release: str) -> list[str]:
    """A topic's documents in the release's order: the score (float32 in 9.0.8, a double in
    10.0) descending, ties by doc id descending (``comp_sim_docno``)."""
    by_id = sorted(ranked, key=lambda ds: ds[0].encode(), reverse=True)
    scores = np.asarray([s for _, s in by_id], dtype=np.float32 if release == "9.0.8" else np.float64)
    return [by_id[i][0] for i in np.argsort(np.negative(scores), kind="stable")]


def _evaluated(
    qrels: Mapping[str, Mapping[str, int]], rankings: Mapping[str, list[str]], options: Options, run_path: Any
) -> list[tuple[str, list[str] | None]]:
    """The topics evaluated, in trec_eval's order (its ids compared as bytes), with their
    rankings: 9.0.8 walks the run's topics that have judgements; 10.0 the qrels' topics."""
    if options.release == "9.0.8":
        topics: list[tuple[str, list[str] | None]] = [(q, rankings[q]) for q in sorted(rankings, key=str.encode) if q in qrels]
    else:
        topics = []
        for qid in sorted(qrels, key=str.encode):
            if qid in rankings:
                topics.append((qid, rankings[qid]))
            elif options.complete:
                topics.append((qid, None))
            else:
                raise InputError(
                    f"topic {qid!r} of the qrels has no line in the run; trec_eval 10.0 "
                    'stops here ("result qid not found"): `complete` scores it 0, `release` 9.0.8 '
                    "skips it",
                    path=run_path,
                )
    if not topics:
        raise InputError(
            'no topic has both run lines and judgements (trec_eval: "No queries with both results and relevance info")',
            path=run_path,
        )
    return topics


def _check_grades(topics: list, qrels, qrels_path) -> None:
    """trec_eval stops ("Can't calculate measure", exit 4) on a topic whose grades are all
    negative when no topic with a grade of 0 or more came before it: its buffer of grade counts
    is then asked for 0 places and never allocated (``te_chk_and_malloc``). The same here."""
    for qid, _ in topics:
        if max(qrels[qid].values()) >= 0:
            return
        raise InputError(
            f'topic {qid!r} has only negative grades and comes first; trec_eval stops on it ("Can\'t calculate measure", exit 4)',
            path=qrels_path,
        )


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
    qrels,
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


def _judged_docs(qrels, rankings: dict[str, list[str] | None], options: Options) -> dict[str, list[str]]:
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


def _pytrec():
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


def _topic_lines(selected: Selected, qid: str, values: dict, z: bool) -> list[str]:
    """``print_single_meas``: what -q prints for one measure of one topic."""
    kind = selected.measure.kind
    if kind in ("runid", "num_q", "gm"):
        return []
    if kind == "relstring":
        return [_line(selected.names[0], qid, f"'{values[selected.names[0]]}'")]
    if kind == "long" and not z:
        return [_line(selected.names[0], qid, str(int(values[selected.names[0]])))]
    return [_line(name, qid, c_float(values[name]), z) for name in selected.names]


def _summary(selected: list[Selected], values: dict[str, dict], qrels, options: Options, tag: str, z: bool) -> list[str]:
    """``calc_avg_meas`` and ``print_final_meas`` of every measure, over ``all``."""
    evaluated = len(values)
    count = len(qrels) if options.complete else evaluated
    lines = []
    for s in selected:
        kind = s.measure.kind
        if kind == "runid":
            lines.append(_line("runid", "all", tag))
            continue
        if kind == "relstring":
            continue
        for name in s.names:
            total = 0.0
            for topic in values.values():  # in topic order, as trec_eval adds them
                total += topic[name]
            if kind == "num_q":
                value = float(count)
            elif s.name == "num_rel" and options.complete:
                value = float(sum(1 for docs in qrels.values() for g in docs.values() if g > 0))
            elif kind == "long":
                value = total
            elif kind == "gm":
                value = math.exp((total + (count - evaluated) * math.log(MIN_GEO_MEAN)) / count)
            else:
                value = total / count
            text = str(int(value)) if kind in ("long", "num_q") and not z else c_float(value)
            lines.append(_line(name, "all", text, z))
    return lines
