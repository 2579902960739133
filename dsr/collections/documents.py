"""A candidate sentence in its document: its neighbours, for the context text form.

The context text form (:data:`dsr.core.candidate_text.CONTEXT_FORM`,
``"title: previous [SEP] body [SEP] next"``) shows a model the sentences
around a candidate in the document it came from. Candidate ids of CMU_DoG
(and of the judged set built from it) are ``<document>/<section>/<index>``:
the neighbours are the sentences ``index - 1, index - 2...`` and ``index + 1,
index + 2...`` of the same section, read from the CMU_DoG ``WikiData``
documents exactly as the collection builder splits them
(:func:`dsr.collections.cmu_dog.read_documents`), so the text is the
same whichever collection (train, valid, judged) the candidate appears in.

The documents folder is the ``documents`` parameter, else the collection's
own CMU_DoG source folder (``meta.source`` of a built CMU_DoG split), else
``$DSR_HOME/data/cmu_dog``. Collections whose sentences do not come from
CMU_DoG's documents (SIGIR 2022's Wikipedia passages, ReDial) have no
neighbours here: asking for the context form on them is bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from dsr.collections.cmu_dog import read_documents
from dsr.collections.common import resolve_source
from dsr.core.candidate_text import CONTEXT_FORM, candidate_text, check_text_form, context_text
from dsr.core.data import Candidate, Collection
from dsr.core.errors import InputError
from dsr.core.queries import model_query_budget

#: neighbours on each side by default
DEFAULT_WINDOW = 1

Neighbours = dict[str, tuple[list[str], list[str]]]


def documents_folder(collection: Collection, documents: str | Path | None = None) -> Path:
    """The CMU_DoG folder (holding ``WikiData/``) the candidates' sentences come from."""
    if documents is None:
        own = collection.meta.get("source")
        if own and (Path(own) / "WikiData").is_dir():
            return Path(own)
    folder = resolve_source("cmu_dog", Path(documents) if documents is not None else None)
    if not (folder / "WikiData").is_dir():
        raise InputError(
            "the context text form needs the documents the candidates come from: "
            "a CMU_DoG folder with WikiData/ (the parameter `documents`)",
            path=folder,
            field="documents",
        )
    return folder


@lru_cache(maxsize=4)
def _neighbours(folder: str, window: int) -> Neighbours:
    around: Neighbours = {}
    for document in read_documents(Path(folder)).values():
        sections: dict[str, list[tuple[str, str]]] = {}
        for sentence in document.sentences:  # in document order
            sections.setdefault(sentence.id.rsplit("/", 1)[0], []).append((sentence.id, sentence.body))
        for rows in sections.values():
            for i, (sid, _) in enumerate(rows):
                around[sid] = (
                    [body for _, body in rows[max(0, i - window) : i]],
                    [body for _, body in rows[i + 1 : i + 1 + window]],
                )
    return around


def neighbours(collection: Collection, documents: str | Path | None = None, window: int = DEFAULT_WINDOW) -> Neighbours:
    """Sentence id -> (previous sentences, nearest last; next sentences, nearest first), up to
    ``window`` each side, for every candidate of ``collection``; a candidate that is not a
    sentence of the documents is bad input naming its dialogue."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise InputError(f"the context window must be a whole number >= 1, got {window!r}", field="context")
    folder = documents_folder(collection, documents)
    around = _neighbours(str(folder.resolve()), window)
    for dialogue in collection:
        for c in dialogue.candidates:
            if c.id not in around:
                raise InputError(
                    f"candidate {c.id!r} is not a sentence of the documents in "
                    f"{folder} (ids <document>/<section>/<index>), so it has no "
                    "neighbours for the context text form",
                    record=dialogue.id,
                    field="candidates[].id",
                )
    return around


def candidate_renderer(
    collection: Collection,
    text: str,
    *,
    documents: str | Path | None = None,
    window: int = DEFAULT_WINDOW,
    model_path: str | Path | None = None,
    max_length: int | None = None,
) -> Callable[[Candidate], str]:
    """Candidate -> the text a model reads, in form ``text``.

    ``body`` and ``title: body`` need nothing else. The context form reads the
    neighbours (:func:`neighbours`) and, with ``model_path``, fits them to the
    model's sequence length (``max_length``, else the model's own; see
    :func:`dsr.core.candidate_text.context_text`).
    """
    check_text_form(text)
    if text != CONTEXT_FORM:
        return lambda candidate: candidate_text(candidate, text)
    around = neighbours(collection, documents, window)
    budget = count = None
    if model_path is not None:
        budget, count = model_query_budget(str(model_path), max_length)

    def render(candidate: Candidate) -> str:
        before, after = around[candidate.id]
        return context_text(candidate, before, after, budget=budget, count=count)

    return render
