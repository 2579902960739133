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
``title+recent`` the dialogue title, then the last :data:`RECENT_TURNS` context
                turns, most recent first
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

**Token budgets.** An encoder reads at most its max sequence length in word
pieces and silently cuts the rest. With a ``budget`` (word pieces for the
query text, and ``count`` a word-piece counter, see :func:`token_counter`),
:func:`query_text` drops whole turns until the text fits, oldest first, and
never the title or the latest turn: the title names the document (a
CMU_DoG film) and the latest turns are what the next turn answers. The kept
pieces stay in the strategy's order. Only when the title and the last turn
alone exceed the budget does the encoder's own truncation cut text.
:func:`model_query_budget` reads a model folder's budget.

A dialogue without context turns falls back to its title for every strategy.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dsr.core import registry
from dsr.core.data import Dialogue
from dsr.core.errors import InputError
from dsr.core.text import tokenize

#: default recency decay of ``weighted`` (weight of the turn before the last)
DEFAULT_DECAY = 0.5
#: turns weighing less than this are left out of ``weighted``'s text form
MIN_WEIGHT = 0.05
#: context turns of ``title+recent`` (the issue's zero-shot query: title, last four turns)
RECENT_TURNS = 4

#: (the dialogue, its non-empty context turns oldest first, the decay) -> pieces (text, weight)
Pieces = Callable[[Dialogue, list[str], float], list[tuple[str, float]]]


@dataclass(frozen=True)
class Strategy:
    """A named query strategy (a part of the registry, kind ``query``): the pieces of a
    dialogue a query holds, with their weights, and how its text form orders them."""

    name: str
    about: str
    #: the pieces of a dialogue with context turns (one without falls back to its title)
    pieces: Pieces
    #: the first piece is the title (never dropped to fit a budget)
    titled: bool = False
    #: the pieces' turns run most recent first (not oldest first)
    newest_first: bool = False
    #: the text form lists the turns most recent first, without those under MIN_WEIGHT
    recency_text: bool = False
    #: it reads ``decay`` (checked)
    decays: bool = False


def _title(dialogue: Dialogue) -> list[tuple[str, float]]:
    return [(dialogue.title, 1.0)] if dialogue.title else []


def _weighted(dialogue: Dialogue, turns: list[str], decay: float) -> list[tuple[str, float]]:
    return [(t, decay ** (len(turns) - 1 - i)) for i, t in enumerate(turns)]


_OWN = (
    Strategy("last", "the last context turn", lambda d, turns, decay: [(turns[-1], 1.0)]),
    Strategy("last2", "the last two context turns (oldest first)", lambda d, turns, decay: [(t, 1.0) for t in turns[-2:]]),
    Strategy("all", "every context turn (oldest first)", lambda d, turns, decay: [(t, 1.0) for t in turns]),
    Strategy(
        "title+all",
        "the title, then every context turn",
        lambda d, turns, decay: _title(d) + [(t, 1.0) for t in turns],
        titled=True,
    ),
    Strategy("weighted", "every context turn, weighted decay ** age", _weighted, recency_text=True, decays=True),
    Strategy(
        "title+recent",
        f"the title, then the last {RECENT_TURNS} context turns, most recent first",
        lambda d, turns, decay: _title(d) + [(t, 1.0) for t in reversed(turns[-RECENT_TURNS:])],
        titled=True,
        newest_first=True,
    ),
)
for _strategy in _OWN:
    registry.register("query", _strategy.name, _strategy)

#: dsr's own strategies, in order: what its tuning grids, the baseline suite and exports cover
OWN_STRATEGIES: tuple[str, ...] = tuple(s.name for s in _OWN)
#: every registered strategy's name: dsr's own, then other packages' (read when used)
STRATEGIES = registry.Names("query")


def strategy_of(name: str) -> Strategy:
    """The strategy registered as ``name`` (InputError naming ``query`` for an unknown one)."""
    found = registry.find("query", name)
    if found is None:
        raise InputError(f"unknown query strategy {name!r}; choose from {', '.join(STRATEGIES)}", field="query")
    return found  # type: ignore[no-any-return]


def check_strategy(name: str) -> str:
    """Return ``name`` if it is a registered strategy, else raise an InputError listing the names."""
    strategy_of(name)
    return name


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
    chosen = strategy_of(strategy)
    turns = [t.body for t in dialogue.context if t.body and t.body.strip()]
    if not turns:
        return _title(dialogue)
    return chosen.pieces(dialogue, turns, check_decay(decay) if chosen.decays else decay)


def query_text(
    dialogue: Dialogue,
    strategy: str,
    decay: float = DEFAULT_DECAY,
    *,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
) -> str:
    """The text a dense model or cross-encoder reads for this dialogue (pieces joined by newlines).

    ``weighted`` gives the turns of weight >= MIN_WEIGHT, most recent first,
    ``title+recent`` the title then the recent turns most recent first (see the
    module docstring); the others keep the dialogue's order. With ``budget``
    and ``count`` (word pieces of a text), whole turns are dropped, oldest
    first, until the text fits; the title and the latest turn always stay.
    """
    pieces = _text_pieces(dialogue, strategy, decay)
    if budget is not None and count is not None:
        pieces = fit_pieces(pieces, budget, count)
    return "\n".join(text for text, _ in pieces)


def _text_pieces(dialogue: Dialogue, strategy: str, decay: float) -> list[tuple[str, int]]:
    """(text, priority) in output order; priority 0 = never dropped, higher (older) = dropped sooner."""
    chosen = strategy_of(strategy)
    pieces = query_turns(dialogue, strategy, decay)
    if not any(t.body and t.body.strip() for t in dialogue.context):
        return [(text, 0) for text, _ in pieces]  # the title alone
    has_title = bool(dialogue.title) and chosen.titled
    turns = [(t, w) for t, w in pieces[1:]] if has_title and pieces else list(pieces)
    title = [(pieces[0][0], 0)] if has_title and pieces else []
    if chosen.recency_text:
        # The last turn weighs 1, so it is always kept.
        kept = [text for text, weight in turns if weight >= MIN_WEIGHT]
        return title + [(text, age) for age, text in enumerate(reversed(kept))]
    if chosen.newest_first:  # already most recent first
        return title + [(text, age) for age, (text, _) in enumerate(turns)]
    n = len(turns)
    return title + [(text, n - 1 - i) for i, (text, _) in enumerate(turns)]


def fit_pieces(pieces: list[tuple[str, int]], budget: int, count: Callable[[str], int]) -> list[tuple[str, int]]:
    """Drop the pieces of highest priority (oldest turns) until the joined text fits ``budget``.

    Pieces of priority 0 and 1... are dropped in descending priority; the one of
    priority 0 (the latest turn) and the title are never dropped.
    """
    kept = list(pieces)
    protected = min((p for _, p in kept), default=0)
    while len(kept) > 1 and sum(count(t) for t, _ in kept) > budget:
        worst = max(p for _, p in kept)
        if worst <= protected:
            break
        kept = [(t, p) for t, p in kept if p != worst]
    return kept


def token_counter(tokenizer: Any) -> Callable[[str], int]:
    """A cached word-piece counter (no special tokens) for a Hugging Face tokenizer."""
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            # verbose=False: counting a long text is not an error (no "longer than" warning)
            cache[text] = len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
        return cache[text]

    return count


#: [CLS] and [SEP] around a single text
SPECIAL_TOKENS = 2


def model_query_budget(folder: str, max_length: int | None = None) -> tuple[int, Callable[[str], int]]:
    """(word pieces a query text may use, counter) for the model in ``folder``, loaded once per
    process while the folder's tokenizer and configuration files are unchanged (so every query
    strategy shares the tokenizer and its counts)."""
    files = (
        "tokenizer.json",
        "vocab.txt",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "sentence_bert_config.json",
        "config.json",
    )
    stamp = tuple((f, p.stat().st_mtime_ns, p.stat().st_size) for f in files if (p := Path(folder) / f).is_file())
    return _model_query_budget(str(folder), max_length, stamp)


@lru_cache(maxsize=8)
def _model_query_budget(
    folder: str, max_length: int | None, stamp: tuple[tuple[str, int, int], ...]
) -> tuple[int, Callable[[str], int]]:
    """(word pieces a query text may use, counter) for the model in ``folder``.

    The length is ``max_length`` when given (a cross-encoder's), else the
    sentence-transformers ``max_seq_length`` (``sentence_bert_config.json``),
    else the tokenizer's ``model_max_length``, else 512; minus the special tokens.
    """
    length = max_length
    config = Path(folder) / "sentence_bert_config.json"
    if length is None and config.is_file():
        length = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
    if length is not None and (Path(folder) / "tokenizer.json").is_file():
        # the Rust tokenizer a fast Hugging Face tokenizer wraps, without importing transformers
        # (a large part of a warm `dsr reproduce`): the same word pieces
        return max(1, int(length) - SPECIAL_TOKENS), rust_token_counter(Path(folder) / "tokenizer.json")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if length is None:
        limit = getattr(tokenizer, "model_max_length", None)
        length = limit if isinstance(limit, int) and limit < 100_000 else 512
    return max(1, int(length) - SPECIAL_TOKENS), token_counter(tokenizer)


def rust_token_counter(path: str | Path) -> Callable[[str], int]:
    """A cached word-piece counter (no special tokens, no truncation) from a ``tokenizer.json``."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            cache[text] = len(tokenizer.encode(text, add_special_tokens=False).ids)
        return cache[text]

    return count


def query_terms(
    dialogue: Dialogue, strategy: str, decay: float = DEFAULT_DECAY, *, stopwords: bool = False, stem: bool = False
) -> dict[str, float]:
    """Token -> weight for BM25 (tokens from :func:`dsr.core.text.tokenize`).

    Plain strategies: the weight is the token's count. ``weighted``: the sum
    of ``decay ** age`` over the token's occurrences (age 0 = last turn).
    """
    weights: dict[str, float] = {}
    for text, weight in query_turns(dialogue, strategy, decay):
        for token in tokenize(text, stopwords=stopwords, stem=stem):
            weights[token] = weights.get(token, 0) + weight
    return weights
