"""BM25 over a sharded corpus, with global statistics (``dsr corpus index --bm25``).

A BM25 score depends on corpus-wide statistics: a term's document frequency
``df`` (through its IDF) and the average sentence length ``avgdl``. An index
built per shard with bm25s alone would use each shard's own ``df`` and
``avgdl``, so the same sentence would score differently depending on its
shard and per-shard top-k lists could not be merged. So the index is built in
two passes:

1. **count** (one unit per shard): tokenise the shard's sentences and save,
   per token, the number of sentences holding it, plus the shard's sentence
   count and total length (``bm25/counts/shard-N.parquet``);
2. **merge** (the driver): sum the counts into the global ``df`` of every
   token, ``N`` and ``avgdl = total length / N`` (``bm25/global.parquet`` and
   ``bm25/global.json``);
3. **index** (one unit per shard): build the shard's bm25s score matrix with
   bm25s' own functions (``_build_idf_array``, ``_build_scores_and_indices_for_matrix``,
   ``_build_nonoccurrence_array``) fed the *global* ``df``, ``N`` and
   ``avgdl`` instead of the shard's (``bm25/shards/shard-N/``).

Each sentence's score is then exactly what one bm25s index over the whole
corpus gives it (tests check the merged top k against a single index), and a
query's top k is the merge of the shards' top k (:func:`search`), ties broken
by global row (the single index's pool order). Tokenisation and variants are
those of :mod:`dsr.indexes.bm25`; the shard's vocabulary is its own tokens, so
shards stay small.
"""

from __future__ import annotations

import json
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_write, write_json
from dsr.core.errors import InputError
from dsr.core.params import resolve
from dsr.core.provenance import package_versions
from dsr.core.text import tokenize
from dsr.indexes.bm25 import _BM25S_METHOD, DEFAULT_DELTA, PARAMS, Query, as_weights
from dsr.indexes.corpus.build import StageReport
from dsr.indexes.corpus.distributed import Executor
from dsr.indexes.corpus.layout import (
    Corpus,
    check_unit,
    file_sha256,
    key_hash,
    read_json,
    read_marker,
    shard_name,
    write_marker,
)
from dsr.indexes.topk import merge_top_k, top_rows


def _pyarrow() -> ModuleType:
    """pyarrow, imported on first use, in this one place (importing this module does not load it)."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow


def _bm25s() -> ModuleType:
    """bm25s, imported on first use, in this one place (importing this module does not load it)."""
    import bm25s
    import bm25s.scoring

    return bm25s


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` checked against the BM25 index's declaration (:data:`dsr.indexes.bm25.PARAMS`),
    the variant's delta filled in."""
    p = resolve(params, PARAMS, "the corpus BM25 index")
    if p["delta"] is None:
        p["delta"] = DEFAULT_DELTA[p["variant"]]
    return p


def count_shard(corpus_dir: str, number: int, key: dict[str, Any]) -> dict[str, Any]:
    """Pass 1 unit: per-token sentence counts of one shard, its N and total length."""
    pa = _pyarrow()
    pq = _pyarrow().parquet

    corpus = Corpus(corpus_dir)
    folder = corpus.folder / "bm25" / "counts"
    folder.mkdir(parents=True, exist_ok=True)
    df: Counter[str] = Counter()
    total = 0
    texts = corpus.texts(number)
    for text in texts:
        tokens = tokenize(text, stopwords=key["stopwords"], stem=key["stem"])
        total += len(tokens)
        df.update(set(tokens))
    name = shard_name(number)
    path = folder / f"{name}.parquet"
    tokens = sorted(df)
    with atomic_write(path, "wb") as handle:
        pq.write_table(
            pa.table({"token": pa.array(tokens, pa.string()), "df": pa.array([df[t] for t in tokens], pa.int64())}), handle
        )
    return write_marker(folder, name, key, [path], name=name, sentences=len(texts), length=total)


def merge_counts(folder: Path, markers: list[dict[str, Any]], key: dict[str, Any]) -> dict[str, Any]:
    """Pass 2: global df, N and avgdl from the shards' counts."""
    pa = _pyarrow()
    pq = _pyarrow().parquet

    df: Counter[str] = Counter()
    for marker in markers:
        table = pq.read_table(folder / "counts" / f"{marker['name']}.parquet")
        df.update(dict(zip(table.column("token").to_pylist(), table.column("df").to_pylist())))
    n = sum(m["sentences"] for m in markers)
    total = sum(m["length"] for m in markers)
    tokens = sorted(df)
    path = folder / "global.parquet"
    with atomic_write(path, "wb") as handle:
        pq.write_table(
            pa.table({"token": pa.array(tokens, pa.string()), "df": pa.array([df[t] for t in tokens], pa.int64())}), handle
        )
    stats = {
        "key": key,
        "sentences": n,
        "length": total,
        "avgdl": total / n if n else 0.0,
        "vocabulary": len(tokens),
        "sha256": file_sha256(path),
    }
    write_json(folder / "global.json", stats)
    return stats


def _nonoccurrence(model: Any, doc_freqs: dict[int, int], n_docs: int, avgdl: Any, method: str, idf_method: str) -> Any:
    """bm25s's score of a term a sentence lacks (BM25L, BM25+), from the global statistics;
    None for the variants without one."""
    scoring = _bm25s().scoring
    if model.method not in model.methods_requiring_nonoccurrence:
        return None
    return scoring._build_nonoccurrence_array(
        doc_frequencies=doc_freqs,
        n_docs=n_docs,
        compute_idf_fn=scoring._select_idf_scorer(idf_method),
        calculate_tfc_fn=scoring._select_tfc_scorer(method),
        l_d=avgdl,
        l_avg=avgdl,
        k1=model.k1,
        b=model.b,
        delta=model.delta,
        dtype=model.dtype,
    )


def index_shard(corpus_dir: str, number: int, key: dict[str, Any]) -> dict[str, Any]:
    """Pass 3 unit: the shard's bm25s index scored with the global statistics."""
    bm25s = _bm25s()
    pq = _pyarrow().parquet
    import scipy.sparse as sp

    scoring = _bm25s().scoring

    corpus = Corpus(corpus_dir)
    folder = corpus.folder / "bm25"
    stats = json.loads((folder / "global.json").read_text(encoding="utf-8"))
    table = pq.read_table(folder / "global.parquet")
    global_df = dict(zip(table.column("token").to_pylist(), table.column("df").to_pylist()))
    p = key["params"]
    token_lists = [tokenize(t, stopwords=p["stopwords"], stem=p["stem"]) for t in corpus.texts(number)]
    vocab: dict[str, int] = {}
    for tokens in token_lists:
        for token in tokens:
            vocab.setdefault(token, len(vocab))
    ids = [[vocab[t] for t in tokens] for tokens in token_lists]
    method, idf_method = _BM25S_METHOD[p["variant"]]
    model = bm25s.BM25(k1=p["k1"], b=p["b"], delta=p["delta"] or 0.0, method=method, idf_method=idf_method)
    doc_freqs = {i: int(global_df[t]) for t, i in vocab.items()}  # global, not the shard's
    # np.float64, as bm25s computes it (a numpy mean): under numpy's promotion rules a Python
    # float would make the term-frequency part float32 and scores differ in the last bits.
    n_docs, avgdl = int(stats["sentences"]), np.float64(stats["avgdl"])
    model.nonoccurrence_array = _nonoccurrence(model, doc_freqs, n_docs, avgdl, method, idf_method)
    idf = scoring._build_idf_array(
        doc_frequencies=doc_freqs, n_docs=n_docs, compute_idf_fn=scoring._select_idf_scorer(idf_method), dtype=model.dtype
    )
    # bm25s sizes its arrays by the sum of the doc frequencies it is given: the shard's own here.
    local_df = Counter(t for row in ids for t in set(row))
    data, rows, cols = scoring._build_scores_and_indices_for_matrix(
        corpus_token_ids=ids,
        idf_array=idf,
        avg_doc_len=avgdl,
        doc_frequencies=local_df,
        k1=model.k1,
        b=model.b,
        delta=model.delta,
        nonoccurrence_array=model.nonoccurrence_array,
        method=method,
        dtype=model.dtype,
        int_dtype=model.int_dtype,
        show_progress=False,
    )
    matrix = sp.csc_matrix((data, (rows, cols)), shape=(len(ids), len(vocab)), dtype=model.dtype)
    model.scores = {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr, "num_docs": len(ids)}
    model.vocab_dict = vocab
    model.unique_token_ids_set = set(vocab.values())
    name = shard_name(number)
    out = folder / "shards" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    return write_marker(folder / "shards", name, key, [out], name=name, sentences=len(ids))


def build_bm25(corpus: Corpus, params: dict[str, Any] | None = None, executor: Executor | None = None) -> StageReport:
    """Count, merge and index every shard (resuming from done shards); returns what was built."""
    start = time.perf_counter()
    p = check_params(dict(params or {}))
    versions = package_versions(("bm25s", "PyStemmer"))
    versions.pop("python", None)
    folder = corpus.folder / "bm25"
    report = StageReport()
    executor = executor or Executor(0)
    with executor:
        count_key = {
            "stage": "bm25-count",
            "corpus": corpus.key,
            "stopwords": p["stopwords"],
            "stem": p["stem"],
            "versions": versions,
        }
        counts = _run_stage(executor, count_shard, corpus, folder / "counts", count_key, report, "bm25 counts")
        stats_key = {"counts": key_hash([m["files"] for m in counts])}
        stats = read_json(folder / "global.json")
        if (
            stats is None
            or stats.get("key") != stats_key
            or not (folder / "global.parquet").exists()
            or file_sha256(folder / "global.parquet") != stats.get("sha256")
        ):
            stats = merge_counts(folder, counts, stats_key)
        index_key = {"stage": "bm25-index", "corpus": corpus.key, "global": stats["sha256"], "params": p, "versions": versions}
        _run_stage(executor, index_shard, corpus, folder / "shards", index_key, report, "bm25 shards")
    write_json(
        folder / "index.json",
        {
            "params": p,
            "key": key_hash(index_key),
            "corpus": corpus.key,
            "sentences": stats["sentences"],
            "avgdl": stats["avgdl"],
            "vocabulary": stats["vocabulary"],
            "shards": corpus.names,
            "versions": versions,
        },
    )
    report.seconds = time.perf_counter() - start
    return report


def _run_stage(
    executor: Executor,
    function: Callable[[str, int, dict[str, Any]], dict[str, Any]],
    corpus: Corpus,
    folder: Path,
    key: dict[str, Any],
    report: StageReport,
    desc: str,
) -> list[dict[str, Any]]:
    """Run ``function(corpus_dir, shard, key)`` for every shard not already done; markers in shard order."""
    markers: dict[int, dict[str, Any]] = {}
    todo = []
    for number, name in enumerate(corpus.names):
        marker = read_marker(folder, name, key)
        if marker is None:
            todo.append((str(corpus.folder), number, key))
        else:
            markers[number] = marker
            report.reused.append(f"{folder.name}/{name}")
    for marker in executor.map(function, todo, desc=desc, total=len(todo)):
        markers[corpus.names.index(marker["name"])] = marker
        report.built.append(f"{folder.name}/{marker['name']}")
    return [markers[n] for n in range(len(corpus.names))]


class ShardedBM25:
    """Search every BM25 shard of a corpus and merge: the top k of the whole corpus.

    A shard is opened with its score matrix memory-mapped (``bm25s.BM25.load(mmap=True)``)
    and a search reads only the posting lists of the query's tokens. At most
    ``OPEN_SHARDS`` shards stay open (their vocabularies in memory, the least recently
    used closed first), so memory is bounded by that many vocabularies plus the pages the
    queries touch, whatever the corpus's size (the whole index was held before: 157 B per
    sentence, 23.5 GB for Wikipedia); a batch of queries (:meth:`search_many`) opens each
    shard once, which is what makes a corpus of more shards than that fast to search.
    """

    #: shards kept open between searches (a small corpus stays open; a large one streams)
    OPEN_SHARDS = 8

    def __init__(self, corpus: Corpus) -> None:
        info = read_json(corpus.folder / "bm25" / "index.json")
        if info is None or info.get("corpus") != corpus.key:
            raise InputError(
                "the corpus has no BM25 index (or it is out of date): run `dsr corpus index DIR --bm25`", path=corpus.folder
            )
        self.corpus, self.params = corpus, info["params"]
        self.folder = corpus.folder / "bm25" / "shards"
        for name in corpus.names:
            check_unit(self.folder, name, f"dsr corpus index {corpus.folder} --bm25")
        self._open: OrderedDict[int, Any] = OrderedDict()

    def _shard(self, number: int) -> Any:
        """Shard ``number``'s bm25s model, memory-mapped; the least recently used closed beyond
        ``OPEN_SHARDS``."""
        model = self._open.pop(number, None)
        if model is None:
            model = _bm25s().BM25.load(str(self.folder / self.corpus.names[number]), mmap=True)
        self._open[number] = model
        while len(self._open) > self.OPEN_SHARDS:
            self._open.popitem(last=False)
        return model

    def query_tokens(self, text: str) -> list[str]:
        return tokenize(text, stopwords=self.params["stopwords"], stem=self.params["stem"])

    def search(self, query: Query, k: int) -> list[tuple[int, float]]:
        """Top ``k`` (global row, score), best first; ties by global row."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[Query], k: int) -> list[list[tuple[int, float]]]:
        """:meth:`search` of each query (tokens or ``{token: weight}``), every shard opened once."""
        weights = [as_weights(q) for q in queries]
        rows: list[list[np.ndarray]] = [[] for _ in weights]
        scores: list[list[np.ndarray]] = [[] for _ in weights]
        for number in range(len(self.corpus.names)):
            model = self._shard(number)
            offset = int(self.corpus.offsets[number])
            for q, weight in enumerate(weights):
                shard_scores = posting_scores(model, weight)
                top = top_rows(shard_scores, k)
                rows[q].append(top + offset)
                scores[q].append(shard_scores[top])
        return [merge_top_k(np.concatenate(r), np.concatenate(s), k) for r, s in zip(rows, scores)]


def posting_scores(model: Any, weights: dict[str, float]) -> np.ndarray:
    """Every sentence's score in one shard: the sum over the query's tokens of weight x the
    token's stored score, read from the token's posting list alone (the same sums, in the
    same order, as bm25s' weights @ (term x sentence) matrix), plus the "term absent" score
    that bm25l/bm25+ store apart."""
    data, indices, indptr = model.scores["data"], model.scores["indices"], model.scores["indptr"]
    total = np.zeros(int(model.scores["num_docs"]), dtype=np.float64)
    by_column: dict[int, float] = {}
    for token, weight in weights.items():
        column = model.vocab_dict.get(token)
        if column is not None:
            by_column[column] = by_column.get(column, 0.0) + weight
    for column in sorted(by_column):
        start, end = int(indptr[column]), int(indptr[column + 1])
        total[np.asarray(indices[start:end])] += np.asarray(data[start:end], dtype=np.float64) * by_column[column]
    nonoccurrence = getattr(model, "nonoccurrence_array", None)
    if nonoccurrence is not None and by_column:
        vector = np.zeros(len(indptr) - 1, dtype=np.float64)
        vector[list(by_column)] = list(by_column.values())
        total += float(vector @ nonoccurrence)
    return total
