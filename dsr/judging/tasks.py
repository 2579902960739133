"""Tasks and assignments: who grades which (dialogue, candidate), with honeypots planted.

**Tasks.** Each pool dialogue's candidates are shuffled (the pool's rank order is
not shown) and cut into tasks of at most ``chunk`` sentences (sizes as equal as
possible); an assessor grades one task at a time, reading the dialogue once.
When its dialogue has known answers (:mod:`dsr.judging.honeypots`), each task gets
``max(1, round(honeypot_rate x sentences))`` honeypot checks, relevant and not relevant
in turn (so that neither "all 0" nor "all relevant" passes); a not-relevant check is the
one that catches the most shortcuts (:func:`dsr.judging.honeypots.interleave`: a title
that matches the dialogue's and words shared with its last turns), a known candidate
before a planted sentence of another dialogue when both catch as many. **A planted
sentence does not change a task's size or place**: the planted sentences a dialogue
needs are counted first, then the candidates and they are shuffled together and cut
into tasks of equal sizes, so a task with a planted check is as large as any other of
its dialogue and the check sits anywhere in it (before issue 40 every planted check was
added to its task, one sentence longer than its siblings). A checked candidate stays a
pool item (its grades count like any other); a planted sentence is only a check and
never reaches the judged collection. Everything is seeded.

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
from dsr.judging.honeypots import interleave, recent_words, shown_words, traps

if TYPE_CHECKING:
    from dsr.core.data import Collection, Dialogue
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


def plan_tasks(
    pool: Collection, golds: dict[str, GoldSet], chunk: int, honeypot_rate: float, relevant_from: int, seed: int = 0
) -> list[PlannedTask]:
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
        items = [PlannedItem(c.id, c.title, c.body) for c in d.candidates]
        gold = golds.get(d.id) if honeypot_rate > 0 else None
        checks = _Checks(d, gold, relevant_from) if gold is not None else None
        if checks is not None:
            wanted = [
                max(1, round(honeypot_rate * len(part)))
                for part in np.array_split(np.arange(len(items)), -(-len(items) // chunk))
            ]
            items += [PlannedItem(None, p.title, p.body, p.grade, p.source) for p in checks.plants(sum(wanted))]
        order = rng.permutation(len(items))
        for part in np.array_split(order, -(-len(items) // chunk)):
            task = [items[i] for i in part]
            if checks is not None:
                checks.mark(task, max(1, round(honeypot_rate * sum(it.candidate is not None for it in task))))
            tasks.append(PlannedTask(d.id, task))
    return tasks


class _Checks:
    """A dialogue's known answers, used up as its tasks are marked."""

    def __init__(self, dialogue: Dialogue, gold: GoldSet, relevant_from: int) -> None:
        words = shown_words(dialogue)
        recent = recent_words(dialogue)
        self.gold = gold
        self.positives = [c.id for c in dialogue.candidates if c.id in gold.known and gold.known[c.id][0] >= relevant_from]
        known = [c for c in dialogue.candidates if c.id in gold.known and gold.known[c.id][0] < relevant_from]
        # known candidates before planted sentences that catch as many shortcuts
        options = [(c.title, c.body, c.id) for c in known] + [(p.title, p.body, p) for p in gold.planted]
        ranked = interleave(options, lambda o: traps(dialogue, o[0], o[1], words, recent))
        caught = {id(o): traps(dialogue, o[0], o[1], words, recent) for o in options}
        # an automatic check that catches neither script tells nothing (a judged one is kept, last)
        options = [o for o in options if any(caught[id(o)]) or self._source(o) == "judged"]
        ranked = [o for o in ranked if o in options]
        ranked.sort(key=lambda o: -sum(caught[id(o)]))  # stable: the interleaving within a score
        self.negatives = [o[2] for o in ranked]
        #: a task's own known candidates when the dialogue's choice missed it: title-catching first
        self.fallback = [
            o[2] for o in sorted(ranked, key=lambda o: (-sum(caught[id(o)]), not caught[id(o)][0])) if isinstance(o[2], str)
        ]
        self.chosen: set[str] = set(c.id for c in known)  # until plants() chooses

    def _source(self, option: tuple[str, str, str | Planted]) -> str:
        return self.gold.known[option[2]][1] if isinstance(option[2], str) else option[2].source

    def plants(self, wanted: int) -> list[Planted]:
        """The planted sentences the dialogue needs for ``wanted`` checks in all: the
        not-relevant checks the known candidates cannot give, in order, at most those known."""
        want_negative = wanted - min(len(self.positives), (wanted + 1) // 2)
        chosen = self.negatives[:want_negative]
        self.chosen = {o for o in chosen if isinstance(o, str)}
        return [o for o in chosen if not isinstance(o, str)]

    def mark(self, task: list[PlannedItem], wanted: int) -> None:
        """Mark the task's checks: its known relevant candidates (up to half of ``wanted``, at
        least one), and the not-relevant checks the dialogue chose (:meth:`plants`) that fell
        in it: planted sentences are checks already, known candidates are marked; when it has
        none, its own most telling known not-relevant candidates, up to ``wanted``."""
        planted = sum(it.candidate is None for it in task)
        here = {it.candidate: it for it in task if it.candidate is not None}
        positives = [c for c in self.positives if c in here][: max(1, (wanted + 1) // 2)]
        negatives = [c for c in self.negatives if isinstance(c, str) and c in here and c in self.chosen]
        if not negatives and not planted:
            negatives = [c for c in self.fallback if c in here][: max(0, wanted - len(positives))]
        for key in positives + negatives:
            here[key].gold, here[key].source = self.gold.known[key]


def assign(
    sizes: dict[int, int],
    assessors: list[str],
    k: int,
    existing: dict[int, set[str]] | None = None,
    load: dict[str, int] | None = None,
    seed: int = 0,
) -> list[tuple[int, str]]:
    """New (task, assessor) pairs so that every task of ``sizes`` (task -> sentences) has
    ``k`` distinct assessors; ``existing`` and ``load`` are the campaign's so far."""
    if k < 1:
        raise InputError("at least 1 assessor per item", field="k")
    if len(set(assessors)) < k:
        raise InputError(f"{k} assessors per item need at least {k} assessors; {len(set(assessors))} given", field="assessors")
    existing = {t: set(v) for t, v in (existing or {}).items()}
    load = {a: (load or {}).get(a, 0) for a in assessors}
    rank = {str(a): r for r, a in enumerate(np.random.default_rng(seed).permutation(sorted(load)))}
    out = []
    for task in sorted(sizes, key=lambda t: (-sizes[t], t)):
        have = existing.setdefault(task, set())
        need = k - len(have)
        eligible = sorted((a for a in load if a not in have), key=lambda a: (load[a], rank[a]))
        if need > len(eligible):
            raise InputError(
                f"task {task} needs {need} more assessor(s) but only {len(eligible)} have not graded it", field="assessors"
            )
        for chosen in eligible[: max(0, need)]:
            have.add(chosen)
            load[chosen] += sizes[task]
            out.append((task, chosen))
    return out
