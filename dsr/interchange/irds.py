"""ir_datasets: dsr collections under ``dsr/...`` ids, and the ``--format ir_datasets`` layout.

Registration (ir_datasets' extension mechanism: ``ir_datasets.registry.register``)
happens when this module is imported: the one supported way, in Python and on the command line::

    import ir_datasets
    import dsr.interchange.irds            # registers dsr/...
    dataset = ir_datasets.load("dsr/sample")

    python -m dsr.interchange.irds export dsr/sample queries   # ir_datasets' own command line

ir_datasets (0.6) finds an extension only when something imports it: it reads no entry point
and has no plug-in list (allenai/ir_datasets issue 297 asks for one), so a fresh
``ir_datasets.load("dsr/sample")`` or ``ir_datasets export dsr/sample ...`` cannot see dsr's
ids without the import above, short of a ``.pth`` start-up hook in every Python process of
the environment, which dsr does not install. PyTerrier users need no import:
``pt.get_dataset("dsr:sample")`` comes through PyTerrier's own entry point
(:mod:`dsr.pyterrier`).

The handlers::

    for doc in dataset.docs_iter(): ...      # DsrDoc(doc_id, text, title)
    for query in dataset.queries_iter(): ... # DsrQuery(query_id, text, last, last2, ...)
    for qrel in dataset.qrels_iter(): ...    # TrecQrel(query_id, doc_id, relevance, iteration)
    for sd in dataset.scoreddocs_iter(): ... # each dialogue's candidates, initial scores

Ids: ``dsr/NAME`` (the source's default split) and ``dsr/NAME/SPLIT`` for every
registered collection with candidates (``dsr/sample``, ``dsr/sample/plain``,
``dsr/cmu_dog/valid``, ``dsr/redial/test``, ``dsr/sigir2022/grounded``...);
:func:`register_benchmark` adds a benchmark file under an id of your choice.
Nothing is read until a handler is iterated: sources that need raw files find
them where dsr does (``$DSR_HOME/data/NAME``, see ``dsr data fetch``) and the
built collection is cached as for ``dsr run``. Docs are the corpus documents
of :mod:`dsr.interchange.corpus` (corpus ids = candidate ids unless an id
has two texts); a query's ``text`` is the ``all`` strategy and every other
strategy has its own field (``title+all`` as ``title_all``), so PyTerrier's
``get_topics("last")`` picks one.

The export layout (``dsr export C --format ir_datasets --out DIR``) is what
``ir_datasets.create_dataset(docs_tsv=..., queries_tsv=..., qrels_trec=...)``
reads: ``docs.tsv`` (``doc_id<TAB>text``), ``queries.tsv``
(``query_id<TAB>text``), ``qrels.trec`` (graded, corpus ids), plus
``scoreddocs.run`` (a TREC run of the candidates with their initial scores,
for ``ir_datasets.formats.TrecScoredDocs``). TSV text has whitespace runs made
one space; docs.tsv holds the sentence (``title`` is in the BEIR and HF exports).
"""

# No `from __future__ import annotations` here: PyTerrier's text loader keeps the document
# fields whose annotation *is* `str`, which string annotations would hide.
import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQrels, BaseQueries, BaseScoredDocs, GenericScoredDoc, TrecQrel
from ir_datasets.indices import Docstore

from dsr.collections import REGISTERED, load_collection, source_module
from dsr.core.data import Collection, read_benchmark
from dsr.interchange.corpus import TestCollection, one_line
from dsr.interchange.folder import write_lines

PREFIX = "dsr"
FILES = ("docs.tsv", "queries.tsv", "qrels.trec", "scoreddocs.run")
QRELS_DEFS = {
    0: "not relevant: would not help write the next turn",
    1: "relevant: would help write the next turn",
    2: "highly relevant (graded collections: cmu_dog, redial)",
}


class DsrDoc(NamedTuple):
    doc_id: str
    text: str
    title: str

    def default_text(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text


class DsrQuery(NamedTuple):
    query_id: str
    text: str  # the `all` strategy: every context turn
    last: str
    last2: str
    title_all: str
    weighted: str
    title: str  # the dialogue's title
    subset: str

    def default_text(self) -> str:
        return self.text


class _Lazy:
    """The test-collection view, built on first use and shared by the handlers."""

    def __init__(self, loader: Callable[[], Collection]) -> None:
        self._loader = loader

    @cached_property
    def view(self) -> TestCollection:
        return TestCollection.build(self._loader())


class _OnView:
    """A handler over the shared lazy view."""

    def __init__(self, lazy: _Lazy) -> None:
        self._lazy = lazy


class DsrDocs(_OnView, BaseDocs):
    def docs_iter(self) -> Iterator[DsrDoc]:
        for doc in self._lazy.view.documents.values():
            yield DsrDoc(doc.doc_id, doc.text, doc.title)

    def docs_count(self) -> int:
        return len(self._lazy.view.documents)

    def docs_cls(self) -> type[DsrDoc]:
        return DsrDoc

    def docs_store(self, field: str = "doc_id", options: Any = None) -> "_Store":
        return _Store(self)

    def docs_namespace(self) -> str:
        return PREFIX

    def docs_lang(self) -> str:
        return "en"


class _Store(Docstore):
    def __init__(self, docs: DsrDocs) -> None:
        super().__init__(DsrDoc, "doc_id")
        self._docs = docs

    def get_many_iter(self, doc_ids: Iterable[str]) -> Iterator[DsrDoc]:
        documents = self._docs._lazy.view.documents
        for doc_id in doc_ids:
            if doc_id in documents:
                doc = documents[doc_id]
                yield DsrDoc(doc.doc_id, doc.text, doc.title)


class DsrQueries(_OnView, BaseQueries):
    def queries_iter(self) -> Iterator[DsrQuery]:
        view = self._lazy.view
        for dialogue in view.collection:
            texts = view.all_strategies(dialogue.id)
            yield DsrQuery(
                dialogue.id,
                texts["all"],
                texts["last"],
                texts["last2"],
                texts["title_all"],
                texts["weighted"],
                dialogue.title,
                dialogue.subset,
            )

    def queries_cls(self) -> type[DsrQuery]:
        return DsrQuery

    def queries_namespace(self) -> str:
        return PREFIX

    def queries_lang(self) -> str:
        return "en"


class DsrQrels(_OnView, BaseQrels):
    def qrels_iter(self) -> Iterator[TrecQrel]:
        for qid, docs in self._lazy.view.qrels().items():
            for doc, grade in docs.items():
                yield TrecQrel(qid, doc, grade, "0")

    def qrels_cls(self) -> type[TrecQrel]:
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return dict(QRELS_DEFS)


class DsrScoredDocs(_OnView, BaseScoredDocs):
    def scoreddocs_iter(self) -> Iterator[GenericScoredDoc]:
        view = self._lazy.view
        for qid in view.candidates:
            for doc, score in view.candidate_scores(qid):
                yield GenericScoredDoc(qid, doc, score)

    def scoreddocs_count(self) -> int:
        return sum(len(r) for r in self._lazy.view.candidates.values())


def dataset(loader: Callable[[], Collection]) -> ir_datasets.Dataset:
    """An ir_datasets Dataset (docs, queries, qrels, scoreddocs) over ``loader()``'s collection."""
    lazy = _Lazy(loader)
    return ir_datasets.Dataset(DsrDocs(lazy), DsrQueries(lazy), DsrQrels(lazy), DsrScoredDocs(lazy))


def dataset_ids() -> dict[str, tuple[str, str | None]]:
    """``dsr/...`` id -> (collection name, split) for every registered source with candidates."""
    ids: dict[str, tuple[str, str | None]] = {}
    for name in REGISTERED:
        info = source_module(name).SOURCE
        if not info.has_candidates:
            continue
        ids[f"{PREFIX}/{name}"] = (name, None)
        for split in info.splits:
            ids[f"{PREFIX}/{name}/{split}"] = (name, split)
    return ids


def register() -> list[str]:
    """Register every ``dsr/...`` id not registered yet (idempotent); returns the ids."""
    known = set(ir_datasets.registry)  # Registry iterates over its ids
    for dataset_id, (name, split) in dataset_ids().items():
        if dataset_id not in known:
            ir_datasets.registry.register(dataset_id, dataset(functools.partial(load_collection, name, None, split)))
    return list(dataset_ids())


def register_benchmark(dataset_id: str, path: str | Path) -> ir_datasets.Dataset:
    """Register a benchmark ``.jsonl`` file (users' own collections) as ``dataset_id``."""
    ir_datasets.registry.register(dataset_id, dataset(lambda: read_benchmark(path)))
    return ir_datasets.load(dataset_id)


#: the format's name (``dsr export --format ir_datasets``)
NAME = "ir_datasets"


def write(view: TestCollection, folder: Path) -> list[str]:
    """The ``--format ir_datasets`` layout (see the module docstring)."""
    write_lines(folder / "docs.tsv", (f"{d.doc_id}\t{one_line(d.text)}" for d in view.documents.values()))
    write_lines(folder / "queries.tsv", (f"{qid}\t{one_line(text)}" for qid, text in view.queries().items()))
    write_lines(
        folder / "qrels.trec", (f"{qid} 0 {doc} {grade}" for qid, docs in view.qrels().items() for doc, grade in docs.items())
    )
    write_lines(
        folder / "scoreddocs.run",
        (
            f"{qid} Q0 {doc} {rank} {score!r} dsr-candidates"
            for qid in view.candidates
            for rank, (doc, score) in enumerate(view.candidate_scores(qid), start=1)
        ),
    )
    return list(FILES)


def main(argv: list[str] | None = None) -> None:
    """``python -m dsr.interchange.irds ARGS``: ir_datasets' own command line (``export``,
    ``lookup``, ``list``, ...) with dsr's ids registered."""
    register()
    ir_datasets.main(list(sys.argv[1:] if argv is None else argv))


register()

if __name__ == "__main__":
    main()
