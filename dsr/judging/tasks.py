"""Tasks and assignments: who grades which (dialogue, candidate), with honeypots planted.

**Tasks.** Each pool dialogue's candidates are shuffled (the pool's rank order is
not shown) and cut into tasks of at most ``chunk`` sentences (sizes as equal as
possible); an assessor grades one task at a time, reading the dialogue once.
Each task gets ``max(1, round(honeypot_rate x sentences))`` honeypot checks when its
dialogue has known answers (:mod:`dsr.judging.honeypots`): alternately a known
relevant candidate of the task, then a known not-relevant one (a candidate of the
task, else a planted unrelated sentence), so that neither "all 0" nor "all
relevant" passes the checks. A checked candidate stays a pool item (its grades
count like any other); a planted sentence is only a check and never reaches the
judged collection. Items are shown in a shuffled order. Everything is seeded.

**Assignments.** Each task goes to ``k`` different assessors (so no assessor grades
an item twice), choosing, task by task (largest first), the eligible assessors with
the least load in sentences (ties in a seeded random order): the greedy
longest-processing-time rule, which keeps any two assessors' loads within one
task's size of each other. It is resumable: tasks that already have assessors keep
them and only the missing places are filled, with the loads counted so far, so
running it again after adding tasks or assessors (or releasing a dropped-out
assessor's untouched tasks) continues the campaign.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dsr.core.errors import InputError
from dsr.core.text import content_words
from dsr.judging.honeypots import dialogue_words

if TYPE_CHECKING:
    from dsr.core.data import Collection
    from dsr.judging.honeypots import GoldSet, Planted


@dataclass
class PlannedItem:
    """A sentence to grade: a pool candidate (``candidate`` set) or a planted sentence."""

    candidate: str | None
    title: str
    body: str
    gold: int | None = None
    source: str = "pool"


@dataclass
class PlannedTask:
    dialogue: str
    items: list[PlannedItem]


def plan_tasks(pool: Collection, golds: dict[str, GoldSet], chunk: int, honeypot_rate: float,
               relevant_from: int, seed: int = 0) -> list[PlannedTask]:
    """The campaign's tasks, dialogue by dialogue (see the module docstring)."""
    if chunk < 1:
        raise InputError("at least 1 sentence per task", field="chunk")
    if not 0 <= honeypot_rate < 1:
        raise InputError("a fraction from 0 (no honeypots) to below 1", field="honeypot_rate")
    rng = np.random.default_rng(seed)
    tasks = []
    for d in pool:
        if not d.candidates:
            raise InputError("the dialogue has no candidates to judge", record=d.id, field="candidates")
        order = rng.permutation(len(d.candidates))
        parts = np.array_split(order, -(-len(d.candidates) // chunk))
        gold = golds.get(d.id)
        spare = list(gold.planted) if gold else []
        words = dialogue_words(d) | content_words(d.title)

        def near(title: str, words=words, own=d.title) -> bool:
            return title == own or bool(content_words(title) & words)

        for part in parts:
            items = [PlannedItem(d.candidates[i].id, d.candidates[i].title, d.candidates[i].body)
                     for i in part]
            if honeypot_rate > 0 and gold is not None:
                _plant(items, gold, spare, max(1, round(honeypot_rate * len(items))), relevant_from, near)
            tasks.append(PlannedTask(d.id, [items[i] for i in rng.permutation(len(items))]))
    return tasks


def _plant(items: list[PlannedItem], gold: GoldSet, spare: list[Planted], wanted: int,
           relevant_from: int, near) -> None:
    """Mark or add ``wanted`` checks: relevant and not relevant in turn, as far as known.
    A not-relevant check is one whose title is ``near`` the dialogue's (its document or a
    related one) when there is one: first a known candidate of the task, then a planted
    sentence, and only then a known candidate of an unrelated document (gold items from a
    judged file), so that the shown title does not give the answer away."""
    positives = [it for it in items if it.candidate in gold.known
                 and gold.known[it.candidate][0] >= relevant_from]
    negatives = [it for it in items if it.candidate in gold.known
                 and gold.known[it.candidate][0] < relevant_from]
    hard = [it for it in negatives if near(it.title)]
    easy = [it for it in negatives if not near(it.title)]
    for j in range(wanted):
        want_positive = j % 2 == 0
        if positives and (want_positive or not (hard or spare or easy)):
            item = positives.pop(0)
        elif hard:
            item = hard.pop(0)
        elif spare:
            planted = spare.pop(0)
            items.append(PlannedItem(None, planted.title, planted.body, planted.grade, planted.source))
            continue
        elif easy:
            item = easy.pop(0)
        else:
            return
        item.gold, item.source = gold.known[item.candidate]


def assign(sizes: dict[int, int], assessors: list[str], k: int,
           existing: dict[int, set[str]] | None = None, load: dict[str, int] | None = None,
           seed: int = 0) -> list[tuple[int, str]]:
    """New (task, assessor) pairs so that every task of ``sizes`` (task -> sentences) has
    ``k`` distinct assessors; ``existing`` and ``load`` are the campaign's so far."""
    if k < 1:
        raise InputError("at least 1 assessor per item", field="k")
    if len(set(assessors)) < k:
        raise InputError(f"{k} assessors per item need at least {k} assessors; "
                         f"{len(set(assessors))} given", field="assessors")
    existing = {t: set(v) for t, v in (existing or {}).items()}
    load = {a: (load or {}).get(a, 0) for a in assessors}
    rank = {str(a): r for r, a in enumerate(np.random.default_rng(seed).permutation(sorted(load)))}
    out = []
    for task in sorted(sizes, key=lambda t: (-sizes[t], t)):
        have = existing.setdefault(task, set())
        need = k - len(have)
        eligible = sorted((a for a in load if a not in have), key=lambda a: (load[a], rank[a]))
        if need > len(eligible):
            raise InputError(f"task {task} needs {need} more assessor(s) but only "
                             f"{len(eligible)} have not graded it", field="assessors")
        for chosen in eligible[:max(0, need)]:
            have.add(chosen)
            load[chosen] += sizes[task]
            out.append((task, chosen))
    return out
