"""Sentence embeddings with an on-disk cache keyed by model and text.

``encode(texts, model)`` returns float32, L2-normalised vectors (one row per
text, in order) and encodes only what the cache does not hold. The cache is
``DSR_HOME/indexes/embeddings/MODEL@WEIGHTS16/``: the model is identified by
its name and the first 16 hex digits of its weights' sha256 (so a retrained
``dsr:NAME`` never reuses old vectors), a text by the sha256 of its UTF-8
bytes (so re-runs, query texts and other collections share vectors).

On disk the cache is a set of shards, each ``S.vectors.npy`` (float32
rows), ``S.keys.npy`` (32-byte digests as uint8 rows) and ``S.shard.json``
(the two files' sha256, rows and width), plus a manifest (model, vector
size, normalisation, sentence-transformers and transformers versions: an
upgrade may change vectors, so it starts a fresh cache). New vectors are
written as new shards, each file atomically and the shard manifest last, so
a reader never sees a half shard, an interrupted encoding keeps what it
finished, and two processes can add to one cache. A shard whose files fail
their checksums (empty, truncated, edited) or hold non-finite vectors is
never used: it is removed, with a notice on stderr, and its texts are
encoded again. Many shards are merged into one now and then.

``stats`` counts what was encoded and what was reused, for tests and the
benchmark.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_write, write_json
from dsr.core.home import require_writable
from dsr.core.models import ResolvedModel, load_float64_sentence_transformer, load_sentence_transformer, resolve_model
from dsr.indexes.backends import export_identity, load_fast
from dsr.indexes.manifest import cached_build, checksum, expected_manifest, failed_checksums, index_folder, safe_name
from dsr.indexes.topk import merge_top_k, top_rows

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: texts given to the model at once (a fast backend sorts each such call by length)
CHUNK = 2048
#: texts encoded between two shard writes (an interrupted run keeps these): four chunks, so a
#: cold SIGIR-sized run writes 6 shards for its 42,300 candidates, not 21 that are then merged
#: (issue 44: the merge re-read, re-wrote and re-hashed 65 MB, ~1.5 CPU s with the extra writes)
SHARD_ROWS = 4 * CHUNK
#: merge the shards when a cache has more than this many
MAX_SHARDS = 16
PACKAGES = ("sentence-transformers", "transformers")
#: suffix of a shard's manifest (its files' sha256), written last
SHARD = ".shard.json"


@dataclass
class EncodeStats:
    """What :func:`encode` did since the last ``reset()``.

    ``encoded``: texts run through the model; ``reused``: distinct texts
    served from the cache; ``calls``: calls to encode.
    """

    encoded: int = 0
    reused: int = 0
    calls: int = 0

    def reset(self) -> None:
        self.encoded = self.reused = self.calls = 0


stats = EncodeStats()


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """The cache folder of one model; vectors looked up by text digest."""

    def __init__(self, model: ResolvedModel, backend: str = "torch") -> None:
        self.model = model
        self.backend = backend
        self.dtype = np.float64 if backend == FLOAT64 else np.float32
        self.folder = index_folder("embeddings", cache_name(model, backend))
        self._lookup: dict[bytes, tuple[int, int]] = {}
        self._shards: list[np.ndarray] = []
        self._names: list[str] = []

    def open(self) -> None:
        """Create the folder (or start afresh when its manifest is stale), then read it."""
        params: dict[str, object] = {"normalize": True, "dtype": np.dtype(self.dtype).name}
        if self.backend == FLOAT64:  # settle_near_ties': each text encoded alone, in float64
            params.update(backend=FLOAT64, batch=1)
        elif self.backend != "torch":  # the torch caches' manifests stay as they were
            # vectors of one export: a re-made export (another calibration) starts a fresh cache
            params.update(backend=self.backend, export=export_identity(self.model, "bi-encoder", self.backend))
        expected = expected_manifest(
            "embeddings",
            inputs=self.model.key,
            model=self.model.describe(),
            params={**params, "shards": "sha256"},
            packages=PACKAGES,
        )
        cached_build("embeddings", self.folder.name, expected, lambda folder: None, announce_new=False)
        self.refresh()

    def refresh(self) -> None:
        """Read shards written since the last look (also by other processes)."""
        names = sorted(p.name[: -len(SHARD)] for p in self.folder.glob(f"*{SHARD}"))
        for name in names:
            if name in self._names:
                continue
            try:
                shard = self._read_shard(name)
            except FileNotFoundError:
                continue  # merged away by another process meanwhile
            if shard is None:
                continue
            keys, vectors = shard
            index = len(self._shards)
            self._shards.append(vectors)
            self._names.append(name)
            for row, key in enumerate(keys):
                self._lookup.setdefault(key.tobytes(), (index, row))

    def _read_shard(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The shard's keys and vectors, or None (notice on stderr, files removed) when it
        fails its checksums or holds vectors that are not finite."""

        files = {"keys": f"{name}.keys.npy", "vectors": f"{name}.vectors.npy"}
        try:
            info = json.loads((self.folder / f"{name}{SHARD}").read_text(encoding="utf-8"))
            recorded = {files[k]: v for k, v in info["sha256"].items()}
        except FileNotFoundError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._discard(name, "its manifest is unreadable")
            return None
        bad = failed_checksums(self.folder, files.values(), recorded)
        if bad:
            if not (self.folder / f"{name}{SHARD}").exists():
                raise FileNotFoundError(name)  # merged away while we read it
            self._discard(name, f"{', '.join(bad)} fails its checksum")
            return None
        try:
            keys = np.load(self.folder / files["keys"])
            vectors = np.load(self.folder / files["vectors"], mmap_mode="r")
        except (ValueError, OSError) as err:
            self._discard(name, f"unreadable ({err})")
            return None
        if (
            keys.ndim != 2
            or keys.shape[1] != 32
            or vectors.ndim != 2
            or len(keys) != len(vectors)
            or len(keys) != info.get("rows")
            or not np.isfinite(vectors).all()
        ):
            self._discard(name, "its vectors are not finite or do not match its keys")
            return None
        return keys, vectors

    def _discard(self, name: str, why: str) -> None:
        print(
            f"dsr: embedding cache shard {name!r} in {self.folder} is damaged ({why}); "
            "not using it, its texts will be encoded again",
            file=sys.stderr,
        )
        for suffix in (SHARD, ".keys.npy", ".vectors.npy"):
            try:
                (self.folder / f"{name}{suffix}").unlink()
            except OSError:
                pass
        return None

    def __contains__(self, key: bytes) -> bool:
        return key in self._lookup

    def __len__(self) -> int:
        return len(self._lookup)

    def get(self, keys: Sequence[bytes]) -> np.ndarray:
        """Vectors of ``keys`` (all must be present), in order."""
        where = [self._lookup[k] for k in keys]
        dim = self._shards[where[0][0]].shape[1] if where else 0
        out = np.empty((len(keys), dim), dtype=self.dtype)
        by_shard: dict[int, list[tuple[int, int]]] = {}
        for i, (shard, row) in enumerate(where):
            by_shard.setdefault(shard, []).append((i, row))
        for shard, pairs in by_shard.items():
            targets, rows = zip(*pairs)
            out[list(targets)] = self._shards[shard][list(rows)]
        return out

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Write one new shard (vectors first, keys last: the keys file marks it complete)."""
        name = f"{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with atomic_write(self.folder / f"{name}.vectors.npy", "wb") as handle:
            np.save(handle, np.ascontiguousarray(vectors, dtype=self.dtype))
        with atomic_write(self.folder / f"{name}.keys.npy", "wb") as handle:
            # uint8 rows, not numpy "S32": S strings drop trailing NUL bytes of digests.
            np.save(handle, np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 32))
        # the shard manifest last: it marks the shard complete and carries its checksums
        write_json(
            self.folder / f"{name}{SHARD}",
            {
                "rows": len(keys),
                "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0,
                "sha256": {part: checksum(self.folder / f"{name}.{part}.npy") for part in ("keys", "vectors")},
            },
        )
        self.refresh()

    def compact(self) -> None:
        """Merge all shards into one when there are more than MAX_SHARDS."""
        if len(self._names) <= MAX_SHARDS:
            return
        keys = list(self._lookup)
        vectors = self.get(keys)
        old = list(self._names)
        self._lookup, self._shards, self._names = {}, [], []
        self.add(keys, vectors)
        for name in old:
            # manifest first: a reader that lists shards now skips this one entirely.
            for suffix in (SHARD, ".keys.npy", ".vectors.npy"):
                try:
                    (self.folder / f"{name}{suffix}").unlink()
                except FileNotFoundError:
                    pass


_caches: dict[str, EmbeddingCache] = {}


def cache_name(model: ResolvedModel, backend: str = "torch") -> str:
    """The cache folder's name: ``MODEL@WEIGHTS16``, plus ``+BACKEND`` for a fast backend
    (its vectors differ from torch's in the last digits, so they are kept apart)."""
    return safe_name(model.key if backend == "torch" else f"{model.key}+{backend}")


def _cache_for(model: ResolvedModel, backend: str = "torch") -> EmbeddingCache:
    folder = str(index_folder("embeddings", cache_name(model, backend)))
    cache = _caches.get(folder)
    if cache is None:
        cache = _caches[folder] = EmbeddingCache(model, backend)
        cache.open()
    elif not cache.folder.is_dir():  # removed (or DSR_HOME emptied) since: start again
        cache = _caches[folder] = EmbeddingCache(model, backend)
        cache.open()
    else:
        cache.refresh()
    return cache


def encode(
    texts: Sequence[str],
    model_spec: str | ResolvedModel = DEFAULT_MODEL,
    batch_size: int = 64,
    *,
    cache: bool = True,
    progress: bool | None = None,
    desc: str = "encoding",
    backend: str = "torch",
    threads: int | None = None,
) -> np.ndarray:
    """Embed ``texts``: float32 rows of unit length, in the order given.

    Only texts missing from the cache are encoded (each distinct text once);
    ``stats`` counts them. ``cache=False`` encodes every distinct text
    (once: a repeat gets the same row) and stores nothing. ``progress`` (default: when 256 or more texts need encoding)
    shows a tqdm bar on stderr. ``backend``: ``torch`` (exact) or a fast
    one of :mod:`dsr.indexes.backends`, with its own cache. ``threads``: CPU threads of a fast
    backend (None: every core; a Ray actor passes the CPUs it was given).
    """
    stats.calls += 1
    model = model_spec if isinstance(model_spec, ResolvedModel) else resolve_model(model_spec, "bi-encoder")
    texts = [str(t) for t in texts]
    if not cache:  # each distinct text encoded once (the cache's keys do this below)
        stats.encoded += len(texts)
        distinct, where = distinct_texts(texts)
        vectors = _run_model(model, distinct, batch_size, progress, desc, backend, threads)
        return vectors if len(distinct) == len(texts) else vectors[where]
    keys = [text_key(t) for t in texts]
    store = _cache_for(model, backend)
    missing: dict[bytes, str] = {}
    for key, text in zip(keys, texts):
        if key not in store and key not in missing:
            missing[key] = text
    stats.reused += len(set(keys)) - len(missing)
    if missing:
        require_writable(store.folder)
        from tqdm import tqdm

        # By default only work long enough to watch gets a bar.
        show = progress if progress is not None else len(missing) >= 256
        todo = list(missing.items())
        with tqdm(total=len(todo), desc=f"{desc} ({model.name})", unit="text", disable=not show or None, file=sys.stderr) as bar:
            for start in range(0, len(todo), SHARD_ROWS):
                part = todo[start : start + SHARD_ROWS]
                done = []
                for offset in range(0, len(part), CHUNK):
                    chunk = part[offset : offset + CHUNK]
                    done.append(_run_model(model, [t for _, t in chunk], batch_size, False, desc, backend, threads))
                    bar.update(len(chunk))
                store.add([k for k, _ in part], np.concatenate(done))
                stats.encoded += len(part)
        store.compact()
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    return store.get(keys)


def _run_model(
    model: ResolvedModel,
    texts: list[str],
    batch_size: int,
    progress: bool | None,
    desc: str,
    backend: str = "torch",
    threads: int | None = None,
) -> np.ndarray:
    """Unit vectors of ``texts`` in order, each text given to the model as it is."""
    if not texts:
        return np.zeros((0, dimension(model)), dtype=np.float32)
    if backend != "torch":
        encoder = load_fast(model, "bi-encoder", backend, threads=threads)
    else:
        encoder = load_sentence_transformer(model)
    vectors = encoder.encode(
        texts,
        batch_size=int(batch_size),
        show_progress_bar=bool(progress) and sys.stderr.isatty(),
        convert_to_numpy=True,
        normalize_embeddings=True,
    )
    return normalise(np.asarray(vectors, dtype=np.float32))


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """``texts`` without repeats (first occurrences, in order) and, for each text, the row of
    its first occurrence: ``distinct[i] == texts[j]`` for ``i = where[j]``."""
    first: dict[str, int] = {}
    where = np.fromiter((first.setdefault(t, len(first)) for t in texts), dtype=np.intp, count=len(texts))
    return list(first), where


def normalise(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise rows (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.where(norms == 0, 1, norms)).astype(np.float32, copy=False)


def dimension(model: str | ResolvedModel) -> int:
    """The model's vector size."""
    encoder = load_sentence_transformer(model)
    getter = getattr(encoder, "get_embedding_dimension", None) or encoder.get_sentence_embedding_dimension
    return int(getter())


#: cosines of one topic this close (or closer) are a near tie, re-scored in float64 by
#: :func:`settle_near_ties`. fp32 cosines differ from float64's by up to 3e-7 (all-MiniLM-L6-v2;
#: tests/rankers/test_near_ties.py measures it) and from another fp32 kernel's by about as
#: much: 1e-5 is 30 times that
NEAR_TIE = 1e-5
#: a float64 cosine is kept to this many decimals: far above float64's noise (1e-16, the
#: kernel's), far below any gap fp32 could see
FLOAT64_DECIMALS = 12
#: the embedding cache of the float64 vectors (``MODEL@WEIGHTS16+float64``)
FLOAT64 = "float64"


def settle_near_ties(
    topics: Sequence[tuple[np.ndarray, str, Sequence[str]]], model: ResolvedModel, backend: str = "torch"
) -> list[np.ndarray]:
    """For each topic, ``(cosines, query, texts)`` (fp32 cosines, ``texts[i]``'s with
    ``query``'s vector), its cosines with every near tie re-scored in float64: new float64
    arrays, in order. On a fast ``backend`` (not exact: its figures carry a stated
    tolerance) the cosines as they are.

    Why: fp32 vectors differ in their last bits with the kernel that computed them (MKL or
    oneDNN, the CPU's instruction set) and the batch a text was padded in, so two candidates
    whose cosines are within about 3e-7 of each other swap places from one machine (or one
    cache) to the next, and a published nDCG@5 moves (on the judged set, ``dense (last2)``: two
    sentences 2e-7 apart at rank 5 changed two cells by up to 0.004). Here each text within
    :data:`NEAR_TIE` of a different text next to it in the ranking, and the query, is encoded
    alone in float64 (no batch, no padding; then kept in the embedding cache ``+float64``) and
    every candidate of that text gets its float64 cosine (an exactly rounded sum, to
    :data:`FLOAT64_DECIMALS` decimals). Float64's noise is far below
    any real gap, so those candidates come in one order on every machine; the others are over
    1e-5 apart, 30 times fp32's error, so their order never depended on it. One text twice is
    one cached vector, so one cosine: a true tie (broken by the run's rule) left as it is.
    """
    if backend != "torch":
        return [cosines for cosines, _, _ in topics]
    out = [np.asarray(cosines, dtype=np.float64).copy() for cosines, _, _ in topics]
    members: list[list[int]] = []
    wanted: dict[str, None] = {}
    for scores, (_, query, texts) in zip(out, topics):
        near_texts = near_tied(scores, texts, NEAR_TIE)
        members.append([k for k, text in enumerate(texts) if text in near_texts])  # every copy alike
        if near_texts:
            wanted.update(dict.fromkeys([query, *near_texts]))
    if not wanted:
        return out
    vectors = dict(zip(wanted, _float64_vectors(list(wanted), model)))
    for scores, rows, (_, query, texts) in zip(out, members, topics):
        for k in rows:
            # an exactly rounded sum (a matrix product's order of sums varies with its shape
            # and the BLAS), to 12 decimals: what float64 noise leaves tied is a tie
            scores[k] = round(math.fsum((vectors[texts[k]] * vectors[query]).tolist()), FLOAT64_DECIMALS)
    return out


def settled_top_k(
    found: Sequence[Sequence[tuple[int, float]]],
    queries: Sequence[str],
    texts_of: Callable[[list[int]], Sequence[str]],
    k: int,
    model: ResolvedModel,
    backend: str = "torch",
) -> list[list[tuple[int, float]]]:
    """Open retrieval's best ``k`` per query, its near ties settled as :func:`settle_near_ties`
    settles a topic's: ``found[q]`` is query ``q``'s ``(row, fp32 score)`` list holding at least
    every row scored within :data:`NEAR_TIE` of its k-th best (:func:`near_depth`), so a row
    that float64 puts into the top k is among them; ``texts_of(rows)`` gives the rows' texts.
    Each list comes back ranked by score (float64 where settled), then row ascending (a true
    tie: one text twice, or two equal fp32 scores far from any other), cut to ``k``. On a fast
    ``backend`` the scores are as they came, ranked the same way."""
    topics = []
    for query, ranked in zip(queries, found):
        listed = [int(r) for r, _ in ranked]
        topics.append((np.asarray([s for _, s in ranked], dtype=np.float64), query, list(texts_of(listed)) if listed else []))
    settled = settle_near_ties(topics, model, backend)
    return [
        merge_top_k(np.asarray([int(r) for r, _ in ranked], dtype=np.int64), scores, max(int(k), 0))
        for ranked, scores in zip(found, settled)
    ]


def near_depth(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of ``scores``' best ``k`` and of every score within :data:`NEAR_TIE` of the
    k-th (all of them when there are ``k`` or fewer): what :func:`settled_top_k` needs of one
    list, or of one shard (a shard's k-th is at most the whole's, so its margin holds the
    whole's)."""
    return top_rows(scores, k, NEAR_TIE)


def near_tied(scores: Sequence[float] | np.ndarray, labels: Sequence[Any], margin: float) -> set[Any]:
    """The labels (texts, pairs) of the items within ``margin`` of an item with another label
    next to them in ``scores``' descending order: one topic's near ties. Two items of one label
    (one text twice) are not a near tie of each other: they get one score when settled."""
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable")
    ranked = values[order]
    near = np.flatnonzero(ranked[:-1] - ranked[1:] <= margin).tolist()
    return {labels[k] for i in near if labels[order[i]] != labels[order[i + 1]] for k in (int(order[i]), int(order[i + 1]))}


def _float64_vectors(texts: list[str], model: ResolvedModel) -> np.ndarray:
    """float64 unit vectors of distinct ``texts``, each encoded alone, through the cache."""
    keys = [text_key(t) for t in texts]
    store = _cache_for(model, FLOAT64)
    missing = [(k, t) for k, t in zip(keys, texts) if k not in store]
    if missing:
        require_writable(store.folder)
        encoder = load_float64_sentence_transformer(model)
        rows = [
            encoder.encode([text], convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)[0]
            for _, text in missing
        ]
        store.add([k for k, _ in missing], np.asarray(rows, dtype=np.float64))
        store.compact()
    return store.get(keys)
