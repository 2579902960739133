"""``dsr run``, ``dsr rerank`` and ``dsr fuse``: rankings on disk.

Each writes a TREC run (strictly decreasing scores per topic; ties broken by
initial rank, then sentence id, see :mod:`retrieval.run`) and its JSON
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
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from retrieval.cli import (add_allow_mismatch_argument, add_collection_argument, collection_from_args,
                           parse_params)
from retrieval.errors import InputError


def register(subparsers) -> None:
    run = subparsers.add_parser(
        "run", help="rank every dialogue's candidates with a ranker",
        description="Rank each dialogue's candidates with a ranker and write a TREC run "
                    "and its JSON sidecar (configuration, collection hash, versions).")
    add_collection_argument(run)
    run.add_argument("--ranker", required=True, metavar="R",
                     help="initial, bm25, dense, random or fusion")
    run.add_argument("--query", metavar="Q",
                     help="query strategy: last, last2, all, title+all, weighted "
                          "(default: the ranker's)")
    _add_param_argument(run, "ranker parameters, e.g. k1=1.2 b=0.75; for fusion also "
                             "rankers=bm25,dense method=rrf k=60 and RANKER.PARAM=VALUE")
    run.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    run.set_defaults(func=cmd_run)

    rerank = subparsers.add_parser(
        "rerank", help="rescore a run's top k with a cross-encoder or bi-encoder",
        description="Rescore each topic's top K of a run with a model; the rest of the run "
                    "stays below in its original order.")
    add_collection_argument(rerank)
    rerank.add_argument("--run", required=True, metavar="RUN", help="input run file")
    rerank.add_argument("--model", required=True, metavar="M",
                        help="a short name, a hub id, a local folder or dsr:NAME")
    rerank.add_argument("--reranker", default="cross-encoder", metavar="NAME",
                        help="cross-encoder (default) or bi-encoder")
    rerank.add_argument("--top-k", type=int, metavar="K",
                        help="rescore the top K of each topic (default: all)")
    rerank.add_argument("--query", metavar="Q", help="query strategy (default: the reranker's)")
    rerank.add_argument("--batch-size", type=int, metavar="N", help="pairs or texts per batch")
    _add_param_argument(rerank, "other reranker parameters, e.g. max_length=256 "
                                "'text=title: body'")
    rerank.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    add_allow_mismatch_argument(rerank)
    rerank.set_defaults(func=cmd_rerank)

    fuse = subparsers.add_parser(
        "fuse", help="fuse runs (rrf, combsum, combmnz, interp)",
        description="Fuse two or more runs of the same collection. Ties in the fused scores "
                    "are broken by initial rank when --collection is given, else by sentence id.")
    fuse.add_argument("runs", nargs="+", metavar="RUN", help="input run files (two or more)")
    fuse.add_argument("--method", required=True, choices=("rrf", "combsum", "combmnz", "interp"),
                      help="rrf (k), combsum/combmnz (norm), interp (weight, norm; two runs)")
    _add_param_argument(fuse, "k=60 | weight=0.5 | norm=minmax|zscore")
    fuse.add_argument("--collection", metavar="COLLECTION",
                      help="check the runs against this collection and break ties by its "
                           "initial rank (a registered name or a benchmark .jsonl)")
    fuse.add_argument("--out", required=True, metavar="RUN", help="run file to write (.gz: gzipped)")
    add_allow_mismatch_argument(fuse)
    fuse.set_defaults(func=cmd_fuse)


def _add_param_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--param", action="extend", nargs="+", default=[], metavar="NAME=VALUE",
                        help=help_text)


# --- commands ------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from retrieval.rankers import make_ranker

    _check_out(args.out)
    params = parse_params(args.param)
    if args.query is not None:
        params["query"] = args.query
    ranker = make_ranker(args.ranker, **params)   # unknown ranker/parameter: before loading data
    collection = collection_from_args(args)
    run = ranker.rank(collection)
    run.tag = ranker.tag
    # describe() after rank(): rankers record what they resolved (models, indexes) there;
    # what a ranker put in the run's own config is kept too.
    described = {**run.config, **ranker.describe()}
    run.config = _sidecar("run", _command_line("run", args), described,
                          collection=collection.describe(),
                          models=_models(described, params, "bi-encoder"))
    _write(run, args.out)
    return 0


def cmd_rerank(args: argparse.Namespace) -> int:
    from retrieval.rerankers import RERANKERS, make_reranker

    _check_out(args.out)
    if args.reranker not in RERANKERS:
        raise InputError(f"unknown reranker {args.reranker!r}; choose from {', '.join(RERANKERS)}",
                         field="--reranker")
    if args.top_k is not None and args.top_k < 1:
        raise InputError(f"must be >= 1, got {args.top_k}", field="--top-k")
    if args.batch_size is not None and args.batch_size < 1:
        raise InputError(f"must be >= 1, got {args.batch_size}", field="--batch-size")
    params = parse_params(args.param)
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
    if "top_k" in reranker.PARAMS:   # so that describe() records it
        reranker.params["top_k"] = top_k
    collection = collection_from_args(args)
    run = load_run(args.run)
    check_run(run, args.run, collection, allow_mismatch=args.allow_collection_mismatch)
    out = reranker.rerank(collection, run, top_k=top_k)
    described = {**out.config, **reranker.describe()}
    described.setdefault("top_k", top_k)
    kind = "cross-encoder" if args.reranker == "cross-encoder" else "bi-encoder"
    out.config = _sidecar("rerank", _command_line("rerank", args), described,
                          collection=collection.describe(),
                          models=_models(described, params, kind), inputs=[_input(args.run, run)])
    _write(out, args.out)
    return 0


def cmd_fuse(args: argparse.Namespace) -> int:
    import inspect

    from retrieval.rankers.fusion import FUSERS, fuse

    _check_out(args.out)
    if len(args.runs) < 2:
        raise InputError(f"fuse needs at least two runs, got {len(args.runs)}", field="RUN")
    params = parse_params(args.param)
    function, takes = FUSERS[args.method]
    unknown = sorted(set(params) - set(takes))
    if unknown:
        raise InputError(f"--method {args.method} takes {', '.join(takes)}, not "
                         f"{', '.join(unknown)}", field="--param")
    runs = [load_run(path) for path in args.runs]

    collection = None
    if args.collection:
        from retrieval.collections import load_collection

        collection = load_collection(args.collection)
        for path, run in zip(args.runs, runs):
            check_run(run, path, collection, allow_mismatch=args.allow_collection_mismatch)
    else:
        _check_same_collection(args.runs, runs, allow=args.allow_collection_mismatch)
    if not set.intersection(*(set(r.rankings) for r in runs)):
        raise InputError("the runs have no topic in common: are they runs of the same collection?",
                         path=args.runs[-1], field="qid")

    order = {d.id: collection.candidate_ids(d.id) for d in collection} if collection else None
    defaults = {name: p.default for name, p in inspect.signature(function).parameters.items()
                if name in takes}
    fused = fuse(runs, args.method, initial_order=order, **params)
    described = collection.describe() if collection else next(
        (r.config["collection"] for r in runs if isinstance(r.config.get("collection"), dict)), None)
    fusion = {"fusion": args.method, "params": {**defaults, **params},
              "ties": "initial rank, then id" if collection else "id"}
    fused.config = _sidecar("fuse", _command_line("fuse", args), fusion, collection=described,
                            inputs=[_input(p, r) for p, r in zip(args.runs, runs)])
    _write(fused, args.out)
    return 0


# --- reading and checking runs ----------------------------------------------------

def load_run(path: str | Path):
    """Read a run and its sidecar; anything unreadable is an InputError naming the file."""
    from retrieval.run import Run

    path = Path(path)
    if path.is_dir():
        raise InputError("is a folder, not a run file", path=path)
    try:
        return Run.read(path)  # the sidecar's errors name the sidecar
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None


def check_run(run, path: str | Path, collection, allow_mismatch: bool = False) -> None:
    """InputError unless ``run`` (read from ``path``) belongs to ``collection``.

    The sidecar's collection hash, when there is one, must be the
    collection's (``retrieval.run.check_collection_hash``; ``allow_mismatch``
    makes it a warning); every topic must be one of its dialogues and every
    sentence a candidate of it (or of its sentence pool, for open retrieval).
    The error names the sidecar field or the run file's line.
    """
    from retrieval.run import check_collection_hash
    from retrieval.textfiles import read_lines

    check_collection_hash(run, path, collection, allow=allow_mismatch)
    missing_topic = next((q for q in run.rankings if q not in collection), None)
    candidates = {}
    missing_doc = None
    for qid, ranked in run.rankings.items():
        if qid not in collection:
            continue
        candidates[qid] = set(collection.candidate_ids(qid))
        if any(doc not in candidates[qid] for doc, _ in ranked):
            missing_doc = qid
            break
    if missing_topic is None and missing_doc is None:
        return
    pool = collection.sentences() if missing_doc is not None else {}
    # Find the first offending line of the file, so the user can go to it.
    for lineno, line in enumerate(read_lines(path), start=1):
        parts = line.split()
        if len(parts) != 6 or line.startswith("#"):  # '#': an ir_metadata header
            continue
        qid, doc = parts[0], parts[2]
        if qid not in collection:
            raise InputError(f"topic {qid!r} is not a dialogue of collection {collection.name!r}: "
                             "is this a run of another collection?", path=path, line=lineno,
                             field="qid")
        if doc not in candidates.get(qid, ()) and doc not in pool:
            raise InputError(f"sentence {doc!r} is not a candidate of dialogue {qid!r} nor in "
                             f"collection {collection.name!r}: is this a run of another collection?",
                             path=path, line=lineno, field="docid")


def _check_same_collection(paths: list[str], runs: list, allow: bool = False) -> None:
    """Without a collection: the sidecars that name a collection hash must agree
    (``allow``: a warning instead)."""
    from retrieval.run import sidecar_path

    first = None
    for path, run in zip(paths, runs):
        recorded = run.config.get("collection")
        if not (isinstance(recorded, dict) and recorded.get("hash")):
            continue
        if first is None:
            first = (path, recorded)
        elif recorded["hash"] != first[1]["hash"]:
            message = (f"{path} was made for collection {recorded.get('name')!r} (hash {recorded['hash']}) "
                       f"but {first[0]} for {first[1].get('name')!r} (hash {first[1]['hash']})")
            if allow:
                print(f"dsr: warning: {message} (--allow-collection-mismatch)", file=sys.stderr)
                continue
            raise InputError(f"{message}: fuse runs of one collection (or pass "
                             "--allow-collection-mismatch)", path=sidecar_path(path),
                             field="collection.hash")


# --- sidecars ---------------------------------------------------------------------

def _sidecar(command: str, command_line: str, described: dict[str, Any], **parts: Any) -> dict[str, Any]:
    """The sidecar: the stage's describe() at top level (as ``ranker_config`` writes it:
    ``ranker``/``reranker``/``fusion`` and ``params``), then the provenance parts."""
    from retrieval.provenance import package_versions

    return {**described, "command": command, "command_line": command_line,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            **parts, "versions": package_versions()}


def _models(described: dict[str, Any], params: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Resolved models recorded in a describe() (a dict with ``weights_sha256``), else the
    ``model`` parameter resolved now."""
    found: list[dict[str, Any]] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if "spec" in obj and "weights_sha256" in obj:
                if obj not in found:
                    found.append(obj)
                return
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(described)
    if not found:
        spec = described.get("params", {}).get("model") or params.get("model")
        if isinstance(spec, str) and spec:
            from retrieval.models import resolve_model

            found.append(resolve_model(spec, kind).describe())
    return found


def _input(path: str | Path, run) -> dict[str, Any]:
    from retrieval.provenance import sha256_file

    return {"path": str(Path(path).resolve()), "sha256": sha256_file(path), "tag": run.tag,
            "config": {k: v for k, v in run.config.items() if k != "versions"}}


def _command_line(command: str, args: argparse.Namespace) -> str:
    """An equivalent command line, rebuilt from the parsed arguments (so it is the same
    whether dsr ran from a shell or from Python)."""
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
    return shlex.join(words)


# --- output ----------------------------------------------------------------------

def _check_out(out: str | Path) -> None:
    if Path(out).is_dir():
        raise InputError("is a folder; --out takes a run file name", path=out, field="--out")
    __import__("retrieval.atomic").atomic.check_output_path(out, "--out")  # parent a file: exit 2


def _write(run, out: str | Path) -> None:
    """Write the run and its sidecar as a pair: both go to temporary names beside
    ``out`` first, so a failure leaves the previous pair (or nothing) in place;
    then the run is renamed into place, then the sidecar (which records the run's
    sha256), so a kill between the two leaves a stale sidecar that readers detect."""
    import contextlib
    import os

    from retrieval.run import sidecar_path

    out = Path(out)
    # the temporary name keeps a .gz ending: Run.write gzips by name
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial" + (".gz" if out.name.endswith(".gz") else ""))
    try:
        run.write(tmp)
        os.replace(tmp, out)
        os.replace(sidecar_path(tmp), sidecar_path(out))
    except OSError as err:
        raise InputError(f"cannot write: {err.strerror or err}", path=out, field="--out") from None
    finally:
        for leftover in (tmp, sidecar_path(tmp)):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
    lines = sum(len(r) for r in run.rankings.values())
    print(f"dsr: wrote {out} ({len(run.rankings)} topics, {lines} lines) and its sidecar "
          f"{Path(str(out) + '.json').name}", file=sys.stderr)

