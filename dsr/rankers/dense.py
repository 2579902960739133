"""``dense``: cosine between the encoded dialogue query and each candidate sentence.

Re-ranking (:class:`DenseRanker`, the benchmark task) encodes every candidate
and query text once (vectors are cached on disk, see :mod:`dsr.indexes.embeddings`)
and scores each dialogue's own candidates. Open retrieval
(:func:`dense_search`) searches a FAISS index of a whole pool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dsr.collections.documents import DEFAULT_WINDOW, candidate_renderer
from dsr.core.candidate_text import BODY_FORMS, TEXT_FORMS, candidate_text, check_text_form
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.core.params import Param, by_name
from dsr.core.queries import DEFAULT_DECAY, OWN_STRATEGIES, STRATEGIES, model_query_budget, query_text
from dsr.core.run import Run
from dsr.indexes.backends import CHOICES, DEFAULT_BACKEND, resolve_backend
from dsr.indexes.dense import DenseIndex
from dsr.indexes.embeddings import encode, settle_near_ties
from dsr.indexes.exactness import BACKEND_HELP
from dsr.rankers.base import Ranker, ranker_config, strategy_tag


def dense_params(model: str = "all-MiniLM-L6-v2", batch_size: int = 64) -> tuple[Param, ...]:
    """The parameters of the dense ranker and the bi-encoder reranker (one declaration)."""
    return (
        Param("model", model, "str", "bi-encoder: a short name, a folder, dsr:NAME or a hub id"),
        Param("query", "all", "str", "query strategy (dsr.core.queries)", choices=STRATEGIES, grid=OWN_STRATEGIES),
        Param("batch_size", batch_size, "int", "texts encoded per batch", low=1),
        Param(
            "text",
            "body",
            "str",
            "what a candidate's text is (the context form: the sentence "
            "between its neighbours in its document, fitted to the model's length)",
            choices=TEXT_FORMS,
        ),
        Param("context", DEFAULT_WINDOW, "int", "neighbouring sentences on each side (text = the context form)", low=1, high=20),
        Param(
            "documents",
            None,
            "str",
            "folder of the documents for the context form (a source's that offers "
            "documents; default: the collection's source, else $DSR_HOME/data/NAME of such a source)",
            optional=True,
        ),
        Param("decay", DEFAULT_DECAY, "float", "per-turn weight decay of query=weighted", above=0, high=1),
        Param("backend", DEFAULT_BACKEND, "str", BACKEND_HELP, choices=CHOICES),
    )


def resolved_backend(described: dict[str, Any]) -> dict[str, Any]:
    """A stage's ``describe()`` with its ``backend`` parameter as it runs (``auto`` resolved), so a
    run's config names the backend that made it."""
    params = dict(described["params"])
    params["backend"] = resolve_backend(params["backend"])
    return {**described, "params": params}


def budgeted_queries(dialogues: Iterable[Dialogue], model: Any, strategy: str, decay: float) -> list[str]:
    """Each dialogue's query text, fitted to the bi-encoder's max sequence length
    (oldest turns dropped first; see :mod:`dsr.core.queries`)."""

    budget, count = model_query_budget(model.path)
    return [query_text(d, strategy, decay, budget=budget, count=count) for d in dialogues]


def renderer(collection: Collection, params: Mapping[str, Any], model_path: str) -> Any:
    """Candidate -> text as the dense ranker and bi-encoder reranker read it (their ``text``,
    ``context`` and ``documents`` parameters; the context form fitted to the model)."""
    return candidate_renderer(
        collection, params["text"], documents=params["documents"], window=params["context"], model_path=model_path
    )


class DenseRanker(Ranker):
    """Bi-encoder re-ranking: cosine(query text, candidate text).

    Parameters: ``model`` (a spec for dsr.core.models.resolve_model),
    ``query`` (a strategy; ``weighted`` is its text form), ``batch_size``,
    ``text`` (``body`` or ``title: body``), ``decay`` (for ``weighted``),
    ``backend`` (``torch``, the default: exact; ``openvino`` / ``openvino-bf16`` /
    ``openvino-int8``: faster, or ``auto``: see :mod:`dsr.indexes.backends`); the run's
    config records the backend that ran.
    """

    name = "dense"
    PARAMS = dense_params()

    @property
    def tag(self) -> str:
        return strategy_tag(self)

    def describe(self) -> dict[str, Any]:
        """The parameters with ``backend`` as it runs (``auto`` resolved)."""
        return resolved_backend(super().describe())

    def rank(self, collection: Collection) -> Run:
        p = self.params
        model = resolve_model(str(p["model"]), "bi-encoder")
        render = renderer(collection, p, model.path)
        cand_texts = [render(c) for d in collection for c in d.candidates]
        queries = budgeted_queries(collection, model, p["query"], p["decay"])
        backend = resolve_backend(p["backend"])
        cand_vectors = encode(cand_texts, model, p["batch_size"], desc="encoding candidates", backend=backend)
        query_vectors = encode(queries, model, p["batch_size"], desc="encoding queries", backend=backend)
        topics, row = [], 0
        for dialogue, query, qvec in zip(collection, queries, query_vectors):
            n = len(dialogue.candidates)
            topics.append((cand_vectors[row : row + n] @ qvec, query, cand_texts[row : row + n]))
            row += n
        cosines = settle_near_ties(topics, model, backend)  # the exact backend's order: the same on every machine
        scores = {d.id: {c.id: float(s) for c, s in zip(d.candidates, values)} for d, values in zip(collection, cosines)}
        return Run.from_scores(
            scores,
            tag=self.tag,
            config=ranker_config(self, collection, model=model.describe()),
            initial_order=collection.initial_order(),
        )


def dense_search(
    pool: Collection | Mapping[str, str],
    queries: Mapping[str, str],
    k: int = 100,
    *,
    model: str = "all-MiniLM-L6-v2",
    index: str = "flat",
    batch_size: int = 64,
    text: str = "body",
    name: str | None = None,
    tag: str = "dense",
    **index_params: Any,
) -> Run:
    """Open retrieval: the top ``k`` sentences of ``pool`` by cosine, for each query text.

    ``pool``: a collection (its sentence pool, as ``text``) or ``{id: text}``;
    ``index``: ``flat`` (exact), ``hnsw`` or ``ivf`` (see :mod:`dsr.indexes.dense`,
    which also lists ``index_params``). The FAISS index and all vectors are
    cached under ``DSR_HOME/indexes``. On ``flat``, near ties are settled in float64 and ties
    broken by pool order (the same top ``k`` on every machine); on ``hnsw`` and ``ivf``, by FAISS rank.
    """

    check_text_form(text)
    if text not in BODY_FORMS:
        raise InputError(f"open dense search reads {' or '.join(BODY_FORMS)}, not {text!r}", field="text")
    if isinstance(pool, Collection):
        name = name or pool.name
        texts_by_id = {d: candidate_text(c, text) for d, c in pool.unique_sentences().items()}
    else:
        texts_by_id = dict(pool)
    dense = DenseIndex.cached(
        list(texts_by_id),
        list(texts_by_id.values()),
        name=name or "pool",
        model=model,
        kind=index,
        batch_size=by_name(dense_params())["batch_size"].check(batch_size, "dense search"),
        **index_params,
    )
    qids = list(queries)
    results = dense.search([queries[q] for q in qids], k)
    return Run.from_scores(
        {q: dict(r) for q, r in zip(qids, results)},
        tag=tag,
        config={"search": "dense", "k": k, "index": index, "model": dense.model.describe(), "text": text, **index_params},
        initial_order={q: [d for d, _ in r] for q, r in zip(qids, results)},
    )
