"""``dsr run``, ``dsr rerank`` and ``dsr fuse``: rankings on disk.

Each writes a TREC run (strictly decreasing scores per topic; ties broken by
initial rank, then sentence id, see :mod:`dsr.core.run`) and its JSON
sidecar ``RUN.json`` with everything needed to make it again:

``command``, ``command_line``, ``created``
    which command, an equivalent command line, when (UTC, ISO 8601)
``ranker`` / ``reranker`` / ``fusion``, ``params``
    the stage's ``describe()``: its name and every parameter (defaults
    included); fusion rankers add ``rankers`` (their sub-rankers), rerankers
    ``model``
``collection``
    the collection's ``describe()``: name, content hash, dialogues, subsets
``models``
    each model used: spec, resolved name, source, weights sha256, revision
``inputs``
    input runs: path, sha256, tag, and their own sidecar (less ``versions``)
``versions``
    Python and package versions

Input runs (plain or ``.gz``) are checked before any model is loaded: a run
whose sidecar names another collection hash (unless
``--allow-collection-mismatch``), or whose topics or sentence ids are not the
collection's, is bad input (exit 2) naming the file and line. Outputs are
written atomically (gzipped when ``--out`` ends in ``.gz``), the run before
its sidecar, so a failed command leaves no partial file and a killed one at
worst a stale sidecar that readers detect.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from dsr.cli.commands import summary
from dsr.cli.common import (
    add_allow_mismatch_argument,
    add_collection_argument,
    add_param_argument,
    check_out,
    collection_from_args,
)
from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.core.fusion import METHODS, TIE_RULE, fuse, method_params
from dsr.core.fusion import check_params as check_fusion_params
from dsr.core.models import model_records
from dsr.core.params import parse_assignments
from dsr.core.provenance import input_record, run_sidecar
from dsr.core.queries import STRATEGIES
from dsr.core.run import load_run, write_run
from dsr.core.run_checks import check_run, check_same_collection
from dsr.rankers import RANKERS, make_ranker, ranker_class
from dsr.rerankers import RERANKERS, make_reranker, reranker_class


def register(subparsers) -> None:
    run = subparsers.add_parser(
        "run", help=summary("run"), add_help=False,
        description="Rank each dialogue's candidates with a ranker and write a TREC run "
                    "and its JSON sidecar (configuration, collection hash, versions).")
    _add_stage_help(run, "ranker")
    add_collection_argument(run)
    run.add_argument("--ranker", required=True, metavar="R",
                     help=f"one of {', '.join(RANKERS)}")
    run.add_argument("--query", metavar="Q",
                     help=f"query strategy: {', '.join(STRATEGIES)} (default: the ranker's)")
    add_param_argument(run, "ranker parameters, e.g. k1=1.2 b=0.75; for fusion also "
                             "rankers=bm25,dense method=rrf k=60 and RANKER.PARAM=VALUE")
    run.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    _add_ir_metadata_argument(run)
    run.set_defaults(func=cmd_run)

    rerank = subparsers.add_parser(
        "rerank", help=summary("rerank"), add_help=False,
        description="Rescore each topic's top K of a run with a model; the rest of the run "
                    "stays below in its original order.")
    _add_stage_help(rerank, "reranker")
    add_collection_argument(rerank)
    rerank.add_argument("--run", required=True, metavar="RUN", help="input run file")
    rerank.add_argument("--model", required=True, metavar="M",
                        help="a short name, a hub id, a local folder or dsr:NAME")
    rerank.add_argument("--reranker", default="cross-encoder", metavar="NAME",
                        help=f"one of {', '.join(RERANKERS)} (default: cross-encoder)")
    rerank.add_argument("--top-k", type=int, metavar="K",
                        help="rescore the top K of each topic (default: all)")
    rerank.add_argument("--query", metavar="Q", help="query strategy (default: the reranker's)")
    rerank.add_argument("--batch-size", type=int, metavar="N", help="pairs or texts per batch")
    add_param_argument(rerank, "other reranker parameters, e.g. max_length=256 "
                                "'text=title: body'")
    rerank.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    _add_ir_metadata_argument(rerank)
    add_allow_mismatch_argument(rerank)
    rerank.set_defaults(func=cmd_rerank)

    fuse = subparsers.add_parser(
        "fuse", help=summary("fuse"),
        description="Fuse two or more runs of the same collection. Ties in the fused scores, with "
                    "or without --collection: the score as float32 descending, then sentence id "
                    "descending (trec_eval 9.0.8's order), so the run scores as ranx.fuse's does.")
    fuse.add_argument("runs", nargs="+", metavar="RUN", help="input run files (two or more)")
    fuse.add_argument("--method", required=True, choices=METHODS,
                      help=", ".join(f"{m} ({', '.join(method_params(m))})" if method_params(m) else m
                                     for m in METHODS) + "; see docs/api.md for the papers")
    add_param_argument(fuse, "k=60 | weight=0.5 | weights=0.3,0.7 | norm=minmax|zscore|sum|rank")
    fuse.add_argument("--collection", metavar="COLLECTION",
                      help="check the runs against this collection (a registered name or a "
                           "benchmark .jsonl); the tie rule is the same without it")
    fuse.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    _add_ir_metadata_argument(fuse)
    add_allow_mismatch_argument(fuse)
    fuse.set_defaults(func=cmd_fuse)


# --- commands ------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    check_out(args.out)
    params = parse_assignments(args.param, "--param")
    if args.query is not None:
        params["query"] = args.query
    ranker = make_ranker(args.ranker, **params)   # unknown ranker/parameter: before loading data
    collection = collection_from_args(args)
    run = ranker.rank(collection)
    run.tag = ranker.tag
    # describe() after rank(): rankers record what they resolved (models, indexes) there;
    # what a ranker put in the run's own config is kept too.
    described = {**run.config, **ranker.describe()}
    run.config = run_sidecar("run", _command_line("run", args), described,
                          collection=collection.describe(),
                          models=model_records(described, params, "bi-encoder"))
    _write(run, args)
    return 0


def cmd_rerank(args: argparse.Namespace) -> int:
    check_out(args.out)
    if args.reranker not in RERANKERS:
        raise InputError(f"unknown reranker {args.reranker!r}; choose from {', '.join(RERANKERS)}",
                         field="--reranker")
    if args.top_k is not None and args.top_k < 1:
        raise InputError(f"must be >= 1, got {args.top_k}", field="--top-k")
    if args.batch_size is not None and args.batch_size < 1:
        raise InputError(f"must be >= 1, got {args.batch_size}", field="--batch-size")
    params = parse_assignments(args.param, "--param")
    for flag, key, value in (("--model", "model", args.model), ("--query", "query", args.query),
                             ("--batch-size", "batch_size", args.batch_size)):
        if value is not None:
            if key in params and params[key] != value:
                raise InputError(f"{key} given both as {flag} and as --param", field="--param")
            params[key] = value
    top_k = params.pop("top_k", None)
    if args.top_k is not None:
        if top_k is not None and top_k != args.top_k:
            raise InputError("top_k given both as --top-k and as --param", field="--param")
        top_k = args.top_k
    reranker = make_reranker(args.reranker, **params)
    if "top_k" in reranker.DEFAULTS:   # so that describe() records it
        reranker.params["top_k"] = top_k
    collection = collection_from_args(args)
    run = load_run(args.run)
    check_run(run, args.run, collection, allow_mismatch=args.allow_collection_mismatch)
    out = reranker.rerank(collection, run, top_k=top_k)
    described = {**out.config, **reranker.describe()}
    described.setdefault("top_k", top_k)
    kind = "cross-encoder" if args.reranker == "cross-encoder" else "bi-encoder"
    out.config = run_sidecar("rerank", _command_line("rerank", args), described,
                          collection=collection.describe(),
                          models=model_records(described, params, kind), inputs=[input_record(args.run, run)])
    _write(out, args)
    return 0


def cmd_fuse(args: argparse.Namespace) -> int:
    check_out(args.out)
    if len(args.runs) < 2:
        raise InputError(f"fuse needs at least two runs, got {len(args.runs)}", field="RUN")
    params = parse_assignments(args.param, "--param")
    check_fusion_params(args.method, params)   # before the runs are read
    runs = [load_run(path) for path in args.runs]

    collection = None
    if args.collection:
        collection = load_collection(args.collection)
        for path, run in zip(args.runs, runs):
            check_run(run, path, collection, allow_mismatch=args.allow_collection_mismatch)
    else:
        check_same_collection(args.runs, runs, allow=args.allow_collection_mismatch)
    if not set.intersection(*(set(r.rankings) for r in runs)):
        raise InputError("the runs have no topic in common: are they runs of the same collection?",
                         path=args.runs[-1], field="qid")

    order = collection.initial_order() if collection else None
    fused = fuse(runs, args.method, initial_order=order, **params)
    described = collection.describe() if collection else next(
        (r.config["collection"] for r in runs if isinstance(r.config.get("collection"), dict)), None)
    fusion = {"fusion": args.method, "params": {**method_params(args.method), **params},
              "ties": TIE_RULE}
    fused.config = run_sidecar("fuse", _command_line("fuse", args), fusion, collection=described,
                            inputs=[input_record(p, r) for p, r in zip(args.runs, runs)])
    _write(fused, args)
    return 0


def _command_line(command: str, args: argparse.Namespace) -> str:
    """An equivalent command line, rebuilt from the parsed arguments (so it is the same
    whether dsr ran from a shell or from Python); an absolute path is shown relative to the
    working directory, or by its name when outside it (no folder of the machine)."""
    words = ["dsr", command]
    if command == "fuse":
        words += list(args.runs)
    else:
        words.append(args.collection)
    flags = {"run": ("source", "split", "ranker", "query"),
             "rerank": ("source", "split", "run", "reranker", "model", "top_k", "query", "batch_size"),
             "fuse": ("method", "collection")}[command]
    for name in flags:
        value = getattr(args, name, None)
        if value is not None:
            words += [f"--{name.replace('_', '-')}", str(value)]
    if args.param:
        words += ["--param", *args.param]
    words += ["--out", str(args.out)]
    return shlex.join(_public(w) for w in words)


def _public(word: str) -> str:
    if not os.path.isabs(word):
        return word
    try:
        return str(Path(word).relative_to(Path.cwd()))
    except ValueError:
        return Path(word).name


class _StageHelp(argparse.Action):
    """``-h/--help`` that also lists the parameters of the ranker (reranker) named
    before it, from the stage's declaration: ``dsr run --ranker bm25 --help``."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help=None, kind: str = "ranker"):
        super().__init__(option_strings, dest, default=default, nargs=0, help=help)
        self.kind = kind

    def __call__(self, parser, namespace, values, option_string=None):
        registry, lookup = (RANKERS, ranker_class) if self.kind == "ranker" else (RERANKERS, reranker_class)
        chosen = getattr(namespace, self.kind, None)
        parser.print_help()
        for name in [chosen] if isinstance(chosen, str) and chosen in registry else list(registry):
            print(f"\nparameters of {self.kind} {name} (--param NAME=VALUE):")
            print(lookup(name).help())
        parser.exit()


def _add_stage_help(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.add_argument("-h", "--help", action=_StageHelp, kind=kind,
                        help=f"show this help and the parameters of the {kind} given before it "
                             f"(--{kind} NAME --help), else of every {kind}")


def _add_ir_metadata_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ir-metadata", action="store_true",
                        help="also write the run's provenance as an ir_metadata header (# lines "
                             "at the top; trec_eval and ir_measures reject them: see "
                             "docs/interchange.md)")


def _write(run, args: argparse.Namespace) -> None:
    out = args.out
    write_run(run, out, ir_metadata=args.ir_metadata)
    lines = sum(len(r) for r in run.rankings.values())
    print(f"dsr: wrote {out} ({len(run.rankings)} topics, {lines} lines) and its sidecar "
          f"{Path(str(out) + '.json').name}", file=sys.stderr)
