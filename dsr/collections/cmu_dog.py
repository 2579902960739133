"""CMU_DoG (CMU Document Grounded Conversations) as sentence retrieval, with SILVER labels.

Source: github.com/festvox/datasets-CMU_DoG at commit
618a14f27546165859305649aa84e6ac8710bb63 (Zhou, Prabhumoye and Black, EMNLP
2018). Two crowd workers chat about a movie; one or both were shown its
Wikipedia-derived document, one section at a time (``docIdx``: 0 = overview,
1-3 = plot scenes). No licence is stated; the documents are Wikipedia text
(CC BY-SA).

How it becomes the task:

- **Sentences.** For each of the 30 ``WikiData`` documents (id = file stem,
  e.g. ``Jaws``): the ``introduction`` and each plot scene (``1``, ``2``,
  ``3``) are split into sentences with pysbd (rule-based, ships its rules);
  each ``cast``, ``critical_response`` and ``rating`` item is one sentence;
  one line ``"<movie>: directed by <director>; genre: <genre>; year: <year>."``
  Whitespace runs are collapsed (the upstream text has double spaces where
  links were removed). Ids are ``<document>/<section>/<index>`` with section
  ``introduction``, ``cast``, ``critical_response``, ``rating``, ``facts``,
  ``scene1``, ``scene2``, ``scene3``; they depend only on the document text,
  so they are stable across runs.
- **Query points.** A turn whose author saw the document (``whoSawDoc``;
  history ``uid`` values are ``user1``/``user2``, the same names, and the
  worker ids come from ``user1_id``/``user2_id``) with at least
  ``min_context`` (default 2) turns before it. Context = every turn before it
  (as written, also empty ones); target = that turn. Dialogue id =
  ``<conversation file stem>-<turn index>``.
- **Relevance (SILVER, computed, not judged by people).** Let T be the
  target's content words (``dsr.core.text.content_words``: lowercased tokens,
  NLTK stopwords removed). A sentence of the conversation's own document
  (the one the writer was shown; sentences of the other 29 documents are never
  relevant) is relevant when it contains at least ``threshold`` (default 0.5)
  of T. The sentences with the highest coverage get grade 2 (all of them when
  several tie: equal coverage is equal evidence, and picking one would be
  arbitrary); the other relevant ones grade 1. Grades are computed over the
  whole document, before pooling, so a sentence's grade does not depend on
  the initial ranker. A target with no content words ("ok!", "lol") has no
  relevant sentence, so it is never a query point.
- **Candidates.** The top ``pool_size`` (default 50) sentences of BM25
  (rank_bm25 ``BM25Okapi`` formula and idf, k1 1.5, b 0.75) over all sentences
  of all 30 documents; tokens are ``dsr.core.text.tokenize`` with stopwords
  removed and Snowball stemming; query = the context turns joined. Only
  sentences with a positive score enter the pool (a zero score is no evidence,
  and filling up with them would be an arbitrary id order). Order: score
  descending (rounded to 6 decimals), ties by sentence id; candidate
  ``score`` = that BM25 score. As in
  the SIGIR 2022 set, a query point is kept only when its pool holds a
  relevant sentence.
- **Subset** = the document section shown at the target turn (``docIdx``):
  ``section0`` (overview: introduction, cast, reviews, ratings, facts) or
  ``section1``..``section3`` (plot scenes).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dsr.collections import SourceInfo
from dsr.collections.common import cached_build, check_params, params_note, resolve_source
from dsr.collections.documents import Documents
from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.core.jsonio import load_json
from dsr.core.params import Param, defaults
from dsr.core.text import content_words
from dsr.indexes.bm25 import BM25Index

if TYPE_CHECKING:
    from pysbd import Segmenter

_T = TypeVar("_T")

NAME = "cmu_dog"
REPOSITORY = "festvox/datasets-CMU_DoG"
COMMIT = "618a14f27546165859305649aa84e6ac8710bb63"
#: bump when the conversion changes, so cached builds are rebuilt
BUILDER_VERSION = 1

#: ``build``'s parameters
PARAMS = (
    Param(
        "threshold", 0.5, "float", "share of the target turn's content words a relevant sentence must contain", above=0, high=1
    ),
    Param("pool_size", 50, "int", "candidates per query point (BM25 top k)", low=1),
    Param("min_context", 2, "int", "turns required before the target", low=0),
)

SOURCE = SourceInfo(
    name=NAME,
    description="CMU_DoG movie chats grounded in 30 Wikipedia-derived documents; query = the "
    "turns before a document-reader's turn, candidates = BM25 top 50 of the "
    "documents' sentences, SILVER labels from content-word overlap with the turn",
    licence="none stated upstream; the documents are Wikipedia text (CC BY-SA)",
    repository=REPOSITORY,
    commit=COMMIT,
    splits=("train", "valid", "test"),
    default_split="valid",
    has_candidates=True,
    notes=(
        "labels are SILVER: a sentence of the conversation's document is relevant when it "
        "covers >= 50% of the target turn's content words; the best-covering one(s) get grade 2",
        "subsets: section0 (overview) .. section3, the document section shown at the target turn",
        params_note(PARAMS),
    ),
)

SECTION_SUBSET = {0: "section0", 1: "section1", 2: "section2", 3: "section3"}


# --- public entry points ----------------------------------------------------------


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The collection for ``split`` (default ``valid``), built once and cached.

    ``source`` is a folder with ``Conversations/<split>/*.json`` and
    ``WikiData/*.json``; default ``$DSR_HOME/data/cmu_dog``. The built
    benchmark file is kept under ``$DSR_HOME/collections/cmu_dog/`` and reused
    while the source files, parameters and builder version are unchanged.
    """
    folder = _resolve(source)
    split = SOURCE.split_or_default(split)
    _check_split(folder, split)
    inputs = sorted((folder / "Conversations" / split).glob("*.json")) + _wiki_files(folder)
    return cached_build(NAME, split, folder, inputs, defaults(PARAMS), BUILDER_VERSION, lambda: build(folder, split))


def manifest_files(copy: Path) -> dict[str, Path | str]:
    """What this source's manifest lists (``tools/make_manifests.py``): each repository path ->
    its unchanged upstream copy in ``copy`` (the tool hashes it), or a published git blob id."""
    files: dict[str, Path | str] = {
        f"{sub}/{path.name}": path
        for sub in ("Conversations/train", "Conversations/valid", "WikiData")
        for path in sorted((copy / sub).glob("*.json"))
    }
    return {**files, "README.md": copy / "README.md"}


def build(source: Path, split: str | None = None, **params: Any) -> Collection:
    """Convert the raw files of one split (default ``valid``) to a Collection.

    ``params``: :data:`PARAMS` (``threshold``, ``pool_size``, ``min_context``);
    a value out of range or any other name is an InputError naming it.
    """
    options = check_params(params, PARAMS, NAME)
    folder = Path(source)
    split = SOURCE.split_or_default(split)
    _check_split(folder, split)
    files = sorted((folder / "Conversations" / split).glob("*.json"))
    corpus = _Corpus(folder)
    dialogues, considered = _query_points(corpus, split, files, options, None)
    return Collection(
        f"{NAME}-{split}",
        dialogues,
        meta={
            "source": str(folder),
            "split": split,
            "params": options,
            "conversations": len(files),
            "eligible_turns": considered,
            "sentences": len(corpus.sentences),
            "builder_version": BUILDER_VERSION,
        },
    )


def build_points(source: Path, ids: Mapping[str, Iterable[str]]) -> dict[str, dict[str, Dialogue]]:
    """The query points named in ``ids`` (split -> dialogue ids, ``<conversation>-<turn>``), as
    split -> id -> point, each exactly as :func:`build` makes it with the default parameters; ids
    that are not query points of their split are left out. Only their conversation files are read
    and only their turns are labelled and pooled (a point depends on its own turn, its
    conversation and the documents, never on another point), and the documents are read and
    indexed once for every split, so a few hundred points cost well under a second where
    building and reading the whole of train costs several (what ``cmu_dog_dev`` takes from CMU_DoG)."""
    folder = Path(source)
    for split in ids:
        _check_split(folder, split)
    corpus = _Corpus(folder)
    out = {}
    for split, named in ids.items():
        wanted = set(named)
        stems = {i.rsplit("-", 1)[0] for i in wanted}
        files = [path for path in sorted((folder / "Conversations" / split).glob("*.json")) if path.stem in stems]
        dialogues, _ = _query_points(corpus, split, files, defaults(PARAMS), wanted)
        out[split] = {d.id: d for d in dialogues}
    return out


class _Corpus:
    """A CMU_DoG folder's sentences in id order, the BM25 index over them and its documents by
    ``wikiDocumentIdx``: what every query point is labelled and pooled from."""

    def __init__(self, folder: Path) -> None:
        documents = read_documents(folder)
        # sorted by id, so the index order is the documented tie order (sentence id)
        self.sentences = sorted((s for doc in documents.values() for s in doc.sentences), key=lambda s: s.id)
        # rank_bm25's BM25Okapi defaults (k1=1.5, b=0.75, epsilon=0.25) over the whole pool
        self.index = BM25Index(
            [s.id for s in self.sentences], [s.body for s in self.sentences], k1=1.5, b=0.75, stopwords=True, stem=True
        )
        self.by_wiki_idx = {doc.wiki_idx: doc for doc in documents.values()}


def _query_points(
    corpus: _Corpus, split: str, files: list[Path], options: dict[str, Any], wanted: set[str] | None
) -> tuple[list[Dialogue], int]:
    """The query points of ``split``'s conversation ``files`` (those in ``wanted`` only, when
    given) and the eligible turns considered."""
    threshold = float(options["threshold"])
    pool_size, min_context = options["pool_size"], options["min_context"]
    sentences, index, by_wiki_idx = corpus.sentences, corpus.index, corpus.by_wiki_idx

    dialogues: list[Dialogue] = []
    considered = 0
    for path in _progress(files, f"cmu_dog {split}"):
        conv = read_conversation(path, set(by_wiki_idx))
        doc = by_wiki_idx[conv["wikiDocumentIdx"]]
        history = conv["history"]
        turns = [Turn(conv["ids"][h["uid"]], h["uid"], h["text"]) for h in history]
        for i, h in enumerate(history):
            if i < min_context or h["uid"] not in conv["whoSawDoc"]:
                continue
            point_id = f"{path.stem}-{i}"
            if wanted is not None and point_id not in wanted:
                continue
            considered += 1
            grades = silver_grades(h["text"], doc.sentence_words, threshold)
            if not grades:
                continue
            query = " ".join(t.body for t in turns[:i])
            pool = top_positive(index.all_scores(index.query_tokens(query)), pool_size)
            candidates = []
            for j, score in pool:
                sentence = sentences[j]
                label = grades.get(sentence.id, 0) if sentence.doc == doc.name else 0
                candidates.append(Candidate(sentence.id, sentence.title, sentence.body, score, label))
            if not any(c.label for c in candidates):
                continue
            dialogues.append(
                Dialogue(
                    id=point_id,
                    title=doc.movie,
                    context=turns[:i],
                    target=turns[i],
                    candidates=candidates,
                    subset=SECTION_SUBSET[h["docIdx"]],
                    source=NAME,
                    meta={
                        "conversation": path.name,
                        "turn": i,
                        "document": doc.name,
                        "wikiDocumentIdx": doc.wiki_idx,
                        "docIdx": h["docIdx"],
                        "whoSawDoc": sorted(conv["whoSawDoc"]),
                        "rating": conv.get("rating"),
                        "relevant_in_document": len(grades),
                    },
                )
            )
    return dialogues, considered


# --- documents -----------------------------------------------------------------


@dataclass(frozen=True)
class Sentence:
    id: str
    doc: str
    title: str
    body: str


@dataclass
class Document:
    name: str
    wiki_idx: int
    movie: str
    sentences: list[Sentence]
    #: sentence id -> content words, for silver labels
    sentence_words: dict[str, set[str]]


_SPACES = re.compile(r"\s+")


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def read_documents(folder: Path) -> dict[str, Document]:
    """All ``WikiData/*.json`` documents split into sentences (see the module docstring)."""
    import pysbd  # imported here: loading its rules costs a few hundred ms

    segmenter = pysbd.Segmenter(language="en", clean=False)
    documents: dict[str, Document] = {}
    seen_idx: dict[int, Path] = {}
    for path in _wiki_files(folder):
        raw = load_json(path)
        where: dict[str, Any] = {"path": path, "record": path.stem}
        overview = _field(raw, "0", dict, where)
        wiki_idx = _field(raw, "wikiDocumentIdx", int, where)
        if wiki_idx in seen_idx:
            raise InputError(
                f"wikiDocumentIdx {wiki_idx} also used by {seen_idx[wiki_idx].name}", field="wikiDocumentIdx", **where
            )
        seen_idx[wiki_idx] = path
        movie = _clean(_field(overview, "movieName", str, where, "0.movieName"))
        parts: list[tuple[str, list[str]]] = []
        parts.append(("introduction", _split(segmenter, _field(overview, "introduction", str, where, "0.introduction"))))
        for key in ("cast", "critical_response", "rating"):
            items = _field(overview, key, list, where, f"0.{key}")
            for k, item in enumerate(items):
                if not isinstance(item, str):
                    raise InputError(f"expected text, got {type(item).__name__}", field=f"0.{key}[{k}]", **where)
            parts.append((key, [_clean(t) for t in items]))
        facts = {key: _clean(str(_field(overview, key, (str, int), where, f"0.{key}"))) for key in ("director", "genre", "year")}
        parts.append(("facts", [f"{movie}: directed by {facts['director']}; genre: {facts['genre']}; year: {facts['year']}."]))
        for scene in ("1", "2", "3"):
            parts.append((f"scene{scene}", _split(segmenter, _field(raw, scene, str, where))))
        sentences = []
        for section, texts in parts:
            # index counts only non-empty sentences, so ids never point at nothing
            for k, text in enumerate(t for t in texts if t):
                sentences.append(Sentence(f"{path.stem}/{section}/{k}", path.stem, movie, text))
        documents[path.stem] = Document(path.stem, wiki_idx, movie, sentences, {s.id: content_words(s.body) for s in sentences})
    if not documents:
        raise InputError("no WikiData/*.json documents", path=folder / "WikiData")
    return documents


def document_passages(folder: Path) -> list[list[tuple[str, str]]]:
    """Each section of each document as its sentences ``(id, text)`` in document order: the
    passages the context text form takes a candidate's neighbours from (never across one)."""
    passages: list[list[tuple[str, str]]] = []
    for document in read_documents(folder).values():
        sections: dict[str, list[tuple[str, str]]] = {}
        for sentence in document.sentences:  # in document order
            sections.setdefault(sentence.id.rsplit("/", 1)[0], []).append((sentence.id, sentence.body))
        passages.extend(sections.values())
    return passages


#: the documents this source's sentences come from (the judged sets' too), for the context form
DOCUMENTS = Documents(
    "a CMU_DoG folder with WikiData/ (sentence ids <document>/<section>/<index>)",
    lambda folder: (folder / "WikiData").is_dir(),
    document_passages,
)


def _split(segmenter: Segmenter, text: str) -> list[str]:
    return [_clean(s) for s in segmenter.segment(text) if _clean(s)]


# --- silver labels ---------------------------------------------------------------


def silver_grades(target: str, sentence_words: dict[str, set[str]], threshold: float) -> dict[str, int]:
    """Sentence id -> grade (2 for the best coverage, ties included; 1 above threshold).

    Coverage = share of the target's content words found in the sentence; a
    sentence is relevant when coverage >= ``threshold``. Empty when the target
    has no content words or nothing reaches the threshold.
    """
    wanted = content_words(target)
    if not wanted:
        return {}
    coverage = {sid: len(wanted & words) / len(wanted) for sid, words in sentence_words.items()}
    relevant = {sid: c for sid, c in coverage.items() if c >= threshold}
    if not relevant:
        return {}
    best = max(relevant.values())
    return {sid: 2 if c == best else 1 for sid, c in relevant.items()}


# --- BM25 ------------------------------------------------------------------------


def top_positive(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best (index, score) with score > 0, score desc then index.

    Scores are rounded to 6 decimals first: sums in another order (rank_bm25's
    loop) differ in the last bits, and equal scores must tie the same way.
    """
    scores = np.round(scores, 6)
    positive = np.flatnonzero(scores > 0)
    # lexsort: last key is primary -> score descending, then index ascending
    order = positive[np.lexsort((positive, -scores[positive]))][:k]
    return [(int(j), float(scores[j])) for j in order]


# --- conversations ---------------------------------------------------------------


def read_conversation(path: Path, doc_indexes: set[int]) -> dict[str, Any]:
    """One conversation file, checked; adds ``ids`` (user1/user2 -> worker id)."""
    raw = load_json(path)
    where: dict[str, Any] = {"path": path, "record": path.stem}
    history = _field(raw, "history", list, where)
    who = _field(raw, "whoSawDoc", list, where)
    if not who or any(w not in ("user1", "user2") for w in who):
        raise InputError(f"expected user1 and/or user2, got {who!r}", field="whoSawDoc", **where)
    wiki_idx = _field(raw, "wikiDocumentIdx", int, where)
    if wiki_idx not in doc_indexes:
        raise InputError(f"no WikiData document has wikiDocumentIdx {wiki_idx}", field="wikiDocumentIdx", **where)
    ids = {}
    for user in ("user1", "user2"):
        value = raw.get(f"{user}_id")
        # the worker id when recorded; otherwise the role name keeps turns attributable
        ids[user] = str(value) if value not in (None, "") else user
    for i, h in enumerate(history):
        name = f"history[{i}]"
        if not isinstance(h, dict):
            raise InputError("expected an object", field=name, **where)
        if h.get("uid") not in ("user1", "user2"):
            raise InputError(f"expected user1 or user2, got {h.get('uid')!r}", field=f"{name}.uid", **where)
        if not isinstance(h.get("text"), str):
            raise InputError("missing turn text", field=f"{name}.text", **where)
        if h.get("docIdx") not in SECTION_SUBSET or isinstance(h.get("docIdx"), bool):
            raise InputError(f"expected a section index 0-3, got {h.get('docIdx')!r}", field=f"{name}.docIdx", **where)
    return {"history": history, "whoSawDoc": set(who), "wikiDocumentIdx": wiki_idx, "ids": ids, "rating": raw.get("rating")}


def _progress(items: Sequence[_T], desc: str) -> Iterable[_T]:
    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="file", file=sys.stderr, leave=False, disable=len(items) < 50 or None)


def _resolve(source: Path | None) -> Path:
    return resolve_source(NAME, source)


def _check_split(folder: Path, split: str) -> None:
    if split not in SOURCE.splits:
        raise InputError(f"unknown split {split!r} for cmu_dog; use one of {', '.join(SOURCE.splits)}", field="split")
    if not (folder / "WikiData").is_dir():
        raise InputError(
            "no WikiData folder: expected the CMU_DoG repository layout (Conversations/<split>/*.json, WikiData/*.json)",
            path=folder,
        )
    conv = folder / "Conversations" / split
    if not conv.is_dir() or not any(conv.glob("*.json")):
        raise InputError(f"no conversations for split {split!r}", path=conv)


def _wiki_files(folder: Path) -> list[Path]:
    return sorted((folder / "WikiData").glob("*.json"))


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: dict[str, Any], name: str | None = None) -> Any:
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", **where)
    value = obj.get(key)
    if value is None or isinstance(value, bool) or not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        got = "nothing" if value is None else type(value).__name__
        raise InputError(f"expected {expected}, got {got}", field=name or key, **where)
    return value
