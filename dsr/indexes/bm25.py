"""BM25 indexes over a sentence pool: rank_bm25's formulas (BM25Index) and bm25s's (BM25SIndex).

Two uses:

* **re-ranking** (the benchmark task): statistics (IDF, average length) come
  from the whole pool; :meth:`BM25Index.scores` scores only the given sentences
  (a dialogue's candidates).
* **open retrieval**: :meth:`search` returns the top k of the whole pool, with either
  index: :class:`BM25SIndex` keeps bm25s's precomputed score matrix and its formulas,
  :class:`BM25Index` rank_bm25's; each reads only the query's terms' postings
  (``bench/bench_providers.py`` times both: the same order of time).

Variants (rank_bm25 classes): ``okapi`` (BM25Okapi: IDF
``log((N - n + 0.5) / (n + 0.5))``, negative IDFs raised to
``epsilon * mean IDF`` with epsilon 0.25; term part ``tf (k1 + 1) / (tf + k1 (1
- b + b |d| / avgdl))``), ``l`` (BM25L, delta default 0.5) and ``plus``
(BM25Plus, delta default 1).

Weighted queries: a query is ``{token: weight}`` (see dsr.core.queries) and
``score(d) = sum(weight(t) * contribution(t, d))``. rank_bm25 exposes no
per-term scores (``get_scores`` sums over a token list), so
:class:`BM25Index` takes rank_bm25's statistics (``idf``, ``doc_freqs``,
``doc_len``, ``avgdl``) and computes each contribution with rank_bm25's
formula into a sparse sentence x term matrix; a query is then a weight vector
times that matrix. Plain count weights give exactly rank_bm25's score of the
repeated token list. bm25s keeps such a matrix itself.

bm25s and rank_bm25 differ where noted: bm25s ``okapi`` (method ``atire``
with Robertson IDF) sets a negative IDF to 0 instead of the epsilon floor, and
its ``l`` follows Lv and Zhai (a sentence without the term still gets
``idf * (k1 + 1) delta / (k1 + delta)``) where rank_bm25's BM25L multiplies the
term part by tf. ``plus`` is the same in both. Both tokenise with
:func:`dsr.core.text.tokenize`.

Indexes are cached under ``DSR_HOME/indexes`` with a manifest
(dsr.indexes.manifest). The rank_bm25 index stores statistics only (term counts,
IDF, lengths: no pickle), which do not depend on k1, b or delta, so tuning
them reuses one index; bm25s precomputes scores, so its index does.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, TypeVar

import numpy as np

from dsr.core.errors import InputError
from dsr.core.params import Settings, setting
from dsr.core.text import tokenize
from dsr.indexes.manifest import cached_build, expected_manifest, text_hash

VARIANTS = ("okapi", "l", "plus")
DEFAULT_DELTA = {"okapi": None, "l": 0.5, "plus": 1.0}
BACKENDS = ("rank_bm25", "bm25s")
_BM25S_METHOD = {"okapi": ("atire", "robertson"), "l": ("bm25l", "bm25l"), "plus": ("bm25+", "bm25+")}


@dataclass(frozen=True, kw_only=True)
class BM25Settings(Settings):
    """A BM25 index's settings, declared once for both indexes, the BM25 ranker (which adds its
    query strategy and tuning grids) and the corpus index; checked when made."""

    WHAT = "a BM25 index"

    variant: str = setting("okapi", "BM25 variant", choices=VARIANTS)
    k1: float = setting(1.2, "term-frequency saturation", low=0)
    b: float = setting(0.75, "length normalisation", low=0, high=1)
    delta: float | None = setting(None, "BM25L/BM25+ delta (none: the variant's default)", low=0)
    stopwords: bool = setting(False, "drop English stopwords")
    stem: bool = setting(False, "Snowball-stem tokens")

    def variant_delta(self) -> float | None:
        """``delta``, else the variant's default (None for okapi, which has none)."""
        return DEFAULT_DELTA[self.variant] if self.delta is None else self.delta


#: :class:`BM25Settings`' fields as Params (the ranker's and the corpus index's declarations)
PARAMS = BM25Settings.params()

Query = Mapping[str, float] | Sequence[str]


def _sparse() -> ModuleType:
    """scipy.sparse, imported on first use, in this one place (``dsr --help`` loads no scipy)."""
    import scipy.sparse

    return scipy.sparse


def _bm25s() -> ModuleType:
    """bm25s, imported on first use, in this one place (it loads scipy and numba helpers)."""
    import bm25s

    return bm25s


def as_weights(query: Query) -> dict[str, float]:
    """A token list (counts) or a ``{token: weight}`` mapping -> ``{token: weight}``."""
    if isinstance(query, Mapping):
        return {t: float(w) for t, w in query.items() if w}
    weights: dict[str, float] = defaultdict(float)
    for token in query:
        weights[token] += 1.0
    return dict(weights)


def _tokenized(texts: Sequence[str], stopwords: bool, stem: bool, progress: bool) -> list[list[str]]:
    from tqdm import tqdm

    return [
        tokenize(t, stopwords=stopwords, stem=stem)
        for t in tqdm(texts, desc="tokenising", unit="sent", leave=False, disable=not progress or len(texts) < 5000 or None)
    ]


class _Cached:
    """What both indexes share: built once per pool and kept under ``DSR_HOME/indexes/KIND``
    with a manifest of the inputs and the ``KEYED`` settings (:func:`_cached`)."""

    KIND: ClassVar[str] = ""

    @classmethod
    def cached(
        cls: type[IndexT],
        ids: Sequence[str],
        texts: Sequence[str],
        settings: BM25Settings | None = None,
        *,
        name: str,
        progress: bool = True,
        **given: Any,
    ) -> IndexT:
        """Load ``DSR_HOME/indexes/KIND/NAME-...`` if its manifest matches these inputs, else
        build it (rank_bm25's statistics depend only on variant, stopwords and stem; bm25s
        precomputes scores, so every setting is keyed)."""
        index: IndexT = _cached(cls, cls.KIND, ids, texts, name, BM25Settings.of(settings, given), progress)
        return index


IndexT = TypeVar("IndexT", bound=_Cached)


class BM25Index(_Cached):
    """rank_bm25 statistics over a pool of sentences; ``ids[i]`` is the id of row ``i``.

    rank_bm25 builds the statistics (its IDF, with Okapi's epsilon floor,
    document frequencies, lengths, average length); scores are then computed
    from them as one sparse matrix of per-(sentence, term) contributions, with
    rank_bm25's formula for the variant, because its own ``get_batch_scores``
    converts the whole length list on every call and loops in Python (far too
    slow for a SIGIR-sized collection).
    Scores equal rank_bm25's ``get_scores`` (tests/rankers/test_bm25.py checks both a
    hand computation and rank_bm25 itself).
    """

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        settings: BM25Settings | None = None,
        *,
        progress: bool = False,
        _arrays: dict[str, Any] | None = None,
        **given: Any,
    ) -> None:
        settings = BM25Settings.of(settings, given)
        variant, stopwords, stem = settings.variant, settings.stopwords, settings.stem
        if len(ids) != len(texts):
            raise ValueError("ids and texts differ in length")
        if not ids:
            raise InputError("the sentence pool is empty: nothing to index", field="candidates")
        self.ids = list(ids)
        self.position: dict[str, int] = {}
        for i, d in enumerate(self.ids):
            self.position.setdefault(d, i)  # by id: the first row (see row_scores)
        self.variant, self.stopwords, self.stem = variant, stopwords, stem
        if _arrays is None:
            _arrays = self._statistics(_tokenized(texts, stopwords, stem, progress), variant)
        self.vocab: dict[str, int] = _arrays["vocab"]
        self.idf: np.ndarray = _arrays["idf"]
        self.tf = _arrays["tf"]  # scipy CSR, sentences x terms, raw term counts
        self.doc_len: np.ndarray = _arrays["doc_len"]
        self.avgdl: float = float(_arrays["avgdl"])
        self.set_parameters(settings)

    @staticmethod
    def _statistics(corpus: list[list[str]], variant: str) -> dict[str, Any]:
        import rank_bm25

        sparse = _sparse()
        cls = {"okapi": rank_bm25.BM25Okapi, "l": rank_bm25.BM25L, "plus": rank_bm25.BM25Plus}[variant]
        model = cls(corpus)
        vocab = {t: i for i, t in enumerate(model.idf)}
        rows: list[int] = []
        cols: list[int] = []
        counts: list[int] = []
        for row, freqs in enumerate(model.doc_freqs):
            rows.extend([row] * len(freqs))
            cols.extend(vocab[t] for t in freqs)
            counts.extend(freqs.values())
        tf = sparse.csr_matrix((np.asarray(counts, dtype=np.float64), (rows, cols)), shape=(len(corpus), len(vocab)))
        return {
            "vocab": vocab,
            "idf": np.fromiter(model.idf.values(), dtype=np.float64, count=len(vocab)),
            "tf": tf,
            "doc_len": np.asarray(model.doc_len, dtype=np.float64),
            "avgdl": model.avgdl,
        }

    def set_parameters(self, settings: BM25Settings | None = None, **given: Any) -> None:
        """Take k1, b and delta of ``settings`` (keywords of its fields change them): they
        enter only the scores, not the statistics, so one index serves a whole grid."""
        settings = BM25Settings.of(settings, given)
        self.settings = replace(settings, variant=self.variant, stopwords=self.stopwords, stem=self.stem)
        self.k1, self.b = float(settings.k1), float(settings.b)
        delta = self.settings.variant_delta()
        self.delta = None if delta is None else float(delta)
        self._csr: Any = None  # scipy sparse matrices, made on first use
        self._csc: Any = None

    def _contributions(self) -> tuple[Any, np.ndarray]:
        """(sentences x terms CSR of contribution(t, d) where tf > 0, per-term score when tf = 0)."""
        if self._csr is None:
            tf = self.tf.tocoo()
            freq = tf.data
            norm = 1 - self.b + self.b * self.doc_len[tf.row] / self.avgdl
            idf = self.idf[tf.col]
            k1 = self.k1
            # rank_bm25's formulas (rank_bm25.py, get_scores of each class), term by term
            if self.variant == "okapi":
                value = idf * freq * (k1 + 1) / (freq + k1 * norm)
                absent = np.zeros_like(self.idf)
            elif self.variant == "l":
                ctd = freq / norm
                value = idf * freq * (k1 + 1) * (ctd + self.delta) / (k1 + ctd + self.delta)
                absent = np.zeros_like(self.idf)
            else:
                # BM25+ adds idf * delta also where the term is absent: stored apart,
                # so the matrix stays sparse (value here excludes it).
                value = idf * (freq * (k1 + 1)) / (k1 * norm + freq)
                absent = self.idf * self.delta
            sparse = _sparse()
            self._csr = sparse.csr_matrix((value, (tf.row, tf.col)), shape=tf.shape)
            self._absent = absent
        return self._csr, self._absent

    #: what the manifest keys, and the files an index is kept in
    KIND = "bm25"
    KEYED = ("variant", "stopwords", "stem")
    BACKEND = "rank_bm25"
    PACKAGES = ("rank_bm25", "PyStemmer")
    FILES = ("tf.npz", "stats.npz", "vocab.json", "ids.json")

    def _save(self, folder: Path) -> None:
        sparse = _sparse()
        sparse.save_npz(folder / "tf.npz", self.tf)
        np.savez(folder / "stats.npz", idf=self.idf, doc_len=self.doc_len, avgdl=self.avgdl)
        vocab = sorted(self.vocab, key=lambda term: self.vocab[term])
        (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        (folder / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")

    @classmethod
    def _load(cls, folder: Path, ids: list[str], settings: BM25Settings) -> BM25Index:
        stats = np.load(folder / "stats.npz")
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        arrays = {
            "vocab": {t: i for i, t in enumerate(vocab)},
            "idf": stats["idf"],
            "tf": _sparse().load_npz(folder / "tf.npz").tocsr(),
            "doc_len": stats["doc_len"],
            "avgdl": float(stats["avgdl"]),
        }
        return cls(ids, [""] * len(ids), settings, _arrays=arrays)

    def query_tokens(self, text: str) -> list[str]:
        """Tokenise query text the way the pool was tokenised."""
        return tokenize(text, stopwords=self.stopwords, stem=self.stem)

    def _query_vector(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        weights = as_weights(query)
        cols = np.fromiter(map(self.vocab.get, weights, itertools.repeat(-1)), dtype=np.int64, count=len(weights))
        values = np.fromiter(weights.values(), dtype=np.float64, count=len(weights))
        known = cols >= 0  # a token the pool lacks scores 0 (as in rank_bm25)
        return cols[known], values[known]

    def scores(self, query: Query, ids: Sequence[str]) -> np.ndarray:
        """BM25 scores of the sentences ``ids`` (re-ranking), pool statistics."""
        try:
            rows = [self.position[d] for d in ids]
        except KeyError as err:
            raise InputError(f"sentence {err.args[0]!r} is not in the index", field="candidates") from None
        return self.row_scores(query, rows)

    def row_scores(self, query: Query, rows: Sequence[int]) -> np.ndarray:
        """BM25 scores of the pool rows ``rows`` (re-ranking by position: a pool may hold
        one id at several rows when dialogues reuse local ids with other texts)."""
        rows = list(rows)
        matrix, absent = self._contributions()
        cols, weights = self._query_vector(query)
        if not len(cols):
            return np.zeros(len(rows))
        return matrix[rows][:, cols] @ weights + float(absent[cols] @ weights)

    def query_batch(self, queries: Sequence[Query]) -> QueryBatch:
        """``queries`` as this pool's term columns and weights (k1, b and delta play no part,
        so one batch serves every parameter setting of the same statistics)."""
        return QueryBatch([self._query_vector(q) for q in queries], len(self.vocab))

    def pair_scores(self, queries: Sequence[Query] | QueryBatch, rows: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """``[row_scores(q, r) for q, r in zip(queries, rows)]``, bit for bit, in a few sparse
        operations over all queries at once: each (query, row) pair's sum runs over the row's
        stored terms in column order, as the sparse product of ``row_scores`` does."""
        batch = queries if isinstance(queries, QueryBatch) else self.query_batch(queries)
        matrix, absent = self._contributions()
        counts = [len(r) for r in rows]
        flat_rows = np.fromiter((r for group in rows for r in group), dtype=np.int64, count=sum(counts))
        of_pair = np.repeat(np.arange(len(counts)), counts)
        products = matrix[flat_rows].multiply(batch.matrix[of_pair]).tocsr()
        products.sort_indices()
        # CSR times a vector of ones: each pair's products added one by one in column order
        summed = products @ np.ones(matrix.shape[1])
        out, start = [], 0
        for (cols, weights), count in zip(batch.vectors, counts):
            part = summed[start : start + count]
            start += count
            out.append(part + float(absent[cols] @ weights) if len(cols) else np.zeros(count))
        return out

    def all_scores(self, query: Query) -> np.ndarray:
        """Scores of every pool sentence."""
        matrix, absent = self._contributions()
        if self._csc is None:
            self._csc = matrix.tocsc()  # column slices for whole-pool scoring
        cols, weights = self._query_vector(query)
        if not len(cols):
            return np.zeros(len(self.ids))
        return self._csc[:, cols] @ weights + float(absent[cols] @ weights)

    def search(self, query: Query, k: int = 100) -> list[tuple[str, float]]:
        """Top ``k`` sentences of the whole pool (open retrieval), best first."""
        return _top_k(self.ids, self.all_scores(query), k)


class QueryBatch:
    """Queries as term columns and weights of one pool: per query ``(cols, weights)`` in the
    query's token order, and all of them as a sparse (queries x terms) matrix."""

    def __init__(self, vectors: list[tuple[np.ndarray, np.ndarray]], terms: int) -> None:
        sparse = _sparse()
        self.vectors = vectors
        starts = np.concatenate([[0], np.cumsum([len(c) for c, _ in vectors])]).astype(np.int64)
        cols = np.concatenate([c for c, _ in vectors] or [np.zeros(0, dtype=np.int64)])
        weights = np.concatenate([w for _, w in vectors] or [np.zeros(0)])
        self.matrix = sparse.csr_matrix((weights, cols, starts), shape=(len(vectors), terms))
        self.matrix.sort_indices()


class BM25SIndex(_Cached):
    """bm25s over a pool: its score matrix and formulas, for open retrieval (see the module docstring)."""

    def __init__(
        self,
        ids: Sequence[str],
        texts: Sequence[str] | None = None,
        settings: BM25Settings | None = None,
        *,
        progress: bool = False,
        _model: Any = None,
        **given: Any,
    ) -> None:
        bm25s = _bm25s()
        settings = BM25Settings.of(settings, given)
        variant, stopwords, stem = settings.variant, settings.stopwords, settings.stem
        self.settings = settings
        self.ids = list(ids)
        if not self.ids:
            raise InputError("the sentence pool is empty: nothing to index", field="candidates")
        self.position = {d: i for i, d in enumerate(self.ids)}
        self.variant, self.stopwords, self.stem = variant, stopwords, stem
        if _model is None:
            method, idf_method = _BM25S_METHOD[variant]
            _model = bm25s.BM25(
                k1=float(settings.k1),
                b=float(settings.b),
                delta=float(settings.variant_delta() or 0.0),
                method=method,
                idf_method=idf_method,
            )
            _model.index(_tokenized(texts or [], stopwords, stem, progress), show_progress=False)
        self.model = _model
        self._matrix: Any = None  # the scores as a scipy sparse matrix, made on first use

    KIND = "bm25s"
    KEYED = ("variant", "k1", "b", "delta", "stopwords", "stem")
    BACKEND = "bm25s"
    PACKAGES = ("bm25s", "PyStemmer")
    FILES = ("bm25s", "ids.json")

    def _save(self, folder: Path) -> None:
        self.model.save(str(folder / "bm25s"))
        (folder / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")

    @classmethod
    def _load(cls, folder: Path, ids: list[str], settings: BM25Settings) -> BM25SIndex:
        model = _bm25s().BM25.load(str(folder / "bm25s"))
        return cls(ids, None, settings, _model=model)

    def query_tokens(self, text: str) -> list[str]:
        return tokenize(text, stopwords=self.stopwords, stem=self.stem)

    def _query_vector(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """The query's term rows of the score matrix and their weights (terms the pool lacks left out)."""
        vocab = self.model.vocab_dict
        pairs = [(vocab[token], weight) for token, weight in as_weights(query).items() if token in vocab]
        return np.array([row for row, _ in pairs], dtype=np.int64), np.array([w for _, w in pairs], dtype=np.float64)

    def all_scores(self, query: Query) -> np.ndarray:
        """Scores of every pool sentence: the query's rows of the (term x sentence) score matrix,
        weighted; only those rows are read, so a query costs its terms' postings."""
        sparse = _sparse()
        if self._matrix is None:
            s = self.model.scores
            self._matrix = sparse.csr_matrix((s["data"], s["indices"], s["indptr"]), shape=(len(s["indptr"]) - 1, s["num_docs"]))
        rows, weights = self._query_vector(query)
        if not len(rows):
            return np.zeros(self._matrix.shape[1])
        total = np.asarray(self._matrix[rows].T @ weights, dtype=np.float64).ravel()
        nonoccurrence = getattr(self.model, "nonoccurrence_array", None)
        if nonoccurrence is not None:
            # bm25l/bm25+ store scores minus the "term absent" score; add it back.
            total += float(nonoccurrence[rows] @ weights)
        return total

    def scores(self, query: Query, ids: Sequence[str]) -> np.ndarray:
        try:
            rows = [self.position[d] for d in ids]
        except KeyError as err:
            raise InputError(f"sentence {err.args[0]!r} is not in the index", field="candidates") from None
        return self.all_scores(query)[rows]

    def search(self, query: Query, k: int = 100) -> list[tuple[str, float]]:
        return _top_k(self.ids, self.all_scores(query), k)


def index_settings(given: Mapping[str, Any]) -> dict[str, Any]:
    """An index's settings as a dict: :class:`BM25Settings`' defaults with ``given``."""
    return BM25Settings.of(None, given).values()


def _cached(
    cls: Any, kind: str, ids: Sequence[str], texts: Sequence[str], name: str, settings: BM25Settings, progress: bool
) -> Any:
    """``cls``'s index of ``texts`` under ``DSR_HOME/indexes/KIND``: loaded when its manifest
    matches these inputs (the texts and ``cls.KEYED`` settings), else built and saved."""
    values = settings.values()
    expected = expected_manifest(
        kind,
        inputs=text_hash([*ids, *texts]),
        params={**{k: values[k] for k in cls.KEYED}, "backend": cls.BACKEND},
        packages=cls.PACKAGES,
    )
    built: dict[str, Any] = {}

    def build(folder: Path) -> None:
        built["index"] = cls(ids, texts, settings, progress=progress)
        built["index"]._save(folder)

    folder, fresh = cached_build(
        kind,
        f"{name}-{settings.variant}-sw{int(settings.stopwords)}-st{int(settings.stem)}",
        expected,
        build,
        files=cls.FILES,
    )
    if fresh:
        return built["index"]
    return cls._load(folder, json.loads((folder / "ids.json").read_text(encoding="utf-8")), settings)


def _top_k(ids: list[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Top k by score; ties by pool position (stable), so results are deterministic."""
    k = min(int(k), len(ids))
    if k <= 0:
        return []
    if k < len(ids):
        part = np.argpartition(-scores, k - 1)[:k]
        # argpartition does not keep ties stable: take every sentence scoring the k-th value.
        threshold = scores[part].min()
        part = np.flatnonzero(scores >= threshold)
    else:
        part = np.arange(len(ids))
    order = part[np.lexsort((part, -scores[part]))][:k]
    return [(ids[i], float(scores[i])) for i in order]
