"""A collection seen as an ad-hoc test collection: corpus, queries, qrels, candidates.

Corpus ids
----------
dsr candidates belong to a dialogue: the same candidate id may, in principle,
appear in two dialogues with different text (the TREC files are per topic, so
dsr itself never needs a global id). Corpus formats (BEIR, Hugging Face,
ir_datasets) need one id per distinct document, so:

* a candidate id whose title and text are the same wherever it appears keeps
  its id as the corpus id (one document, however many dialogues list it);
  this is every id of the collections shipped today, so dsr runs, ``dsr
  qrels`` and the exports use the same ids;
* an id that appears with different title or text gets one corpus id per
  distinct text: ``ID~H`` where ``H`` is the first 10 hex digits of the
  sha256 of ``title + "\\n" + body`` (stable: it does not depend on the
  order of dialogues).

:attr:`TestCollection.renamed` lists those ids; the export manifest records
the rule and the count. A corpus id that would clash with another is an
InputError (never silently merged).

Queries
-------
A dialogue becomes a query through a named strategy (:mod:`dsr.core.queries`,
``query_text``, the text the dense models encode); exports take one strategy
for ``text`` (default ``all``), and the ir_datasets queries carry every
strategy as its own field.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from dsr.core.data import MACHINE_KEYS, Collection
from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.queries import OWN_STRATEGIES, check_strategy, query_text

DEFAULT_QUERY = "all"
#: the query strategy of an export's query text (``dsr export --query``; checked by ``check_strategy``)
QUERY = Param(
    "query", DEFAULT_QUERY, "str", "query strategy for the query text: last, last2, all, title+all, weighted", metavar="Q"
)
ID_RULE = (
    "corpus id = candidate id when the id has one title and text across the collection; "
    "otherwise ID~H, H = sha256(title + '\\n' + body)[:10] hex, one per distinct text"
)


@dataclass(frozen=True)
class Document:
    """One corpus document: a distinct candidate sentence."""

    doc_id: str
    title: str
    text: str


@dataclass
class TestCollection:
    """The corpus-level view of a collection (see the module docstring for the id rule).

    ``candidates[qid]`` lists ``(corpus id, candidate id, initial score,
    label)`` in the dialogue's initial-rank order.
    """

    collection: Collection
    query: str = DEFAULT_QUERY
    documents: dict[str, Document] = field(default_factory=dict)
    candidates: dict[str, list[tuple[str, str, float | None, int]]] = field(default_factory=dict)
    renamed: list[str] = field(default_factory=list)

    __test__ = False  # not a pytest class, despite the name

    @classmethod
    def build(cls, collection: Collection, query: str = DEFAULT_QUERY) -> TestCollection:
        check_strategy(query)
        texts: dict[str, set[tuple[str, str]]] = {}
        for dialogue in collection:
            for cand in dialogue.candidates:
                texts.setdefault(cand.id, set()).add((cand.title, cand.body))
        renamed = sorted(cid for cid, variants in texts.items() if len(variants) > 1)
        clash = set(renamed)
        view = cls(collection, query, renamed=renamed)
        owner: dict[str, tuple[str, str, str]] = {}
        for dialogue in collection:
            ranked = []
            for cand in dialogue.candidates:
                doc_id = corpus_id(cand.id, cand.title, cand.body) if cand.id in clash else cand.id
                key = (cand.id, cand.title, cand.body)
                if owner.setdefault(doc_id, key) != key:
                    raise InputError(
                        f"corpus id {doc_id!r} of candidate {cand.id!r} clashes with candidate {owner[doc_id][0]!r}",
                        record=dialogue.id,
                        field="candidates.id",
                    )
                view.documents.setdefault(doc_id, Document(doc_id, cand.title, cand.body))
                ranked.append((doc_id, cand.id, cand.score, cand.label))
            view.candidates[dialogue.id] = ranked
        return view

    def query_text(self, qid: str, strategy: str | None = None) -> str:
        return query_text(self.collection[qid], strategy or self.query)

    def queries(self, strategy: str | None = None) -> dict[str, str]:
        """Dialogue id -> query text under ``strategy`` (default: this view's)."""
        return {d.id: query_text(d, strategy or self.query) for d in self.collection}

    def all_strategies(self, qid: str) -> dict[str, str]:
        """Every strategy's text for one dialogue (``title+all`` keyed as ``title_all``)."""
        dialogue = self.collection[qid]
        return {s.replace("+", "_"): query_text(dialogue, s) for s in OWN_STRATEGIES}

    def qrels(self) -> dict[str, dict[str, int]]:
        """Graded qrels by corpus id (judged non-relevant candidates kept with 0)."""
        return {qid: {doc: label for doc, _, _, label in ranked} for qid, ranked in self.candidates.items()}

    def candidate_scores(self, qid: str) -> list[tuple[str, float]]:
        """``(corpus id, score)`` in initial-rank order: the initial score, or, where a
        collection has none, ``n - position`` (so the order is kept and scores decrease)."""
        ranked = self.candidates[qid]
        scores = [score for _, _, score, _ in ranked if score is not None]
        if len(scores) == len(ranked):
            return [(doc, float(score)) for (doc, *_rest), score in zip(ranked, scores)]
        return [(doc, float(len(ranked) - i)) for i, (doc, *_rest) in enumerate(ranked)]

    def describe(self) -> dict:
        """What an export's manifest records about the view (no path of this machine)."""
        collection = self.collection.describe()
        if "meta" in collection:
            collection["meta"] = {k: v for k, v in collection["meta"].items() if k not in MACHINE_KEYS}
        return {
            "collection": collection,
            "query": self.query,
            "queries": len(self.collection),
            "documents": len(self.documents),
            "judgements": sum(len(r) for r in self.candidates.values()),
            "id_rule": ID_RULE,
            "renamed_ids": len(self.renamed),
        }


def corpus_id(candidate_id: str, title: str, body: str) -> str:
    """``ID~H``: the id of one text variant of a candidate id used with several texts."""
    digest = hashlib.sha256(f"{title}\n{body}".encode()).hexdigest()[:10]
    return f"{candidate_id}~{digest}"


_SPACE = re.compile(r"\s+")


def one_line(text: str) -> str:
    """Text for one TSV field or one TREC line: every run of whitespace (tabs and
    newlines included) becomes one space."""
    return _SPACE.sub(" ", text).strip()
