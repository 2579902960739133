"""``dsr``: the command line, in one package.

Layer 14 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files, ``dsr.indexes``,
``dsr.collections``, ``dsr.rankers``, ``dsr.rerankers``, ``dsr.open_retrieval``,
``dsr.evaluation``, ``dsr.interchange``, ``dsr.pyterrier``, ``dsr.web``, ``dsr.db``,
``dsr.board``, ``dsr.judging``, ``dsr.migrations``, ``dsr.server``, ``dsr.training``,
``dsr.baselines`` and ``dsr.testing``. Only the application (``dsr.cli``, ``dsr.baselines`` and
``dsr``) imports it.

:data:`dsr.cli.commands.COMMANDS` is the explicit table of commands, their modules and
one-line help (the order is the order in ``--help``); each module's
``register(subparsers)`` adds its commands and holds only argument handling: what a
command does lives in the units it calls (``dsr.collections``, ``dsr.rankers``,
``dsr.evaluation``, ``dsr.board``, ``dsr.training``, ``dsr.baselines``...). Only the module
of the command that runs is imported (``dsr --help`` imports none), and heavy libraries
(torch, faiss) only when a command needs them. Exit codes: 0 success, 2 bad input, 1
internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from argparse import Namespace

from dsr.cli.commands import COMMANDS, listing
from dsr.cli.console import end_multi_values, progress_only_on_a_terminal
from dsr.cli.flags import shown_as_flag
from dsr.cli.help import add_defaults_and_examples
from dsr.core import __version__, docs_url
from dsr.core.atomic import disk_full, full_disk_error
from dsr.core.errors import InputError
from dsr.core.params import Settings
from dsr.core.quiet import quiet_libraries, set_verbose
from dsr.core.registry import Names
from dsr.db.place import default_url

#: ``build_parser(command=EVERY)``: every command module registered
EVERY = None


def build_parser(command: str | None = EVERY) -> argparse.ArgumentParser:
    """The ``dsr`` parser. With ``command`` (the first word of a command line), only that
    command's module is imported and registers its commands; the others are listed by name
    and help from :data:`~dsr.cli.commands.COMMANDS`, so ``dsr --help`` (``command=""``)
    imports no command module. By default every module registers (tests, documentation)."""
    parser = argparse.ArgumentParser(
        prog="dsr",
        usage="dsr [-h] [--version] COMMAND ...",
        description="Sentence retrieval in dialogue: build collections, rank, rerank, "
        "evaluate with the official split protocol, reproduce the baselines.",
        epilog=listing() + "\n\nExit codes: 0 success, 2 bad input (the message names file, line/record "
        "and field), 1 internal error. Data and indexes live under $DSR_HOME "
        f"(default ~/.cache/dsr).\n\ndocumentation:\n  {docs_url()}",
    )
    parser.add_argument("--version", action="version", version=f"dsr {__version__}")
    # the commands are listed by task in the epilog (commands.listing), not in argparse's one list
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help=argparse.SUPPRESS)
    wanted = (
        {module for module, _ in COMMANDS.values()}
        if command is EVERY
        else {COMMANDS[command][0]}
        if command in COMMANDS
        else set()
    )
    registered = set()
    for name, (module, summary) in COMMANDS.items():
        if module not in wanted:
            sub.add_parser(name, help=summary)  # listed; its module loads when it runs
        elif module not in registered:
            importlib.import_module(module).register(sub)  # all of the module's commands
            registered.add(module)
    add_defaults_and_examples(parser)  # every --help: defaults and one example
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse with options before or after positionals (``dsr evaluate C --split valid a.run b.run``).

    argparse's ``parse_intermixed_args`` refuses parsers with subcommands, so
    the command words are walked here and the (sub)command's own parser
    parses the rest intermixed. Anything else (``--help``, ``--version``, an
    unknown command) goes to the plain parser, which prints or errors.
    """
    sub = _subparsers(parser)
    if sub is None:  # a command: --measures RR a.run ends --measures at a.run (dsr.cli.console)
        return parser.parse_intermixed_args(end_multi_values(parser, argv), argparse.Namespace(command_parser=parser))
    if not argv or argv[0] not in sub.choices:
        return parser.parse_args(argv, argparse.Namespace(command_parser=parser))
    args = parse_arguments(sub.choices[argv[0]], argv[1:])
    if sub.dest is not argparse.SUPPRESS:
        setattr(args, sub.dest, argv[0])
    return args


def checked_settings(args: argparse.Namespace) -> Settings | None:
    """Every setting of the command checked before it runs, by the Param its flag was made
    from (a wrong value: exit 2 naming the flag, with the message Python gives), and the
    command's settings record (``settings_record``, its parser's default) made from them. A
    registry's name (``--reranker``) is left to the registry, which names what is registered."""
    for action in args.command_parser._actions:
        param = getattr(action, "param", None)
        value = getattr(args, action.dest, None)
        if param is not None and not isinstance(param.choices, Names) and not (value is None and action.default is None):
            param.check(value)
    record: type[Settings] | None = getattr(args, "settings_record", None)
    return record.from_values(args) if record is not None else None


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (`dsr run --help | head`): no traceback now, nor when Python
        # flushes standard output at exit
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: list[str] | None) -> int:
    progress_only_on_a_terminal()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv[0] if argv and not argv[0].startswith("-") else "")
    except InputError as err:  # the parts the parser lists: a name two plug-ins claim
        print(f"dsr: error: {err}", file=sys.stderr)
        return 2
    args = parse_arguments(parser, argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if getattr(args, "verbose", False):
        set_verbose()  # the libraries' warnings, log lines and bars too
    quiet_libraries()  # else only dsr's own lines (dsr.core.quiet)
    try:
        args.settings = checked_settings(args)
        code = args.func(args)
    except InputError as err:
        print(f"dsr: error: {shown_as_flag(err, args.command_parser, args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dsr: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug, not bad input: unless the disk is full or the database unusable
        found = _database_error(err, args)
        if found is not None:
            print(f"dsr: error: {found}", file=sys.stderr)
            return 2
        if disk_full(err):
            where = getattr(err, "filename", None) or getattr(args, "db", None)  # the database
            print(f"dsr: error: {full_disk_error(where, err)}", file=sys.stderr)
            return 2
        traceback.print_exc()
        print("dsr: internal error (exit 1): please report it with the command you ran", file=sys.stderr)
        return 1
    return int(code or 0)


def _database_error(err: Exception, args: Namespace) -> Exception | None:
    """A database a command could not open or write (a server gone, a full disk under SQLite's
    file, met after the open): the error naming its URL (``dsr.db.engine.database_error``)."""
    if "sqlalchemy" not in sys.modules or not hasattr(args, "db"):
        return None
    from dsr.db.engine import database_error

    return database_error(err, args.db or default_url())


if __name__ == "__main__":
    sys.exit(main())
