"""``dsr``: the command line.

Each area registers its own subcommands (``register(subparsers)``) so the
parser stays small and heavy libraries (torch, faiss) are imported only by the
command that needs them. Exit codes: 0 success, 2 bad input, 1 internal error.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from retrieval import __version__
from retrieval.errors import InputError

# Modules that define register(subparsers); the order is the order in --help.
COMMAND_MODULES = (
    "retrieval.collections.commands",   # collections, data fetch/build, stats
    "retrieval.rankers.commands",       # run, rerank, fuse
    "eval.commands",                    # evaluate, validate
    "retrieval.train",                  # train
    "retrieval.reproduce",              # reproduce
    "retrieval.kfold",                  # kfold (document-disjoint evaluation)
    "eval.agreement",                   # agreement (silver vs judged system rankings)
)


def add_collection_argument(parser: argparse.ArgumentParser) -> None:
    """COLLECTION (a registered name or a benchmark .jsonl path), --source and --split."""
    parser.add_argument("collection", metavar="COLLECTION",
                        help="a registered collection (sigir2022, cmu_dog, redial, ccpe, sample, "
                             "cmu_dog_judged) "
                             "or a path to a benchmark .jsonl file")
    parser.add_argument("--source", metavar="DIR",
                        help="folder with the source's raw files (default: $DSR_HOME/data/NAME)")
    parser.add_argument("--split", metavar="S", help="source split to build (e.g. valid for cmu_dog)")


def collection_from_args(args: argparse.Namespace):
    from retrieval.collections import load_collection

    return load_collection(args.collection, getattr(args, "source", None), getattr(args, "split", None))


def parse_params(items: list[str] | None, flag: str = "--param") -> dict[str, object]:
    """``["k1=1.2", "query=last"]`` -> ``{"k1": 1.2, "query": "last"}`` (numbers and booleans typed)."""
    params: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"expected NAME=VALUE, got {item!r}", field=flag)
        params[key.strip()] = _typed(value.strip())
    return params


def _typed(value: str) -> object:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


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
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:  # not written yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
