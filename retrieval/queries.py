"""Dialogue -> query: the named strategies every ranker uses.

A strategy turns a dialogue's context into what a ranker matches candidates
against. Its name goes into run tags and reports, so the same name always
means the same query.

==============  =============================================================
``last``        the last context turn
``last2``       the last two context turns (oldest first)
``all``         every context turn (oldest first)
``title+all``   the dialogue title, then every context turn
``weighted``    every context turn, each weighted by recency: a term of the
                turn ``age`` turns before the last one (the last has age 0)
                counts ``decay ** age``
==============  =============================================================

For BM25 (:func:`query_terms`) a query is a bag of tokens with weights. For
the plain strategies a token's weight is how often it occurs, so the BM25 score
is exactly rank_bm25's score of the token list; for ``weighted`` it is the sum
of ``decay ** age`` over its occurrences, and the BM25 score becomes
``sum(weight * per-term BM25 contribution)``.

For dense models (:func:`query_text`) the strategies give the text to encode.
Text cannot carry weights, so ``weighted`` becomes *recency order*: the turns
whose weight ``decay ** age`` is at least :data:`MIN_WEIGHT`, most recent
first. Encoders truncate long inputs at the end (MiniLM at 256 word pieces),
so this keeps the latest turns and drops the oldest, where ``all`` (oldest
first) would drop the latest.

A dialogue without context turns falls back to its title for every strategy.
"""

from __future__ import annotations

from collections import Counter

from retrieval.data import Dialogue
from retrieval.errors import InputError
from retrieval.text import tokenize

STRATEGIES: tuple[str, ...] = ("last", "last2", "all", "title+all", "weighted")

#: default recency decay of ``weighted`` (weight of the turn before the last)
DEFAULT_DECAY = 0.5
#: turns weighing less than this are left out of ``weighted``'s text form
MIN_WEIGHT = 0.05


def check_strategy(strategy: str) -> str:
    """Return ``strategy`` if it is known, else raise an InputError listing the names."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown query strategy {strategy!r}; choose from {', '.join(STRATEGIES)}",
                         field="query")
    return strategy


def check_decay(decay: float) -> float:
    try:
        decay = float(decay)
    except (TypeError, ValueError):
        raise InputError(f"decay must be a number in (0, 1], got {decay!r}", field="decay") from None
    if not 0 < decay <= 1:
        raise InputError(f"decay must be in (0, 1], got {decay!r}", field="decay")
    return decay


def query_turns(dialogue: Dialogue, strategy: str, decay: float = DEFAULT_DECAY) -> list[tuple[str, float]]:
    """The strategy's pieces of text with their weights, in the order they are joined.

    The title (``title+all``) has weight 1. This is the common ground of
    :func:`query_text` and :func:`query_terms`.
    """
    check_strategy(strategy)
    turns = [t.body for t in dialogue.context if t.body and t.body.strip()]
    if not turns:
        return [(dialogue.title, 1.0)] if dialogue.title else []
    if strategy == "last":
        return [(turns[-1], 1.0)]
    if strategy == "last2":
        return [(t, 1.0) for t in turns[-2:]]
    if strategy == "all":
        return [(t, 1.0) for t in turns]
    if strategy == "title+all":
        return ([(dialogue.title, 1.0)] if dialogue.title else []) + [(t, 1.0) for t in turns]
    decay = check_decay(decay)
    n = len(turns)
    return [(t, decay ** (n - 1 - i)) for i, t in enumerate(turns)]


def query_text(dialogue: Dialogue, strategy: str, decay: float = DEFAULT_DECAY) -> str:
    """The text a dense model encodes for this dialogue (turns joined by newlines).

    ``weighted`` gives the turns of weight >= MIN_WEIGHT, most recent first
    (see the module docstring); the others keep the dialogue's order.
    """
    pieces = query_turns(dialogue, strategy, decay)
    if strategy == "weighted":
        # The last turn weighs 1, so it is always kept.
        kept = [text for text, weight in pieces if weight >= MIN_WEIGHT]
        return "\n".join(reversed(kept))
    return "\n".join(text for text, _ in pieces)


def query_terms(dialogue: Dialogue, strategy: str, decay: float = DEFAULT_DECAY, *,
                stopwords: bool = False, stem: bool = False) -> dict[str, float]:
    """Token -> weight for BM25 (tokens from :func:`retrieval.text.tokenize`).

    Plain strategies: the weight is the token's count. ``weighted``: the sum
    of ``decay ** age`` over the token's occurrences (age 0 = last turn).
    """
    weights: Counter[str] = Counter()
    for text, weight in query_turns(dialogue, strategy, decay):
        for token in tokenize(text, stopwords=stopwords, stem=stem):
            weights[token] += weight
    return dict(weights)
