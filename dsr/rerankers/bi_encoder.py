"""``bi-encoder``: rescore a run's top k by cosine between query and candidate embeddings."""

from __future__ import annotations

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.indexes.backends import resolve_backend
from dsr.indexes.embeddings import encode, settle_near_ties
from dsr.rankers.dense import budgeted_queries, dense_params, renderer, resolved_backend
from dsr.rerankers.base import Reranker, rerank_top_k


class BiEncoderReranker(Reranker):
    """Cosine(query text, candidate text) with a sentence-transformers bi-encoder.

    The top ``top_k`` sentences of each topic (all when None) are rescored and
    sorted by cosine (ties keep the run's order); the rest follow in the run's
    order, with scores ``min(top cosines) - 1 - i`` so that every score stays
    strictly decreasing. Embeddings are cached (:mod:`dsr.indexes.embeddings`).
    Parameters as for the ``dense`` ranker: ``model``, ``query``,
    ``batch_size``, ``text``, ``decay``, ``backend``.
    """

    name = "bi-encoder"
    PARAMS = (*dense_params(), Param("top_k", None, "int", "rescore each topic's top k (none: all)", low=1))

    def describe(self) -> dict:
        """The parameters with ``backend`` as it runs (``auto`` resolved)."""
        return resolved_backend(super().describe())

    def rerank(self, collection: Collection, run: Run, top_k: int | None = None) -> Run:
        top_k = top_k if top_k is not None else self.params["top_k"]
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
            raise InputError(f"top_k must be a whole number >= 1, got {top_k!r}", field="top_k")
        p = self.params
        model = resolve_model(str(p["model"]), "bi-encoder")
        render = renderer(collection, p, model.path)
        heads: dict[str, list[str]] = {}
        pair_texts: list[str] = []
        queries: list = []  # the dialogues, in topic order
        for qid in run.topics():
            if qid not in collection:
                raise InputError(
                    f"topic {qid!r} of the run is not a dialogue of collection "
                    f"{collection.name!r} (a run for another collection?)",
                    record=qid,
                    field="qid",
                )
            dialogue = collection[qid]
            by_id = {c.id: c for c in dialogue.candidates}
            head = run.top(qid, top_k)
            for doc in head:
                if doc not in by_id:
                    raise InputError(f"sentence {doc!r} is not a candidate of dialogue {qid!r}", record=qid, field="docid")
                pair_texts.append(render(by_id[doc]))
            heads[qid] = head
            queries.append(dialogue)
        backend = resolve_backend(p["backend"])
        cand_vectors = encode(pair_texts, model, p["batch_size"], desc="encoding candidates", backend=backend)
        query_texts = budgeted_queries(queries, model, p["query"], p["decay"])
        query_vectors = encode(query_texts, model, p["batch_size"], desc="encoding queries", backend=backend)
        topics, row = [], 0
        for head, query, qvec in zip(heads.values(), query_texts, query_vectors):
            topics.append((cand_vectors[row : row + len(head)] @ qvec, query, pair_texts[row : row + len(head)]))
            row += len(head)
        settled = settle_near_ties(topics, model, backend)  # the exact backend's order: the same on every machine
        new_scores: dict[tuple[str, str], float] = {}
        for (qid, head), values in zip(heads.items(), settled):
            new_scores.update(((qid, doc), cos) for doc, cos in zip(head, values.tolist()))
        rankings = rerank_top_k(collection, run, new_scores, top_k).rankings
        config = {
            **self.describe(),
            "model": model.describe(),
            "top_k": top_k,
            "first_stage": {"tag": run.tag, **run.config},
            "collection": collection.describe(),
        }
        tag = f"{run.tag}>>{self.name}-query={p['query']}" + (f"@{top_k}" if top_k else "")
        return Run(rankings, tag, config)
