"""FAISS indexes over sentence embeddings, for open retrieval over a pool.

Vectors come from :func:`dsr.indexes.embeddings.encode` (cached, L2-normalised),
so inner product is cosine similarity. Index kinds:

* ``flat`` (default): ``IndexFlatIP``, exact: ``search`` settles near ties in float64
  (:func:`dsr.indexes.embeddings.settled_top_k`), so the top ``k`` and its order are the same
  on every machine;
* ``hnsw``: ``IndexHNSWFlat`` (graph, approximate; ``m`` links per node,
  ``ef_search`` candidates per query), for pools of hundreds of thousands;
* ``ivf``: ``IndexIVFFlat`` (``nlist`` clusters, default 4 sqrt(N); ``nprobe``
  searched per query), trained on the pool itself.

A built index is saved under ``DSR_HOME/indexes/faiss/NAME-KIND-MODEL`` with a
manifest (pool hash, model and weights hash, kind and parameters, faiss
version) and reused while they match.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dsr.core.errors import InputError
from dsr.core.models import ResolvedModel, resolve_model
from dsr.indexes import embeddings
from dsr.indexes.embeddings import DEFAULT_MODEL, encode, near_depth, settled_top_k
from dsr.indexes.manifest import cached_build, expected_manifest, text_hash

if TYPE_CHECKING:  # faiss itself is imported on first use (_faiss)
    import faiss

KINDS = ("flat", "hnsw", "ivf")
DEFAULTS: dict[str, dict[str, Any]] = {
    "flat": {},
    "hnsw": {"m": 32, "ef_construction": 200, "ef_search": 128},
    "ivf": {"nlist": None, "nprobe": 16},
}


def _faiss() -> ModuleType:
    """faiss, imported on first use, in this one place."""
    import faiss

    return faiss


def build_faiss(vectors: np.ndarray, kind: str = "flat", **params: Any) -> faiss.Index:
    """A FAISS inner-product index of ``kind`` holding ``vectors`` (rows in order)."""
    faiss = _faiss()
    if kind not in KINDS:
        raise InputError(f"unknown FAISS index kind {kind!r}; choose from {', '.join(KINDS)}", field="index")
    unknown = sorted(set(params) - set(DEFAULTS[kind]))
    if unknown:
        raise InputError(
            f"unknown parameter(s) {', '.join(unknown)} for a {kind} index; known: {', '.join(DEFAULTS[kind]) or 'none'}",
            field="index",
        )
    params = {**DEFAULTS[kind], **params}
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    n, dim = vectors.shape
    if kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, int(params["m"]), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(params["ef_construction"])
    else:
        nlist = int(params["nlist"] or max(1, round(4 * math.sqrt(n))))
        nlist = min(nlist, n)  # k-means cannot make more clusters than points
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
    index.add(vectors)
    set_search_parameters(index, kind, params)
    return index


def set_search_parameters(index: faiss.Index, kind: str, params: dict[str, Any]) -> None:
    """efSearch / nprobe are search-time settings: set them after building or loading."""
    params = {**DEFAULTS[kind], **params}
    if kind == "hnsw":
        cast("faiss.IndexHNSW", index).hnsw.efSearch = int(params["ef_search"])
    elif kind == "ivf":
        cast("faiss.IndexIVF", index).nprobe = int(params["nprobe"])


class DenseIndex:
    """Sentence ids and their FAISS index; ``search`` encodes queries with the same model."""

    def __init__(
        self,
        ids: list[str],
        index: faiss.Index,
        model: ResolvedModel,
        kind: str,
        batch_size: int = 64,
        texts: Sequence[str] | None = None,
    ) -> None:
        self.ids, self.index, self.model, self.kind, self.batch_size = ids, index, model, kind, batch_size
        self.texts = list(texts) if texts is not None else None  # the pool's texts, in ``ids``' order

    @classmethod
    def cached(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        *,
        name: str,
        model: str | ResolvedModel = DEFAULT_MODEL,
        kind: str = "flat",
        batch_size: int = 64,
        **params: Any,
    ) -> DenseIndex:
        """Load ``DSR_HOME/indexes/faiss/NAME-KIND-MODEL`` if its manifest matches, else build it."""
        faiss = _faiss()
        if kind not in KINDS:
            raise InputError(f"unknown FAISS index kind {kind!r}; choose from {', '.join(KINDS)}", field="index")
        if len(ids) != len(texts):
            raise ValueError("ids and texts differ in length")
        if not ids:
            raise InputError("the sentence pool is empty: nothing to index", field="candidates")
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, "bi-encoder")
        build_params = {k: v for k, v in {**DEFAULTS[kind], **params}.items() if k not in ("ef_search", "nprobe")}
        expected = expected_manifest(
            "faiss",
            inputs=text_hash([*ids, *texts]),
            model=resolved.describe(),
            params={"kind": kind, **build_params},
            packages=("faiss-cpu",),
        )

        def build(folder: Path) -> None:
            vectors = encode(texts, resolved, batch_size, desc="encoding pool")
            faiss.write_index(build_faiss(vectors, kind, **params), str(folder / "index.faiss"))
            (folder / "ids.json").write_text(json.dumps(list(ids)), encoding="utf-8")

        folder, _ = cached_build("faiss", f"{name}-{kind}-{resolved.key}", expected, build, files=("index.faiss", "ids.json"))
        index = faiss.read_index(str(folder / "index.faiss"))
        set_search_parameters(index, kind, params)
        saved_ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        return cls(saved_ids, index, resolved, kind, batch_size, texts=texts)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Top ``k`` (id, cosine) per query vector, best first, as FAISS ranks them (fp32: a near
        tie's order may differ between machines; :meth:`search` settles them on a flat index)."""
        k = min(int(k), len(self.ids))
        if k <= 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return [[(self.ids[r], float(s)) for s, r in zip(srow, rrow) if r >= 0] for srow, rrow in zip(scores, rows)]

    def search(self, queries: Sequence[str], k: int = 100) -> list[list[tuple[str, float]]]:
        """Encode ``queries`` (cached like the pool) and return their top ``k``. On a flat index
        the near ties are settled in float64 (ties then by pool order): the same top ``k``, in
        the same order, on every machine."""
        vectors = encode(queries, self.model, self.batch_size, desc="encoding queries")
        k = min(int(k), len(self.ids))
        if self.kind != "flat" or self.texts is None or k <= 0 or len(vectors) == 0:
            return self.search_vectors(vectors, k)
        found = self._near_rows(np.ascontiguousarray(vectors, dtype=np.float32), k)
        texts = self.texts
        settled = settled_top_k(found, list(queries), lambda rows: [texts[r] for r in rows], k, self.model)
        return [[(self.ids[r], s) for r, s in ranked] for ranked in settled]

    def _near_rows(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """Each query's (row, fp32 score) of its best ``k`` and every row within NEAR_TIE of the
        k-th: one search of all queries a little deeper than ``k``, then, for a query whose
        deepest row is still that near, searches twice as deep until one is not (or the pool
        ends)."""
        n = len(self.ids)
        depth = min(n, k + 16)
        scores, rows = self.index.search(vectors, depth)
        out = []
        for vector, srow, rrow in zip(vectors, scores, rows):
            d = depth
            while d < n and float(srow[-1]) >= float(srow[k - 1]) - embeddings.NEAR_TIE:
                d = min(n, 2 * d)
                found = self.index.search(vector[None, :], d)
                srow, rrow = found[0][0], found[1][0]
            keep = near_depth(np.asarray(srow, dtype=np.float64), k)
            out.append([(int(rrow[i]), float(srow[i])) for i in keep if rrow[i] >= 0])
        return out
