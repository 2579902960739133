"""Honeypots: sentences whose grade is known, mixed into the tasks to check the assessors.

As the SIGIR 2022 authors did with their Mechanical Turk workers, an assessor's
grades count only when they answer enough of these checks right (the threshold is
the campaign's). Known answers come from two places:

* **a judged collection** (``--gold FILE``): for every pool dialogue the judged file
  also holds (same dialogue id), its candidates with the same id and text carry
  their judged grade;
* **automatically** (``--auto-honeypots``):

  - *relevant*: the candidate the next turn quotes, i.e. the one sharing the longest
    run of consecutive words with the real next turn, when that run is at least
    :data:`QUOTE_MIN_WORDS` words (``difflib.SequenceMatcher`` on word tokens). On the
    judged CMU_DoG set every candidate with such a run (20 of 5,670) is graded 2;
    it gets the scale's highest grade;
  - *not relevant*: a sentence from an unrelated document, planted among the
    dialogue's candidates: a sentence of the pool whose title differs from the
    dialogue's and shares no content word (``dsr.core.text.content_words``) with the
    dialogue's title, turns or next turn, nor its own title with them. On the
    judged set all 504 candidates that pass this test are graded 0. It gets the
    scale's lowest grade.

Planting itself (how many checks a task gets) is :func:`dsr.judging.tasks.plan_tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from difflib import SequenceMatcher

import numpy as np

from dsr.core.data import Collection, Dialogue
from dsr.core.text import content_words, tokenize

#: the shortest run of the next turn's words a candidate must share to count as quoted
QUOTE_MIN_WORDS = 5
#: not-relevant sentences kept ready per dialogue (planting takes what it needs)
NEGATIVES_PER_DIALOGUE = 12
#: a known not-relevant sentence shares no content word with this many last turns, nor the next turn
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
        match = SequenceMatcher(None, turn, words, autojunk=False).find_longest_match(
            0, len(turn), 0, len(words))
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


def relation(dialogue: Dialogue, title: str, title_words: set[str], words: set[str]) -> str | None:
    """``same-document`` when a sentence's title is the dialogue's, ``related-document`` when
    it shares a content word with the dialogue's title or turns, else None."""
    if title == dialogue.title:
        return "same-document"
    if title_words & words:
        return "related-document"
    return None


def auto_golds(pool: Collection, low: int, high: int, seed: int = 0,
               negatives: int = NEGATIVES_PER_DIALOGUE) -> dict[str, GoldSet]:
    """Known answers built from the pool itself (see the module docstring)."""
    rng = np.random.default_rng(seed)
    sentences = {}
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
        recent = dialogue_words(d, RECENT_TURNS)
        for index in rng.permutation(len(d.candidates)):        # the dialogue's own candidates first
            c = d.candidates[index]
            body_words, title_words = sentences[c.title, c.body]
            how = relation(d, c.title, title_words, words)
            if c.id != quoted and how and not body_words & recent:
                gold.known[c.id] = (low, how)
        own = {(c.title, c.body) for c in d.candidates}
        for index in rng.permutation(len(keys)):                # then the pool's other sentences
            title, body = keys[index]
            body_words, title_words = sentences[title, body]
            how = relation(d, title, title_words, words)
            if how and (title, body) not in own and not body_words & recent:
                gold.planted.append(Planted(title, body, low, how))
                if len(gold.planted) >= negatives:
                    break
        gold.planted.sort(key=lambda p: p.source != "same-document")   # the same document first
        golds[d.id] = gold
    return golds


def judged_golds(pool: Collection, judged: Collection) -> dict[str, GoldSet]:
    """Known answers from a judged collection: the judged grade of every pool candidate the
    judged file holds for the same dialogue (same candidate id and text)."""
    golds: dict[str, GoldSet] = {}
    for d in pool:
        if d.id not in judged:
            continue
        theirs = {c.id: c for c in judged[d.id].candidates}
        known = {c.id: (theirs[c.id].label, "judged") for c in d.candidates
                 if c.id in theirs and theirs[c.id].body == c.body}
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
