"""``dsr evaluate`` and ``dsr validate``.

Heavy imports (ir_measures, scipy, matplotlib) happen inside the commands so
``dsr --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from argparse import Namespace, _SubParsersAction
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dsr.cli.common import (
    add_allow_mismatch_argument,
    add_collection_argument,
    add_command,
    add_run_format_argument,
    add_settings_flags,
    check_out,
    collection_from_args,
)
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.provenance import input_record, run_sidecar
from dsr.core.run import Run, write_run
from dsr.evaluation import registry
from dsr.evaluation.columns_run import ColumnRun, collection_of, qrels_columns, read_qrels_file
from dsr.evaluation.evaluate import asked_measures, evaluate
from dsr.evaluation.grouping import select_runs
from dsr.evaluation.measures import Evaluator, measure_names, parse_measures
from dsr.evaluation.qrels import collection_from_qrels, qrels_from_collection, read_qrels
from dsr.evaluation.report import write_report
from dsr.evaluation.results import Results, write_per_topic
from dsr.evaluation.settings import EvaluateSettings, ReportSettings, SignificanceSettings, SplitSettings
from dsr.evaluation.tables import render
from dsr.evaluation.trec_eval import FOLLOWED, TrecEvalRules
from dsr.evaluation.validate import fix_ties, validate_run

EVALUATE_EPILOG = """\
protocols:
  all       every dialogue once, untuned (default for collections without splits)
  official  the SIGIR 2022 protocol: for each val/test split, tune each ranker family on val
            by --target, report the mean and sample sd over the test halves, beside the
            untuned results over all dialogues (default when the collection has splits,
            --splits is given or --tune is used). Splits: --splits FILE, else the
            collection's own, else --n-splits random halves from --seed.

tuning (--tune, repeatable):
  GROUP=RUN,RUN,...  these run files are configurations of one family, tuned per split
  auto               group the positional runs whose sidecars (RUN.json) share "family"
                     (else "ranker", "reranker" or "fusion"); a group of one is reported
                     untuned
  Ties on val go to the configuration given first.

missing topics count 0 (as trec_eval -c); topics not in the collection are ignored.
scores are compared as 32-bit floats, as trec_eval does; ties are ordered by doc id,
descending, and counted per run (a warning; "tied_topics" in --json).
measure cutoffs (@k) and rel= are whole numbers >= 1.
significance (--baseline): paired two-sided t-test and randomisation test by topic;
▲/▼ mark a value significantly better/worse than the baseline (adjusted p < --alpha for
--test); no mark: not significantly different (which is not "tied"). --correction
holm|bonferroni|bh over --family runs (default: per subset and measure) | runs+measures
(per subset) | runs+measures+subsets; the report states it. Comparisons are on the
primary measure (--primary; default nDCG@5, as for dsr reproduce, when measured): mean
difference with a 95% t interval, Cohen's d_z and win/tie/loss counts. --ci sets each
mean's interval: auto (default: percentile bootstrap for measures in [0, 1], whose t
interval can pass 1; t for counts), bootstrap, or t (clipped to [0, 1]). --all-pairs
tests every pair of systems and prints groups (systems sharing a letter are not
significantly different).
output: a short summary (the measures asked for on all dialogues, the primary measure by
subset, with marks); --verbose prints every table; --report DIR writes them all.
options may come before or after the runs; a multi-value option (--measures) ends where
a run file begins, or takes a comma list (--measures RR,nDCG@5).
trec_eval's habits: --qrels FILE scores plain TREC runs against a TREC qrels file (graded;
# comment lines skipped): dsr evaluate --qrels qrels.test run1 run2. dsr follows trec_eval
FOLLOWED (scores as 32-bit floats); --trec-eval 10.0 reads them as doubles. -l N: grades >= N
are relevant for every measure with a level; -M N: the first N documents of each topic; -c:
accepted (dsr always counts a topic a run lacks as 0, as -c does). A measure that sets its own
relevance level other than -l's (NumRet(rel=1) with -l 2) is refused, as IPrec is under
--trec-eval 10.0 (10.0 rounds its recall cutoffs otherwise). trec_eval's own command line,
measure names and output, byte for byte: dsr trec_eval. When a run ranks documents
the labels do not judge, the unjudged fraction of its top 10 is printed ("unjudged" in --json).
run files: TREC, or MS MARCO's three columns (qid docid rank; scores are minus the ranks),
detected or named with --run-format.
measures (any ir_measures string of these families; dsr/evaluation/registry.py declares them):
MEASURES
example: dsr evaluate sample a.run b.run --baseline a --correction bh --family runs+measures --format md
""".replace("FOLLOWED", FOLLOWED).replace("MEASURES", "\n".join(registry.help_lines()))


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """--correction, --family, --ci, --all-pairs, --primary (their record's fields), --format and
    --verbose (dsr evaluate and dsr reproduce)."""
    add_settings_flags(p, ReportSettings)
    p.add_argument(
        "--format",
        choices=("text", "md", "latex", "csv", "json"),
        default="text",
        help="printed tables: aligned text (default), Markdown, LaTeX, CSV (long) or JSON records of the tables",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="print every table (default: a short summary; the report holds everything), and "
        "the libraries' warnings and progress bars (default: only dsr's own lines)",
    )


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "evaluate",
        description="Evaluate runs: an aligned table (rows runs, columns measures, one block per "
        "subset); --json prints the same numbers.",
        epilog=EVALUATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_collection_argument(p)
    p.add_argument("runs", nargs="*", metavar="RUN", help="TREC run files (sidecar RUN.json read when present)")
    add_run_format_argument(p)
    _add_trec_eval_arguments(p)
    add_settings_flags(p, EvaluateSettings, "measures", "subsets", "protocol", "splits")
    add_settings_flags(p, SplitSettings)
    p.add_argument("--tune", action="append", metavar="GROUP=RUN,...|auto", help="see below")
    add_settings_flags(p, EvaluateSettings, "baseline")
    add_settings_flags(p, SignificanceSettings)
    add_report_arguments(p)
    p.add_argument(
        "--json", action="store_true", help="print the results JSON (the summary; per-topic values: --per-topic or --report)"
    )
    p.add_argument(
        "--per-topic", metavar="FILE", help="write per-topic values (.parquet, .tsv, .tsv.gz or .jsonl, by the suffix)"
    )
    p.add_argument(
        "--report",
        metavar="DIR",
        help="write every table (Markdown, LaTeX, CSV), the summary JSON, "
        "per-topic and per-split values (Parquet) and figures (PDF, PNG)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none off a terminal)")
    add_allow_mismatch_argument(p)
    p.set_defaults(func=cmd_evaluate, settings_record=EvaluateSettings)
    _register_validate(subparsers)


def _register_validate(subparsers: _SubParsersAction) -> None:
    v = add_command(
        subparsers,
        "validate",
        description="Check every line of a TREC run (plain or .gz) against a collection; every "
        "problem is printed with its line number. Scores that tie as 32-bit floats "
        "(trec_eval orders those by doc id, descending) are warnings. Exit 0 when "
        "valid, 2 when not.",
    )
    add_collection_argument(v)
    v.add_argument("run", nargs="?", metavar="RUN", help="TREC run file")
    add_run_format_argument(v)
    v.add_argument(
        "--qrels",
        metavar="FILE",
        help="check against a TREC qrels file instead of a collection (dsr validate --qrels "
        "FILE RUN): unjudged documents are counted, topics without judgements ignored",
    )
    v.add_argument(
        "--strict", action="store_true", help="ties are problems, not warnings (for submissions that must be tie-free)"
    )
    v.add_argument(
        "--fix-ties",
        action="store_true",
        help="write the run with dsr's tie rule (ties by the collection's initial rank, "
        "then id; scores distinct as float32) to --out, with a sidecar",
    )
    v.add_argument("--out", metavar="FIXED", help="where --fix-ties writes (.gz: gzipped)")
    add_allow_mismatch_argument(v)
    v.add_argument("--allow-missing", action="store_true", help="dialogues without lines are a note, not a problem")
    v.add_argument(
        "--max-problems",
        type=int,
        default=50,
        metavar="N",
        help="list at most N problems, then count the rest (default 50; 0 for all)",
    )
    v.add_argument("--json", action="store_true", help="print the outcome as JSON")
    v.set_defaults(func=cmd_validate)


def _add_trec_eval_arguments(p: argparse.ArgumentParser) -> None:
    """--qrels, -l, -M, -c and --trec-eval (see the epilog)."""
    p.add_argument(
        "--qrels",
        metavar="FILE",
        help="score plain TREC runs against this TREC qrels file, as trec_eval does "
        "(then every positional is a run: dsr evaluate --qrels FILE RUN...)",
    )
    add_settings_flags(p, TrecEvalRules)


def _collection_or_qrels(args: Namespace) -> Collection:
    """The collection, or with --qrels the qrels file's judgements (COLLECTION is then a run)."""
    if not args.qrels:
        return collection_from_args(args)
    if args.source or args.split:
        raise InputError("--source and --split are for collections, not --qrels", field="--qrels")
    first = args.collection
    if hasattr(args, "runs"):
        args.runs = [first, *args.runs]
    elif args.run is None:
        args.run = first
    else:
        raise InputError("with --qrels, give one run: dsr validate --qrels FILE RUN", field="RUN")
    judged = read_qrels_file(args.qrels) if hasattr(args, "runs") else None
    args.judged_columns = judged
    if judged is not None:  # as arrays: a large qrels file's lines never become Python objects
        return collection_of(judged, name=f"qrels {Path(args.qrels).name}")
    return collection_from_qrels(read_qrels(args.qrels), name=f"qrels {Path(args.qrels).name}")


def cmd_evaluate(args: argparse.Namespace) -> int:
    """The runs read with their sidecars (``--tune`` groups, the baseline by name or path),
    then :func:`dsr.evaluate` with the parsed record, which checks every rule."""
    settings: EvaluateSettings = args.settings
    asked_measures(settings)  # the measures and trec_eval's rules checked before any file is read
    collection = _collection_or_qrels(args)
    if not args.runs:
        raise InputError("no run files given", field="RUN")
    # qrels carry no collection hash: a run's sidecar is not checked against them
    selection = select_runs(
        args.runs,
        args.tune or [],
        settings.baseline,
        None if args.qrels else collection,
        args.allow_collection_mismatch,
        args.fmt,
        reader=_column_reader(args, collection),
    )
    for warning in selection.warnings:
        print(warning, file=sys.stderr)
    results = evaluate(
        collection,
        selection.runs,
        replace(settings, baseline=selection.baseline),
        tune=selection.families if args.tune else None,
        run_info=selection.info,
        progress=not args.quiet,
    )
    args.unjudged = _unjudged(collection, selection.runs)
    _write_outputs(args, results)
    return 0


def _write_outputs(args: Namespace, results: Results) -> None:
    """--per-topic, --report, then the printed tables (or --json)."""
    if args.per_topic:
        write_per_topic(results, args.per_topic)
    if args.report:
        write_report(results, args.report)
    if args.json:
        out = results.to_json()
        if args.unjudged:
            out["unjudged"] = args.unjudged
        json.dump(out, sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    if args.unjudged:
        shown = ", ".join(f"{name} {1 - judged:.1%}" for name, judged in args.unjudged["judged"].items())
        print(
            f"dsr: pooled labels: unjudged in the top {UNJUDGED_AT} (1 - Judged@{UNJUDGED_AT}, mean over topics): {shown}",
            file=sys.stderr,
        )
    asked = measure_names(parse_measures(asked_measures(args.settings))) if args.measures else None
    sys.stdout.write(render(results, args.format, verbose=args.verbose, measures=asked))
    if not args.verbose and args.format in ("text", "md"):
        where = f"; every table is in {args.report}/" if args.report else ""
        print(f"(a summary: --verbose prints every table{where})")


#: the depth whose judged fraction is reported when runs reach unjudged documents
UNJUDGED_AT = 10


#: a run file of a collection this large is read as arrays (with --qrels: every run file)
COLUMNS_FROM_BYTES = 1 << 22


def _column_reader(args: Namespace, collection: Collection) -> Callable[[str], Run | None] | None:
    """Run files read as arrays where they can be (a large run's lines never become Python
    objects: dsr.evaluation.columns_run): with --qrels every one, with a collection the large
    ones; None: read the reference way."""
    if args.fmt == "msmarco":
        return None
    judged = getattr(args, "judged_columns", None)
    if judged is not None:
        return lambda path: ColumnRun.of_file(path, judged, args.trec_eval, args.max_docs)
    if args.qrels:
        return None
    made: list[Any] = []

    def read(path: str) -> Run | None:
        if not Path(path).is_file() or Path(path).stat().st_size < COLUMNS_FROM_BYTES:
            return None  # load_run reads it (or names what is wrong)
        if not made:
            made.append(qrels_columns(qrels_from_collection(collection)))
        return None if made[0] is None else ColumnRun.of_file(path, made[0], args.trec_eval, args.max_docs)

    return read


def _unjudged(collection: Collection, runs: Mapping[str, Run]) -> dict[str, Any] | None:
    """``{"at": 10, "judged": {run: Judged@10}}`` when some run ranks, in some topic's top 10,
    a document the labels do not judge (pooled labels); None when every one is judged."""
    judged = qrels_from_collection(collection)
    if runs and all(isinstance(r, ColumnRun) for r in runs.values()):
        return _unjudged_columns(judged, runs)
    if all(
        doc in judged.get(q, ())
        for run in runs.values()
        for q, ranked in run.rankings.items()
        if q in judged
        for doc, _ in ranked[:UNJUDGED_AT]
    ):
        return None
    evaluator = Evaluator(judged, [f"Judged@{UNJUDGED_AT}"])
    return {"at": UNJUDGED_AT, "judged": {name: float(evaluator(run).values[:, 0].mean()) for name, run in runs.items()}}


def _unjudged_columns(judged: dict[str, dict[str, int]], runs: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`_unjudged` of runs read as arrays (ir_measures' Judged@10, over every topic)."""
    topics = list(judged)
    found = {}
    for name, run in runs.items():
        columns = qrels_columns(judged, run.judged)
        if columns is None:
            return None
        found[name] = run.judged_at(columns, topics, UNJUDGED_AT)
    if all(every for _, every in found.values()):
        return None
    return {"at": UNJUDGED_AT, "judged": {name: float(values.mean()) for name, (values, _) in found.items()}}


def cmd_validate(args: Namespace) -> int:
    if args.fix_ties != bool(args.out):
        raise InputError("--fix-ties and --out FIXED.run go together", field="--out")
    if args.qrels and args.fix_ties:
        raise InputError("--fix-ties needs a collection (its tie rule uses the initial rank), not --qrels", field="--fix-ties")
    collection = _collection_or_qrels(args)
    if not args.run:
        raise InputError("no run file given", field="RUN")
    result = validate_run(
        collection,
        args.run,
        allow_missing=args.allow_missing,
        strict=args.strict,
        allow_mismatch=args.allow_collection_mismatch,
        pooled=bool(args.qrels),
        fmt=args.fmt,
    )
    fixed = None
    if args.fix_ties and result.valid:
        fixed = _fix_ties(collection, args.run, args.out)
    if args.json:
        out = result.to_json()
        if args.fix_ties:
            out["fixed"] = str(args.out) if fixed is not None else None
        json.dump(out, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        limit = args.max_problems if args.max_problems > 0 else len(result.problems)
        for problem in result.problems[:limit]:
            print(problem.format(result.path))
        hidden = len(result.problems) - limit
        if hidden > 0:
            print(
                f"{result.path}: ... and {hidden} more problem(s) ({len(result.problems)} in all; "
                "--max-problems 0 lists them all)"
            )
        for warning in result.warnings[:limit]:
            print(f"warning: {warning.format(result.path)}", file=sys.stderr)
        if len(result.warnings) > limit:
            print(f"warning: {result.path}: ... and {len(result.warnings) - limit} more warning(s)", file=sys.stderr)
        if result.tied_topics:
            print(
                f"dsr: warning: {result.path}: {len(result.tied_topics)} topic(s) hold scores that tie as 32-bit floats",
                file=sys.stderr,
            )
        print(result.summary(), file=sys.stdout if result.valid else sys.stderr)
        if args.fix_ties and not result.valid:
            print("dsr: --fix-ties wrote nothing: fix the problems above first", file=sys.stderr)
    return 0 if result.valid else 2


def _fix_ties(collection: Collection, path: str, out: str) -> Run:
    """``--fix-ties``: write the rewritten run with a sidecar naming its input."""
    check_out(out)
    fixed, run = fix_ties(collection, path)
    fixed.config = run_sidecar(
        "validate",
        shlex.join(["dsr", "validate", collection.name, str(path), "--fix-ties", "--out", str(out)]),
        {"ties": "initial rank, then id; scores strictly decreasing as float32"},
        collection=collection.describe(),
        inputs=[input_record(path, run)],
    )
    write_run(fixed, out)
    return fixed
