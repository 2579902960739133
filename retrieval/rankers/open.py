"""``open``: rank a whole sentence corpus for each dialogue (open retrieval).

Unlike the other rankers, which re-rank each dialogue's own candidates,
``dsr run COLLECTION --ranker open --param corpus=DIR`` searches a corpus
built by ``dsr corpus build`` and indexed by ``dsr corpus index`` and writes
each dialogue's top ``depth`` corpus sentences (their ids are corpus ids, so
such a run is judged against a pool, see :mod:`retrieval.pool`, not against
the collection's candidates). Parameters: ``corpus`` (the folder, required),
``method`` (bm25, dense, fused), ``query``, ``decay``, ``depth`` (default 50),
``model``, ``index`` (flat, ivfpq), ``nprobe``, ``refine``.
"""

from __future__ import annotations

from typing import Any

from retrieval.data import Collection
from retrieval.errors import InputError
from retrieval.queries import check_decay, check_strategy
from retrieval.rankers.base import Ranker
from retrieval.rankers.bm25 import strategy_tag
from retrieval.rankers.initial import ranker_config
from retrieval.run import Run


class OpenRanker(Ranker):
    """The corpus's top ``depth`` sentences per dialogue (BM25, dense or fused)."""

    name = "open"
    PARAMS = {"corpus": None, "method": "bm25", "query": "all", "decay": 0.5, "depth": 50,
              "model": "all-MiniLM-L6-v2", "index": "flat", "nprobe": 32, "refine": 0}
    GRID = {}

    def __init__(self, **params: Any):
        super().__init__(**params)
        p = self.params
        if not p["corpus"]:
            raise InputError("the open ranker needs a corpus: --param corpus=DIR (built by dsr corpus build)",
                             field="corpus")
        check_strategy(p["query"])
        check_decay(p["decay"])
        if isinstance(p["depth"], bool) or not isinstance(p["depth"], int) or p["depth"] < 1:
            raise InputError(f"depth must be a whole number >= 1, got {p['depth']!r}", field="depth")

    @property
    def tag(self) -> str:
        return strategy_tag(self).replace(f"-corpus={self.params['corpus']}", "")

    def rank(self, collection: Collection) -> Run:
        from indexes.corpus.search import CorpusSearcher
        from retrieval.pool import retrieve

        p = self.params
        searcher = CorpusSearcher(str(p["corpus"]), p["method"], model=str(p["model"]), index=p["index"],
                                  nprobe=p["nprobe"], refine=p["refine"])
        results = retrieve(collection, searcher, p["depth"], p["query"], p["decay"])
        scores, order = {}, {}
        for qid, ranked in results.items():
            ids = searcher.ids([row for row, _ in ranked])
            scores[qid] = {i: s for i, (_, s) in zip(ids, ranked)}
            order[qid] = ids
        return Run.from_scores(scores, tag=self.tag,
                               config=ranker_config(self, collection, search=searcher.describe()),
                               initial_order=order)
