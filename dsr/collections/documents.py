"""A candidate sentence in its document: its neighbours, for the context text form.

The context text form (:data:`dsr.core.candidate_text.CONTEXT_FORM`,
``"title: previous [SEP] body [SEP] next"``) shows a model the sentences
around a candidate in the document it came from. A source whose sentences come from
documents offers them (``DOCUMENTS``, a :class:`Documents`): what folder holds them, and
their passages, each a run of ``(sentence id, text)`` in document order, read exactly as
the source's builder splits them, so the text is the same whichever collection the
candidate appears in. The neighbours are the sentences ``index - 1, index - 2...`` and
``index + 1, index + 2...`` of the same passage; this module names no source.

The documents folder is the ``documents`` parameter, else the collection's own source
folder (``meta.source`` of a built collection), else ``$DSR_HOME/data/NAME`` of a source
that offers documents. Collections whose sentences are no source's documents have no
neighbours here: asking for the context form on them is bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dsr.core import registry
from dsr.core.candidate_text import CONTEXT_FORM, candidate_text, check_text_form, context_text
from dsr.core.data import Candidate, Collection
from dsr.core.errors import InputError
from dsr.core.home import data_dir
from dsr.core.queries import model_query_budget

#: neighbours on each side by default
DEFAULT_WINDOW = 1

Neighbours = dict[str, tuple[list[str], list[str]]]


@dataclass(frozen=True)
class Documents:
    """The documents a source's sentences come from, as the context text form reads them."""

    #: the folder that holds them, in words (``a CMU_DoG folder with WikiData/``)
    about: str
    #: whether a folder holds them
    holds: Callable[[Path], bool]
    #: the folder's passages: each a sequence of (sentence id, text) in document order
    passages: Callable[[Path], Iterable[Sequence[tuple[str, str]]]]


def _offered() -> list[tuple[str, Documents]]:
    """(source name, its documents) for every registered source that offers documents."""
    return [(name, part.DOCUMENTS) for name, part in registry.items("collection") if getattr(part, "DOCUMENTS", None)]


def documents_folder(collection: Collection, documents: str | Path | None = None) -> tuple[Path, Documents]:
    """The folder the candidates' sentences come from, and the documents it holds."""
    offered = _offered()
    about = " or ".join(docs.about for _, docs in offered) or "no registered source offers documents"
    if documents is not None:
        folder = Path(documents)
        found = next((docs for _, docs in offered if docs.holds(folder)), None)
        if found is None:
            raise InputError(
                f"the context text form needs the documents the candidates come from: {about} (the parameter `documents`)",
                path=folder,
                field="documents",
            )
        return folder, found
    own = collection.meta.get("source")
    places = [Path(own)] if own else []
    for folder in [*places, *(data_dir(name) for name, _ in offered)]:
        found = next((docs for _, docs in offered if docs.holds(folder)), None)
        if found is not None:
            return folder, found
    fetch = "; ".join(f"`dsr data fetch {name}`" for name, _ in offered)
    raise InputError(
        f"the context text form needs the documents the candidates come from: {about} "
        f"(the parameter `documents`{', or ' + fetch if fetch else ''})",
        field="documents",
    )


@lru_cache(maxsize=4)
def _neighbours(folder: str, passages: Callable[[Path], Iterable[Sequence[tuple[str, str]]]], window: int) -> Neighbours:
    around: Neighbours = {}
    for rows in passages(Path(folder)):
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
    folder, offered = documents_folder(collection, documents)
    around = _neighbours(str(folder.resolve()), offered.passages, window)
    for dialogue in collection:
        for c in dialogue.candidates:
            if c.id not in around:
                raise InputError(
                    f"candidate {c.id!r} is not a sentence of the documents in "
                    f"{folder} ({offered.about}), so it has no neighbours for the context text form",
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
