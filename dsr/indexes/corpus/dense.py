"""Dense indexes over a sharded corpus (``dsr corpus index --dense``).

Stages, each resumable per shard (done-markers, see dsr.indexes.corpus.layout),
under ``DIR/dense/MODEL@WEIGHTS/``:

1. **encode**: each shard's sentences -> ``vectors/shard-N.npy`` (float32,
   L2-normalised, row order = the shard's). In-process this is
   :func:`dsr.indexes.embeddings.encode` without its text-keyed cache (the vector
   files *are* the corpus's cache: a lookup table of 10^8 text digests would
   not fit in memory); on Ray it is a pool of actors, one per node, that keep
   the model loaded and encode whole shards (dsr.indexes.corpus.distributed).
2. **flat**: nothing more to build. Exact search reads every vector shard
   (memory-mapped), scores it with one matrix product and merges the shards'
   top k; it is the reference that IVF-PQ's recall is measured against.
3. **ivfpq**: FAISS ``IndexIVFPQ`` (inner product): trained once on a sample
   of ``train_size`` vectors drawn evenly (seeded) from all shards
   (``ivfpq/trained.faiss``); each shard's vectors are added to a copy of the
   trained index with their global row as id (``ivfpq/shard-N.faiss``, one
   unit each, in parallel); the shards are then merged on disk with
   ``faiss.contrib.ondisk.merge_ondisk`` into ``ivfpq/index.faiss`` plus
   ``ivfpq/index.ivfdata`` (the inverted lists, memory-mapped at search time,
   loaded with ``IO_FLAG_ONDISK_SAME_DIR`` so the folder can move), and the
   shard files are removed (the merged index's marker keys on what they were
   added from, so a rerun reuses it without them).

IVF-PQ parameters: ``nlist`` (clusters; default ``4 sqrt(N)``, at most the
training sample / 39), ``train_size`` (default 39 per list and at least
100,000, so the lists grow with the corpus), ``m`` (sub-quantizers: bytes per vector with 8-bit
codes; must divide the dimension, default 48 for 384 dimensions), ``nbits``
(default 8, lowered for tiny corpora), and at search time ``nprobe`` (lists
visited) and ``refine`` (re-score the top ``refine x k`` PQ candidates
exactly with the stored vectors; 0 = PQ scores only). bench/bench_corpus.py
measures recall@50 against flat and memory per sentence.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_write, write_json
from dsr.core.errors import InputError
from dsr.core.models import ResolvedModel, resolve_model
from dsr.core.params import Param, resolve
from dsr.core.provenance import package_versions
from dsr.indexes.backends import CHOICES as BACKEND_CHOICES
from dsr.indexes.backends import export as export_model
from dsr.indexes.backends import resolve_backend
from dsr.indexes.corpus.bm25 import _run_stage
from dsr.indexes.corpus.build import StageReport
from dsr.indexes.corpus.distributed import Executor
from dsr.indexes.corpus.layout import (
    Corpus,
    check_unit,
    file_sha256,
    key_hash,
    marker_path,
    read_json,
    read_marker,
    write_marker,
)
from dsr.indexes.embeddings import DEFAULT_MODEL, encode, near_depth, settled_top_k
from dsr.indexes.manifest import safe_name
from dsr.indexes.topk import merge_top_k, top_rows

#: how a corpus is encoded (``encode_corpus``; ``dsr corpus index`` flags; ``index`` says
#: whether ``build_ivfpq`` follows)
ENCODE_PARAMS = (
    Param("model", DEFAULT_MODEL, "str", "bi-encoder (dense)", metavar="M"),
    Param("index", "flat", "str", "flat (vectors only, exact search) or ivfpq (also an IVF-PQ index)", choices=("flat", "ivfpq")),
    Param("batch_size", 64, "int", "encoding batch size", low=1, metavar="N"),
    Param(
        "backend",
        "torch",
        "str",
        "encoder backend (the vectors of each are kept apart) (torch: exact; auto: the "
        "fastest this CPU has, openvino-int8 where it has VNNI or AMX)",
        choices=BACKEND_CHOICES,
    ),
)


KINDS = ("flat", "ivfpq")
#: the parameters of an IVF-PQ index
IVFPQ = (
    Param("nlist", None, "int", "inverted lists (none: 4 sqrt(sentences), at most what the sample trains)", low=1),
    Param("m", 48, "int", "sub-quantisers per vector", low=1),
    Param("nbits", 8, "int", "bits per sub-quantiser code", low=1),
    Param(
        "train_size",
        None,
        "int",
        "vectors sampled to train the quantisers (none: 39 per list, at least 100,000: the sample grows with the lists)",
        low=1,
        optional=True,
    ),
    Param("seed", 0, "int", "seed of the training sample"),
)
SEARCH = {"nprobe": 32, "refine": 0}
#: training vectors per inverted list (FAISS warns below 39), and the smallest default sample
TRAIN_PER_LIST, TRAIN_MIN = 39, 100_000


def _faiss() -> ModuleType:
    """faiss, imported on first use, in this one place (importing this module does not load it)."""
    import faiss
    import faiss.contrib.ondisk

    return faiss


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send what C code (faiss) prints on stdout to stderr: stdout carries results."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def model_folder(corpus: Corpus, model: ResolvedModel, backend: str = "torch") -> Path:
    """``dense/MODEL@WEIGHTS16``, plus ``+BACKEND`` for a fast backend: its vectors differ from
    torch's in the last digits, so they (and their IVF-PQ index) are kept apart."""
    return corpus.folder / "dense" / safe_name(model.key if backend == "torch" else f"{model.key}+{backend}")


def _versions(*names: str) -> dict[str, str | None]:
    versions = package_versions(names)
    versions.pop("python", None)
    return versions


def check_part(part: Any) -> tuple[int, int] | None:
    """``part`` as ``(k, n)`` (1 <= k <= n; from ``"k/n"`` or a pair), None for the whole corpus."""
    if part is None:
        return None
    try:
        k, n = (int(x) for x in (part.split("/") if isinstance(part, str) else part))
    except (TypeError, ValueError):
        k = n = 0
    if not 1 <= k <= n:
        raise InputError(f"part must be K/N with 1 <= K <= N (e.g. 2/4), got {part!r}", field="part")
    return k, n


def encode_corpus(
    corpus: Corpus,
    model: str | ResolvedModel = DEFAULT_MODEL,
    batch_size: int = 64,
    executor: Executor | None = None,
    backend: str = "torch",
    part: Any = None,
) -> StageReport:
    """Vectors of every shard not yet encoded (resumable), with ``backend`` (``torch``, a fast
    one of :mod:`dsr.indexes.backends`, or ``auto``: the fastest this CPU has).

    ``part`` ``(k, n)`` (or ``"k/n"``) encodes only the shards whose number is ``k - 1``
    modulo ``n``: ``n`` jobs (on as many Ray clusters, nodes or processes, over one shared
    corpus folder) each encode their share, and a run without ``part`` afterwards finds every
    shard done and writes ``model.json`` (written by a part only when it completes the corpus)."""

    start = time.perf_counter()
    part = check_part(part)
    resolve({"batch_size": batch_size, "backend": backend}, ENCODE_PARAMS, "")  # (a model may be resolved)
    backend = resolve_backend(backend)
    resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, "bi-encoder")
    folder = model_folder(corpus, resolved, backend) / "vectors"
    folder.mkdir(parents=True, exist_ok=True)
    key = {
        "stage": "encode",
        "corpus": corpus.key,
        "model": resolved.describe(),
        "versions": _versions("sentence-transformers", "transformers", "torch"),
    }
    if backend != "torch":
        key.update(backend=backend, versions=_versions("sentence-transformers", "transformers", "torch", "openvino", "nncf"))
        export_model(resolved, "bi-encoder", backend)  # once, before any worker loads it
    report = StageReport()
    todo = []
    for number, name in enumerate(corpus.names):
        if read_marker(folder, name, key) is not None:
            report.reused.append(f"vectors/{name}")
        elif part is None or number % part[1] == part[0] - 1:
            todo.append(number)
    if todo:
        _encode_shards(corpus, todo, folder, key, resolved, batch_size, backend, executor or Executor(0), report)
    if part is not None and len(report.built) + len(report.reused) < len(corpus.names):
        report.seconds = time.perf_counter() - start  # other parts' shards are still to come
        return report
    write_json(
        folder.parent / "model.json",
        {
            "model": resolved.describe(),
            "key": key_hash(key),
            "corpus": corpus.key,
            "backend": backend,
            "dimension": int(_shard_vectors(folder, corpus.names[0]).shape[1]),
        },
    )
    report.seconds = time.perf_counter() - start
    return report


def _encode_shards(
    corpus: Corpus,
    todo: list[int],
    folder: Path,
    key: dict[str, Any],
    resolved: ResolvedModel,
    batch_size: int,
    backend: str,
    executor: Any,
    report: StageReport,
) -> None:
    """The vectors of the shards ``todo``, each written with its marker as it comes."""
    from tqdm import tqdm

    with (
        executor,
        tqdm(
            total=sum(corpus.shards[n]["sentences"] for n in todo),
            unit="sent",
            desc=f"encoding ({resolved.name})",
            disable=None,
        ) as bar,
    ):  # a terminal only
        files = [corpus.verified(n) for n in todo]
        counts = [corpus.shards[n]["sentences"] for n in todo]
        for position, vectors in executor.encode_parquet(files, counts, resolved, batch_size, backend):
            number = todo[position]
            name = corpus.names[number]
            path = folder / f"{name}.npy"
            with atomic_write(path, "wb") as handle:
                np.save(handle, np.ascontiguousarray(vectors, dtype=np.float32))
            write_marker(folder, name, key, [path], name=name, sentences=len(vectors))
            report.built.append(f"vectors/{name}")
            bar.update(len(vectors))


def _shard_vectors(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / f"{name}.npy", mmap_mode="r")


def check_ivfpq(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` checked against :data:`IVFPQ`, its defaults filled in."""
    return resolve(params, IVFPQ, "an IVF-PQ index")


def _sample_rows(corpus: Corpus, size: int, seed: int) -> np.ndarray:
    n = len(corpus)
    if size >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False)).astype(np.int64)


def ivfpq_sample_size(sentences: int, p: dict[str, Any]) -> int:
    """Training vectors to sample: ``train_size``, or by default 39 per list (FAISS warns
    below that) and at least 100,000, so that the lists grow with the corpus (a fixed
    100,000 capped them at 2,564); never more than the corpus."""
    nlist = p["nlist"] or max(1, round(4 * math.sqrt(sentences)))
    return min(sentences, p["train_size"] or max(TRAIN_MIN, TRAIN_PER_LIST * nlist))


def ivfpq_settings(sentences: int, sample: int, dim: int, p: dict[str, Any]) -> dict[str, Any]:
    """The index's nlist, m and nbits for ``sentences`` and a training ``sample`` of that size:
    nlist ``4 sqrt(N)`` unless given, at most sample / 39; nbits lowered for tiny samples; m
    the largest divisor of the dimension up to the one asked for."""
    nbits = min(p["nbits"], max(1, int(math.log2(sample / 39)) if sample >= 78 else 1))
    nlist = p["nlist"] or max(1, round(4 * math.sqrt(sentences)))
    nlist = max(1, min(nlist, sample // TRAIN_PER_LIST or 1))
    m = max(d for d in range(1, min(p["m"], dim) + 1) if dim % d == 0)
    return {"nlist": nlist, "m": m, "nbits": nbits, "train_size": sample, "seed": p["seed"], "dimension": dim}


def gather(corpus: Corpus, folder: Path, rows: np.ndarray) -> np.ndarray:
    """Vectors of global ``rows`` (sorted) from the memory-mapped shard files."""
    parts = []
    shards = np.searchsorted(corpus.offsets, rows, side="right") - 1
    for number in np.unique(shards):
        local = rows[shards == number] - corpus.offsets[number]
        parts.append(np.asarray(_shard_vectors(folder, corpus.names[number])[local]))
    return np.concatenate(parts).astype(np.float32)


def add_shard(corpus_dir: str, folder: str | Path, number: int, key: dict[str, Any]) -> dict[str, Any]:
    """One unit: add shard ``number``'s vectors (ids = global rows) to a copy of the trained index."""
    faiss = _faiss()

    corpus = Corpus(corpus_dir)
    folder = Path(folder)
    index = faiss.read_index(str(folder / "ivfpq" / "trained.faiss"))
    name = corpus.names[number]
    vectors = np.ascontiguousarray(_shard_vectors(folder / "vectors", name), dtype=np.float32)
    rows = np.arange(corpus.offsets[number], corpus.offsets[number + 1], dtype=np.int64)
    index.add_with_ids(vectors, rows)
    path = folder / "ivfpq" / f"{name}.faiss"
    tmp = path.with_name(f".{path.name}.tmp")
    faiss.write_index(index, str(tmp))  # faiss writes by name: rename for atomicity
    tmp.replace(path)
    return write_marker(folder / "ivfpq", name, key, [path], name=name, sentences=len(rows))


def build_ivfpq(
    corpus: Corpus,
    model: str | ResolvedModel = DEFAULT_MODEL,
    params: dict[str, Any] | None = None,
    executor: Executor | None = None,
    backend: str = "torch",
) -> StageReport:
    """Train (on a sample), add every shard (in parallel), merge on disk. Needs the vectors."""
    _faiss()  # imported (or its absence said) before any work

    start = time.perf_counter()
    p = check_ivfpq(dict(params or {}))
    resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, "bi-encoder")
    folder = model_folder(corpus, resolved, resolve_backend(backend))
    info = read_json(folder / "model.json")
    if info is None or info.get("corpus") != corpus.key:
        raise InputError("the corpus has no vectors for this model yet: run `dsr corpus index DIR --dense`", path=corpus.folder)
    out = folder / "ivfpq"
    out.mkdir(parents=True, exist_ok=True)
    report = StageReport()
    dim = int(info["dimension"])
    sample = _sample_rows(corpus, ivfpq_sample_size(len(corpus), p), p["seed"])
    settings = ivfpq_settings(len(corpus), len(sample), dim, p)
    train_key = {
        "stage": "ivfpq-train",
        "vectors": info["key"],
        "corpus": corpus.key,
        "settings": settings,
        "versions": _versions("faiss-cpu"),
    }
    if read_marker(out, "trained", train_key) is None:
        _train_ivfpq(gather(corpus, folder / "vectors", sample), out, train_key, settings, dim, p["seed"])
        report.built.append("ivfpq/trained")
    else:
        report.reused.append("ivfpq/trained")
    add_key = {**train_key, "stage": "ivfpq-add", "trained": file_sha256(out / "trained.faiss")}
    # the merged index is determined by what the shards are added from: its marker keys on that,
    # so a finished index needs no shard files (they are removed after the merge)
    merged_key = {**add_key, "stage": "ivfpq-merge"}
    if read_marker(out, "index", merged_key) is None:
        executor = executor or Executor(0)
        with executor:
            _run_stage(executor, _AddShard(str(folder)), corpus, out, add_key, report, "ivfpq shards")
        _merge_ivfpq(corpus, out, merged_key, settings)
        report.built.append("ivfpq/index")
        _remove_shard_files(out, corpus.names)
    else:
        report.reused.append("ivfpq/index")
    report.seconds = time.perf_counter() - start
    return report


def _train_ivfpq(vectors: np.ndarray, out: Path, key: dict[str, Any], settings: dict[str, Any], dim: int, seed: int) -> None:
    """The IVF-PQ index trained on the sample's ``vectors``, written with its marker."""
    faiss = _faiss()
    index = faiss.IndexIVFPQ(
        faiss.IndexFlatIP(dim), dim, settings["nlist"], settings["m"], settings["nbits"], faiss.METRIC_INNER_PRODUCT
    )
    index.cp.seed = seed
    index.pq.cp.seed = seed
    with stdout_to_stderr():  # k-means warnings
        index.train(vectors)
    tmp = out / ".trained.faiss.tmp"
    faiss.write_index(index, str(tmp))
    tmp.replace(out / "trained.faiss")
    write_marker(out, "trained", key, [out / "trained.faiss"], name="trained")


def _merge_ivfpq(corpus: Corpus, out: Path, key: dict[str, Any], settings: dict[str, Any]) -> None:
    """The shards' IVF-PQ lists merged on disk into ``index.faiss`` and ``index.ivfdata``."""
    faiss = _faiss()
    merge_ondisk = faiss.contrib.ondisk.merge_ondisk
    trained = faiss.read_index(str(out / "trained.faiss"))
    for stale in ("index.faiss", "index.ivfdata"):
        (out / stale).unlink(missing_ok=True)
    with stdout_to_stderr():  # merge_ondisk prints its progress
        merge_ondisk(trained, [str(out / f"{n}.faiss") for n in corpus.names], str(out / "index.ivfdata"))
    faiss.write_index(trained, str(out / "index.faiss"))
    write_marker(
        out,
        "index",
        key,
        [out / "index.faiss", out / "index.ivfdata"],
        name="index",
        settings=settings,
        sentences=len(corpus),
        corpus=corpus.key,
    )


def _remove_shard_files(out: Path, names: Sequence[str]) -> None:
    """The per-shard indexes (4-6x the merged index on disk) once the merge is written:
    each marker first, so a kill in between leaves a shard that is rebuilt, never one trusted."""
    for name in names:
        for path in (marker_path(out, name), out / f"{name}.faiss"):
            path.unlink(missing_ok=True)


class _AddShard:
    """``add_shard`` with the model folder bound (a picklable callable for Ray tasks)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __call__(self, corpus_dir: str, number: int, key: dict[str, Any]) -> dict[str, Any]:
        return add_shard(corpus_dir, self.folder, number, key)


class ShardedDense:
    """Dense search over a corpus: exact (``flat``) over the vector shards, or the merged IVF-PQ."""

    def __init__(
        self,
        corpus: Corpus,
        model: str | ResolvedModel = DEFAULT_MODEL,
        kind: str = "flat",
        nprobe: int = SEARCH["nprobe"],
        refine: int = SEARCH["refine"],
        batch_size: int = 64,
        backend: str = "torch",
    ) -> None:
        if kind not in KINDS:
            raise InputError(f"unknown index kind {kind!r}; choose from {', '.join(KINDS)}", field="index")
        self.corpus, self.kind, self.batch_size = corpus, kind, batch_size
        self.nprobe, self.refine = int(nprobe), int(refine)
        self.model = model if isinstance(model, ResolvedModel) else resolve_model(model, "bi-encoder")
        self.backend = resolve_backend(backend)  # queries are encoded as the sentences were
        self.folder = model_folder(corpus, self.model, self.backend)
        info = read_json(self.folder / "model.json")
        if info is None or info.get("corpus") != corpus.key:
            raise InputError(
                f"the corpus has no vectors for {self.model.name} (or they are out of date): run `dsr corpus index DIR --dense`",
                path=corpus.folder,
            )
        rebuild = f"dsr corpus index {corpus.folder} --dense --model {self.model.name}"
        for name in corpus.names:
            check_unit(self.folder / "vectors", name, rebuild)
        self.vectors = [_shard_vectors(self.folder / "vectors", n) for n in corpus.names]
        self.index: Any = None  # a faiss index, read on first use
        if kind == "ivfpq":
            faiss = _faiss()

            path = self.folder / "ivfpq" / "index.faiss"
            marker = read_json(self.folder / "ivfpq" / "index.done.json")
            if not path.exists() or marker is None or marker.get("corpus") != corpus.key:
                raise InputError(
                    "the corpus has no IVF-PQ index (or it is out of date): run `dsr corpus index DIR --dense --index ivfpq`",
                    path=corpus.folder,
                )
            check_unit(self.folder / "ivfpq", "index", f"{rebuild} --index ivfpq")
            with stdout_to_stderr():  # faiss announces the on-disk file name on C stdout
                self.index = faiss.read_index(str(path), faiss.IO_FLAG_ONDISK_SAME_DIR)
            self.index.nprobe = self.nprobe

    def encode(self, queries: Sequence[str]) -> np.ndarray:
        return encode(list(queries), self.model, self.batch_size, desc="encoding queries", backend=self.backend)

    def search_vectors(self, queries: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Top ``k`` (global row, score) per query vector, best first (ties by row)."""

        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if self.kind == "flat":
            return self._flat_many(queries, k)
        depth = k * self.refine if self.refine else k
        scores, rows = self.index.search(queries, depth)
        out = []
        for q, srow, rrow in zip(queries, scores, rows):
            keep = rrow >= 0
            rrow, srow = rrow[keep].astype(np.int64), srow[keep].astype(np.float64)
            if self.refine:
                srow = self.exact_scores(q, rrow)
            out.append(merge_top_k(rrow, srow, k))
        return out

    def _flat_many(self, queries: np.ndarray, k: int, near: bool = False) -> list[list[tuple[int, float]]]:
        """Exact top ``k`` of every query: each shard read from disk once for the whole batch,
        then scored query by query (a matrix-vector product each: the same float sums as one
        query alone, so a batch never reorders near-ties), each query's top k kept with every
        row tied with its k-th score, so the merge breaks ties by row like one index.
        ``near``: every row within NEAR_TIE of the k-th kept too, in score order, not cut to
        ``k`` (what :func:`dsr.indexes.embeddings.settled_top_k` settles)."""
        pick = near_depth if near else top_rows
        rows: list[list[np.ndarray]] = [[] for _ in queries]
        scores: list[list[np.ndarray]] = [[] for _ in queries]
        for number, mapped in enumerate(self.vectors):
            vectors = np.asarray(mapped) if len(queries) > 1 else mapped
            for q, query in enumerate(queries):
                s = np.asarray(vectors @ query, dtype=np.float64)
                top = pick(s, k)
                rows[q].append(top + self.corpus.offsets[number])
                scores[q].append(s[top])
        out = []
        for found, scored in zip(rows, scores):
            every, values = np.concatenate(found).astype(np.int64), np.concatenate(scored)
            if near:  # within the margin of the whole's k-th (a shard's margin held it)
                keep = near_depth(values, k)
                every, values = every[keep], values[keep]
            out.append(merge_top_k(every, values, len(every) if near else k))
        return out

    def exact_scores(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        order = np.argsort(rows, kind="stable")
        vectors = gather(self.corpus, self.folder / "vectors", rows[order])
        out = np.empty(len(rows), dtype=np.float64)
        out[order] = vectors @ query
        return out

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        """Top ``k`` (global row, score) per query text, best first. Flat on the exact backend:
        near ties settled in float64 (:func:`dsr.indexes.embeddings.settled_top_k`; ties then
        by row), so the top ``k`` and its order are the same on every machine; IVF-PQ and the
        fast backends rank as they score (approximate, or within a stated tolerance)."""
        vectors = self.encode(queries)
        if self.kind != "flat" or self.backend != "torch":
            return self.search_vectors(vectors, k)
        found = self._flat_many(np.ascontiguousarray(vectors, dtype=np.float32), k, near=True)
        return settled_top_k(found, list(queries), self.texts, k, self.model, self.backend)

    def texts(self, rows: Sequence[int]) -> list[str]:
        """The sentence texts of global ``rows``, in the order given."""
        return [str(record["text"]) for record in self.corpus.records(rows)]
