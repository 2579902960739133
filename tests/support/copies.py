"""Copies of a labelled benchmark file as a careless organiser makes them: re-exported,
rebuilt, hand-normalised or cut down, with the same labels (or nearly). The cross-phase
check (``dsr.board.overlap``) must take each for the file it copies.

Each copy is a function of the collection: a new :class:`Collection` whose candidates carry
the labels (a phase built from it, public or hidden, has them as its own).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from dsr.core.data import Collection, Dialogue, Turn

Copy = Callable[[Collection], Collection]


def _each(collection: Collection, change: Callable[[int, Dialogue], Dialogue]) -> Collection:
    return Collection("copy", [change(k, d) for k, d in enumerate(collection.dialogues)])


def _renamed(k: int, d: Dialogue, **changes) -> Dialogue:
    """``d`` with its id and its candidates' ids renamed (and ``changes``)."""
    candidates = changes.pop("candidates", d.candidates)
    return replace(d, id=f"copy-{k:03d}", candidates=[replace(c, id=f"s{k}-{j}") for j, c in enumerate(candidates)], **changes)


def _text(d: Dialogue, change: Callable[[str], str], titles: bool = True) -> Dialogue:
    """``d`` with ``change`` applied to every text it holds (its title and the candidates' too
    when ``titles``)."""
    turn = lambda t: replace(t, body=change(t.body))  # noqa: E731
    return replace(
        d,
        title=change(d.title) if titles else d.title,
        context=[turn(t) for t in d.context],
        target=turn(d.target) if d.target is not None else None,
        candidates=[replace(c, body=change(c.body), title=change(c.title) if titles else c.title) for c in d.candidates],
    )


def trailing_space(collection: Collection) -> Collection:
    """The issue's probe: one space after every candidate's text; ids and grades as they are."""
    return _each(collection, lambda k, d: replace(d, candidates=[replace(c, body=c.body + " ") for c in d.candidates]))


def whitespace(collection: Collection) -> Collection:
    """Every space doubled, a tab and a newline added: what an editor or a CSV round trip does."""
    return _each(collection, lambda k, d: _text(d, lambda s: "\t" + s.replace(" ", "  ") + "\n"))


def case(collection: Collection) -> Collection:
    """Every text upper-cased (titles too)."""
    return _each(collection, lambda k, d: _text(d, str.upper))


def unicode_forms(collection: Collection) -> Collection:
    """Decomposed (NFD), with compatibility forms (the "fi" ligature, full-width digits and a
    no-break space) and zero-width spaces: the same words to a reader."""

    def change(s: str) -> str:
        s = s.replace("fi", "\ufb01").replace(" ", "\u00a0", 1).replace("1", "\uff11").replace("the", "the\u200b")
        return unicodedata.normalize("NFD", s)

    return _each(collection, lambda k, d: _text(d, change))


def renamed_edited_titles(collection: Collection) -> Collection:
    """Every dialogue and sentence renamed, the dialogues' titles edited (a word added, upper
    case) and the sentences' titles changed."""
    return _each(
        collection,
        lambda k, d: _renamed(
            k,
            d,
            title=f"[REPOST] {d.title.upper()}",
            candidates=[replace(c, title=f"Wikipedia: {c.title}") for c in d.candidates],
        ),
    )


def dropped_first_turn(collection: Collection) -> Collection:
    """Renamed, each dialogue's first context turn dropped."""
    return _each(collection, lambda k, d: _renamed(k, d, context=d.context[1:]))


def reordered_turns(collection: Collection) -> Collection:
    """Renamed, the context turns in reverse order and the next turn withheld."""
    return _each(collection, lambda k, d: _renamed(k, d, context=d.context[::-1], target=None))


def shuffled_candidates(collection: Collection) -> Collection:
    """Renamed, the candidates and the dialogues in a random order."""
    rng = np.random.default_rng(11)
    copy = _each(
        collection, lambda k, d: _renamed(k, d, candidates=[d.candidates[i] for i in rng.permutation(len(d.candidates))])
    )
    return Collection("copy", [copy.dialogues[i] for i in rng.permutation(len(copy))])


def subset(collection: Collection) -> Collection:
    """Every other dialogue, each with its first half of candidates only."""
    return Collection("copy", [replace(d, candidates=d.candidates[: len(d.candidates) // 2]) for d in collection.dialogues[::2]])


def one_grade_changed(collection: Collection) -> Collection:
    """The same file with one grade changed (a label "fixed")."""
    first = collection.dialogues[0]
    fixed = replace(
        first, candidates=[replace(first.candidates[0], label=1 - min(1, first.candidates[0].label))] + first.candidates[1:]
    )
    return Collection("copy", [fixed, *collection.dialogues[1:]])


def kept_candidate_ids(collection: Collection) -> Collection:
    """Rebuilt from the source: other dialogue ids, the text cleaned otherwise (a word added to
    every turn and sentence), the candidate ids kept."""
    return _each(
        collection,
        lambda k, d: replace(
            _text(d, lambda s: s + " [cleaned]"),
            id=f"rebuilt-{k}",
            context=[Turn(t.author_id, t.author_name, f"turn {i} of rebuilt {k}") for i, t in enumerate(d.context)],
            target=None,
        ),
    )


#: the copies, by what was done to the file
COPIES: dict[str, Copy] = {
    "trailing space": trailing_space,
    "whitespace": whitespace,
    "case": case,
    "unicode forms": unicode_forms,
    "renamed ids, edited titles": renamed_edited_titles,
    "dropped first turn": dropped_first_turn,
    "reordered turns": reordered_turns,
    "shuffled candidates": shuffled_candidates,
    "subset": subset,
    "one grade changed": one_grade_changed,
    "kept candidate ids": kept_candidate_ids,
}


def labels_of(collection: Collection) -> dict[str, dict[str, int]]:
    """Every candidate's label (grade-0 lines too), as a hidden phase's qrels."""
    return {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
