"""Text normalisation shared by BM25, query building and silver labelling.

Tokens are lowercased runs of letters and digits (apostrophes inside words are
dropped, so "don't" -> "dont"). Stopwords are NLTK's English list (179 words),
taken from bm25s, which ships it as data (``STOPWORDS_EN_PLUS``): nltk itself
downloads its corpora at run time, which cannot work offline. Stemming is
Snowball English through PyStemmer: a maintained C implementation, about 10x
faster than pure-Python Porter, with nothing to download.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

_TOKEN = re.compile(r"[a-z0-9]+")
_APOSTROPHE = re.compile(r"(?<=[a-z])['\u2019](?=[a-z])")


@lru_cache(maxsize=1)
def stopword_list() -> frozenset[str]:
    """The stopword list, with and without apostrophes (read on first use: importing bm25s
    loads scipy, which ``dsr --help`` should not pay for)."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(w.replace("'", "") for w in STOPWORDS_EN_PLUS) | frozenset(STOPWORDS_EN_PLUS)


def __getattr__(name: str) -> frozenset[str]:
    if name == "STOPWORDS":  # the list as a constant, for readers of this module
        return stopword_list()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer("english")


def tokenize(text: str, *, stopwords: bool = False, stem: bool = False) -> list[str]:
    """Lowercase word tokens; optionally without stopwords and Snowball-stemmed."""
    tokens = _TOKEN.findall(_APOSTROPHE.sub("", text.lower()))
    if stopwords:
        drop = stopword_list()
        tokens = [t for t in tokens if t not in drop]
    if stem:
        tokens = _stemmer().stemWords(tokens)
    return tokens


def content_words(text: str) -> set[str]:
    """Distinct lowercased non-stopword tokens (used for silver relevance)."""
    return set(tokenize(text, stopwords=True))


def natural_order(names: Iterable[str]) -> list[str]:
    """Subset names in a reader's order: ``all``, then ``plain`` before ``grounded`` (the
    SIGIR 2022 paper's order), then the rest with numbers compared as numbers
    (section0, section1, ... section10), whatever order a file lists them in."""
    first = {"all": 0, "plain": 1, "grounded": 2}

    def key(name: str) -> tuple[int, list[tuple[int, int, str]]]:
        parts = re.split(r"(\d+)", name)
        return (first.get(name, 3), [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts])

    return sorted(names, key=key)


def unprintable(value: str) -> str | None:
    """The first character of ``value`` that is not printable text, named (``U+202E
    RIGHT-TO-LEFT OVERRIDE``), or None: control and format characters (bidi controls,
    zero-width spaces and joiners, the byte order mark), line and paragraph separators,
    private-use and unassigned code points (``str.isprintable``; a space is printable). The
    one check of ids and names: a bidi control shows a name other than it is."""
    if value.isprintable():
        return None
    ch = next(c for c in value if not c.isprintable())
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'an unnamed character')}"
