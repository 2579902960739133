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
import textwrap
from argparse import _SubParsersAction
from dataclasses import replace
from pathlib import Path
from typing import Any

from dsr.cli.common import (
    add_allow_mismatch_argument,
    add_collection_argument,
    add_command,
    add_param_argument,
    add_param_flags,
    add_run_format_argument,
    check_out,
    collection_from_args,
)
from dsr.collections import load_collection
from dsr.core import docs_url
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.fusion import (
    FUSER_ABOUT,
    METHODS,
    NORMS,
    TIE_RULE,
    canonical,
    method_params,
)
from dsr.core.fusion import check_params as check_fusion_params
from dsr.core.fusion_ranx import BACKEND, METRIC, RANX_ALIASES, RANX_METHODS, TUNED
from dsr.core.models import model_records
from dsr.core.params import parse_assignments
from dsr.core.provenance import input_record, run_sidecar, sha256_file
from dsr.core.queries import STRATEGIES
from dsr.core.run import Run, load_run, write_run
from dsr.core.run_checks import check_run, check_same_collection
from dsr.evaluation.qrels import read_qrels
from dsr.indexes.exactness import sidecar_part
from dsr.rankers import RANKERS, make_ranker, ranker_class
from dsr.rankers.fusion import fuse_runs
from dsr.rerankers import RERANKER, RERANKERS, make_reranker, reranker_class


def _fuse_epilog() -> str:
    """Every fusion method (the registry, :data:`dsr.core.fusion.METHODS`) with its parameters."""
    lines = ["methods (dsr's kernels first, then ranx's; parameters with defaults, '?' learnt from labels when not given):"]
    for method in METHODS:
        shown = {
            k: "?" if v is None and method in RANX_METHODS else "equal" if v is None else v
            for k, v in method_params(method).items()
        }
        params = ", ".join(f"{k}={v}" for k, v in shown.items())
        about = RANX_METHODS[method].about if method in RANX_METHODS else FUSER_ABOUT.get(method, "")
        learnt = " [learns from labels]" if method in RANX_METHODS and RANX_METHODS[method].kind == "trained" else ""
        if method in TUNED:
            params += f"; {TUNED[method]} learnt from labels when given, metric={METRIC}"
        lines.append(f"  {method:<12} {about}{learnt}" + (f" ({params})" if params else ""))
    notes = [
        "normalisations (norm=): " + ", ".join(NORMS) + " (minmax is ranx's min-max; zscore, sum "
        "and rank under dsr's kernels give a document a run lacks the run's lowest normalised "
        "score, ranx's zmuv, and sum and rank under ranx's methods or --backend ranx, give it 0)",
        "learnt methods learn from --qrels FILE or --collection's labels, as ranx's optimize_fusion "
        "does (metric=: ranx's measure names, default ndcg); so do rrf's k, wsum's weights and "
        "logn_isr's sigma when not given (without labels: k=60, equal weights, sigma=0.01; a value "
        "given, e.g. --param k=60, is kept). The output and the sidecar's 'learnt' say what was "
        "learnt, on which metric, over which grid and from what. A run scored on the labels it "
        "learnt from is overstated.",
        "tied scores in an input run: ranked as trec_eval ranks them (doc id descending), with a "
        "warning; --backend ranx ranks them as ranx does (numba's unstable sort of the file's "
        "lines), which reproduces ranx's fused run file for file. ranx's first call in a process "
        "compiles numba code once (cached by numba after that).",
    ]
    lines += [textwrap.fill(note, 100, subsequent_indent="  ") for note in notes]
    return "\n".join(lines) + "\n"


#: dsr fuse --backend's help (the Param's, said for the command line)
FUSE_BACKEND_HELP = (
    "dsr (default): runs as dsr reads them (tied scores ranked as trec_eval ranks "
    "them), dsr's kernels for rrf, isr, borda, combsum, combmnz, wsum, interp; ranx: "
    "every run as ranx reads its file (its own sort of tied scores) and every "
    "method by ranx"
)


def register(subparsers: _SubParsersAction) -> None:
    _register_run(subparsers)
    _register_rerank(subparsers)
    _register_fuse(subparsers)


def _register_run(subparsers: argparse._SubParsersAction) -> None:
    run = add_command(
        subparsers,
        "run",
        add_help=False,
        description="Rank each dialogue's candidates with a ranker and write a TREC run "
        "and its JSON sidecar (configuration, collection hash, versions).",
    )
    _add_stage_help(run, "ranker")
    add_collection_argument(run)
    run.add_argument("--ranker", required=True, metavar="R", help=f"one of {', '.join(RANKERS)}")
    run.add_argument("--query", metavar="Q", help=f"query strategy: {', '.join(STRATEGIES)} (default: the ranker's)")
    add_param_argument(
        run, "ranker parameters, e.g. k1=1.2 b=0.75; for fusion also rankers=bm25,dense method=rrf k=60 and RANKER.PARAM=VALUE"
    )
    run.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    _add_ir_metadata_argument(run)
    run.set_defaults(func=cmd_run)


def _register_rerank(subparsers: argparse._SubParsersAction) -> None:
    rerank = add_command(
        subparsers,
        "rerank",
        add_help=False,
        description="Rescore each topic's top K of a run with a model; the rest of the run stays below in its original order.",
    )
    _add_stage_help(rerank, "reranker")
    add_collection_argument(rerank)
    rerank.add_argument("--run", required=True, metavar="RUN", help="input run file")
    rerank.add_argument("--model", required=True, metavar="M", help="a short name, a hub id, a local folder or dsr:NAME")
    add_param_flags(rerank, (RERANKER,))
    rerank.add_argument("--top-k", type=int, metavar="K", help="rescore the top K of each topic (default: all)")
    rerank.add_argument("--query", metavar="Q", help="query strategy (default: the reranker's)")
    rerank.add_argument("--batch-size", type=int, metavar="N", help="pairs or texts per batch")
    add_param_argument(rerank, "other reranker parameters, e.g. max_length=256 'text=title: body'")
    rerank.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    _add_ir_metadata_argument(rerank)
    add_allow_mismatch_argument(rerank)
    rerank.set_defaults(func=cmd_rerank)


def _register_fuse(subparsers: argparse._SubParsersAction) -> None:
    fuse = add_command(
        subparsers,
        "fuse",
        description="Fuse two or more runs of the same collection, with any of ranx's 25 methods and 7 "
        "normalisations. Ties in the fused scores, with or without --collection: the score "
        "as float32 descending, then sentence id descending (trec_eval 9.0.8's order), so "
        "the run scores as ranx.fuse's does.",
        epilog=_fuse_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fuse.add_argument("runs", nargs="+", metavar="RUN", help="input run files (two or more)")
    add_run_format_argument(fuse)
    fuse.add_argument(
        "--method",
        required=True,
        choices=METHODS + tuple(RANX_ALIASES),
        metavar="METHOD",
        help="a fusion method (below; ranx's names bordafuse, sum and mnz are dsr's borda, combsum and combmnz)",
    )
    add_param_argument(
        fuse, "k=60 | weight=0.5 | weights=0.3,0.7 | norm=minmax | gamma=0.5 | phi=0.8 | sigma=0.01 | metric=ndcg@5"
    )
    fuse.add_argument(
        "--collection",
        metavar="COLLECTION",
        help="check the runs against this collection (a registered name or a "
        "benchmark .jsonl), and learn from its labels what a method learns (rrf's k, "
        "wsum's weights, logn_isr's sigma too, when not given); the tie rule is the same without it",
    )
    fuse.add_argument(
        "--qrels",
        metavar="FILE",
        help="TREC qrels whose grades the learnt methods (bayesfuse, probfuse, ..., weights "
        "not given; rrf's k, wsum's weights, logn_isr's sigma not given) learn from, instead of the "
        "collection's labels",
    )
    add_param_flags(fuse, (replace(BACKEND, help=FUSE_BACKEND_HELP),))
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
    ranker = make_ranker(args.ranker, **params)  # unknown ranker/parameter: before loading data
    collection = collection_from_args(args)
    run = ranker.rank(collection)
    run.tag = ranker.tag
    # describe() after rank(): rankers record what they resolved (models, indexes) there;
    # what a ranker put in the run's own config is kept too.
    described = {**run.config, **ranker.describe()}
    run.config = run_sidecar(
        "run",
        _command_line("run", args),
        described,
        collection=collection.describe(),
        models=model_records(described, params, "bi-encoder"),
    )
    _write(run, args)
    return 0


def cmd_rerank(args: argparse.Namespace) -> int:
    check_out(args.out)
    params = parse_assignments(args.param, "--param")
    for flag, key, value in (
        ("--model", "model", args.model),
        ("--query", "query", args.query),
        ("--batch-size", "batch_size", args.batch_size),
        ("--top-k", "top_k", args.top_k),
    ):
        if value is not None:
            if key in params and params[key] != value:
                raise InputError(f"{key} given both as {flag} and as --param", field="--param")
            params[key] = value
    # the name and every value checked by the reranker's registry and Params, as dsr.reranker(...)
    reranker = make_reranker(args.reranker, **params)
    top_k = reranker.params.get("top_k")
    collection = collection_from_args(args)
    run = load_run(args.run)
    check_run(run, args.run, collection, allow_mismatch=args.allow_collection_mismatch)
    out = reranker.rerank(collection, run, top_k=top_k)
    described = {**out.config, **reranker.describe()}
    described.setdefault("top_k", top_k)
    kind = "cross-encoder" if args.reranker == "cross-encoder" else "bi-encoder"
    out.config = run_sidecar(
        "rerank",
        _command_line("rerank", args),
        described,
        collection=collection.describe(),
        **sidecar_part(collection.describe(), described),
        models=model_records(described, params, kind),
        inputs=[input_record(args.run, run)],
    )
    _write(out, args)
    return 0


def cmd_fuse(args: argparse.Namespace) -> int:
    """The runs read and checked against ``--collection`` (or each other's sidecars), then
    :func:`dsr.rankers.fusion.fuse_runs`, :func:`dsr.fuse`'s door, which owns the rules."""
    check_out(args.out)
    params = parse_assignments(args.param, "--param")
    check_fusion_params(canonical(args.method), params)  # before the runs are read
    runs = [load_run(path, args.fmt) for path in args.runs]
    collection = None
    if args.collection:
        collection = load_collection(args.collection)
        for path, run in zip(args.runs, runs):
            check_run(run, path, collection, allow_mismatch=args.allow_collection_mismatch)
    else:
        check_same_collection(args.runs, runs, allow=args.allow_collection_mismatch)
    labels = read_qrels(args.qrels) if args.qrels else None
    method = canonical(args.method)
    fused = fuse_runs(
        runs, method, params, names=args.runs, collection=collection, labels=labels, backend=args.backend, switch="--backend ranx"
    )
    trained_on = _trained_on(args, collection)
    described = (
        collection.describe()
        if collection
        else next((r.config["collection"] for r in runs if isinstance(r.config.get("collection"), dict)), None)
    )
    fusion = {"fusion": method, "params": {**method_params(method), **params}, "backend": args.backend, "ties": TIE_RULE}
    if "fusion_learnt" in fused.config:
        learnt = fused.config.pop("fusion_learnt")
        fusion["learnt"] = {**learnt, "from": trained_on}
        fusion["params"].update({k: v for k, v in learnt.items() if k in fusion["params"]})
        print(
            f"dsr: {method} learnt {_learnt_text(learnt)} from the labels of {trained_on}; a run "
            "scored on the labels it learnt from is overstated",
            file=sys.stderr,
        )
    fused.config = run_sidecar(
        "fuse",
        _command_line("fuse", args),
        fusion,
        collection=described,
        inputs=[input_record(p, r) for p, r in zip(args.runs, runs)],
    )
    _write(fused, args)
    return 0


def _trained_on(args: argparse.Namespace, collection: Collection | None) -> str | None:
    """What a learnt method learnt from, for its sidecar: --qrels, else --collection's labels."""
    if args.qrels:
        return f"qrels {Path(args.qrels).name} (sha256 {sha256_file(args.qrels)[:12]})"
    if collection is not None:
        return f"collection {collection.name} ({collection.content_hash[:12]})"
    return None


def _learnt_text(learnt: dict) -> str:
    """What a fusion learnt, said in one line: ``k=30 (ranx's optimize_fusion on ndcg over
    min_k=10, max_k=100, step=10)``; a trained method's tables by what they are."""
    values = [f"{k}={v}" if not isinstance(v, str) else v for k, v in learnt.items() if k not in ("metric", "grid")]
    if "metric" not in learnt:
        return ", ".join(values) + " (ranx's optimize_fusion)"
    grid = ", ".join(f"{k}={v}" for k, v in learnt["grid"].items())
    return ", ".join(values) + f" (ranx's optimize_fusion on {learnt['metric']}" + (f" over {grid})" if grid else ")")


def _command_line(command: str, args: argparse.Namespace) -> str:
    """An equivalent command line, rebuilt from the parsed arguments (so it is the same
    whether dsr ran from a shell or from Python); an absolute path is shown relative to the
    working directory, or by its name when outside it (no folder of the machine)."""
    words = ["dsr", command]
    if command == "fuse":
        words += list(args.runs)
    else:
        words.append(args.collection)
    flags = {
        "run": ("source", "split", "ranker", "query"),
        "rerank": ("source", "split", "run", "reranker", "model", "top_k", "query", "batch_size"),
        "fuse": ("method", "collection", "qrels", "backend"),
    }[command]
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

    def __init__(
        self,
        option_strings: list[str],
        dest: str = argparse.SUPPRESS,
        default: Any = argparse.SUPPRESS,
        help: str | None = None,
        kind: str = "ranker",
    ) -> None:
        super().__init__(option_strings, dest, default=default, nargs=0, help=help)
        self.kind = kind

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        registry, lookup = (RANKERS, ranker_class) if self.kind == "ranker" else (RERANKERS, reranker_class)
        chosen = getattr(namespace, self.kind, None)
        parser.print_help()
        for name in [chosen] if isinstance(chosen, str) and chosen in registry else list(registry):
            print(f"\nparameters of {self.kind} {name} (--param NAME=VALUE):")
            print(lookup(name).help())
        parser.exit()


def _add_stage_help(parser: argparse.ArgumentParser, kind: str) -> None:
    parser.add_argument(
        "-h",
        "--help",
        action=_StageHelp,
        kind=kind,
        help=f"show this help and the parameters of the {kind} given before it (--{kind} NAME --help), else of every {kind}",
    )


def _add_ir_metadata_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ir-metadata",
        action="store_true",
        help="also write the run's provenance as an ir_metadata header (# lines "
        "at the top; trec_eval 9.0.8 and ir_measures refuse them, trec_eval 10.0 skips them: "
        f"see {docs_url('interchange')})",
    )


def _write(run: Run, args: argparse.Namespace) -> None:
    out = args.out
    write_run(run, out, ir_metadata=args.ir_metadata)
    lines = sum(len(r) for r in run.rankings.values())
    print(
        f"dsr: wrote {out} ({len(run.rankings)} topics, {lines} lines) and its sidecar {Path(str(out) + '.json').name}",
        file=sys.stderr,
    )
