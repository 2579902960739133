"""``dsr``: the command line, in one package.

:data:`COMMANDS` is the explicit table of command modules (the order is the
order in ``--help``); each module's ``register(subparsers)`` adds its commands
and holds only argument handling: what a command does lives in the domain
packages (``retrieval``, ``indexes``, ``eval``) it calls. Heavy libraries
(torch, faiss) are imported inside the commands, so ``dsr --help`` stays fast.
Nothing outside this package imports it. Exit codes: 0 success, 2 bad input,
1 internal error.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from retrieval import __version__
from dsr.cli import (agreement, board, corpus, data, evaluation, interchange, kfold, ranking,
                           reproduce, training)
from dsr.cli.console import end_multi_values, progress_only_on_a_terminal
from retrieval.errors import InputError

#: command modules, in --help order
COMMANDS = (
    data,          # collections, data fetch/build, stats
    ranking,       # run, rerank, fuse
    evaluation,    # evaluate, validate
    agreement,     # agreement (silver vs judged system rankings)
    board,         # serve, submit, board (the leaderboard)
    training,      # train
    kfold,         # kfold (document-disjoint evaluation)
    reproduce,     # reproduce
    interchange,   # export, qrels
    corpus,        # corpus build/index/search, pool (open retrieval)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dsr",
        description="Sentence retrieval in dialogue: build collections, rank, rerank, "
                    "evaluate with the official split protocol, reproduce the baselines.",
        epilog="Exit codes: 0 success, 2 bad input (the message names file, line/record "
               "and field), 1 internal error. Data and indexes live under $DSR_HOME "
               "(default ~/.cache/dsr).",
    )
    parser.add_argument("--version", action="version", version=f"dsr {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    from dsr.cli.help import add_defaults_and_examples
    add_defaults_and_examples(parser)   # every --help: defaults and one example
    return parser


def _subparsers(parser: argparse.ArgumentParser):
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse with options before or after positionals (``dsr evaluate C --split valid a.run b.run``).

    argparse's ``parse_intermixed_args`` refuses parsers with subcommands, so
    the command words are walked here and the (sub)command's own parser
    parses the rest intermixed. Anything else (``--help``, ``--version``, an
    unknown command) goes to the plain parser, which prints or errors.
    """
    sub = _subparsers(parser)
    if sub is None:   # a command: --measures RR a.run ends --measures at a.run (dsr.cli.console)
        return parser.parse_intermixed_args(end_multi_values(parser, argv))
    if not argv or argv[0] not in sub.choices:
        return parser.parse_args(argv)
    args = parse_arguments(sub.choices[argv[0]], argv[1:])
    if sub.dest is not argparse.SUPPRESS:
        setattr(args, sub.dest, argv[0])
    return args


def main(argv: list[str] | None = None) -> int:
    progress_only_on_a_terminal()
    parser = build_parser()
    args = parse_arguments(parser, list(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code = args.func(args)
    except InputError as err:
        print(f"dsr: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dsr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception:  # a bug, not bad input
        traceback.print_exc()
        print("dsr: internal error (exit 1): please report it with the command you ran",
              file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
