"""``dsr corpus build|index|search`` and ``dsr pool``: the command-line glue of the corpus.

Every option maps onto a function of :mod:`dsr.indexes.corpus` or
:mod:`dsr.open_retrieval.pool`; ``--workers``/``--ray-address`` pick where the work
runs (:mod:`dsr.indexes.corpus.distributed`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from argparse import _SubParsersAction
from pathlib import Path

from dsr.cli.board import _board
from dsr.cli.common import (
    add_allow_mismatch_argument,
    add_collection_argument,
    add_command,
    add_param_argument,
    add_param_flags,
    collection_from_args,
    param_values,
)
from dsr.core import docs_url
from dsr.core.data import Collection, write_benchmark
from dsr.core.errors import InputError
from dsr.core.params import parse_assignments, resolve
from dsr.core.queries import check_strategy
from dsr.core.run import Run, load_run, read_trec_run
from dsr.core.run_checks import check_run
from dsr.indexes.bm25 import PARAMS as BM25_PARAMS
from dsr.indexes.corpus.bm25 import build_bm25
from dsr.indexes.corpus.build import BUILD_PARAMS, StageReport, build_corpus
from dsr.indexes.corpus.dense import ENCODE_PARAMS, IVFPQ, build_ivfpq, encode_corpus
from dsr.indexes.corpus.distributed import Executor
from dsr.indexes.corpus.layout import Corpus
from dsr.open_retrieval.pool import POOL_PARAMS, PoolSettings, pool_collection, pool_runs
from dsr.open_retrieval.search import SEARCH_PARAMS, CorpusSearcher, K


def _add_execution(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="0: in this process; N: a local Ray with N CPUs (default: this machine's cores; with --ray-address, the cluster's)",
    )
    parser.add_argument(
        "--ray-address", metavar="ADDR", help="join a Ray cluster (e.g. ray://head:10001 or auto) instead of a local Ray"
    )
    parser.add_argument(
        "--actor-cpus",
        type=int,
        default=None,
        metavar="N",
        help="CPUs (and threads) of each encoder actor on Ray (default: a whole node's: one model per node)",
    )


def _add_search(parser: argparse.ArgumentParser) -> None:
    add_param_flags(parser, SEARCH_PARAMS)  # --method, --model, --index, --nprobe, --refine, --backend


def register(subparsers: _SubParsersAction) -> None:
    corpus = add_command(
        subparsers,
        "corpus",
        description="Build a sentence corpus from documents (Parquet shards), index it (BM25 with global "
        "statistics, dense vectors, FAISS IVF-PQ) and search it. See " + docs_url("scale") + ".",
    )
    sub = corpus.add_subparsers(dest="corpus_command", metavar="STEP")
    _register_build(sub)
    _register_index(sub)
    _register_search(sub)
    _register_pool(subparsers)


def _register_build(sub: argparse._SubParsersAction) -> None:
    build = sub.add_parser(
        "build",
        help="documents -> sentence shards with a manifest",
        description="Split documents into sentences (pysbd; ids TITLE_DOC_SECTION_"
        "PASSAGE_SENTENCE, e.g. Roman_concrete_1_2_0_3) and write Parquet "
        "shards; resumes a killed build from its finished shards.",
    )
    build.add_argument(
        "source",
        metavar="SOURCE",
        help="a Wikipedia XML dump (.xml or .xml.bz2), a wikiextractor --json output folder "
        "or file, or JSON Lines of {id, title, text}",
    )
    build.add_argument("--out", required=True, metavar="DIR", help="corpus folder to write")
    build.add_argument("--format", choices=("xml", "wikiextractor", "jsonl"), help="source format (default: from the name)")
    add_param_flags(build, BUILD_PARAMS)  # --docs-per-shard, --min-chars
    _add_execution(build)
    build.set_defaults(func=cmd_build)


def _register_index(sub: argparse._SubParsersAction) -> None:
    index = sub.add_parser(
        "index",
        help="BM25 and/or dense indexes over the shards",
        description="Index every shard (resumable): --bm25 (global df and avgdl), "
        "--dense (vectors; --index ivfpq adds an IVF-PQ index).",
    )
    index.add_argument("corpus", metavar="DIR", help="corpus folder (dsr corpus build)")
    index.add_argument("--bm25", action="store_true", help="build the BM25 shards")
    index.add_argument("--dense", action="store_true", help="encode the sentences")
    add_param_flags(index, ENCODE_PARAMS)  # --model, --index, --batch-size, --backend
    index.add_argument(
        "--part",
        metavar="K/N",
        help="encode only shard numbers = K-1 modulo N (--dense): N jobs, on as many Ray "
        "clusters or nodes, share one corpus; then a run without --part finishes "
        f"it ({docs_url('scale')})",
    )
    add_param_argument(
        index,
        f"BM25: {', '.join(p.name for p in BM25_PARAMS)}; IVF-PQ: "
        f"{', '.join(p.name for p in IVFPQ)} (ivfpq.m=48 or bm25.k1=0.9 to be explicit)",
    )
    _add_execution(index)
    index.set_defaults(func=cmd_index)


def _register_search(sub: argparse._SubParsersAction) -> None:
    search = sub.add_parser(
        "search",
        help="top k sentences of the corpus for a query",
        description="Search the corpus; prints rank, score, sentence id and text (--json: one JSON object per query).",
    )
    search.add_argument("corpus", metavar="DIR", help="corpus folder")
    search.add_argument("--query", required=True, action="append", metavar="TEXT", help="query text (repeat for several)")
    add_param_flags(search, (K,))
    _add_search(search)
    search.add_argument("--json", action="store_true", help="JSON Lines output")
    search.set_defaults(func=cmd_search)


def _register_pool(subparsers: _SubParsersAction) -> None:
    pool = add_command(
        subparsers,
        "pool",
        description="For dialogues without candidates: search the corpus with each dialogue's query and "
        "write the top --depth sentences as its candidates (labels 0, meta judged=false). "
        "With --runs (or --phase): the TREC pool, the union of the runs' top --depth per "
        "dialogue, with each run's contribution and unique sentences.",
    )
    add_collection_argument(pool)
    pool.add_argument("--corpus", metavar="DIR", help="corpus folder (built and indexed) to search")
    runs = pool.add_argument("--runs", nargs="+", action="extend", metavar="RUN", help="run files over COLLECTION to pool")
    runs.takes_files = True  # type: ignore[attr-defined]
    pool.add_argument(
        "--phase", metavar="NAME", help="pool the submissions of this board phase of COLLECTION (with --db/--store)"
    )
    pool.add_argument("--db", metavar="URL", help="the board's database, for --phase (default as dsr serve)")
    pool.add_argument("--store", metavar="DIR", help="the board's run store, for --phase (default as dsr serve)")
    pool.add_argument("--json", action="store_true", help="print the runs' contributions as JSON")
    add_param_flags(pool, POOL_PARAMS)  # --depth, --query
    _add_search(pool)
    pool.add_argument("--out", required=True, metavar="FILE", help="benchmark file to write (.jsonl)")
    add_allow_mismatch_argument(pool)
    pool.set_defaults(func=cmd_pool)


def _executor(args: argparse.Namespace) -> Executor:
    workers = args.workers
    if workers is None:
        workers = 0 if args.ray_address else (os.cpu_count() or 1)
        if not args.ray_address and importlib.util.find_spec("ray") is None:
            print(
                "dsr: Ray is not installed (pip install 'dialogue-sentence-retrieval[distributed]'): running in this process",
                file=sys.stderr,
            )
            workers = 0
    return Executor(workers, args.ray_address, args.actor_cpus)


def _report(stage: str, report: StageReport) -> None:
    print(
        f"{stage}: built {len(report.built)}, reused {len(report.reused)} (already done), {report.seconds:.1f} s", file=sys.stderr
    )


def cmd_build(args: argparse.Namespace) -> int:
    settings = resolve(param_values(args, BUILD_PARAMS), BUILD_PARAMS, "")  # before a Ray session starts
    executor = _executor(args)
    report = build_corpus(args.source, args.out, fmt=args.format, executor=executor, **settings)
    _report("shards", report)
    corpus = Corpus(args.out)
    counts = corpus.manifest["counts"]
    print(f"{args.out}: {counts['documents']} documents, {counts['sentences']} sentences, {counts['shards']} shards")
    return 0


def _split_params(items: list[str]) -> tuple[dict, dict]:
    """``--param`` values for the BM25 index (:data:`dsr.indexes.bm25.PARAMS`) and the IVF-PQ index
    (:data:`dsr.indexes.corpus.dense.IVFPQ`); ``bm25.`` or ``ivfpq.`` says which when needed."""
    names = {"bm25": [p.name for p in BM25_PARAMS], "ivfpq": [p.name for p in IVFPQ]}
    bm25, ivfpq = {}, {}
    for name, value in parse_assignments(items, "--param").items():
        group, _, key = name.rpartition(".")
        if group == "bm25" or (not group and key in names["bm25"]):
            bm25[key] = value
        elif group == "ivfpq" or (not group and key in names["ivfpq"]):
            ivfpq[key] = value
        else:
            raise InputError(
                f"unknown parameter {name!r}; BM25: {', '.join(names['bm25'])}; IVF-PQ: {', '.join(names['ivfpq'])}",
                field="--param",
            )
    return bm25, ivfpq


def cmd_index(args: argparse.Namespace) -> int:
    resolve(param_values(args, ENCODE_PARAMS), ENCODE_PARAMS, "")  # as encode_corpus checks them
    if not (args.bm25 or args.dense):
        raise InputError("say what to build: --bm25, --dense or both", field="--bm25")
    if args.part and (args.bm25 or args.index == "ivfpq" or not args.dense):
        raise InputError(
            "--part shares the encoding (--dense, flat) among jobs; build --bm25 and "
            "--index ivfpq in a run without --part once every part is done",
            field="--part",
        )
    bm25_params, ivfpq_params = _split_params(args.param)
    corpus = Corpus(args.corpus)
    executor = _executor(args)
    with executor:  # one Ray session for every stage
        if args.bm25:
            _report("bm25", build_bm25(corpus, bm25_params, executor))
        if args.dense:
            _report("vectors", encode_corpus(corpus, args.model, args.batch_size, executor, args.backend, args.part))
            if args.index == "ivfpq":
                _report("ivfpq", build_ivfpq(corpus, args.model, ivfpq_params, executor, args.backend))
    print(f"{args.corpus}: indexed {len(corpus)} sentences")
    return 0


def _searcher(args: argparse.Namespace, folder: str) -> CorpusSearcher:
    return CorpusSearcher(folder, **param_values(args, SEARCH_PARAMS))


def cmd_search(args: argparse.Namespace) -> int:
    searcher = _searcher(args, args.corpus)
    results = searcher.search(args.query, args.k)
    for text, ranked in zip(args.query, results):
        records = searcher.corpus.records([row for row, _ in ranked])
        if args.json:
            print(
                json.dumps(
                    {
                        "query": text,
                        "results": [
                            {"rank": i, "score": score, "id": r["id"], "title": r["title"], "text": r["text"]}
                            for i, (r, (_, score)) in enumerate(zip(records, ranked), 1)
                        ],
                    },
                    ensure_ascii=False,
                )
            )
            continue
        print(f"# {text}")
        for i, (r, (_, score)) in enumerate(zip(records, ranked), 1):
            print(f"{i}\t{score:.4f}\t{r['id']}\t{r['text']}")
    return 0


def cmd_pool(args: argparse.Namespace) -> int:
    if sum(map(bool, (args.corpus, args.runs, args.phase))) != 1:
        raise InputError(
            "give one of --corpus DIR (search a corpus), --runs RUN ... or --phase NAME (pool runs)", field="--corpus"
        )
    if args.runs or args.phase:
        return _pool_runs(args)
    PoolSettings(depth=args.depth, query=check_strategy(args.query))  # as pool_collection checks them
    searcher = _searcher(args, args.corpus)
    collection = collection_from_args(args)
    pooled = pool_collection(collection, searcher, args.depth, args.query)
    write_benchmark(pooled, args.out)
    print(
        f"{args.out}: {len(pooled)} dialogues, {args.depth} candidates each from {len(searcher.corpus)} sentences ({args.method})"
    )
    return 0


def _pool_runs(args: argparse.Namespace) -> int:
    """``dsr pool COLLECTION --runs A B ... --depth k`` (or ``--phase NAME``)."""
    PoolSettings(depth=args.depth)  # as pool_runs checks it
    collection = collection_from_args(args)
    runs = {}
    if args.runs:
        for path in args.runs:
            run = load_run(path)
            check_run(run, path, collection, allow_mismatch=args.allow_collection_mismatch)
            name = Path(path).name
            runs[name if name not in runs else path] = run
    else:
        runs = _phase_runs(args, collection)
    pooled, rows = pool_runs(collection, runs, args.depth)
    write_benchmark(pooled, args.out)
    total = sum(len(d.candidates) for d in pooled)
    if args.json:
        json.dump(
            {"out": Path(args.out).name, "dialogues": len(pooled), "sentences": total, "depth": args.depth, "runs": rows},
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    width = max(len(r["run"]) for r in rows)
    print(f"{args.out}: {len(pooled)} dialogues, {total} sentences (union of {len(rows)} runs' top {args.depth})")
    print(f"{'run':<{width}}  contributed  unique  share of pool")
    for r in rows:
        print(f"{r['run']:<{width}}  {r['contributed']:>11}  {r['unique']:>6}  {r['share_of_pool']:>13.3f}")
    return 0


def _phase_runs(args: argparse.Namespace, collection: Collection) -> dict[str, Run]:
    """The submissions of a board phase, as runs named ``TEAM/SYSTEM #ID``."""
    board = _board(args)
    phase = board.phases.get_phase(collection.name, args.phase)
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        for sub in board.submissions(phase):
            path = Path(folder) / f"{sub.id}.run"
            path.write_bytes(board.store.get(sub.sha256))
            runs[f"{sub.team.name}/{sub.system} #{sub.id}"] = read_trec_run(path)
    if not runs:
        raise InputError(f"phase {args.phase!r} has no submissions yet", field="--phase")
    return runs
