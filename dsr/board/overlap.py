"""The cross-phase check: no phase, of any kind, lets a hidden phase's labels be read through it.

A board's phases publish in three ways (:func:`kind`):

* ``public``: per-dialogue values now (run pages, ``/api/runs/ID``);
* ``final``: a hidden final phase: nothing before its freeze, per-dialogue values after it;
* ``ladder``: a hidden phase that is not final: each team's ladder values over its published
  groups (``dsr.board.release``), never per dialogue.

**Which judged pairs two phases share.** A judged pair is a (dialogue, candidate) that the
phase's labels grade (any grade, 0 too). Two dialogues of two phases are *the same dialogue*
when one of these holds (:func:`matches`):

* they have the same id;
* most of one's candidate ids are the other's, counting only ids that a single dialogue of
  each phase holds (ids like ``0`` .. ``49`` that every dialogue reuses, or a sentence id
  that several dialogues share, name no dialogue);
* their text is mostly the same: each dialogue is the set of its folded texts (:func:`fold`:
  Unicode NFKC, format characters dropped, case-folded, whitespace folded), its title, each
  context turn and its next turn; the texts two dialogues share must weigh at least half of
  the larger one's, a text weighing its number of words divided by the number of
  dialogues of either phase that hold it (a film's title or a "hi" that many dialogues
  say weighs little). A set, so reordered turns are the same dialogue; half of the larger
  one, so a dropped first turn or an edited title still is, while two cuts of one
  conversation (CMU_DoG's dialogues at turn 8 and at turn 27 share the first 8 turns) and
  dialogues that only meet the same Wikipedia sentences are not.

The judged pairs of two same dialogues are their candidates with the same id or the same
folded text (the body: a re-export may edit titles), judged in both.

**When they share labels** (:meth:`Shared.labels`): the check reads the grades of those
pairs. Two phases share labels when

1. in some dialogue, the shared pairs relevant at some threshold are the same in both (the
   sets of ``grade >= t``: P@k, RR, AP and R@k at that threshold give the same values on
   them; grades rewritten 1/2/3 as 2/4/6, merged, or 0 written -1 are the same labels), or
2. over all shared pairs, more are relevant in both than independent labels would make
   (each dialogue's count against its hypergeometric expectation, pooled, one-sided
   z >= :data:`AGREEMENT_Z`): a copy with one grade changed, or the same pairs judged
   again by other assessors, agree far beyond chance.

Labels graded independently of each other on the same pairs share nothing a measure
can read, and pass.

**The rule**, for every pair of phases of which at least one is hidden and that share labels:

* a public phase never sits beside a hidden one (``allow_overlap`` does not take it): its
  per-dialogue values are the hidden labels' values;
* two hidden phases (ladder or final) only with ``allow_overlap`` (``--allow-overlap``): a
  final one publishes per dialogue once frozen, and two ladders double each team's quota on
  what they share and are differenced as two runs are; the warning says what it gives away.
"""

from __future__ import annotations

import math
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsr.core import docs_url
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError

if TYPE_CHECKING:  # SQLAlchemy loads with the models: this check is plain data
    from dsr.board.models import Phase

KINDS = ("public", "final", "ladder")
#: the pooled agreement beyond chance (one-sided z; p = 0.001) from which two label sets over
#: the same pairs are taken for one
AGREEMENT_Z = 3.09


def kind(phase: Phase) -> str:
    """How a phase row publishes: ``public``, ``final`` (hidden, everything at its freeze) or
    ``ladder`` (hidden, ladder values only)."""
    if not phase.hidden:
        return "public"
    return "final" if phase.final else "ladder"


def fold(text: str) -> str:
    """``text`` as the check compares it: Unicode NFKC (composed and compatibility forms alike),
    format characters (category Cf: zero-width spaces and joiners, bidi controls, the byte order
    mark, soft hyphens, which a re-export may add or drop without changing a word) dropped,
    case-folded, runs of whitespace as one space, trimmed."""
    if not text.isascii():  # ASCII holds no format character and has one normal form
        text = unicodedata.normalize("NFKC", text)
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
        text = unicodedata.normalize("NFKC", text.casefold())
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class Judged:
    """One dialogue as the check sees it: its folded texts (title, turns, next turn) and its
    judged candidates (id -> grade, id -> folded body)."""

    id: str
    texts: frozenset[str]
    grades: dict[str, int]
    bodies: dict[str, str]


def judged(dialogue: Dialogue, labels: dict[str, int]) -> Judged:
    """``dialogue`` with its labels (candidate id -> grade: the judged pairs)."""
    turns = [dialogue.title, *(t.body for t in dialogue.context)]
    if dialogue.target is not None:
        turns.append(dialogue.target.body)
    texts = frozenset(t for t in map(fold, turns) if t)
    bodies = {c.id: fold(c.body) or fold(c.title) for c in dialogue.candidates if c.id in labels}
    return Judged(dialogue.id, texts, {c: int(labels[c]) for c in bodies}, bodies)


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
    groups: Mapping[str, Sequence[int] | Any] | None = None,
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


@dataclass
class Match:
    """A dialogue of one phase that is a dialogue of the other (``how``: by id, candidate
    ids or text), and the grades of their shared judged pairs (mine, theirs)."""

    mine: str
    theirs: str
    how: set[str]
    pairs: list[tuple[int, int]]

    def same_labels(self) -> bool:
        """Whether some relevance threshold gives the same shared pairs in both (1. above)."""
        return bool(_views([a for a, _ in self.pairs]) & _views([b for _, b in self.pairs]))

    def agreement(self) -> tuple[int, float, float]:
        """Pairs relevant in both, and its mean and variance were the labels independent (the
        hypergeometric law of the overlap of two relevant sets of fixed sizes)."""
        n = len(self.pairs)
        a = sum(g > 0 for g, _ in self.pairs)
        b = sum(g > 0 for _, g in self.pairs)
        both = sum(x > 0 and y > 0 for x, y in self.pairs)
        variance = a * b * (n - a) * (n - b) / (n * n * (n - 1)) if n > 1 else 0.0
        return both, a * b / n, variance


def _views(grades: list[int]) -> set[frozenset[int]]:
    """The non-empty relevant sets (pair positions) at each threshold of ``grades``."""
    return {frozenset(i for i, g in enumerate(grades) if g >= t) for t in {g for g in grades if g > 0}}


def matches(a: PhaseLabels, b: PhaseLabels) -> list[Match]:
    """The dialogues of ``a`` that are dialogues of ``b`` (see the module), with at least one
    shared judged pair each."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for d in a.dialogues:
        if d in b.dialogues:
            found[d, d].add("id")
    for pair in _by_candidate_ids(a, b):
        found[pair].add("candidate ids")
    for pair in _by_text(a, b):
        found[pair].add("text")
    out = []
    for (d, e), how in found.items():
        pairs = _pairs(a.dialogues[d], b.dialogues[e])
        if pairs:
            out.append(Match(d, e, how, pairs))
    return out


def _pairs(d: Judged, e: Judged) -> list[tuple[int, int]]:
    """The judged pairs of two same dialogues: candidates with the same id, else the same text."""
    by_body: dict[str, str] = {}
    for cid, body in e.bodies.items():
        by_body.setdefault(body, cid)
    out = []
    for cid, grade in d.grades.items():
        other = cid if cid in e.grades else by_body.get(d.bodies[cid])
        if other is not None:
            out.append((grade, e.grades[other]))
    return out


def _by_candidate_ids(a: PhaseLabels, b: PhaseLabels) -> list[tuple[str, str]]:
    """Dialogues most of whose candidate ids (of those one dialogue of each phase holds) are
    the other's."""
    mine, theirs = _own_ids(a), _own_ids(b)
    held = Counter(theirs.values())
    counts: dict[str, Counter] = defaultdict(Counter)
    for cid, d in mine.items():
        if cid in theirs:
            counts[d][theirs[cid]] += 1
    sizes = Counter(mine.values())
    return [(d, e) for d, c in counts.items() for e, n in c.items() if 2 * n > min(sizes[d], held[e])]


def _own_ids(phase: PhaseLabels) -> dict[str, str]:
    """Candidate id -> dialogue, for the ids that one dialogue of the phase holds."""
    seen = Counter(cid for d in phase.dialogues.values() for cid in d.grades)
    return {cid: d.id for d in phase.dialogues.values() for cid in d.grades if seen[cid] == 1}


def _by_text(a: PhaseLabels, b: PhaseLabels) -> list[tuple[str, str]]:
    """Dialogues whose shared texts weigh at least half of the larger one's (see the module)."""
    held_a = Counter(t for d in a.dialogues.values() for t in d.texts)
    held_b = Counter(t for d in b.dialogues.values() for t in d.texts)

    def weight(text: str) -> float:
        return max(1, text.count(" ") + 1) / max(held_a[text], held_b[text])

    where: dict[str, list[str]] = defaultdict(list)
    for e in b.dialogues.values():
        for t in e.texts:
            where[t].append(e.id)
    total_b = {e.id: sum(map(weight, e.texts)) for e in b.dialogues.values()}
    out = []
    for d in a.dialogues.values():
        common: dict[str, float] = defaultdict(float)
        for t in d.texts:
            for other in where.get(t, ()):
                common[other] += weight(t)
        total = sum(map(weight, d.texts))
        out += [(d.id, e) for e, w in common.items() if w >= 0.5 * max(total, total_b[e]) - 1e-9]
    return out


@dataclass
class Shared:
    """What two phases share: the matched dialogues and what their grades say."""

    matches: list[Match]

    @property
    def dialogues(self) -> int:
        return len({m.mine for m in self.matches})

    @property
    def pairs(self) -> int:
        return sum(len(m.pairs) for m in self.matches)

    @property
    def same_grade(self) -> int:
        return sum(x == y for m in self.matches for x, y in m.pairs)

    def z(self) -> float:
        """The pooled agreement beyond chance (2. of the module), 0 when nothing can vary."""
        both = mean = variance = 0.0
        for m in self.matches:
            x, e, v = m.agreement()
            both, mean, variance = both + x, mean + e, variance + v
        return (both - mean) / math.sqrt(variance) if variance > 0 else 0.0

    def labels(self) -> bool:
        """Whether the two phases share labels (see the module)."""
        return any(m.same_labels() for m in self.matches) or self.z() >= AGREEMENT_Z

    def same_dialogues(self) -> set[tuple[str, str]]:
        """(mine, theirs) of the matched dialogues whose labels are the same to a measure."""
        return {(m.mine, m.theirs) for m in self.matches if m.same_labels()}

    def describe(self) -> str:
        how = Counter(h for m in self.matches for h in m.how)
        by = ", ".join(f"{n} by {h}" for h, n in sorted(how.items()))
        return (
            f"{self.dialogues} dialogue(s) and {self.pairs} judged pair(s) ({by}; {self.same_grade} of the pairs "
            f"with the same grade, agreement beyond chance z = {self.z():.1f})"
        )


def shared(a: PhaseLabels, b: PhaseLabels) -> Shared:
    return Shared(matches(a, b))


@dataclass(frozen=True)
class Problem:
    """Why a phase may not sit beside another, in words; ``overridable``: ``allow_overlap``
    takes it (two hidden phases), else never (a public phase beside a hidden one)."""

    text: str
    overridable: bool

    def __str__(self) -> str:
        return self.text


def problems(new: PhaseLabels, others: list[PhaseLabels]) -> list[Problem]:
    """Why ``new`` may not sit beside ``others`` (empty: it may), each saying what it gives away."""
    out = []
    for other in others:
        if not (new.hidden or other.hidden):
            continue
        found = shared(new, other)
        if not found.matches or not found.labels():
            continue
        said = f"{new.name} shares labels with {other.name}: {found.describe()}"
        if not (new.hidden and other.hidden):
            public, hidden = (new, other) if not new.hidden else (other, new)
            out.append(
                Problem(
                    f"{said}; {public.name} is public, so the {hidden.name} labels of those dialogues can be "
                    "read from its run pages and /api/runs",
                    overridable=False,
                )
            )
        elif "final" in (new.kind, other.kind):
            final, hidden = (new, other) if new.kind == "final" else (other, new)
            out.append(
                Problem(
                    f"{said}; {final.name} is final and publishes per-dialogue values once it is frozen, so the "
                    f"{hidden.name} labels of those dialogues can then be read from its run pages",
                    overridable=True,
                )
            )
        else:
            out.append(Problem(f"{said}; {_ladder_pair(new, other, found)}", overridable=True))
    return out


def _ladder_pair(a: PhaseLabels, b: PhaseLabels, found: Shared) -> str:
    """What two ladder phases over the same labels give away: each team's quota counts twice
    on them, and groups that differ in few dialogues are differenced as two runs are."""
    same = found.same_dialogues()
    close = []
    for g, mine in a.groups.items():
        for h, theirs in b.groups.items():
            both = sum((d, e) in same for d in mine for e in theirs)
            differ = len(mine) + len(theirs) - 2 * both
            if differ < max(a.minimum, b.minimum):
                close.append(f"{a.name} {g!r} and {b.name} {h!r} differ in {differ} dialogue(s)")
    said = "both hidden: each team's quota counts twice on the dialogues they share"
    if close:
        said += (
            "; the difference of their published means gives the values of the dialogues in which these "
            f"groups differ: {', '.join(close[:3])}" + (f" (and {len(close) - 3} more)" if len(close) > 3 else "")
        )
    return said


def refuse(found: list[Problem], allow_overlap: bool = False) -> None:
    """An InputError when there is a problem that ``allow_overlap`` does not take."""
    blocking = [p for p in found if not (allow_overlap and p.overridable)]
    if not blocking:
        return
    shown = "; ".join(p.text for p in blocking[:5])
    more = f" (and {len(blocking) - 5} more)" if len(blocking) > 5 else ""
    never = any(not p.overridable for p in blocking)
    raise InputError(
        f"this phase would let hidden labels be read through another phase: {shown}{more}. "
        "A public phase may share no labels with a hidden one, and two hidden phases share "
        f"labels only with allow_overlap ({docs_url('board', 'phases-over-the-same-labels')})"
        + ("; allow_overlap does not take a public phase beside a hidden one" if never else ""),
        field="allow_overlap",
    )
