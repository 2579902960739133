"""``dsr reproduce``: argument handling; the suite is :func:`dsr.baselines.reproduce`."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import _SubParsersAction

from dsr.baselines import (
    DEFAULT_CROSS_ENCODER,
    DEFAULT_TRAINED_DENSE,
    DENSE_MODEL,
    FAST_BACKEND,
    REPRODUCE_PARAMS,
    reproduce,
    skip_reason,
    trained_default,
)
from dsr.cli.common import add_command, add_param_flags
from dsr.cli.evaluation import add_report_arguments
from dsr.collections import load_collection
from dsr.core import docs_url
from dsr.core.data import Collection
from dsr.core.timing import StageTimer
from dsr.evaluation import tables
from dsr.evaluation.measures import split_measure_list
from dsr.indexes.backends import CHOICES, DEFAULT_BACKEND


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "reproduce",
        description="Load a collection, build or reuse its indexes, run the baseline suite "
        "(random, initial, BM25 and dense with each query strategy, RRF, a "
        "cross-encoder when one is available), tune each on val per split, "
        "evaluate with significance against BM25, and write the report, run files "
        "and a manifest into --out.",
        epilog="Prints a short summary (the primary measure by subset, with ▲/▼ against BM25); "
        "--verbose prints every table, and --out holds them all. The bundled sample is a "
        "smoke test (20 invented dialogues: nothing can be significant); the first table on "
        "real public data is `dsr data fetch cmu_dog` then `dsr reproduce cmu_dog_dev` (the "
        "README's), the SIGIR 2022 table `dsr data fetch sigir2022` then `dsr reproduce sigir2022`. "
        "Examples: dsr reproduce sample --out out/sample ; "
        "dsr reproduce cmu_dog_dev --source ../shared/data/cmu_dog ; "
        "dsr reproduce cmu_dog --source ../shared/data/cmu_dog --split valid",
    )
    p.add_argument(
        "collection",
        nargs="?",
        metavar="COLLECTION",
        help="registered name or benchmark .jsonl (default: sigir2022 when its files are present)",
    )
    p.add_argument("--source", metavar="DIR", help="folder with the source's raw files")
    p.add_argument("--split", metavar="S", help="source split to build (e.g. valid for cmu_dog)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: out/COLLECTION)")
    p.add_argument(
        "--splits",
        metavar="FILE",
        help='val/test split file (JSON lines {"val": [...], "test": [...]}); default: '
        "the collection's own (SIGIR 2022: the official 50), else generated",
    )
    add_param_flags(p, REPRODUCE_PARAMS)  # --n-splits, --seed, --target, --test
    p.add_argument(
        "--measures",
        nargs="+",
        action="extend",
        metavar="M",
        help="measures, space or comma separated (default: the evaluator's set)",
    )
    p.add_argument(
        "--queries",
        nargs="+",
        action="extend",
        metavar="Q",
        help="query strategies to run, space or comma separated (default: all of them)",
    )
    _add_model_arguments(p)
    add_report_arguments(p)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=cmd_reproduce)


def _add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The suite's models: the dense rows', the trained ones', the cross-encoder's, their backend."""
    add_param_flags(p, (DENSE_MODEL,))
    p.add_argument("--no-dense", action="store_true", help="skip the dense and fusion rows")
    p.add_argument(
        "--trained-dense",
        metavar="MODEL",
        help=f"bi-encoder trained by `dsr train` for the `trained bi-encoder` row "
        f"(default: {DEFAULT_TRAINED_DENSE} when it exists; 'none' skips it)",
    )
    p.add_argument(
        "--cross-encoder",
        metavar="MODEL",
        help=f"cross-encoder for the reranking row: a folder, hub id or dsr:NAME "
        f"(default: {DEFAULT_CROSS_ENCODER} when `dsr train` has saved it)",
    )
    p.add_argument("--no-cross-encoder", action="store_true", help="skip the cross-encoder row")
    p.add_argument(
        "--trained-reranker",
        metavar="MODEL",
        help="cross-encoder trained by `dsr train` for the trained bi-encoder (e.g. the second "
        "stage of `dsr train --recipe recommended`): the `trained pipeline` row reranks the "
        "`trained bi-encoder` row's top k, k tuned on val (10, 20, all); needs --trained-dense",
    )
    p.add_argument(
        "--ce-query",
        metavar="Q",
        help="query strategy for the cross-encoder (default: the one a `dsr train` model "
        "was trained with, from its card; else all)",
    )
    p.add_argument(
        "--fast",
        action="store_true",
        help=f"run the dense and cross-encoder models on {FAST_BACKEND}: about 4x faster on a "
        "CPU with VNNI or AMX, but the figures differ from the exact ones and depend on "
        "the CPU (a note under the table says by how much, as measured on the collection)",
    )
    p.add_argument(
        "--backend",
        choices=CHOICES,
        help=f"backend for the dense and cross-encoder models (default {DEFAULT_BACKEND}: exact, "
        "the same table on every CPU; openvino, openvino-bf16, openvino-int8: faster, figures "
        f"differ, see {docs_url('models')}; auto: {FAST_BACKEND} where the CPU has VNNI or AMX, else "
        f"torch; --fast: {FAST_BACKEND})",
    )


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.collection == "sample" and not args.json:
        print(sample_banner(load_collection("sample", None, args.split)), flush=True)  # what it is, first
    cross_encoder = None if args.no_cross_encoder else (args.cross_encoder or trained_default())
    trained_dense = (
        None if args.no_dense or args.trained_dense == "none" else args.trained_dense or trained_default(DEFAULT_TRAINED_DENSE)
    )
    result = reproduce(
        args.collection,
        args.out,
        source=args.source,
        split=args.split,
        splits_file=args.splits,
        n_splits=args.n_splits,
        seed=args.seed,
        target=args.target,
        measures=_split(args.measures),
        strategies=_split(args.queries),
        dense_model=None if args.no_dense else args.dense_model,
        trained_dense=trained_dense,
        cross_encoder=cross_encoder,
        ce_query=args.ce_query,
        trained_reranker=args.trained_reranker,
        backend=args.backend or (FAST_BACKEND if args.fast else DEFAULT_BACKEND),
        test=args.test,
        correction=args.correction,
        family=args.family,
        ci=args.ci,
        all_pairs=args.all_pairs,
        primary=args.primary,
        timer=StageTimer(),
        command=["dsr", *sys.argv[1:]],
        skipped_reason=skip_reason(args.no_cross_encoder),
    )
    if args.json:
        print(json.dumps(result["report"], indent=2, sort_keys=True, ensure_ascii=False))
        return 0
    print(tables.render(result["results"], args.format, verbose=args.verbose))
    total = result["manifest"]["wall_time_s"]["total"]
    print(
        f"full report (every measure and table, figures, runs, manifest): {result['out']}/results.md "
        f"({total:.0f} s; --verbose prints every table)"
    )
    if result["results"].collection.get("name") == "sample":
        print(NEXT_STEPS)
    return 0


#: where the sample's smoke test ends: the commands of the first table on public real data
NEXT_STEPS = (
    "next, the first table on real public data (cmu_dog_dev: 389 judged CMU_DoG query points):\n"
    "  dsr data fetch cmu_dog          # CMU_DoG at its pinned commit, every file verified\n"
    "  dsr reproduce cmu_dog_dev       # or --source DIR with a copy of CMU_DoG (make headline)\n"
    f"its reference table, to compare with: {docs_url('results')}"
)


def sample_banner(collection: Collection) -> str:
    """What ``make reproduce`` runs, said before it runs: a smoke test, not a result."""
    counts = {s: len(collection.subset(s)) for s in collection.subsets}
    parts = ", ".join(f"{n} {s}" for s, n in counts.items())
    return (
        f"SMOKE TEST on the bundled sample: {len(collection)} invented dialogues ({parts}) split "
        f"{len(collection) // 2}/{len(collection) - len(collection) // 2} into val/test; with so "
        "few dialogues nothing can be significant. It checks that every stage runs."
    )


def _split(values: list[str] | None) -> list[str] | None:
    """``--measures``/``--queries`` values, space or comma separated (measure parameters kept)."""
    return split_measure_list(values) if values else None
