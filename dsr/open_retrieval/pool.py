"""Pools for new dialogues: each dialogue's top ``depth`` corpus sentences as its candidates.

``dsr pool COLLECTION --corpus DIR --depth 50 --out FILE`` is the first stage
the SIGIR 2022 lists came from (an initial ranker over Wikipedia sentences),
for dialogues that have no candidates yet (CCPE-M's, ReDial's, a user's own):
each dialogue becomes a query (a strategy of :mod:`dsr.core.queries`:
term weights for BM25, text for dense), the corpus is searched
(:class:`dsr.open_retrieval.search.CorpusSearcher`: ``bm25``, ``dense`` or
``fused``), and the ``depth`` best sentences become its candidates in rank
order, ``score`` = the method's score. Labels are all 0 and each dialogue's
``meta`` says ``"judged": false`` with how the pool was made, so the file is a
benchmark file (``dsr stats`` reads it) ready for judging. Existing
candidates are replaced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.params import Settings, setting
from dsr.core.queries import check_strategy, query_terms, query_text
from dsr.core.run import Run
from dsr.open_retrieval.search import CorpusSearcher, Query


@dataclass(frozen=True, kw_only=True)
class PoolSettings(Settings):
    """A pool's settings (``dsr pool --depth``, ``--query``)."""

    depth: int = setting(50, "candidates per dialogue (default 50)", low=1, metavar="N")
    query: str = setting("all", "query strategy: last, last2, all, title+all, weighted (default all)", metavar="Q")


POOL_PARAMS = PoolSettings.params()


def retrieve(
    collection: Collection, searcher: CorpusSearcher, depth: int, query: str = "all", decay: float = 0.5
) -> dict[str, list[tuple[int, float]]]:
    """Dialogue id -> top ``depth`` (global corpus row, score), best first."""
    PoolSettings(depth=depth, query=check_strategy(query))
    queries = []
    params = searcher.bm25.params if searcher.bm25 is not None else {"stopwords": False, "stem": False}
    for dialogue in collection:
        text = query_text(dialogue, query, decay)
        terms = query_terms(dialogue, query, decay, stopwords=params["stopwords"], stem=params["stem"])
        if not text.strip() or (searcher.bm25 is not None and not terms):
            raise InputError(f"the dialogue gives an empty query with strategy {query!r}", record=dialogue.id, field="context")
        queries.append(Query(text, terms))
    results = searcher.search(queries, depth)
    return {d.id: ranked for d, ranked in zip(collection, results)}


def pool_collection(
    collection: Collection, searcher: CorpusSearcher, depth: int = 50, query: str = "all", decay: float = 0.5
) -> Collection:
    """A copy of ``collection`` whose candidates are the corpus's top ``depth`` per dialogue."""
    results = retrieve(collection, searcher, depth, query, decay)
    how: dict[str, Any] = {**searcher.describe(), "depth": depth, "query": query, "decay": decay}
    dialogues = []
    for dialogue in collection:
        ranked = results[dialogue.id]
        records = searcher.corpus.records([row for row, _ in ranked])
        candidates = [Candidate(r["id"], r["title"], r["text"], float(score), 0) for r, (_, score) in zip(records, ranked)]
        dialogues.append(pooled_dialogue(dialogue, candidates, how))
    return Collection(f"{collection.name}-pool", dialogues, meta={"pooled_from": collection.describe()})


def pooled_dialogue(dialogue: Dialogue, candidates: list[Candidate], how: dict[str, Any]) -> Dialogue:
    """``dialogue`` with the pooled ``candidates``, not judged yet, and ``meta.pool`` saying how
    they were pooled."""
    return replace(dialogue, candidates=candidates, meta={**dialogue.meta, "judged": False, "pool": how})


def pool_runs(collection: Collection, runs: dict[str, Run], depth: int) -> tuple[Collection, list[dict]]:
    """The TREC pool of ``runs`` (name -> Run over ``collection``): each dialogue's candidates
    cut to the union of every run's top ``depth`` (in the collection's candidate order),
    labels 0 and ``meta.judged`` false, ready for ``dsr judge create``. Also, per run: the
    sentences it puts in the pool (``contributed``: its top ``depth`` over all dialogues)
    and those no other run puts there (``unique``)."""
    depth = POOL_PARAMS[0].check(depth)
    if not runs:
        raise InputError("give at least one run", field="runs")
    tops = {name: {q: set(run.top(q, depth)) for q in run.topics()} for name, run in runs.items()}
    dialogues: list[Dialogue] = []
    rows: dict[str, dict[str, Any]] = {name: {"run": name, "contributed": 0, "unique": 0} for name in runs}
    for d in collection:
        pooled = set().union(*(top.get(d.id, set()) for top in tops.values()))
        for name, top in tops.items():
            mine = top.get(d.id, set())
            others = set().union(*(t.get(d.id, set()) for n, t in tops.items() if n != name))
            rows[name]["contributed"] += len(mine)
            rows[name]["unique"] += len(mine - others)
        known = {c.id for c in d.candidates}
        stray = sorted(pooled - known)
        if stray:
            raise InputError(f"run(s) rank {stray[0]!r}, not a candidate of the dialogue", record=d.id, field="runs")
        candidates = [Candidate(c.id, c.title, c.body, c.score, 0) for c in d.candidates if c.id in pooled]
        if candidates:
            dialogues.append(pooled_dialogue(d, candidates, {"runs": list(runs), "depth": depth}))
    unknown = sorted(set().union(*(set(r.topics()) for r in runs.values())) - set(collection.ids))
    if unknown:
        raise InputError(f"run topic {unknown[0]!r} is not a dialogue of {collection.name}", field="runs")
    if not dialogues:
        raise InputError("the runs rank nothing of the collection", field="runs")
    total = sum(len(d.candidates) for d in dialogues)
    for row in rows.values():
        row["share_of_pool"] = row["contributed"] and row["contributed"] / total
    return (
        Collection(
            f"{collection.name}-pool{depth}",
            dialogues,
            meta={"pooled_from": collection.describe(), "runs": list(runs), "depth": depth},
        ),
        list(rows.values()),
    )
