"""Argument handling shared by the command modules: each command's parser, the COLLECTION
argument, --param, --out checks and the one override of the collection-hash policy.

Only argument handling lives in ``dsr.cli``; what a command does is in the
domain packages it calls. Nothing outside this package imports it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from dsr.cli.commands import summary
from dsr.collections import REGISTERED, load_collection
from dsr.core.atomic import check_output_path
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.params import TYPES, Param, Settings
from dsr.core.run import RUN_FORMAT


def add_command(subparsers: argparse._SubParsersAction, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    """The parser of command ``name``, with its one-line help from the table of commands
    (:data:`dsr.cli.commands.COMMANDS`: what ``dsr --help`` lists)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(name, help=summary(name), **kwargs)
    return parser


def show_help(parser: argparse.ArgumentParser, file: TextIO | None = None) -> int:
    """Print ``parser``'s help (to stdout, or ``file``) and return exit code 2: a command
    group run without its action."""
    parser.print_help(file)
    return 2


def add_collection_argument(parser: argparse.ArgumentParser) -> None:
    """COLLECTION (a registered name or a benchmark .jsonl path), --source and --split."""
    parser.add_argument(
        "collection",
        metavar="COLLECTION",
        help=f"a registered collection ({', '.join(REGISTERED)}) or a path to a benchmark .jsonl file",
    )
    parser.add_argument("--source", metavar="DIR", help="folder with the source's raw files (default: $DSR_HOME/data/NAME)")
    parser.add_argument("--split", metavar="S", help="source split to build (e.g. valid for cmu_dog)")


def add_allow_mismatch_argument(parser: argparse.ArgumentParser) -> None:
    """``--allow-collection-mismatch``: the one override of the collection-hash policy
    (``dsr.core.run_checks.check_collection_hash``)."""
    parser.add_argument(
        "--allow-collection-mismatch",
        action="store_true",
        help="use a run whose sidecar names another collection hash (a warning instead of exit 2)",
    )


def add_param_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--param NAME=VALUE ...`` (repeatable, several per flag)."""
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="NAME=VALUE", help=help_text)


def add_param_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, declared: Sequence[Param]) -> None:
    """One flag per declared setting: ``--max-steps`` for ``max_steps`` (or the Param's
    ``flags``), typed by its kind, with its default and help (a bool is a switch; a ``many``
    setting takes one or more values, repeatable). The library checks the values (choices and
    bounds), so a wrong one is exit 2 naming the flag, as from Python. Each flag's action keeps
    its Param (``action.param``: tests check every default comes from one)."""
    for p in declared:
        flags = p.flags or ("--" + p.name.replace("_", "-"),)
        shown = p.help.replace("%", "%%")  # argparse formats help with %
        if p.kind == "bool":  # a switch; one that may be left unset (None) also has --no-NAME
            action = argparse.BooleanOptionalAction if p.default is None else "store_true"
            made = parser.add_argument(*flags, dest=p.name, action=action, default=p.default, help=shown)
        else:
            choices = "{" + ",".join(map(str, p.choices)) + "}" if p.choices else ""
            many: dict = {}
            if p.many:
                many = {"action": "append"} if p.repeated else {"action": "extend", "nargs": "+"}
            elif isinstance(p.default, tuple):
                many = {"nargs": "+"}  # a list: one or more values
            made = parser.add_argument(
                *flags,
                dest=p.name,
                type=TYPES[p.kind] if p.kind != "any" else str,
                default=p.default,
                metavar=p.metavar or choices or p.name.upper(),
                help=shown + (f"; one of {choices}" if choices and p.metavar else ""),
                **many,
            )
        made.param = p  # type: ignore[attr-defined]


def add_settings_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, record: type[Settings], *names: str) -> None:
    """:func:`add_param_flags` for the fields ``names`` of a settings record (all of them when
    none is named), in the order named."""
    table = {p.name: p for p in record.params()}
    add_param_flags(parser, [table[n] for n in names] if names else list(table.values()))


def param_values(args: argparse.Namespace, declared: Sequence[Param]) -> dict:
    """The values of :func:`add_param_flags`' flags, by setting name."""
    return {p.name: getattr(args, p.name) for p in declared}


def collection_from_args(args: argparse.Namespace) -> Collection:
    return load_collection(args.collection, getattr(args, "source", None), getattr(args, "split", None))


def check_out(out: str | Path, what: str = "a run file name") -> None:
    """An --out that is a folder is bad input (the writers check the parent)."""
    if Path(out).is_dir():
        raise InputError(f"is a folder; --out takes {what}", path=out, field="--out")
    check_output_path(out, "--out")  # a parent that is a file: exit 2, before any work


def add_run_format_argument(p: argparse.ArgumentParser) -> None:
    """--run-format (its Param, ``dsr.core.run.RUN_FORMAT``: the readers' ``fmt``): TREC's six
    columns, MS MARCO's three, or detected (evaluate, validate, fuse)."""
    add_param_flags(p, (RUN_FORMAT,))
