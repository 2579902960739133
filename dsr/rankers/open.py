"""``open``: rank a whole sentence corpus for each dialogue (open retrieval).

Unlike the other rankers, which re-rank each dialogue's own candidates,
``dsr run COLLECTION --ranker open --param corpus=DIR`` searches a corpus
built by ``dsr corpus build`` and indexed by ``dsr corpus index`` and writes
each dialogue's top ``depth`` corpus sentences (their ids are corpus ids, so
such a run is judged against a pool, see :mod:`dsr.open_retrieval.pool`, not against
the collection's candidates). Parameters: ``corpus`` (the folder, required),
``method`` (bm25, dense, fused), ``query``, ``decay``, ``depth`` (default 50),
``model``, ``index`` (flat, ivfpq), ``nprobe``, ``refine``, ``backend`` (the encoder the
corpus was indexed with: ``dsr corpus index --backend``).
"""

from __future__ import annotations

from typing import Any

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.queries import DEFAULT_DECAY, STRATEGIES
from dsr.core.run import Run
from dsr.indexes.backends import BACKENDS, DEFAULT_BACKEND
from dsr.open_retrieval.pool import retrieve
from dsr.open_retrieval.search import CorpusSearcher
from dsr.rankers.base import Ranker, ranker_config, strategy_tag


class OpenRanker(Ranker):
    """The corpus's top ``depth`` sentences per dialogue (BM25, dense or fused)."""

    name = "open"
    needs_corpus = True
    PARAMS = (
        Param("corpus", None, "str", "the corpus folder (dsr corpus build, dsr corpus index); required"),
        Param("method", "bm25", "str", "how the corpus is searched", choices=("bm25", "dense", "fused")),
        Param("query", "all", "str", "query strategy (dsr.core.queries)", choices=STRATEGIES),
        Param("decay", DEFAULT_DECAY, "float", "per-turn weight decay of query=weighted", above=0, high=1),
        Param("depth", 50, "int", "sentences kept per dialogue", low=1),
        Param("model", "all-MiniLM-L6-v2", "str", "bi-encoder of the dense index"),
        Param("index", "flat", "str", "dense index kind", choices=("flat", "ivfpq")),
        Param("nprobe", 32, "int", "IVF lists searched", low=1),
        Param("refine", 0, "int", "IVF-PQ: re-score this many candidates exactly (0: off)", low=0),
        Param(
            "backend",
            DEFAULT_BACKEND,
            "str",
            "encoder backend the corpus's vectors were made with "
            "(dsr corpus index --backend; torch, the default: exact; auto: the fastest this CPU has)",
            choices=("auto", *BACKENDS),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        if not self.params["corpus"]:
            raise InputError("the open ranker needs a corpus: `corpus`, a folder built by `dsr corpus build`", field="corpus")

    @property
    def tag(self) -> str:
        return strategy_tag(self).replace(f"-corpus={self.params['corpus']}", "")

    def rank(self, collection: Collection) -> Run:
        p = self.params
        searcher = CorpusSearcher(
            str(p["corpus"]),
            p["method"],
            model=str(p["model"]),
            index=p["index"],
            nprobe=p["nprobe"],
            refine=p["refine"],
            backend=p["backend"],
        )
        results = retrieve(collection, searcher, p["depth"], p["query"], p["decay"])
        scores, order = {}, {}
        for qid, ranked in results.items():
            ids = searcher.ids([row for row, _ in ranked])
            scores[qid] = {i: s for i, (_, s) in zip(ids, ranked)}
            order[qid] = ids
        return Run.from_scores(
            scores, tag=self.tag, config=ranker_config(self, collection, search=searcher.describe()), initial_order=order
        )
