"""Honeypots: sentences whose grade is known, mixed into the tasks to check the assessors.

As the SIGIR 2022 authors did with their Mechanical Turk workers, an assessor's
grades count only when they answer enough of these checks right (the threshold is
the campaign's). Known answers come from two places:

* **a judged collection** (``--gold FILE``): for every pool dialogue the judged file
  also holds (same dialogue id), its candidates with the same id and text carry
  their judged grade;
* **automatically** (``--auto-honeypots``), chosen against the shortcuts a script would take
  instead of reading (the word-overlap script: relevant when a sentence shares a word with
  the last turns; the title-match script: relevant when its title shares a word with the
  dialogue; the two together: relevant when a sentence carries the dialogue's own title and
  shares a word with the last turns):

  - *relevant*: the candidate the next turn quotes, i.e. the one sharing the longest
    run of consecutive words with the real next turn, when that run is at least
    :data:`QUOTE_MIN_WORDS` words (``difflib.SequenceMatcher`` on word tokens). On the
    judged CMU_DoG set every candidate with such a run (18 of 5,750) is graded 2;
    it gets the scale's highest grade;
  - *not relevant*: a sentence that shares no content word (``dsr.core.text.content_words``)
    with the real next turn and is one of

    * ``retitled-document``: a sentence of another document that names it (a content word
      of its own title that nothing the assessor is shown of the dialogue holds) and shares
      a content word with the last :data:`RECENT_TURNS` turns, shown under the dialogue's own
      title. Only what it says tells it is about another subject: every shortcut above
      takes it for relevant, the two together too (own title, a shared word), which no
      check drawn from the documents as they are can catch (the dialogue's own sentences
      that share a word with the last turns are graded 1 or 2 in a fifth of the cases on the
      judged set). These come first. On the judged set, wherever such a sentence is a
      candidate under its own title, it is graded 0;
    * ``related-document``: of another document whose title shares a content word with
      the dialogue (its title, turns or next turn). It traps the title-match script, and
      the word-overlap script too when it shares a word with the last
      :data:`RECENT_TURNS` turns (those come first; then two sentences that catch the
      title-match script for one that catches the word-overlap script, :func:`interleave`). On the judged set: 296 of 296 are
      graded 0 (130 of them share a word with the last turns);
    * ``same-document``: of the dialogue's own document (its title) and sharing no content
      word with the last turns either: traps the title-match script. 440 of 472 graded 0,
      32 graded 1 (about the film, not the point);
    * ``other-document``: of a document whose title shares nothing with the dialogue, but
      sharing a content word with the last turns: traps the word-overlap script. 1,700 of
      1,701 graded 0.

    The dialogue's own candidates that pass come first, then sentences of the pool's other
    dialogues (planted among the candidates); it gets the scale's lowest grade.

Planting itself (how many checks a task gets) is :func:`dsr.judging.tasks.plan_tasks`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TypeVar

import numpy as np

from dsr.core.data import Collection, Dialogue
from dsr.core.text import content_words, tokenize

#: the shortest run of the next turn's words a candidate must share to count as quoted
QUOTE_MIN_WORDS = 5
#: not-relevant sentences kept ready per dialogue (planting takes what it needs)
NEGATIVES_PER_DIALOGUE = 12
#: the last turns a word-overlap script reads (and a not-relevant check is chosen against)
RECENT_TURNS = 3


@dataclass(frozen=True)
class Planted:
    """A sentence added to a dialogue's tasks only to check the assessors."""

    title: str
    body: str
    grade: int
    source: str


@dataclass
class GoldSet:
    """What is known for one pool dialogue: grades of some of its own candidates
    (``known``: candidate id -> (grade, source)) and sentences that can be planted."""

    known: dict[str, tuple[int, str]] = field(default_factory=dict)
    planted: list[Planted] = field(default_factory=list)


def quoted_candidate(dialogue: Dialogue, min_words: int = QUOTE_MIN_WORDS) -> str | None:
    """The id of the candidate the next turn quotes (longest shared run of words), or None."""
    if dialogue.target is None:
        return None
    turn = tokenize(dialogue.target.body)
    best, best_id = 0, None
    for candidate in dialogue.candidates:
        words = tokenize(candidate.body)
        match = SequenceMatcher(None, turn, words, autojunk=False).find_longest_match(0, len(turn), 0, len(words))
        if match.size > best:
            best, best_id = match.size, candidate.id
    return best_id if best >= min_words else None


def dialogue_words(dialogue: Dialogue, last: int | None = None) -> set[str]:
    """Content words of the dialogue's turns (the last ``last`` only, when given) and next turn."""
    words: set[str] = set()
    for turn in dialogue.context[-last:] if last else dialogue.context:
        words |= content_words(turn.body)
    if dialogue.target is not None:
        words |= content_words(dialogue.target.body)
    return words


def recent_words(dialogue: Dialogue, last: int = RECENT_TURNS) -> set[str]:
    """Content words of the last ``last`` turns of the context (what an assessor read last)."""
    words: set[str] = set()
    for turn in dialogue.context[-last:] if last else []:
        words |= content_words(turn.body)
    return words


def relation(dialogue: Dialogue, title: str, title_words: set[str], words: set[str]) -> str | None:
    """``same-document`` when a sentence's title is the dialogue's, ``related-document`` when
    it shares a content word with the dialogue's title or turns, else None."""
    if title == dialogue.title:
        return "same-document"
    if title_words & words:
        return "related-document"
    return None


def shown_words(dialogue: Dialogue) -> set[str]:
    """Content words of what an assessor is shown of the dialogue: its title and turns (not
    the next turn)."""
    words = content_words(dialogue.title)
    for turn in dialogue.context:
        words |= content_words(turn.body)
    return words


def traps(dialogue: Dialogue, title: str, body: str, words: set[str], recent: set[str]) -> tuple[bool, bool, bool]:
    """Which shortcut a not-relevant sentence shown with ``dialogue`` would catch: (the
    title-match script: its title is the dialogue's or shares a content word with ``words``,
    what the assessor is shown (:func:`shown_words`); the word-overlap script: it shares a
    content word with the last turns; the two together: the dialogue's own title and a word
    shared with the last turns)."""
    overlap = bool(content_words(body) & recent)
    return (title == dialogue.title or bool(content_words(title) & words), overlap, title == dialogue.title and overlap)


def retitled(
    dialogue: Dialogue,
    title: str,
    title_words: set[str],
    body_words: set[str],
    shown: set[str],
    recent: set[str],
    following: set[str],
) -> bool:
    """Whether a sentence of another document (``title``) can be shown under the dialogue's own
    title as a known not-relevant check (``retitled-document``, see the module docstring): it
    names its document by a content word of that title which nothing shown of the dialogue
    holds, shares a content word with the last turns and none with the next turn."""
    if title == dialogue.title or body_words & following or not body_words & recent:
        return False
    return bool((body_words & title_words) - shown - content_words(dialogue.title))


def not_relevant(
    dialogue: Dialogue,
    title: str,
    title_words: set[str],
    body_words: set[str],
    words: set[str],
    recent: set[str],
    following: set[str],
) -> str | None:
    """The kind of known not-relevant sentence (see the module docstring), or None."""
    if body_words & following:
        return None
    how = relation(dialogue, title, title_words, words)
    if how == "related-document":
        return how
    if how == "same-document":
        return how if not body_words & recent else None
    return "other-document" if body_words & recent else None


def auto_golds(
    pool: Collection, low: int, high: int, seed: int = 0, negatives: int = NEGATIVES_PER_DIALOGUE
) -> dict[str, GoldSet]:
    """Known answers built from the pool itself (see the module docstring)."""
    rng = np.random.default_rng(seed)
    sentences: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for d in pool:
        for c in d.candidates:
            sentences.setdefault((c.title, c.body), (content_words(c.body), content_words(c.title)))
    keys = list(sentences)
    golds: dict[str, GoldSet] = {}
    for d in pool:
        gold = GoldSet()
        quoted = quoted_candidate(d)
        if quoted is not None:
            gold.known[quoted] = (high, "quote")
        words = dialogue_words(d) | content_words(d.title)
        recent = recent_words(d)
        following = content_words(d.target.body) if d.target is not None else set()
        for index in rng.permutation(len(d.candidates)):  # the dialogue's own candidates first
            c = d.candidates[index]
            body_words, title_words = sentences[c.title, c.body]
            how = not_relevant(d, c.title, title_words, body_words, words, recent, following)
            if c.id != quoted and how:
                gold.known[c.id] = (low, how)
        own = {(c.title, c.body) for c in d.candidates}
        own_bodies = {c.body for c in d.candidates}
        shown = shown_words(d)
        found: list[Planted] = []
        for index in rng.permutation(len(keys)):  # then the pool's other sentences
            title, body = keys[index]
            body_words, title_words = sentences[title, body]
            if (title, body) in own:
                continue
            if body not in own_bodies and retitled(d, title, title_words, body_words, shown, recent, following):
                found.append(Planted(d.title, body, low, "retitled-document"))
                continue
            how = not_relevant(d, title, title_words, body_words, words, recent, following)
            if how:
                found.append(Planted(title, body, low, how))
        gold.planted = interleave(found, lambda p: traps(d, p.title, p.body, shown, recent))[:negatives]
        golds[d.id] = gold
    return golds


#: what a list of checks holds
T = TypeVar("T")


def interleave(items: list[T], caught: Callable[[T], tuple[bool, bool, bool]]) -> list[T]:
    """``items`` (not-relevant checks) in the order they are used: those that catch every
    script first (``caught(item)`` -> (title-match, word-overlap, the two together)), then
    those that catch the first two, then the ones that catch one, two that catch the
    title-match script for each that catches the word-overlap one (the title-match script
    answers the relevant checks right: relevant sentences carry the dialogue's title; the
    word-overlap one misses those the last turns do not share a word with), then the rest."""
    every: list[T] = []
    both: list[T] = []
    title: list[T] = []
    overlap: list[T] = []
    neither: list[T] = []
    for item in items:
        t, o, a = caught(item)
        (every if a else both if t and o else title if t else overlap if o else neither).append(item)
    thirds = itertools.zip_longest(title[0::2], title[1::2], overlap)
    return every + both + [x for group in thirds for x in group if x is not None] + neither


def judged_golds(pool: Collection, judged: Collection) -> dict[str, GoldSet]:
    """Known answers from a judged collection: the judged grade of every pool candidate the
    judged file holds for the same dialogue (same candidate id and text)."""
    golds: dict[str, GoldSet] = {}
    for d in pool:
        if d.id not in judged:
            continue
        theirs = {c.id: c for c in judged[d.id].candidates}
        known = {c.id: (theirs[c.id].label, "judged") for c in d.candidates if c.id in theirs and theirs[c.id].body == c.body}
        if known:
            golds[d.id] = GoldSet(known=known)
    return golds


def merge(first: dict[str, GoldSet], second: dict[str, GoldSet]) -> dict[str, GoldSet]:
    """``first``'s known grades win over ``second``'s; planted sentences of both are kept."""
    out = {}
    for key in dict.fromkeys([*first, *second]):
        a, b = first.get(key, GoldSet()), second.get(key, GoldSet())
        out[key] = GoldSet({**b.known, **a.known}, [*a.planted, *b.planted])
    return out
