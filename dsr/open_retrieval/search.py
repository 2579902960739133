"""Search a sharded corpus: BM25, dense (flat or IVF-PQ) or both fused.

Each method returns, per query, the top ``k`` global rows with scores, merged
over shards (ties by row, so results never depend on the shard layout):

* ``bm25``: :class:`dsr.indexes.corpus.bm25.ShardedBM25` (global statistics);
* ``dense``: :class:`dsr.indexes.corpus.dense.ShardedDense` (cosine);
* ``fused``: reciprocal rank fusion (k = 60, :func:`dsr.rankers.fusion.rrf`)
  of the BM25 and dense top ``depth`` lists, where ``depth`` is ``max(k, 100)``.

A query is a text, or a text and BM25 term weights (``{token: weight}``, from
:func:`dsr.core.queries.query_terms`) when the caller has them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsr.core.fusion import rrf
from dsr.core.params import Param, Settings, setting
from dsr.core.run import Run
from dsr.indexes.backends import CHOICES as BACKEND_CHOICES
from dsr.indexes.corpus.bm25 import ShardedBM25
from dsr.indexes.corpus.dense import ShardedDense
from dsr.indexes.corpus.layout import Corpus
from dsr.indexes.embeddings import DEFAULT_MODEL

METHODS = ("bm25", "dense", "fused")
RRF_K = 60


@dataclass(frozen=True, kw_only=True)
class SearchSettings(Settings):
    """A searcher's settings (:class:`CorpusSearcher`; ``dsr corpus search`` and ``dsr pool`` flags)."""

    method: str = setting("bm25", f"one of {', '.join(METHODS)} (fused: RRF of bm25 and dense; default bm25)", choices=METHODS)
    model: str = setting(DEFAULT_MODEL, "bi-encoder for dense", metavar="M")
    index: str = setting("flat", "dense index (default flat)", choices=("flat", "ivfpq"))
    nprobe: int = setting(32, "IVF lists searched (ivfpq)", low=1, metavar="N")
    refine: int = setting(0, "re-score the top R x k IVF-PQ hits exactly (0: off)", low=0, metavar="R")
    backend: str = setting(
        "torch",
        "encoder backend, as the corpus was indexed with (torch: exact; auto: the "
        "fastest this CPU has, openvino-int8 where it has VNNI or AMX)",
        choices=BACKEND_CHOICES,
    )


SEARCH_PARAMS = SearchSettings.params()
#: results per query (``CorpusSearcher.search``'s ``k``; ``dsr corpus search -k``)
K = Param("k", 10, "int", "results per query (default 10)", low=1, metavar="K", flags=("-k",))


@dataclass
class Query:
    """A query: ``text`` (encoded for dense, tokenised for BM25 unless ``terms`` is given)."""

    text: str
    terms: Mapping[str, float] | None = None


class CorpusSearcher:
    """Open retrieval over a corpus folder with the indexes it has."""

    def __init__(
        self,
        folder: str | Path | Corpus,
        method: str = "bm25",
        *,
        model: str = DEFAULT_MODEL,
        index: str = "flat",
        nprobe: int = 32,
        refine: int = 0,
        batch_size: int = 64,
        backend: str = "torch",
    ) -> None:
        SearchSettings(method=method, model=model, index=index, nprobe=nprobe, refine=refine, backend=backend)
        self.corpus = folder if isinstance(folder, Corpus) else Corpus(folder)
        for number in range(len(self.corpus.names)):  # every shard against corpus.json's sha256
            self.corpus.verified(number)
        self.method = method
        self.bm25 = self.dense = None
        if method in ("bm25", "fused"):
            self.bm25 = ShardedBM25(self.corpus)
        if method in ("dense", "fused"):
            self.dense = ShardedDense(
                self.corpus, model, index, nprobe=nprobe, refine=refine, batch_size=batch_size, backend=backend
            )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "corpus": str(self.corpus.folder),
            "corpus_key": self.corpus.key,
            "sentences": len(self.corpus),
            "method": self.method,
        }
        if self.bm25 is not None:
            out["bm25"] = self.bm25.params
        if self.dense is not None:
            out["dense"] = {
                "model": self.dense.model.describe(),
                "index": self.dense.kind,
                "backend": self.dense.backend,
                "nprobe": self.dense.nprobe,
                "refine": self.dense.refine,
            }
        if self.method == "fused":
            out["fusion"] = {"method": "rrf", "k": RRF_K}
        return out

    def search(self, queries: Sequence[Query | str], k: int) -> list[list[tuple[int, float]]]:
        """Top ``k`` (global row, score) per query, best first."""
        asked = [q if isinstance(q, Query) else Query(q) for q in queries]
        k = K.check(k)
        depth = max(k, 100) if self.method == "fused" else k
        lexical = dense = None
        if self.bm25 is not None:
            lexical = self.bm25.search_many(
                [q.terms if q.terms is not None else self.bm25.query_tokens(q.text) for q in asked], depth
            )
        if self.dense is not None:
            dense = self.dense.search([q.text for q in asked], depth)
        if lexical is not None and dense is not None and self.method == "fused":
            return [fuse_rrf([a, b], k) for a, b in zip(lexical, dense)]
        found = lexical if self.method == "bm25" else dense
        assert found is not None, "the constructor loads the indexes its method searches"
        return found

    def ids(self, rows: Sequence[int]) -> list[str]:
        return self.corpus.ids(rows)


def fuse_rrf(lists: Sequence[Sequence[tuple[int, float]]], k: int) -> list[tuple[int, float]]:
    """RRF of ranked (row, score) lists; ties by row (via the run tie rule's initial order)."""

    runs = [Run({"q": [(str(row), score) for row, score in ranked]}, "x", {}) for ranked in lists]
    fused = rrf(runs, RRF_K)["q"]
    ranked = sorted(fused.items(), key=lambda item: (-item[1], int(item[0])))[:k]
    return [(int(row), score) for row, score in ranked]
