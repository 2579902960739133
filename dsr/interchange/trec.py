"""TREC topics and qrels: the files trec_eval, ir_measures, PyTerrier and Anserini read.

``topics.tsv``
    ``qid<TAB>query``, one dialogue a line, the query text under the export's
    strategy with every run of whitespace made one space (pyserini's TSV
    topics; PyTerrier: ``pd.read_csv(path, sep="\\t", names=["qid", "query"])``).
``topics.trec``
    the classic TREC ``<top>`` format: ``<num> Number:`` the dialogue id,
    ``<title>`` the query (as in topics.tsv), ``<desc> Description:`` the
    context turns, one a line as ``author: text``, ``<narr> Narrative:`` the
    dialogue's title and subset (``pt.io.read_topics(path)``, ir_datasets'
    ``TrecQueries``).
``qrels.txt``
    graded TREC qrels ``qid 0 docid grade`` (exactly what ``dsr qrels``
    writes): every candidate of every dialogue, judged non-relevant ones with 0.
    Doc ids are the candidate ids, as in dsr's runs (TREC qrels are per topic,
    so no corpus id is needed).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from dsr.evaluation.qrels import qrels_from_collection, write_qrels
from dsr.interchange.corpus import TestCollection, one_line
from dsr.interchange.folder import write_lines

FILES = ("topics.tsv", "topics.trec", "qrels.txt")


#: the format's name (``dsr export --format trec``)
NAME = "trec"


def write(view: TestCollection, folder: Path) -> list[str]:
    queries = view.queries()
    write_lines(folder / "topics.tsv", (f"{qid}\t{one_line(text)}" for qid, text in queries.items()))
    write_lines(folder / "topics.trec", topic_lines(view, queries))
    write_qrels(qrels_from_collection(view.collection), folder / "qrels.txt")
    return list(FILES)


def topic_lines(view: TestCollection, queries: dict[str, str]) -> Iterator[str]:
    for dialogue in view.collection:
        yield "<top>"
        yield f"<num> Number: {dialogue.id}"
        yield f"<title> {one_line(queries[dialogue.id])}"
        yield "<desc> Description:"
        for i, turn in enumerate(dialogue.context, start=1):
            # One turn a line; the speaker first, so no line starts with '<' (a tag).
            yield f"{one_line(turn.author_name) or f'turn {i}'}: {one_line(turn.body)}"
        yield "<narr> Narrative:"
        yield f"dialogue title: {one_line(dialogue.title)}; subset: {dialogue.subset}"
        yield "</top>"
        yield ""
