"""trec_eval's habits for ``dsr evaluate --qrels`` and ``dsr validate --qrels``.

dsr follows **trec_eval 9.0.8** (the release pytrec_eval, and so ir_measures, build
on): run scores are read as 32-bit floats, ties ordered by doc id descending.
``--trec-eval 10.0`` takes the current release's rules instead where they differ
and dsr defines the measure: scores are read as doubles (a run with 0.30000001 and
0.3 is two ranks in 10.0, a tie in 9.0.8). Both read ``#`` comment lines in qrels
(10.0 reads them; 9.0.8 stops on them, dsr skips them in either mode). 10.0's
``iprec_at_recall`` cutoff rounding is not 9.0.8's: ``IPrec`` is refused under 10.0
(:func:`check_release`; ``dsr trec_eval --release 10.0`` computes it). The conformance
test, ``tests/evaluation/test_trec_eval_conformance.py``, checks the rest against the
expected outputs of both releases in ``../shared/data/trec_eval``; ``dsr trec_eval``
(:mod:`dsr.evaluation.trec_eval_tool`) is trec_eval's command itself.

The options that mirror trec_eval's:

* ``-l N`` (``--relevance-level``): a grade of N or more is relevant, for every
  measure with a relevance level (``rel``) that does not set its own;
* ``-M N`` (``--max-docs``): only the first N documents of each topic count;
* ``-c``: dsr always averages over every topic of the qrels (a topic a run lacks
  counts 0), which is trec_eval's ``-c``; it is accepted and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from dsr.core.errors import InputError
from dsr.core.params import Settings, setting
from dsr.core.run import Run
from dsr.evaluation.columns_run import ColumnRun

#: the release whose rules dsr follows, and the other one (``--trec-eval``)
FOLLOWED = "9.0.8"
VERSIONS = ("9.0.8", "10.0")


@dataclass(frozen=True, kw_only=True)
class TrecEvalRules(Settings):
    """trec_eval's rules as settings (``dsr evaluate``'s ``-l``, ``-M``, ``-c`` and
    ``--trec-eval``), checked here."""

    relevance_level: int | None = setting(
        None, "trec_eval -l: grades >= N are relevant (default 1)", low=1, metavar="N", flags=("-l", "--relevance-level")
    )
    max_docs: int | None = setting(
        None, "trec_eval -M: only the first N documents of each topic count", low=1, metavar="N", flags=("-M", "--max-docs")
    )
    complete: bool = setting(False, "trec_eval -c: accepted; dsr always counts a topic a run lacks as 0", flags=("-c",))
    trec_eval: str = setting(
        FOLLOWED, f"whose rules: {FOLLOWED} (default: scores as 32-bit floats) or 10.0 (doubles)", choices=VERSIONS
    )


RULES_PARAMS = TrecEvalRules.params()
RELEVANCE_LEVEL, MAX_DOCS, COMPLETE, RELEASE = RULES_PARAMS


def check_version(version: str) -> str:
    return RELEASE.check(version)


def with_relevance_level(measures: Sequence, level: int, written: Sequence[str] | None = None) -> list:
    """trec_eval ``-l LEVEL``: each measure taking ``rel`` without one gets ``rel=LEVEL`` (bare
    ``NumRet`` stays every retrieved document, as trec_eval's num_ret). A measure that sets
    another level of its own (``NumRet(rel=1)`` with ``-l 2``) is refused: trec_eval's ``-l``
    applies to every measure, and silently keeping the measure's own level gave 71 where
    trec_eval gives 1. ``written``: the measures as the user wrote them (a level dsr adds
    itself, RBP's ``rel=1``, is not the user's); None: every ``rel`` is the user's."""
    level = RELEVANCE_LEVEL.check(level)
    if level is None:  # no -l: the measures as they are
        return list(measures)
    if written is None:
        explicit = {str(m) for m in measures if "rel" in m.params}
    else:
        explicit = {str(m) for m in map(_ir_measures().parse_measure, written) if "rel" in m.params}
    own = [str(m) for m in measures if str(m) in explicit and m.params.get("rel") != level]
    if own:
        raise InputError(
            f"{', '.join(own)} set{'s' if len(own) == 1 else ''} a relevance level of "
            f"{'its' if len(own) == 1 else 'their'} own, not {level}: trec_eval's -l applies "
            "to every measure; drop rel= (or give it the same level)",
            field="relevance_level",
        )
    return [
        m(rel=level) if "rel" in m.SUPPORTED_PARAMS and str(m) not in explicit and m.NAME != "NumRet" else m for m in measures
    ]


def _ir_measures() -> ModuleType:
    """ir_measures, in this one place (loaded already where measures were parsed)."""
    import ir_measures

    return ir_measures


#: measures ``dsr evaluate`` computes only as 9.0.8 does (pytrec_eval): under 10.0 they are refused
#: (``dsr trec_eval --release 10.0`` computes 10.0's)
NOT_AS_10 = {
    "IPrec": "trec_eval 10.0 turns a recall level into a number of relevant documents with "
    "lround (9.0.8: + 0.9, truncated); dsr evaluate computes 9.0.8's (pytrec_eval)"
}


def check_release(measures: Sequence, version: str) -> None:
    """InputError for a measure ``dsr evaluate`` would compute by 9.0.8's rule under ``version``
    10.0 (``IPrec``: 28 values of trec_eval's own suite differ)."""
    check_version(version)
    if version != "10.0":
        return
    for measure in measures:
        why = NOT_AS_10.get(measure.NAME)
        if why:
            raise InputError(
                f"{measure} under trec_eval 10.0: {why}; use `dsr trec_eval --release 10.0 "
                "-m iprec_at_recall` (10.0's own rule), or `trec_eval` 9.0.8",
                field="trec_eval",
            )


def apply_rules(runs: Iterable[Run], version: str = FOLLOWED, max_docs: int | None = None) -> None:
    """Order each run's topics as ``version`` of trec_eval reads the file, then keep the first
    ``max_docs`` (trec_eval ``-M``). In place; 9.0.8's order is what a run read by dsr holds."""
    check_version(version)
    max_docs = MAX_DOCS.check(max_docs)
    for run in runs:
        if isinstance(run, ColumnRun) and run.rules == (version, max_docs):
            continue  # read in that order and cut already
        rankings = run.rankings
        if version == "10.0":
            rankings = {q: _double_order(r) for q, r in rankings.items()}
        if max_docs is not None:
            rankings = {q: r[:max_docs] for q, r in rankings.items()}
        if rankings is not run.rankings:
            run.rankings = rankings


def _double_order(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval 10.0's order: scores as doubles, descending, ties by doc id descending."""
    by_doc = sorted(ranked, key=lambda ds: ds[0], reverse=True)
    order = np.argsort(-np.asarray([s for _, s in by_doc], dtype=np.float64), kind="stable")
    return [by_doc[i] for i in order]
