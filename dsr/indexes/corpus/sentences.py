"""Documents -> sentences with ids in the SIGIR 2022 style.

The SIGIR 2022 corpus names a sentence by "the document title, document ID,
section ID, passage ID, sentence ID and the paper title" (its README). Here a
sentence id is ``TITLE_DOC_SECTION_PASSAGE_SENTENCE`` as in this project's
README (``Roman_concrete_1_2_0_3``): the title as in a Wikipedia URL (white
space -> ``_``), without the trailing repeat of the title, because run files
are whitespace-separated (an id with a space would break a TREC line), and:

* TITLE is the document title with every run of white space replaced by ``_``;
* DOC is the source's document id (the page id of a dump);
* SECTION counts headings (``== H ==`` lines, see dsr.indexes.corpus.sources):
  0 is the lead, 1 the first section, and so on;
* PASSAGE counts the paragraphs (non-empty lines) of the section from 0;
* SENTENCE counts the paragraph's sentences (pysbd, English) from 0.

Sentences with no letter or digit (stray punctuation left by markup) and
sentences shorter than ``min_chars`` are dropped without renumbering the
others, so a kept sentence's id does not depend on the threshold.

Bounded work on any input: pysbd's time grows with the square of the text it
is given (a long one-line document took minutes), so a paragraph longer than
``CHUNK_CHARS`` is cut into pieces of at most that many characters before it
is split, each cut after the last sentence end in its second half (``.``,
``!`` or ``?``, closing quotes or brackets, white space, then no lower-case
letter), else at its last white space; sentences keep counting across the
pieces. A run of more than
``MAX_TOKEN_CHARS`` characters without white space (a base64 blob, a broken
table) is cut to its first ``MAX_TOKEN_CHARS`` characters. Prose paragraphs
are far shorter than either limit, so their sentences are unchanged; time and
memory are then linear in the input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from dsr.indexes.corpus.sources import Document

if TYPE_CHECKING:  # imported on first use
    import pyarrow as pa
    from pysbd import Segmenter

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
def _segmenter() -> Segmenter:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


#: a paragraph longer than this is split into pieces of at most this many characters
CHUNK_CHARS = 2000
#: a run of more non-space characters than this is cut to this length
MAX_TOKEN_CHARS = 1000
_LONG_TOKEN = re.compile(rf"(?<!\S)\S{{{MAX_TOKEN_CHARS + 1},}}")
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?![a-z])")
_SPACE_RUN = re.compile(r"\s+")


def split_sentences(text: str) -> list[str]:
    """pysbd's English sentences of one paragraph, stripped, empty ones dropped (long
    paragraphs in pieces, overlong tokens cut: see the module's docstring)."""
    return [s.strip() for piece in chunks(cap_tokens(text)) for s in _segmenter().segment(piece) if s.strip()]


def cap_tokens(text: str) -> str:
    """``text`` with every run of non-space characters cut to ``MAX_TOKEN_CHARS``."""
    if len(text) <= MAX_TOKEN_CHARS:
        return text
    return _LONG_TOKEN.sub(lambda m: text[m.start() : m.start() + MAX_TOKEN_CHARS], text)


def chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """``text`` in pieces of at most ``size`` characters, cut after a sentence end or at
    white space (a hard cut only where a piece holds neither)."""
    start = 0
    while len(text) - start > size:
        window = text[start : start + size]
        cut = _last_end(_SENTENCE_END, window, size // 2) or _last_end(_SPACE_RUN, window, 1) or size
        yield text[start : start + cut]
        start += cut
    yield text[start:]


def _last_end(pattern: re.Pattern, window: str, least: int) -> int | None:
    """End of the last match of ``pattern`` in ``window`` at or after ``least``, or None."""
    end = None
    for match in pattern.finditer(window, least):
        end = match.end()
    return end


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
                yield Sentence(
                    sentence_id(doc.title, doc.id, section, passage, number), doc.id, doc.title, section, passage, number, text
                )
        passage += 1


def sentences_table(docs: Iterable[Document], min_chars: int = 1) -> pa.Table:
    """A pyarrow Table (columns :data:`COLUMNS`) of the documents' sentences."""
    import pyarrow as pa

    rows = [s for doc in docs for s in document_sentences(doc, min_chars)]
    return pa.table(
        {
            "id": pa.array([s.id for s in rows], pa.string()),
            "doc_id": pa.array([s.doc_id for s in rows], pa.string()),
            "title": pa.array([s.title for s in rows], pa.string()),
            "section": pa.array([s.section for s in rows], pa.int32()),
            "passage": pa.array([s.passage for s in rows], pa.int32()),
            "sentence": pa.array([s.sentence for s in rows], pa.int32()),
            "text": pa.array([s.text for s in rows], pa.string()),
        }
    )
