"""Every fast path dsr keeps beside a reference implementation, declared in one table.

Where dsr computes something a well-kept library (or dsr's own plain code) already computes,
the two are *providers* of one computation, as ir_measures puts pytrec_eval, cwl_eval and
gdeval behind one declaration: the **reference** (what a result is held to), the **fast path**
(dsr's own), what the fast path **covers** (everything else goes to the reference), **why** it
exists, and what justifies it, a ratio measured by ``bench/bench_providers.py`` (its row in
``bench/results/providers.json``): of wall time, of peak memory, or, where the reference
cannot be installed with dsr at all, none (``availability``). A fast path the bench cannot
justify goes.

One test runs over the table (``tests/test_providers.py``): for each entry, the reference
and the fast path on random inputs and on adversarial ones (scores that tie as float32,
negative grades, empty topics) give the same result; an entry without its check fails it.
``reference`` and ``fast`` name where each lives (``module:attribute``, imported by the test
and the bench, never here: this file imports nothing of dsr's).

A new fast path is one :class:`Provider` line here, its check in the test and its row in the
bench. A library dsr calls as it is (bm25s behind ``BM25SIndex``, ranx's own methods) is no
fast path of dsr's: it is not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

#: what justifies a fast path: a ratio of wall times, of peak memory, or a reference that
#: cannot be installed with dsr (no ratio)
JUSTIFICATIONS = ("time", "memory", "availability")


@dataclass(frozen=True)
class Provider:
    """One computation with two providers: the reference and dsr's fast path."""

    #: the computation (the test's and the bench's key)
    name: str
    #: the reference implementation (``module:attribute``, or the program it is)
    reference: str
    #: dsr's fast path (``module:attribute``)
    fast: str
    #: what the fast path covers; the rest goes to the reference
    covers: str
    #: why the fast path exists
    why: str
    #: what the bench measures to justify it: one of :data:`JUSTIFICATIONS`
    justified_by: str = "time"

    def __post_init__(self) -> None:
        if self.justified_by not in JUSTIFICATIONS:
            raise ValueError(f"{self.name}: justified_by must be one of {JUSTIFICATIONS}")


PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "run parser",
        "dsr.core.run:read_trec_run",
        "dsr.board.runcheck:parse",
        "a plain valid run (UTF-8, six columns, Q0, plain decimal scores within float32, every pair a "
        "candidate once, every topic present): its lines, tags, tied topics, digest and the evaluator's "
        "input; any other run returns None and the line-by-line validator and reader decide",
        "the board reads every submission once, as whole columns, instead of the validator's and the reader's loops over lines",
    ),
    Provider(
        "measure engine",
        "pytrec_eval:RelevanceEvaluator",
        "dsr.evaluation.ranked:compute",
        "P, R, RR, AP and nDCG (no custom gains), NumQ, NumRet, NumRel, any rel and judged_only, on a "
        "Run whose topics name each document once; a dict, a run naming a document twice, or "
        "Evaluator(arrays=False) goes to pytrec_eval, any other measure to ir_measures",
        "the split protocol measures every run of a table and every tuning configuration: many topics "
        "and runs at a time in numpy, instead of one pytrec_eval call per run",
    ),
    Provider(
        "fusion kernels",
        "dsr.core.fusion_ranx:fuse_with_ranx",
        "dsr.core.fusion:FUSERS",
        "rrf, isr, borda (ranx bordafuse), combsum (sum), combmnz (mnz), wsum and interp (wsum of two) "
        "under dsr's normalisations; ranx's other methods and normalisations, and backend='ranx', "
        "are ranx's own code",
        "ranx compiles numba code on its first call in a process; dsr reproduce fuses many times in "
        "each run, and dsr fuse is one call",
    ),
    Provider(
        "RRF of candidate-aligned runs",
        "dsr.core.fusion:rrf",
        "dsr.core.fusion:_rrf_aligned",
        "RRF of runs that each rank exactly the collection's candidates (fuse(..., initial_order=)): "
        "the ranks summed as arrays; any other input goes to the rrf kernel",
        "the baseline suite fuses BM25 and dense runs of every candidate for each tuning configuration",
    ),
    Provider(
        "BM25 scorer",
        "rank_bm25:BM25Okapi",
        "dsr.indexes.bm25:BM25Index",
        "okapi, l and plus (rank_bm25's BM25Okapi, BM25L, BM25Plus) from rank_bm25's own statistics, "
        "and weighted queries: per-(sentence, term) contributions as one sparse matrix",
        "rank_bm25's get_scores loops in Python and converts the whole length list on every call; a "
        "collection's every dialogue scores its own candidates",
    ),
    Provider(
        "sharded BM25",
        "dsr.indexes.bm25:BM25SIndex",
        "dsr.indexes.corpus.bm25:ShardedBM25",
        "every variant: each shard scored with the corpus-wide df, N and avgdl, its top k merged, ties "
        "by global row, so the scores and order are those of one bm25s index over the whole corpus",
        "a corpus too large for one process: shards are counted, merged and indexed in parallel (Ray), "
        "each unit holding one shard",
        "memory",
    ),
    Provider(
        "trec_eval's command line",
        "trec_eval 9.0.8 and 10.0 (C binaries of usnistgov/trec_eval)",
        "dsr.evaluation.trec_eval_tool:trec_eval",
        "trec_eval's options, measure names and output byte for byte under either release, its edges "
        "included (-l 0 and below, nan and inf scores, the -q lines and exit 4 where it stops on a "
        "topic); -R prefs, qrels_prefs and qrels_jg, -D and yaap are refused",
        "trec_eval is not installable with pip; dsr trec_eval is where dsr is",
        "availability",
    ),
    Provider(
        "trec_eval over arrays",
        "dsr.evaluation.trec_eval_tool:reference_engine",
        "dsr.evaluation.trec_eval_fast:evaluate",
        "every measure of all_trec of both releases, every option but -Z, any -l, on plain ASCII files "
        "of one space or one tab between six (four) columns without a NaN score; the rest (gzip, other "
        "spacing, a NaN, -Z, a gain named twice) goes to the reference (pytrec_eval and the ports)",
        "the reference makes a Python object per run line, which a run of millions of lines makes "
        "slow and large beside trec_eval",
    ),
    Provider(
        "runs read as arrays",
        "dsr.core.run:load_run",
        "dsr.evaluation.columns_run:ColumnRun.of_file",
        "dsr evaluate's runs (with --qrels every one, with a collection files of 4 MB or more) that the "
        "columnar reader reads, with finite scores within float32 and each document once a topic, "
        "measured by the evaluator's P, R, RR, AP, nDCG, NumQ, NumRet, NumRel (any rel, judged_only); any "
        "other measure, or use of the rankings, reads the file the reference way",
        "dsr evaluate --qrels on a large run: the Python lists per topic make it slow and large beside trec_eval",
    ),
)

BY_NAME = {provider.name: provider for provider in PROVIDERS}
