"""``dsr trec_eval``: trec_eval's command line; the work is :mod:`dsr.evaluation.trec_eval_tool`."""

from __future__ import annotations

import argparse
import sys
from argparse import _SubParsersAction

from dsr.cli.common import add_command, add_param_flags
from dsr.core import __version__
from dsr.core.errors import InputError
from dsr.evaluation.trec_eval_measures import NICKNAMES, RELEASES, measures, supported
from dsr.evaluation.trec_eval_tool import ENGINE, OPTION, Options, Stopped, trec_eval

EPILOG = (
    """\
output: what trec_eval prints, byte for byte: one "measure<TAB>topic<TAB>value" line per value, the
measure padded to 22 characters, counts as whole numbers (summed over topics on the "all" lines:
num_q 3, num_ret 1500), every other value with 4 decimals (averaged; gm_map and gm_bpref
geometrically). -q adds each topic's lines before the summary; -n drops the summary.

releases (--release; default 9.0.8, the release pytrec_eval and ir_measures build on):
  9.0.8  run scores read as 32-bit floats; the run's topics that have judgements are evaluated
         (-c: averaged over every qrels topic); recall levels become numbers of relevant
         documents by adding 0.9 and truncating (iprec_at_recall, 11pt_avg)
  10.0   scores read as doubles; the qrels' topics are evaluated (a topic the run lacks stops
         it unless -c, which scores and, with -q, prints it); recall levels rounded (lround);
         all_trec adds unj, rbp and rbp_resid
  Both: ties in score go to the doc id, descending; '#' lines of the qrels are comments
  (10.0 reads them so; 9.0.8 stops on them).

measures (-m NAME, -m NAME.PARAMS as trec_eval: -m P.5,10 -m ndcg_cut.10 -m utility.2,-1,0,0
-m ndcg.1=3,2=9 -m relstring.20; -m is repeatable; the order printed is trec_eval's):
  nicknames: NICKS
  9.0.8: MEASURES_9
  10.0: MEASURES_10

not supported (each is refused with exit 2, naming it; nothing is printed on stdout):
  -R prefs, -R qrels_prefs (preference judgements) and -R qrels_jg (judgement groups), with
  their measures (all_prefs, prefs, qrels_jg: the prefs_*, *_avgjg measures); yaap; 10.0's
  dcg and ideal_dcg; -T other than trec_results; -D (debug output).
supported options: -q -m -c -l -M -J -n -N (utility's fourth coefficient) -Z (z-scores from a
"topic measure mean sd" file) -o (obsolete in trec_eval: no effect) -v.
exit codes: 0; 2 with a message naming the file, line or option (trec_eval exits 1 to 8); 4 where
trec_eval stops in its loop over topics, after the -q lines it prints before (10.0 on a qrels topic
the run lacks; a document listed twice in a topic's first -M, or judged twice).
""".replace("NICKS", ", ".join(NICKNAMES["10.0"]))
    .replace("MEASURES_9", " ".join(supported("9.0.8")))
    .replace("MEASURES_10", " ".join(supported("10.0")))
)


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "trec_eval",
        description="trec_eval's command: the same options, measure names and output, so a script "
        "calling trec_eval gets the same bytes from dsr trec_eval.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("qrels", metavar="QRELS", help="TREC qrels (qid iter docid grade; plain or .gz)")
    p.add_argument("run", metavar="RUN", help="TREC run (qid Q0 docid rank score tag; plain or .gz)")
    p.add_argument("-q", "--query_eval_wanted", action="store_true", dest="per_topic", help="a line per topic and measure too")
    p.add_argument(
        "-m",
        "--measure",
        action="append",
        dest="measures",
        metavar="MEASURE",
        help="a measure or nickname, NAME[.PARAMS] (repeatable; default official)",
    )
    p.add_argument(
        "-c",
        "--complete_rel_info_wanted",
        action="store_true",
        dest="complete",
        help="average over every topic of the qrels (a topic the run lacks scores 0)",
    )
    add_param_flags(p, (OPTION["level"], OPTION["max_docs"]))
    p.add_argument(
        "-J",
        "--Judged_docs_only",
        action="store_true",
        dest="judged_only",
        help="drop unjudged documents from each ranking first",
    )
    p.add_argument("-n", "--nosummary", action="store_true", help='no summary ("all") lines')
    add_param_flags(p, (OPTION["num_docs"],))
    p.add_argument(
        "-Z", "--Zscore", dest="zscores", metavar="FILE", help='print z-scores, from a file of "topic measure mean sd" lines'
    )
    add_param_flags(p, (OPTION["rel_format"], OPTION["results_format"]))
    p.add_argument("-D", "--Debug_level", dest="debug", metavar="N", help="not supported")
    p.add_argument(
        "-o", "--Output_old_results_format", action="store_true", dest="old_format", help="obsolete in trec_eval; no effect"
    )
    p.add_argument(
        "-v",
        "--version",
        action="store_true",
        dest="show_version",
        help="print the version (dsr's, and the trec_eval release followed)",
    )
    add_param_flags(p, (OPTION["release"],))
    add_param_flags(p, (ENGINE,))
    p.set_defaults(func=cmd_trec_eval)


def cmd_trec_eval(args: argparse.Namespace) -> int:
    options = options_of(args)
    if args.show_version:
        print(f"trec_eval version {args.release} (dsr {__version__})", file=sys.stderr)
        return 0
    _refuse_unsupported(args)
    try:
        printed = trec_eval(args.qrels, args.run, options, engine=args.engine)
    except Stopped as stopped:  # trec_eval's own output up to where it stops, and its status
        sys.stdout.write(stopped.printed)
        print(f"dsr: error: {stopped}", file=sys.stderr)
        return stopped.status
    for note in printed.notes:
        print(f"dsr trec_eval: note: {note}", file=sys.stderr)
    sys.stdout.write(printed.text)
    return 0


def options_of(args: argparse.Namespace) -> Options:
    """The parsed command line as :class:`Options` (its values checked by their Params)."""
    return Options(
        release=args.release,
        measures=args.measures,
        per_topic=args.per_topic,
        complete=args.complete,
        level=args.level,
        max_docs=args.max_docs,
        judged_only=args.judged_only,
        summary=not args.nosummary,
        num_docs=args.num_docs,
        zscores=args.zscores,
        rel_format=args.rel_format,
        results_format=args.results_format,
    )


def _refuse_unsupported(args: argparse.Namespace) -> None:
    """The options dsr does not support, each refused by name (never a silent difference)."""
    if args.debug is not None:
        raise InputError("not supported: -D (trec_eval's debug output)", field="debug")
    wanted = {name for m in args.measures or [] for name in [m.partition(".")[0]]}
    table = {m.name for m in measures(args.release)}
    unknown = wanted - table - set(NICKNAMES[args.release])
    other = next((r for r in RELEASES if r != args.release), None)
    for name in sorted(unknown):
        if other and name in {m.name for m in measures(other)}:
            raise InputError(
                f"{name} is a measure of trec_eval {other}, not of {args.release}: --release {other}", field="measures"
            )
