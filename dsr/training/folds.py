"""Document-disjoint folds: train on some documents' dialogues, evaluate on the others'.

CMU_DoG's train, valid and test conversations are about the same 30 films, so
a model trained on train can learn which sentences tend to be useful. To
measure what it learned that carries to unseen documents, the documents are
cut into ``k`` folds; the model of fold ``i`` is trained without fold ``i``'s
documents and scored only on fold ``i``'s evaluation dialogues; pooling the
folds scores every evaluation dialogue by a model that never saw its document.

A dialogue's document is ``meta.document`` (CMU_DoG); a candidate's is the
first part of its id (``<document>/<section>/<index>``). Excluding documents
drops their dialogues *and* their sentences from the other dialogues'
candidate pools (pools are cross-document), so the excluded films' text never
reaches training.

Fold assignment: the sorted document names, shuffled with a fixed seed, cut
into ``k`` nearly equal parts (first parts one larger); the same for every
collection with the same documents.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import replace

from dsr.core.data import Dialogue
from dsr.core.errors import InputError

#: shuffles the documents before they are cut into folds (fixed: folds must not move)
FOLD_SEED = 0


def dialogue_document(dialogue: Dialogue) -> str | None:
    return (dialogue.meta or {}).get("document")


def candidate_document(candidate_id: str) -> str:
    return candidate_id.split("/", 1)[0]


def documents(dialogues: Iterable[Dialogue]) -> list[str]:
    """The sorted documents of ``dialogues``; InputError when a dialogue names none."""
    found = set()
    for d in dialogues:
        doc = dialogue_document(d)
        if not doc:
            raise InputError(
                "no meta.document: document-disjoint folds need each dialogue's document (CMU_DoG collections have it)",
                record=d.id,
                field="meta.document",
            )
        found.add(doc)
    return sorted(found)


def folds(docs: Sequence[str], k: int) -> list[list[str]]:
    """``docs`` cut into ``k`` folds (seeded shuffle of the sorted names), each sorted."""
    if k < 2 or k > len(docs):
        raise InputError(f"folds must be between 2 and the number of documents ({len(docs)}), got {k}", field="folds")
    order = sorted(docs)
    random.Random(FOLD_SEED).shuffle(order)
    size, extra = divmod(len(order), k)
    out, start = [], 0
    for i in range(k):
        n = size + (1 if i < extra else 0)
        out.append(sorted(order[start : start + n]))
        start += n
    return out


def fold_documents(dialogues: Sequence[Dialogue], k: int, i: int) -> list[str]:
    """The documents of fold ``i`` of ``k`` over ``dialogues``' documents."""
    all_folds = folds(documents(dialogues), k)
    if not 0 <= i < k:
        raise InputError(f"fold must be in 0..{k - 1}, got {i}", field="fold")
    return all_folds[i]


def exclude_documents(dialogues: Sequence[Dialogue], excluded: Iterable[str]) -> tuple[list[Dialogue], dict]:
    """Drop the dialogues about ``excluded`` documents and those documents' candidates.

    Returns the kept dialogues (with filtered candidate lists) and counts.
    """
    excluded = set(excluded)
    kept: list[Dialogue] = []
    dropped_dialogues = dropped_candidates = 0
    for d in dialogues:
        if dialogue_document(d) in excluded:
            dropped_dialogues += 1
            continue
        candidates = [c for c in d.candidates if candidate_document(c.id) not in excluded]
        dropped_candidates += len(d.candidates) - len(candidates)
        kept.append(replace(d, candidates=candidates) if len(candidates) != len(d.candidates) else d)
    return kept, {"dropped_dialogues": dropped_dialogues, "dropped_candidates": dropped_candidates}
