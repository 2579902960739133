"""Documents -> sentences with ids in the SIGIR 2022 style.

The SIGIR 2022 corpus names a sentence by "the document title, document ID,
section ID, passage ID, sentence ID and the paper title" (its README). Here a
sentence id is ``TITLE_DOC_SECTION_PASSAGE_SENTENCE`` as in this project's
README (``Roman_concrete_1_2_0_3``): the title as in a Wikipedia URL (white
space -> ``_``), without the trailing repeat of the title, because run files
are whitespace-separated (an id with a space would break a TREC line), and:

* TITLE is the document title with every run of white space replaced by ``_``;
* DOC is the source's document id (the page id of a dump);
* SECTION counts headings (``== H ==`` lines, see indexes.corpus.sources):
  0 is the lead, 1 the first section, and so on;
* PASSAGE counts the paragraphs (non-empty lines) of the section from 0;
* SENTENCE counts the paragraph's sentences (pysbd, English) from 0.

Sentences with no letter or digit (stray punctuation left by markup) and
sentences shorter than ``min_chars`` are dropped without renumbering the
others, so a kept sentence's id does not depend on the threshold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator

from indexes.corpus.sources import Document

_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1$")
_WORD = re.compile(r"\w")

#: Parquet columns of a corpus shard, in order
COLUMNS = ("id", "doc_id", "title", "section", "passage", "sentence", "text")


@dataclass
class Sentence:
    id: str
    doc_id: str
    title: str
    section: int
    passage: int
    sentence: int
    text: str


_SPACE = re.compile(r"\s+")


def sentence_id(title: str, doc_id: str, section: int, passage: int, sentence: int) -> str:
    return f"{_SPACE.sub('_', title.strip())}_{_SPACE.sub('_', doc_id.strip())}_{section}_{passage}_{sentence}"


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """pysbd's English sentences of one paragraph, stripped, empty ones dropped."""
    return [s.strip() for s in _segmenter().segment(text) if s.strip()]


def document_sentences(doc: Document, min_chars: int = 1) -> Iterator[Sentence]:
    """The document's sentences in order, numbered by section, passage and sentence."""
    section, passage = 0, 0
    for line in doc.text.splitlines():
        line = line.strip()
        if not line:
            continue
        if _HEADING.match(line):
            section += 1
            passage = 0
            continue
        for number, text in enumerate(split_sentences(line)):
            if len(text) >= min_chars and _WORD.search(text):
                yield Sentence(sentence_id(doc.title, doc.id, section, passage, number), doc.id, doc.title,
                               section, passage, number, text)
        passage += 1


def sentences_table(docs: Iterable[Document], min_chars: int = 1):
    """A pyarrow Table (columns :data:`COLUMNS`) of the documents' sentences."""
    import pyarrow as pa

    rows = [s for doc in docs for s in document_sentences(doc, min_chars)]
    return pa.table({
        "id": pa.array([s.id for s in rows], pa.string()),
        "doc_id": pa.array([s.doc_id for s in rows], pa.string()),
        "title": pa.array([s.title for s in rows], pa.string()),
        "section": pa.array([s.section for s in rows], pa.int32()),
        "passage": pa.array([s.passage for s in rows], pa.int32()),
        "sentence": pa.array([s.sentence for s in rows], pa.int32()),
        "text": pa.array([s.text for s in rows], pa.string()),
    })
