"""What participants are given of a hidden phase: its dialogues, and nothing derived from its
labels or from the turns to be written (``dsr board participant-file``).

A benchmark record carries more than the dialogue. Each field, read as an attacker would:

* ``label`` (each candidate): the answer. Withheld.
* ``target``: the real next turn. Withheld: a ranker that counts the words a candidate
  shares with it reaches P@1 0.78 on the judged CMU_DoG set, against 0.24 for the best
  zero-shot ranker that reads only the context (issue 40).
* ``meta``: what a builder recorded, e.g. CMU_DoG's ``relevant_in_document`` (a count of
  relevant sentences) and ``docIdx`` of the next turn. Withheld, every key.
* a candidate's ``score``: the collection's initial ranking. Withheld unless the organiser
  says it was computed from the context alone (``keep_scores``): a score made with the next
  turn or the labels gives them away, and dsr cannot tell how a file's scores were made.
* the candidates' order in the file: a builder may list them by a score made with the next
  turn, or relevant ones first. Not kept: candidates are written in the order of their ids
  (by score, then id, when the scores are kept).
* candidate ids: kept (a run names them), and checked: when the order of the ids ranks
  relevant sentences first more often than chance (a one-sided binomial test at 0.001 on
  P@1 of the id order and of its reverse), the file is still written and a warning says to
  rename them.

Kept: ``id``, ``subreddit``, ``title``, ``context`` (each turn's author id and name, text
and score), each candidate's ``id``, ``title`` and ``body``, ``subset`` and ``source``. A
subset is a published group (``/api/boards/C/P/topics``, the ladder); when the subsets give a
withheld field away (each fixes a ``meta`` value: CMU_DoG's ``section3`` is the withheld
``docIdx`` 3), the phase shows them under neutral names (:func:`group_names`), here as on the
board. The reader (``dsr.core.data.read_benchmark``)
reads such a file with every label 0 and refuses to evaluate on it.
"""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsr.board.published import check_text
from dsr.core.atomic import atomic_write
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.text import natural_order

#: the fields of a dialogue and of a turn a participant file keeps
DIALOGUE_FIELDS = ("id", "subreddit", "title", "context", "candidates", "subset", "source")
TURN_FIELDS = ("author_id", "author_name", "body", "score")
CANDIDATE_FIELDS = ("id", "title", "body")
#: what is withheld, in words (the report and the docs)
WITHHELD = (
    "each candidate's label",
    "target (the next turn)",
    "meta (every key)",
    "each candidate's score (unless kept)",
    "the file's candidate order",
)
#: the id order is reported when it ranks relevant sentences first with p below this
ID_ORDER_P = 0.001
#: what a neutral group name looks like (``{n}``: a number drawn at random)
NEUTRAL = "group {n}"


def revealed_field(dialogues: list[Dialogue]) -> str | None:
    """The withheld field that the dialogues' subsets give away, or None: a ``meta`` key whose
    value each subset fixes (every dialogue of a subset has the same one) and that takes two
    values or more, as CMU_DoG's ``section3`` fixes the withheld ``meta.docIdx`` 3 (the
    section of the document shown at the next turn)."""
    if len({d.subset for d in dialogues}) < 2:
        return None
    keys = set.intersection(*(set(d.meta) for d in dialogues)) if dialogues else set()
    for key in sorted(keys):
        values: dict[str, set[str]] = {}
        for d in dialogues:
            values.setdefault(d.subset, set()).add(json.dumps(d.meta[key], sort_keys=True, default=str))
        if all(len(v) == 1 for v in values.values()) and len(set().union(*values.values())) >= 2:
            return f"meta.{key}"
    return None


def group_names(dialogues: list[Dialogue], given: dict[str, str] | None = None) -> tuple[dict[str, str], list[str]]:
    """The names a hidden phase shows for its dialogues' subsets ({subset: name}, only those
    renamed) and notes saying why: the organiser's ``given`` names (one name for several
    subsets merges them), and, for the rest, a neutral name (:data:`NEUTRAL`, numbered in a
    random order) when the subsets give a withheld field away (:func:`revealed_field`)."""
    subsets = sorted({d.subset for d in dialogues} - {"all"})
    given = dict(given or {})
    for old, new in given.items():
        if old not in subsets:
            raise InputError(
                f"{old!r} is not a subset of the phase's dialogues ({', '.join(subsets) or 'none'})", field="subset_names"
            )
        if not new.strip() or new == "all" or len(new) > 100:
            raise InputError(f"the name for {old!r} is 1 to 100 characters and not 'all'", field="subset_names")
        check_text(new, "subset_names")
    revealed = revealed_field(dialogues)
    rest = [s for s in subsets if s not in given]
    names = dict(given)
    notes = [f"subset {old!r} is shown as {new!r} (given)" for old, new in given.items()]
    if revealed and rest:
        numbers = secrets.SystemRandom().sample(range(1, len(rest) + 1), len(rest))
        for old, n in zip(rest, numbers):
            names[old] = NEUTRAL.format(n=n)
        notes.append(
            f"subsets {', '.join(map(repr, rest))} give the withheld {revealed} away: shown as "
            + ", ".join(f"{old!r} -> {names[old]!r}" for old in rest)
            + " (choose names with --subset-name OLD=NEW)"
        )
    return names, notes


@dataclass
class ParticipantFile:
    """What :func:`write` wrote, and what the id check found."""

    dialogues: int
    candidates: int
    meta_keys: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def record(dialogue: Dialogue, keep_scores: bool = False) -> dict:
    """One dialogue as a participant gets it (see the module docstring)."""
    if keep_scores:
        candidates = sorted(dialogue.candidates, key=lambda c: (-(c.score if c.score is not None else -math.inf), c.id))
    else:
        order = {cid: i for i, cid in enumerate(natural_order(c.id for c in dialogue.candidates))}
        candidates = sorted(dialogue.candidates, key=lambda c: order[c.id])
    shown = []
    for c in candidates:
        item: dict[str, Any] = {"id": c.id, "title": c.title, "body": c.body}
        if keep_scores and c.score is not None:
            item["score"] = c.score
        shown.append(item)
    return {
        "id": dialogue.id,
        "subreddit": dialogue.subreddit,
        "title": dialogue.title,
        "context": [{k: getattr(t, k) for k in TURN_FIELDS} for t in dialogue.context],
        "candidates": shown,
        "subset": dialogue.subset,
        "source": dialogue.source,
    }


def write(
    collection: Collection, qrels: dict[str, dict[str, int]], path: str | Path, keep_scores: bool = False
) -> ParticipantFile:
    """Write ``collection``'s dialogues (a hidden phase's, in its order) for participants,
    atomically; ``qrels`` (the phase's labels) only serve the id check."""
    meta_keys: set[str] = set()
    with atomic_write(path) as handle:
        for d in collection.dialogues:
            meta_keys |= set(d.meta)
            handle.write(json.dumps(record(d, keep_scores), ensure_ascii=False) + "\n")
    return ParticipantFile(
        len(collection),
        sum(len(d.candidates) for d in collection.dialogues),
        sorted(meta_keys),
        id_order_warnings(collection, qrels),
    )


def id_order_warnings(collection: Collection, qrels: dict[str, dict[str, int]]) -> list[str]:
    """Whether the candidates' ids, in order, rank a relevant sentence first more often than
    chance: P@1 of the id order (and of its reverse) against a binomial with each dialogue's
    share of relevant candidates (normal approximation, one-sided)."""
    warnings = []
    for name, reverse in (("the order of the candidate ids", False), ("the reverse order of the ids", True)):
        hits = chance = variance = 0.0
        for d in collection.dialogues:
            labels = qrels.get(d.id, {})
            ids = natural_order(c.id for c in d.candidates)
            if not ids:
                continue
            first = ids[-1] if reverse else ids[0]
            share = sum(1 for c in ids if labels.get(c, 0) > 0) / len(ids)
            hits += labels.get(first, 0) > 0
            chance += share
            variance += share * (1 - share)
        if variance > 0:
            z = (hits - chance) / math.sqrt(variance)
            p = 0.5 * math.erfc(z / math.sqrt(2))
            if p < ID_ORDER_P:
                warnings.append(
                    f"{name} puts a relevant sentence first in {hits:.0f} of "
                    f"{len(collection)} dialogues (chance: {chance:.1f}, p = {p:.1g}): the ids "
                    "give the labels away; rename the candidates before the season"
                )
    return warnings
