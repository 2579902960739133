"""Training pairs from a collection: (query text, candidate sentence, target).

Positives are a dialogue's relevant candidates (label > 0). Negatives are its
non-relevant candidates (hard-ish: they were retrieved for this very
dialogue), ``neg_per_pos`` of them per positive, plus ``random_negatives``
sentences drawn from other dialogues (easy negatives that keep the model from
learning only "topic matches"). A dialogue with no relevant candidate gives
no pairs: its in-list "negatives" may simply be unlabelled positives, and
without a positive it cannot teach a ranking.

Targets: ``binary`` (default) is 1.0 for label > 0 and 0.0 otherwise, the
input ``BinaryCrossEntropyLoss`` expects. Silver labels (CMU_DoG) are binary
anyway, and on graded crowd labels (SIGIR 2022: number of annotators who found
the sentence useful) the binary cut is the one the official measures use for
"relevant". ``graded`` divides each label by the collection's highest label,
a soft target in [0, 1] for BCE, for collections whose grades carry meaning.

Hard negatives: given ``ranked`` (dialogue id -> candidate ids in a miner's order,
best first; :mod:`dsr.training.crossencoder` ranks with a trained bi-encoder), a
dialogue's in-list negatives are drawn among the ``depth`` non-relevant
candidates the miner ranks highest instead of among all of them: the sentences
a first stage confuses with the relevant ones, which is what a second stage
has to tell apart.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dsr.core.candidate_text import candidate_text

# candidate_text: the body, as the cross-encoder reranker reads it by default (titles repeat
# across a list)
from dsr.core.data import Candidate, Collection, Dialogue
from dsr.core.errors import InputError

TARGETS = ("binary", "graded")


@dataclass(frozen=True)
class Pair:
    """One training example; ``kind`` is positive, list-negative or random-negative."""

    query: str
    sentence: str
    target: float
    dialogue: str
    candidate: str
    kind: str


@dataclass
class PairSet:
    """The pairs and what went into them (recorded in the model card)."""

    pairs: list[Pair]
    dialogues_used: int
    dialogues_without_positive: int
    max_label: int
    counts: Counter = field(default_factory=Counter)

    def stats(self) -> dict[str, int]:
        return {
            "pairs": len(self.pairs),
            "positives": self.counts["positive"],
            "list_negatives": self.counts["list-negative"] + self.counts["hard-negative"],
            "hard_negatives": self.counts["hard-negative"],
            "random_negatives": self.counts["random-negative"],
            "dialogues_used": self.dialogues_used,
            "dialogues_without_positive": self.dialogues_without_positive,
            "max_label": self.max_label,
        }

    def columns(self) -> dict[str, list]:
        """The column layout sentence-transformers' trainer takes (query, sentence, label)."""
        return {
            "query": [p.query for p in self.pairs],
            "sentence": [p.sentence for p in self.pairs],
            "label": [p.target for p in self.pairs],
        }


def make_pairs(
    dialogues: Sequence[Dialogue],
    query: Callable[[Dialogue], str],
    *,
    neg_per_pos: float = 3.0,
    random_negatives: int = 0,
    targets: str = "binary",
    seed: int = 0,
    source: str = "collection",
    text: str = "body",
    ranked: Mapping[str, Sequence[str]] | None = None,
    depth: int = 10,
) -> PairSet:
    """Build balanced training pairs from ``dialogues`` (deterministic for a seed).

    ``query`` maps a dialogue to its query text (a strategy of
    ``dsr.core.queries``). ``neg_per_pos`` caps the in-list negatives at that
    many per positive (sampled at random; a negative value keeps them all);
    with ``ranked``, sampled among the ``depth`` (at least that many) non-relevant
    candidates ranked highest there. ``text`` is the candidate text form (``body`` or
    ``title: body``). Raises InputError when no dialogue has a relevant candidate.
    """
    if targets not in TARGETS:
        raise InputError(f"unknown target kind {targets!r}; choose from {', '.join(TARGETS)}", field="targets")
    rng = random.Random(seed)
    max_label = _max_label(dialogues, source)
    pool = _sentence_pool(dialogues, text)
    pairs: list[Pair] = []
    counts: Counter = Counter()
    used = without = 0
    for d in dialogues:
        positives = [c for c in d.candidates if c.label > 0]
        if not positives:
            without += 1
            continue
        used += 1
        query_text = query(d)
        negatives, kind = ordered_negatives(d, ranked), "list-negative" if ranked is None else "hard-negative"
        if neg_per_pos >= 0:
            keep = round(neg_per_pos * len(positives))
            if ranked is not None:
                negatives = negatives[: max(depth, keep)]
            negatives = rng.sample(negatives, min(len(negatives), keep))
        for c in positives:
            target = 1.0 if targets == "binary" else c.label / max_label
            pairs.append(Pair(query_text, candidate_text(c, text), target, d.id, c.id, "positive"))
        for c in negatives:
            pairs.append(Pair(query_text, candidate_text(c, text), 0.0, d.id, c.id, kind))
        if random_negatives > 0:
            own = {candidate_text(c, text) for c in d.candidates}
            drawn = _draw_random(rng, pool, own, random_negatives)
            pairs += [Pair(query_text, sentence, 0.0, d.id, sid, "random-negative") for sid, sentence in drawn]
    for p in pairs:
        counts[p.kind] += 1
    return PairSet(pairs, used, without, max_label, counts)


def _max_label(dialogues: Sequence[Dialogue], source: str) -> int:
    """The highest label of ``dialogues``; InputError when none is relevant (``source`` names them)."""
    max_label = max((c.label for d in dialogues for c in d.candidates), default=0)
    if max_label <= 0:
        raise InputError(
            f"{source}: no dialogue has a relevant candidate (every label is 0), "
            "so there is nothing to learn from; check the labels or the `split`",
            path=source if source.endswith((".jsonl", ".json")) else None,
            field="candidates[].label",
        )
    return max_label


def _draw_random(rng: random.Random, pool: list[tuple[str, str]], own: set[str], n: int) -> list[tuple[str, str]]:
    """Up to ``n`` (id, text) of ``pool`` drawn with ``rng``, none of them one of ``own``."""
    drawn: list[tuple[str, str]] = []
    # Bounded retries: a tiny pool can be all of this dialogue's own sentences.
    for _ in range(n * 10):
        if len(drawn) == n:
            break
        sentence_id, sentence = pool[rng.randrange(len(pool))]
        if sentence not in own:
            drawn.append((sentence_id, sentence))
    return drawn


def ordered_negatives(d: Dialogue, ranked: Mapping[str, Sequence[str]] | None) -> list[Candidate]:
    """``d``'s non-relevant candidates: in list order, or in the miner's order (``ranked``;
    a candidate it did not rank goes last, in list order)."""
    negatives = [c for c in d.candidates if c.label <= 0]
    if ranked is None:
        return negatives
    order = ranked.get(d.id)
    if order is None:
        raise InputError(f"the hard-negative ranking has no dialogue {d.id!r}", field="hard_negatives")
    position = {cid: i for i, cid in enumerate(order)}
    return sorted(negatives, key=lambda c: position.get(c.id, len(position)))


def _sentence_pool(dialogues: Iterable[Dialogue], text: str = "body") -> list[tuple[str, str]]:
    """Distinct (id, text) of every candidate, in first-seen order (so sampling is reproducible).

    The sentences of :meth:`Collection.sentence_rows`: by id when ids are
    global, by text when dialogues reuse local ids (c0, c1...), so such a file
    draws from the same sentences as the same file with global ids."""
    rows, _ = Collection("pool", dialogues).sentence_rows()
    return [(c.id, candidate_text(c, text)) for c in rows]


def split_heldout(
    dialogues: Sequence[Dialogue],
    fraction: float,
    *,
    seed: int = 0,
    limit: int | None = None,
    group: Callable[[Dialogue], str] | None = None,
) -> tuple[list[Dialogue], list[Dialogue]]:
    """Split into (train, held-out) by whole groups (default: one group per dialogue).

    Dialogues from one conversation share context and document, so they are
    kept on the same side (``group``) or the held-out score would be inflated.
    Only dialogues with a relevant candidate are held out (the others cannot
    be scored). ``limit`` caps the held-out dialogues, because scoring them
    all with a cross-encoder on CPU can take longer than training.
    """
    if not 0 <= fraction < 1:
        raise InputError(f"holdout must be in [0, 1), got {fraction}", field="holdout")
    if fraction == 0:
        return list(dialogues), []
    group = group or (lambda d: d.id)
    scorable = list(dict.fromkeys(group(d) for d in dialogues if d.relevant))
    rng = random.Random(seed)
    rng.shuffle(scorable)
    wanted = max(1, round(fraction * sum(1 for d in dialogues if d.relevant)))
    if limit is not None:
        wanted = min(wanted, limit)
    held_groups: set[str] = set()
    held = 0
    sizes = Counter(group(d) for d in dialogues if d.relevant)
    for g in scorable:
        if held >= wanted:
            break
        held_groups.add(g)
        held += sizes[g]
    train = [d for d in dialogues if group(d) not in held_groups]
    heldout = [d for d in dialogues if group(d) in held_groups and d.relevant]
    return train, heldout
