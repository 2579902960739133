"""dsr's rankers and rerankers as PyTerrier transformers, over a dsr collection's topics.

Needs PyTerrier (``pip install 'dialogue-sentence-retrieval[pyterrier]'``; no Java: these
stages are Python)::

    import pyterrier as pt
    from dsr.pyterrier import DsrDataset

    sample = DsrDataset("sample")                 # a registered name, a benchmark .jsonl or a Collection
    bm25 = sample.ranker("bm25")                  # any registered ranker, with its parameters
    ce = sample.reranker("cross-encoder", model="dsr:dialogue-minilm")
    pt.Experiment([bm25, bm25 >> ce % 20], sample.get_topics(), sample.get_qrels(), ["nDCG@5", "RR"])

The same dataset is PyTerrier's ``pt.get_dataset("dsr:sample")`` (the ``dsr`` dataset provider,
an entry point: no import needed once dsr is installed).

* **Topics** (:meth:`DsrDataset.get_topics`): one row per dialogue, ``qid`` its id and ``query``
  the text of a query strategy (:data:`dsr.core.queries.STRATEGIES`; default ``all``).
* **Qrels** (:meth:`DsrDataset.get_qrels`): every candidate with its label (0 included), as
  ``dsr evaluate`` scores a run on the collection.
* **A ranker** (:meth:`DsrDataset.ranker`, :class:`DsrRanker`) ranks the collection as
  ``dsr run`` does (once, kept), and answers a topics frame with each of its dialogues' own
  candidates (``qid, docno, score, rank``, and the frame's query columns). The query a dsr
  ranker reads is its own strategy's (its ``query`` parameter), not the frame's ``query`` text:
  a dsr ranker's query is built from the dialogue's turns (``weighted`` has no text form). A
  ``qid`` that is no dialogue of the collection is an InputError naming it.
* **A reranker** (:meth:`DsrDataset.reranker`, :class:`DsrReranker`) rescores what it is given,
  as ``dsr rerank`` rescores a run holding those rows (``top_k`` as there: the rest below in
  their order); a ``docno`` that is not a candidate of its dialogue is an InputError.

The scores are dsr's (strictly decreasing as float32, the tie rule), so ``pt.Experiment``
(ir_measures, pytrec_eval) ranks every topic as ``dsr evaluate`` does: ``bm25 >> ce`` gives
the figures of ``dsr run`` + ``dsr rerank`` + ``dsr evaluate``, and ``bm25 >> ce % 20`` the
same for every measure at depth 20 or less (PyTerrier's ``%`` cuts the reranked list at 20;
``ce`` with ``top_k=20`` is ``dsr rerank --top-k 20``). Checked by tests/interchange/test_pyterrier.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pyterrier as pt

from dsr.collections import REGISTERED, load_collection
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.queries import check_strategy, query_text
from dsr.core.run import Run
from dsr.rankers import make_ranker
from dsr.rankers.base import Ranker
from dsr.rerankers import make_reranker
from dsr.rerankers.base import Reranker

#: what a result frame holds (PyTerrier's names); the input's other columns are carried along
RESULT_COLUMNS = ["qid", "docno", "score", "rank"]


class DsrDataset(pt.datasets.Dataset):
    """A dsr collection as a PyTerrier dataset, and the maker of its transformers."""

    def __init__(self, collection: str | Path | Collection, source: str | None = None, split: str | None = None) -> None:
        self.collection = collection if isinstance(collection, Collection) else load_collection(str(collection), source, split)

    def __repr__(self) -> str:
        return f"DsrDataset({self.collection.name!r}, {len(self.collection.dialogues)} dialogues)"

    def get_topics(self, variant: str | None = None) -> pd.DataFrame:
        """``qid``, ``query``: each dialogue and its query under strategy ``variant`` (``all``)."""
        strategy = check_strategy(variant or "all")
        rows = [(d.id, query_text(d, strategy)) for d in self.collection.dialogues]
        return pd.DataFrame(rows, columns=["qid", "query"])

    def get_topics_lang(self) -> str:
        return "en"

    def get_qrels(self, variant: str | None = None) -> pd.DataFrame:
        """``qid``, ``docno``, ``label``: every candidate of every dialogue, with its grade."""
        rows = [(d.id, c.id, int(c.label)) for d in self.collection.dialogues for c in d.candidates]
        return pd.DataFrame(rows, columns=["qid", "docno", "label"])

    def ranker(self, name: str, **params: Any) -> DsrRanker:
        """The registered ranker ``name`` (:data:`dsr.rankers.RANKERS`) with ``params``."""
        return DsrRanker(self.collection, make_ranker(name, **params))

    def reranker(self, name: str, **params: Any) -> DsrReranker:
        """The registered reranker ``name`` (:data:`dsr.rerankers.RERANKERS`) with ``params``."""
        return DsrReranker(self.collection, make_reranker(name, **params))

    def info_url(self) -> None:
        return None


def _dialogues(collection: Collection, frame: pd.DataFrame) -> list[str]:
    """The frame's qids in their order, each once; InputError for one that is no dialogue."""
    if "qid" not in frame.columns:
        raise InputError(f"a PyTerrier frame needs a qid column; it has {', '.join(map(str, frame.columns))}", field="qid")
    qids = list(dict.fromkeys(frame["qid"].astype(str)))
    for qid in qids:
        if qid not in collection:
            raise InputError(f"qid {qid!r} is not a dialogue of collection {collection.name!r}", record=qid, field="qid")
    return qids


def _results(run: Run, qids: list[str], frame: pd.DataFrame) -> pd.DataFrame:
    """``run``'s rankings of ``qids`` as a result frame, with the input's query columns."""
    rows = [(q, doc, score, rank) for q in qids for rank, (doc, score) in enumerate(run.rankings.get(q, ()))]
    out = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    carried = [c for c in frame.columns if c not in RESULT_COLUMNS and c != "docid"]
    if carried:
        queries = frame[["qid", *carried]].astype({"qid": str}).drop_duplicates("qid")
        out = out.merge(queries, on="qid", how="left")
    return out


class DsrRanker(pt.Transformer):
    """A dsr ranker as a PyTerrier retriever over a collection's dialogues."""

    def __init__(self, collection: Collection, ranker: Ranker) -> None:
        self.collection = collection
        self.stage = ranker
        self._run: Run | None = None

    def __repr__(self) -> str:
        return f"DsrRanker({self.stage.tag!r})"

    def run(self) -> Run:
        """The ranker's run of the whole collection (``dsr run``'s), made once."""
        if self._run is None:
            self._run = self.stage.rank(self.collection)
        return self._run

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        qids = _dialogues(self.collection, inp)
        return _results(self.run() if qids else Run({}), qids, inp)


class DsrReranker(pt.Transformer):
    """A dsr reranker as a PyTerrier re-ranker of a result frame."""

    def __init__(self, collection: Collection, reranker: Reranker) -> None:
        self.collection = collection
        self.stage = reranker

    def __repr__(self) -> str:
        return f"DsrReranker({self.stage.tag!r})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        qids = _dialogues(self.collection, inp)
        if not qids:
            return _results(Run({}), [], inp)
        if "docno" not in inp.columns:
            raise InputError("a reranker reranks a result frame: it needs a docno column", field="docno")
        given = Run.from_frame(inp[[c for c in ("qid", "docno", "score", "rank") if c in inp.columns]], tag="pyterrier")
        for qid, ranked in given.rankings.items():
            candidates = set(self.collection.candidate_ids(qid))
            stray = next((doc for doc, _ in ranked if doc not in candidates), None)
            if stray is not None:
                raise InputError(f"docno {stray!r} is not a candidate of dialogue {qid!r}", record=qid, field="docno")
        reranked = self.stage.rerank(self.collection, given, top_k=self.stage.params.get("top_k"))
        return _results(reranked, qids, inp)


class DatasetProvider(pt.datasets.DatasetProvider):
    """PyTerrier's ``dsr`` dataset provider (the ``pyterrier.dataset_provider`` entry point):
    ``pt.get_dataset("dsr:NAME")`` is ``DsrDataset(NAME)``, ``dsr:NAME/SPLIT`` its split."""

    def get_dataset(self, name: str) -> DsrDataset:
        collection, _, split = name.partition("/")
        return DsrDataset(collection, split=split or None)

    def list_dataset_names(self) -> list[str]:
        return list(REGISTERED)


__all__ = ["DsrDataset", "DsrRanker", "DsrReranker", "DatasetProvider"]
