"""``dsr evaluate`` and ``dsr validate``.

Heavy imports (ir_measures, scipy, matplotlib) happen inside the commands so
``dsr --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dsr.cli.common import add_allow_mismatch_argument, add_collection_argument, check_out, collection_from_args
from retrieval.errors import InputError

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
example: dsr evaluate sample a.run b.run --baseline a --correction bh --family runs+measures --format md
"""


def add_report_arguments(p) -> None:
    """--correction, --family, --ci, --all-pairs and --format (dsr evaluate and dsr reproduce)."""
    p.add_argument("--correction", choices=("holm", "bonferroni", "bh"), default="holm",
                   help="multiple-comparison correction of the marks (default holm)")
    p.add_argument("--family", choices=("runs", "runs+measures", "runs+measures+subsets"), default="runs",
                   help="p-values corrected together (default runs: per subset and measure)")
    p.add_argument("--ci", choices=("auto", "bootstrap", "t"), default="auto",
                   help="95%% interval of each mean: auto (bootstrap for measures in [0, 1], t for "
                        "counts; default), bootstrap over topics with --seed, or t (clipped to [0, 1])")
    p.add_argument("--all-pairs", action="store_true",
                   help="test every pair of systems and show groups of systems that are not "
                        "significantly different")
    p.add_argument("--primary", metavar="M",
                   help="the measure comparisons, legends and the main figure are on (default: nDCG@5 when "
                        "measured, else the first of --measures)")
    p.add_argument("--format", choices=("text", "md", "latex", "csv", "json"), default="text",
                   help="printed tables: aligned text (default), Markdown, LaTeX, CSV (long) or JSON "
                        "records of the tables")
    p.add_argument("--verbose", action="store_true",
                   help="print every table (default: a short summary; the report holds everything)")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="measure runs (official split protocol, significance, reports)",
        description="Evaluate runs: an aligned table (rows runs, columns measures, one block per "
                    "subset); --json prints the same numbers.",
        epilog=EVALUATE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_collection_argument(p)
    p.add_argument("runs", nargs="*", metavar="RUN", help="TREC run files (sidecar RUN.json read when present)")
    p.add_argument("--measures", nargs="+", action="extend", metavar="M",
                   help="ir_measures strings, space or comma separated (default: RR nDCG@1 nDCG@3 "
                        "nDCG@5 nDCG@10 P@1 P@5 AP R@10)")
    p.add_argument("--subset", action="append", metavar="S",
                   help="only this subset (repeatable; 'all' for every dialogue; default: all and "
                        "each of the collection's subsets)")
    p.add_argument("--protocol", choices=("official", "all"), help="see below")
    p.add_argument("--splits", metavar="FILE", help="val/test split file (JSON lines {\"val\": [...], \"test\": [...]})")
    p.add_argument("--n-splits", type=int, default=50, metavar="N",
                   help="splits to generate when the collection has none (default 50)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of generated splits and of the randomisation test (default 0)")
    p.add_argument("--target", default="nDCG@5", metavar="M", help="measure tuned on val (default nDCG@5)")
    p.add_argument("--tune", action="append", metavar="GROUP=RUN,...|auto", help="see below")
    p.add_argument("--baseline", metavar="RUN", help="run (name or path) or family tested against")
    p.add_argument("--test", choices=("t", "perm"), default="t",
                   help="test whose Holm-adjusted p marks the table (default t); JSON has both")
    p.add_argument("--permutations", type=int, default=10_000, metavar="N",
                   help="resamples of the randomisation test (default 10000; 0 skips it; not negative)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level, between 0 and 1 (default 0.05)")
    add_report_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print the results JSON (the summary; per-topic values: --per-topic or --report)")
    p.add_argument("--per-topic", metavar="FILE",
                   help="write per-topic values (.parquet, .tsv, .tsv.gz or .jsonl, by the suffix)")
    p.add_argument("--report", metavar="DIR", help="write every table (Markdown, LaTeX, CSV), the summary JSON, "
                   "per-topic and per-split values (Parquet) and figures (PDF, PNG)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (there is none off a terminal)")
    add_allow_mismatch_argument(p)
    p.set_defaults(func=evaluate_command)

    v = subparsers.add_parser(
        "validate", help="check a run file before evaluation or submission",
        description="Check every line of a TREC run (plain or .gz) against a collection; every "
                    "problem is printed with its line number. Scores that tie as 32-bit floats "
                    "(trec_eval orders those by doc id, descending) are warnings. Exit 0 when "
                    "valid, 2 when not.")
    add_collection_argument(v)
    v.add_argument("run", metavar="RUN", help="TREC run file")
    v.add_argument("--strict", action="store_true",
                   help="ties are problems, not warnings (for submissions that must be tie-free)")
    v.add_argument("--fix-ties", action="store_true",
                   help="write the run with dsr's tie rule (ties by the collection's initial rank, "
                        "then id; scores distinct as float32) to --out, with a sidecar")
    v.add_argument("--out", metavar="FIXED", help="where --fix-ties writes (.gz: gzipped)")
    add_allow_mismatch_argument(v)
    v.add_argument("--allow-missing", action="store_true",
                   help="dialogues without lines are a note, not a problem")
    v.add_argument("--max-problems", type=int, default=50, metavar="N",
                   help="list at most N problems, then count the rest (default 50; 0 for all)")
    v.add_argument("--json", action="store_true", help="print the outcome as JSON")
    v.set_defaults(func=validate_command)


def _check_options(args) -> list | None:
    """Options first, before any file is read: a bad value is exit 2 naming the option.
    Returns the parsed --measures (None: the default set)."""
    from eval.measures import parse_measures, split_measure_list

    measures = parse_measures(split_measure_list(args.measures)) if args.measures else None
    if args.primary:
        parse_measures([args.primary], field="--primary")
    if not 0 < args.alpha < 1:
        raise InputError(f"must be between 0 and 1 (exclusive), e.g. 0.05; got {args.alpha!r}",
                         field="--alpha")
    if args.permutations < 0:
        raise InputError(f"must be 0 (skip the randomisation test) or a whole number of resamples "
                         f"of 1 or more, e.g. 10000; got {args.permutations}", field="--permutations")
    if args.n_splits < 1:
        raise InputError(f"must be 1 or more, got {args.n_splits}", field="--n-splits")
    return measures


def _protocol(args, collection) -> str:
    protocol = args.protocol or ("official" if (args.splits or collection.splits or args.tune) else "all")
    if protocol == "all" and args.tune:
        raise InputError("tuning needs val/test splits: use --protocol official", field="--tune")
    if protocol == "all" and args.splits:
        raise InputError("--splits is for --protocol official", field="--splits")
    return protocol


def evaluate_command(args) -> int:
    from eval.grouping import select_runs
    from eval.protocol import resolve_splits
    from eval.results import evaluate_runs

    measures = _check_options(args)
    collection = collection_from_args(args)
    protocol = _protocol(args, collection)
    selection = select_runs(args.runs, args.tune or [], args.baseline, collection,
                            args.allow_collection_mismatch)
    for warning in selection.warnings:
        print(warning, file=sys.stderr)
    splits = resolve_splits(collection, args.splits, args.n_splits, args.seed) if protocol == "official" else None
    results = evaluate_runs(
        collection, selection.runs, measures,
        subsets=args.subset, splits=splits, families=selection.families, target=args.target,
        baseline=selection.baseline, test=args.test, n_resamples=args.permutations, seed=args.seed,
        alpha=args.alpha, run_info=selection.info, progress=not args.quiet, correction=args.correction,
        family=args.family, ci=args.ci, all_pairs=args.all_pairs, primary=args.primary)
    _write_outputs(args, results)
    return 0


def _write_outputs(args, results) -> None:
    """--per-topic, --report, then the printed tables (or --json)."""
    from eval.measures import measure_names
    from eval.results import write_per_topic
    from eval.tables import render

    if args.per_topic:
        write_per_topic(results, args.per_topic)
    if args.report:
        from eval.report import write_report

        write_report(results, args.report)
    if args.json:
        json.dump(results.to_json(), sys.stdout, indent=2, sort_keys=True, ensure_ascii=False)
        sys.stdout.write("\n")
        return
    asked = measure_names(_check_options(args)) if args.measures else None
    sys.stdout.write(render(results, args.format, verbose=args.verbose, measures=asked))
    if not args.verbose and args.format in ("text", "md"):
        where = f"; every table is in {args.report}/" if args.report else ""
        print(f"(a summary: --verbose prints every table{where})")


def validate_command(args) -> int:
    from eval.validate import validate_run

    if args.fix_ties != bool(args.out):
        raise InputError("--fix-ties and --out FIXED.run go together", field="--out")
    collection = collection_from_args(args)
    result = validate_run(collection, args.run, allow_missing=args.allow_missing, strict=args.strict,
                          allow_mismatch=args.allow_collection_mismatch)
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
            print(f"{result.path}: ... and {hidden} more problem(s) ({len(result.problems)} in all; "
                  "--max-problems 0 lists them all)")
        for warning in result.warnings[:limit]:
            print(f"warning: {warning.format(result.path)}", file=sys.stderr)
        if len(result.warnings) > limit:
            print(f"warning: {result.path}: ... and {len(result.warnings) - limit} more warning(s)",
                  file=sys.stderr)
        if result.tied_topics:
            print(f"dsr: warning: {result.path}: {len(result.tied_topics)} topic(s) hold scores that "
                  "tie as 32-bit floats", file=sys.stderr)
        print(result.summary(), file=sys.stdout if result.valid else sys.stderr)
        if args.fix_ties and not result.valid:
            print("dsr: --fix-ties wrote nothing: fix the problems above first", file=sys.stderr)
    return 0 if result.valid else 2


def _fix_ties(collection, path: str, out: str):
    """``--fix-ties``: write the rewritten run with a sidecar naming its input."""
    import shlex

    from eval.validate import fix_ties
    from retrieval.provenance import input_record, run_sidecar
    from retrieval.run import write_run

    check_out(out)
    fixed, run = fix_ties(collection, path)
    fixed.config = run_sidecar("validate", shlex.join(["dsr", "validate", collection.name, str(path),
                                                       "--fix-ties", "--out", str(out)]),
                               {"ties": "initial rank, then id; scores strictly decreasing as float32"},
                               collection=collection.describe(), inputs=[input_record(path, run)])
    write_run(fixed, out)
    return fixed
