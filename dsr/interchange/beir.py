"""BEIR's folder layout, which BEIR's ``GenericDataLoader`` and MTEB-style code load.

``corpus.jsonl``
    ``{"_id", "title", "text"}``: one line per distinct candidate sentence
    (corpus ids: see :mod:`dsr.interchange.corpus`).
``queries.jsonl``
    ``{"_id", "text", "metadata": {"subset", "title"}}``: one line per
    dialogue, ``text`` the query under the export's strategy.
``qrels/test.tsv``
    header ``query-id<TAB>corpus-id<TAB>score``, then every judged candidate
    with its grade (0 kept: judged not relevant).
``candidates.jsonl``
    dsr's addition for reranking: ``{"query-id", "corpus-ids": [...], "scores":
    [...]}``, each dialogue's candidates in initial-rank order with the initial
    scores (``n - position`` where the collection has none). A full-corpus
    retriever ignores it; a reranker should rank only these.

Load it with ``GenericDataLoader(data_folder=DIR).load(split="test")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsr.interchange.corpus import TestCollection
from dsr.interchange.folder import write_jsonl, write_lines

FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "candidates.jsonl")


#: the format's name (``dsr export --format beir``)
NAME = "beir"


def write(view: TestCollection, folder: Path) -> list[str]:
    write_jsonl(folder / "corpus.jsonl", corpus_rows(view))
    write_jsonl(
        folder / "queries.jsonl",
        (
            {"_id": d.id, "text": view.query_text(d.id), "metadata": {"subset": d.subset, "title": d.title}}
            for d in view.collection
        ),
    )
    write_lines(
        folder / "qrels" / "test.tsv",
        ["query-id\tcorpus-id\tscore"]
        + [f"{qid}\t{doc}\t{grade}" for qid, docs in view.qrels().items() for doc, grade in docs.items()],
    )
    write_jsonl(folder / "candidates.jsonl", candidate_rows(view))
    return list(FILES)


def corpus_rows(view: TestCollection) -> Iterator[dict[str, str]]:
    return ({"_id": d.doc_id, "title": d.title, "text": d.text} for d in view.documents.values())


def candidate_rows(view: TestCollection) -> Iterator[dict[str, Any]]:
    for qid in view.candidates:
        scored = view.candidate_scores(qid)
        yield {"query-id": qid, "corpus-ids": [d for d, _ in scored], "scores": [s for _, s in scored]}
