"""The cross-phase check: no phase, of any kind, lets a hidden phase's labels be read through it.

A board's phases publish in three ways (:func:`kind`):

* ``public``: per-dialogue values now (run pages, ``/api/runs/ID``);
* ``final``: a hidden final phase: nothing before its freeze, per-dialogue values after it;
* ``ladder``: a hidden phase that is not final: each team's ladder values over its published
  groups (``dsr.board.release``), never per dialogue.

A dialogue is *shared* by two phases when both hold it (by id, or by its text: title and
context turns, so a copy of the file with other ids is the same dialogue) with labels the
measures cannot tell apart. Labels are compared as the measures see them, not as a file
writes them: each candidate by its text (title and body: renamed ids are the same
sentence), grades of 0 and below dropped (trec_eval counts them as not judged relevant, so a
file without its grade-0 lines holds the same labels), and two dialogues' labels are the same
when they are equal or when some relevance threshold gives the same set of relevant
sentences in both (the relevant sets of ``grade >= t``: P@k, RR, AP and R@k at that threshold
give the same per-dialogue values, so grades 1/2/3 rewritten as 2/4/6, or one grade merged
into another, are still the same labels).

The rule, for every pair of phases of which at least one is hidden:

* when either publishes per-dialogue values (``public``, or ``final`` once frozen), they may
  share no dialogue: one shared dialogue's values are its hidden labels' values;
* two ``ladder`` phases: every pair of their published groups must differ in at least the
  larger of their ``min_dialogues`` dialogues (the difference of two groups' means gives
  the values of the dialogues they differ in; the same group twice doubles every team's
  quota on it).

``allow_overlap`` (``--allow-overlap``) adds a phase anyway; each problem then says what it
gives away, and ``dsr board add-phase`` prints it as a warning.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from dsr.core import docs_url
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError

KINDS = ("public", "final", "ladder")


def kind(phase) -> str:
    """How a phase row publishes: ``public``, ``final`` (hidden, everything at its freeze) or
    ``ladder`` (hidden, ladder values only)."""
    if not phase.hidden:
        return "public"
    return "final" if phase.final else "ladder"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def dialogue_text(dialogue: Dialogue) -> str:
    """A dialogue's identity by its text: its title and context turns (not its id)."""
    return _digest(dialogue.title, *(t.body for t in dialogue.context))


@dataclass(frozen=True)
class Judged:
    """One dialogue's labels as the measures see them: (sentence text, grade > 0) pairs and
    the relevant set at each threshold."""

    id: str
    text: str
    labels: frozenset
    views: frozenset

    def same(self, other: Judged) -> bool:
        """Whether no measure can tell the two dialogues' labels apart (see the module)."""
        return self.labels == other.labels or bool(self.views & other.views)


def judged(dialogue: Dialogue, labels: dict[str, int]) -> Judged:
    """``dialogue``'s labels (candidate id -> grade; missing: 0) as the measures see them."""
    sentence = {c.id: _digest(c.title, c.body) for c in dialogue.candidates}
    graded = frozenset((sentence.get(doc, _digest("id", doc)), int(g)) for doc, g in labels.items() if int(g) > 0)
    thresholds = sorted({g for _, g in graded})
    views = frozenset(frozenset(s for s, g in graded if g >= t) for t in thresholds)
    return Judged(dialogue.id, dialogue_text(dialogue), graded, views)


@dataclass
class PhaseLabels:
    """What the check knows of one phase: its name, kind, dialogues (by id, in order) and,
    for a ladder phase, its published groups and minimum."""

    name: str
    kind: str
    dialogues: dict[str, Judged]
    groups: dict[str, list[str]] = field(default_factory=dict)
    minimum: int = 0

    @property
    def hidden(self) -> bool:
        return self.kind != "public"


def phase_labels(
    name: str,
    how: str,
    collection: Collection,
    qrels: dict[str, dict[str, int]],
    groups: dict[str, list[int]] | None = None,
    minimum: int = 0,
) -> PhaseLabels:
    """A phase's labels for the check (``collection``: the phase's dialogues, in order;
    ``groups``: a ladder phase's published groups as indices into them)."""
    if how not in KINDS:
        raise InputError(f"a phase's kind is one of {', '.join(KINDS)}", field="kind")
    dialogues = {d.id: judged(d, qrels.get(d.id, {})) for d in collection.dialogues}
    ids = list(dialogues)
    named = {g: [ids[int(i)] for i in idx] for g, idx in (groups or {}).items()}
    return PhaseLabels(name, how, dialogues, named, minimum)


class _Index:
    """A phase's dialogues found by id or by text."""

    def __init__(self, dialogues: dict[str, Judged]):
        self.by_id = dialogues
        self.by_text: dict[str, list[Judged]] = {}
        for d in dialogues.values():
            self.by_text.setdefault(d.text, []).append(d)

    def partners(self, d: Judged) -> list[Judged]:
        found = [self.by_id[d.id]] if d.id in self.by_id else []
        return found + [p for p in self.by_text.get(d.text, []) if p.id != d.id]


def shared(mine: list[Judged], theirs: _Index) -> tuple[int, int]:
    """(dialogues of ``mine`` that ``theirs`` holds too, those of them with the same labels)."""
    held = same = 0
    for d in mine:
        partners = theirs.partners(d)
        held += bool(partners)
        same += any(d.same(p) for p in partners)
    return held, same


def differing(mine: list[Judged], theirs: list[Judged]) -> int:
    """Dialogues in which two groups differ: in one and not the other, or in both with labels
    a measure can tell apart."""
    held, same = shared(mine, _Index({d.id: d for d in theirs}))
    return len(mine) + len(theirs) - held - same


def problems(new: PhaseLabels, others: list[PhaseLabels]) -> list[str]:
    """Why ``new`` may not sit beside ``others`` (empty: it may), each saying what it gives away."""
    out = []
    for other in others:
        if not (new.hidden or other.hidden):
            continue
        if new.kind == other.kind == "ladder":
            out += _ladder_pair(new, other)
            continue
        n = shared(list(new.dialogues.values()), _Index(other.dialogues))[1]
        if n:
            out.append(_readable(new, other, n))
    return out


def _readable(a: PhaseLabels, b: PhaseLabels, n: int) -> str:
    """What a pair that shares ``n`` dialogues gives away (one of them publishes per dialogue)."""
    shown, hidden = (a, b) if a.kind == "public" or (a.kind == "final" and b.kind != "public") else (b, a)
    when = "now" if shown.kind == "public" else "once it is frozen"
    return (
        f"{a.name} and {b.name} share {n} dialogue(s) with the same labels (as the measures see "
        f"them): {shown.name} publishes per-dialogue values {when}, so the {hidden.name} labels of "
        f"those dialogues can be read from its run pages and /api/runs"
    )


def _ladder_pair(a: PhaseLabels, b: PhaseLabels) -> list[str]:
    least = max(a.minimum, b.minimum)
    out = []
    for g, mine in a.groups.items():
        left = [a.dialogues[t] for t in mine]
        for h, theirs in b.groups.items():
            n = differing(left, [b.dialogues[t] for t in theirs])
            if n < least:
                out.append(
                    f"{a.name} {g!r} ({len(mine)} dialogues) and {b.name} {h!r} ({len(theirs)} "
                    f"dialogues) differ in {n} dialogue(s), fewer than {least}: the difference of "
                    "their published means gives the values of the dialogues that differ"
                    + (" (none: the same group twice doubles every team's quota on it)" if n == 0 else "")
                )
    return out


def refuse(problems_found: list[str]) -> None:
    """An InputError naming ``allow_overlap`` when there is any problem."""
    if problems_found:
        shown = "; ".join(problems_found[:5])
        more = f" (and {len(problems_found) - 5} more)" if len(problems_found) > 5 else ""
        raise InputError(
            f"this phase would let hidden labels be read through another phase: {shown}{more}. "
            "A phase may share no dialogue with a hidden phase's labels when either "
            "publishes per-dialogue values (a public phase, or a final one once frozen), and "
            "two hidden phases over the same labels must differ in at least min_dialogues "
            f"dialogues ({docs_url('board', 'phases-over-the-same-labels')}); allow_overlap overrides",
            field="allow_overlap",
        )
