"""``bm25``: BM25 between the dialogue query and each candidate sentence.

Re-ranking (:class:`BM25Ranker`, the benchmark task): IDF and average length
come from the collection's whole sentence pool, and each dialogue's own
candidates are scored. Open retrieval (:func:`bm25_search`): the top k of a
whole pool for each query, with bm25s's index and formulas by default.
Formulas, variants and weighted queries: see :mod:`dsr.indexes.bm25`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from tqdm import tqdm

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.forked import forked_map
from dsr.core.params import Param
from dsr.core.queries import OWN_STRATEGIES, STRATEGIES, query_terms
from dsr.core.run import Run
from dsr.indexes.bm25 import BACKENDS, BM25Index, BM25Settings, BM25SIndex, QueryBatch, index_settings
from dsr.indexes.bm25 import PARAMS as INDEX_PARAMS
from dsr.rankers.base import Ranker, ranker_config, strategy_tag

#: the values the split protocol tunes k1 and b over
#: a grid of fewer BM25 settings is scored in this process
MIN_FORKED_RANKERS = 8

INDEX_GRID = {"k1": (0.9, 1.2, 1.6), "b": (0.4, 0.75)}


class BM25Ranker(Ranker):
    """BM25 (rank_bm25) re-ranking of each dialogue's candidates.

    Parameters: ``query`` (a strategy of dsr.core.queries), ``variant``
    (okapi, l, plus), ``k1``, ``b``, ``delta`` (BM25L/BM25+; None = the
    variant's default), ``stopwords`` and ``stem`` (tokeniser options, for
    sentences and queries alike), ``decay`` (for ``query=weighted``).
    """

    name = "bm25"
    # the index's parameters (dsr.indexes.bm25.PARAMS), k1 and b with their tuning grids:
    # 3 x 2 configurations per query strategy; sentences are short, so b matters less than k1.
    PARAMS = (
        Param("query", "all", "str", "query strategy (dsr.core.queries)", choices=STRATEGIES, grid=OWN_STRATEGIES),
        *(replace(p, grid=INDEX_GRID.get(p.name, ())) for p in INDEX_PARAMS),
        Param("decay", 0.5, "float", "per-turn weight decay of query=weighted", above=0, high=1),
    )

    @property
    def tag(self) -> str:
        return strategy_tag(self)

    def index(self, collection: Collection) -> tuple[BM25Index, dict[tuple[str, str], int]]:
        """The pool's rank_bm25 index (cached under DSR_HOME/indexes/bm25) and the row of
        each (dialogue id, candidate id): a candidate is read from its own dialogue, so
        files that reuse local ids (c0, c1...) per dialogue score like unique ids."""
        p = self.params
        rows, row_of = collection.sentence_rows()
        index = BM25Index.cached([c.id for c in rows], [c.body for c in rows], index_part(p), name=collection.name)
        return index, row_of

    def rank(self, collection: Collection) -> Run:
        return self.rank_many(collection, [self])[0]

    @staticmethod
    def rank_many(collection: Collection, rankers: Sequence[BM25Ranker]) -> list[Run]:
        """``[r.rank(collection) for r in rankers]``, the same runs for less: rankers with the
        same tokenisation and variant share one loaded index (k1, b and delta enter only the
        scores), those with the same query strategy share the query terms, and each ranker
        scores every dialogue's candidates in one sparse pass (``BM25Index.pair_scores``)."""
        dialogues = collection.dialogues
        ids = [collection.candidate_ids(d.id) for d in dialogues]
        loaded: dict[tuple, tuple[BM25Index, list[list[int]]]] = {}
        terms: dict[tuple, QueryBatch] = {}
        jobs = []
        for ranker in rankers:
            p = ranker.params
            key = (p["variant"], p["stopwords"], p["stem"])
            if key not in loaded:
                index, row_of = ranker.index(collection)
                loaded[key] = index, [[row_of[d.id, c] for c in i] for d, i in zip(dialogues, ids)]
            shared, rows = loaded[key]
            index = copy.copy(shared)  # the statistics shared, the scores' parameters its own
            index.set_parameters(index_part(p))
            asked = (*key, p["query"], p["decay"])
            if asked not in terms:
                terms[asked] = shared.query_batch(
                    [query_terms(d, p["query"], p["decay"], stopwords=p["stopwords"], stem=p["stem"]) for d in dialogues]
                )
            jobs.append((index, terms[asked], rows))

        def scores(k: int) -> list:
            index, batch, rows = jobs[k]
            return index.pair_scores(batch, rows)

        # a grid's scores by forked workers (the same numbers), the runs made here: laid end to
        # end in the collection's order, each candidate's initial rank its place (the Run
        # from_scores makes of {dialogue: {candidate: score}}, without the dicts)
        workers = None if len(jobs) >= MIN_FORKED_RANKERS else 1
        topics = [d.id for d in dialogues]
        docs = [c for i in ids for c in i]
        sizes = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        places = np.arange(len(docs)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return [
            Run.from_flat(
                topics,
                docs,
                sizes,
                np.concatenate(found) if found else np.zeros(0),
                places,
                tag=ranker.tag,
                config=ranker_config(ranker, collection),
            )
            for ranker, found in zip(rankers, forked_map(scores, len(jobs), workers))
        ]


def index_part(params: Mapping[str, Any]) -> BM25Settings:
    """The index's settings among a BM25 ranker's parameters."""
    return BM25Settings(**{p.name: params[p.name] for p in BM25Settings.params()})


def bm25_search(
    pool: Collection | Mapping[str, str],
    queries: Mapping[str, str | Mapping[str, float]],
    k: int = 100,
    *,
    backend: str = "bm25s",
    name: str | None = None,
    tag: str = "bm25",
    **settings: Any,
) -> Run:
    """Open retrieval: the top ``k`` sentences of ``pool`` for each query.

    ``pool``: a collection (its sentence pool, body text) or ``{id: text}``.
    ``queries``: ``{qid: text}`` (tokenised like the pool) or
    ``{qid: {token: weight}}`` (e.g. from :func:`dsr.core.queries.query_terms`
    with the same tokeniser options). The index is cached under
    ``DSR_HOME/indexes`` as ``NAME`` (default: the collection's name, or
    ``pool``). Ties are broken by pool order. ``settings``: the index's
    (:data:`dsr.indexes.bm25.PARAMS`: variant, k1, b, delta, stopwords, stem).
    """
    if backend not in BACKENDS:
        raise InputError(f"unknown BM25 backend {backend!r}; choose from {', '.join(BACKENDS)}", field="backend")
    if isinstance(pool, Collection):
        name = name or pool.name
        texts_by_id = {d: c.body for d, c in pool.unique_sentences().items()}
    else:
        texts_by_id = dict(pool)
    cls = BM25SIndex if backend == "bm25s" else BM25Index
    index = cls.cached(list(texts_by_id), list(texts_by_id.values()), name=name or "pool", **settings)
    results = {}
    for qid, query in tqdm(
        queries.items(), desc=f"bm25 search ({backend})", unit="query", leave=False, disable=len(queries) < 200 or None
    ):
        terms = index.query_tokens(query) if isinstance(query, str) else query
        results[qid] = index.search(terms, k)
    return Run.from_scores(
        {q: dict(r) for q, r in results.items()},
        tag=tag,
        config={"search": "bm25", "backend": backend, "k": k, **index_settings(settings)},
        initial_order={q: [d for d, _ in r] for q, r in results.items()},
    )
