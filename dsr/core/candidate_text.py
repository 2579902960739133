"""The text a model sees for a candidate: its body, ``title: body``, or the context form (the
sentence between its document neighbours, as many as fit the model's length).
"""

from __future__ import annotations

from collections.abc import Callable

from dsr.core.data import Candidate
from dsr.core.errors import InputError

#: the sentence between its neighbours in its document (see :func:`context_text`)
CONTEXT_FORM = "title: previous [SEP] body [SEP] next"


#: candidate text forms that need nothing but the candidate
BODY_FORMS = ("body", "title: body")


TEXT_FORMS = (*BODY_FORMS, CONTEXT_FORM)


#: what separates a sentence from its neighbours in CONTEXT_FORM (BERT's separator token)
CONTEXT_SEPARATOR = "[SEP]"


def check_text_form(text: str) -> str:
    if text not in TEXT_FORMS:
        raise InputError(
            f"unknown candidate text form {text!r}; choose from {', '.join(repr(t) for t in TEXT_FORMS)}", field="text"
        )
    return text


def candidate_text(candidate: Candidate, text: str = "body") -> str:
    """The text a model sees for a candidate: its body, or ``"title: body"`` when it has a title.

    The context form needs the candidate's neighbours: :func:`context_text`."""
    if text == CONTEXT_FORM:
        raise ValueError("the context text form needs the sentence's neighbours: use context_text")
    if text == "title: body" and candidate.title:
        return f"{candidate.title}: {candidate.body}"
    return candidate.body


def context_text(
    candidate: Candidate,
    previous: list[str],
    following: list[str],
    *,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
) -> str:
    """``"title: previous [SEP] body [SEP] next"``: the sentence between its neighbours.

    ``previous`` (document order, the nearest last) and ``following`` (the
    nearest first) are the sentences around it in its document section. With
    ``budget`` (word pieces) and ``count`` (a word-piece counter), the title,
    the body and the separators always stay, and neighbours are added nearest
    first, alternating previous and next, while they fit; a nearest neighbour
    that does not fit whole is cut to what fits (the previous sentence keeps
    its end, the next its start), so the text a model reads ends where the
    encoder would cut it anyway, never inside the body.
    """
    head = f"{candidate.title}:" if candidate.title else ""
    before, after = list(previous), list(following)
    if budget is not None and count is not None:
        core = " ".join(p for p in (head, CONTEXT_SEPARATOR, candidate.body, CONTEXT_SEPARATOR) if p)
        before, after = _fit_neighbours(before, after, budget - count(core), count)
    parts = (head, " ".join(before), CONTEXT_SEPARATOR, candidate.body, CONTEXT_SEPARATOR, " ".join(after))
    return " ".join(p for p in parts if p)


def _fit_neighbours(before: list[str], after: list[str], room: int, count: Callable[[str], int]) -> tuple[list[str], list[str]]:
    """The neighbours that fit in ``room`` word pieces: nearest first, previous then next at
    each distance; a side stops at its first sentence that does not fit (kept contiguous),
    except that the nearest one is cut to the words that fit."""
    kept: dict[str, list[str]] = {"before": [], "after": []}
    open_sides = {"before": list(reversed(before)), "after": list(after)}  # nearest first
    for distance in range(max(len(before), len(after))):
        for side in ("before", "after"):
            queue = open_sides[side]
            if distance >= len(queue):
                continue
            sentence, need = queue[distance], count(queue[distance])
            if need <= room:
                kept[side].append(sentence)
                room -= need
                continue
            if distance == 0 and room > 0:
                words = sentence.split()
                cut = _words_that_fit(words if side == "after" else words[::-1], room, count)
                if cut:
                    kept[side].append(" ".join(cut if side == "after" else cut[::-1]))
                    room -= sum(count(w) for w in cut)
            open_sides[side] = queue[:distance]  # nothing farther on this side
    return list(reversed(kept["before"])), kept["after"]


def _words_that_fit(words: list[str], room: int, count: Callable[[str], int]) -> list[str]:
    out: list[str] = []
    for word in words:
        need = count(word)
        if need > room:
            break
        out.append(word)
        room -= need
    return out
