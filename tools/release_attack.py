"""The accumulate-until-pass attack on a hidden phase's release rule, and an exact reading of
what it learns (issue 40, item 3).

The attacker knows the next turn of every dialogue (the strongest prior there is: it is what
leaked before ``dsr board participant-file``): it ranks candidates by the content words they
share with the next turn (:func:`next_turn_prior`). Within its quota:

1. its first run ranks each dialogue's candidates in the reverse order of the prior, so its
   top sentences are the least likely to be relevant (a first run is always published);
2. then, most confident dialogues first, it switches dialogues to the prior's order, adding
   ``grow`` more to each try until a run passes the ladder's test (a published value
   moves), and starts again from that run.

Every value that moved says that the passing run's mean on that group lies in the published
value's cell (``dsr.board.release.cell``). For P@1 and P@5 the group's sum is a count of
relevant sentences among the run's top 1 or 5 in each dialogue: :class:`Deduction` keeps
these as linear constraints on the unknown labels (0/1: relevant or not) and finds, with an
integer program (scipy's HiGHS), every label that takes one value in all label assignments
consistent with everything published: the labels *fixed exactly*. It reads only P@1 and P@5,
so it is a lower bound on what the transcript holds (the other measures add constraints it
does not model); ``dsr.board.release.bound`` is the upper bound, in bits.

``python tools/release_attack.py [--judged FILE]`` runs it on the judged CMU_DoG set with the
rule before issue 40 (``min_counts`` 0) and with the board's, in process (the tests run it
through a board's API on SQLite and PostgreSQL: ``tests/board/test_board_attacks.py``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dsr.board import release
from dsr.core.data import Collection
from dsr.core.text import content_words

#: the measures whose group sums are counts the deduction reads, and their depth
COUNTS = {"P@1": 1, "P@5": 5}

Ranking = dict[str, list[str]]
#: one run submitted -> the team's published values after it: group -> measure -> value
Submit = Callable[[Ranking, str], dict[str, dict[str, float]]]


def next_turn_prior(collection: Collection) -> Ranking:
    """Each dialogue's candidates by the content words they share with the next turn (ties:
    file order): the issue's next-turn overlap ranker."""
    out = {}
    for d in collection.dialogues:
        words = content_words(d.target.body) if d.target is not None else set()
        order = sorted(range(len(d.candidates)), key=lambda i: (-len(content_words(d.candidates[i].body) & words), i))
        out[d.id] = [d.candidates[i].id for i in order]
    return out


def confidence(collection: Collection) -> list[str]:
    """Dialogues by how sure the prior is of its first sentence (its overlap with the next
    turn, minus the second's), surest first."""
    margin = {}
    for d in collection.dialogues:
        words = content_words(d.target.body) if d.target is not None else set()
        scores = sorted((len(content_words(c.body) & words) for c in d.candidates), reverse=True) + [0, 0]
        margin[d.id] = (scores[0] - scores[1], scores[0])
    return sorted(margin, key=lambda q: margin[q], reverse=True)


def trec(ranking: Ranking, tag: str) -> bytes:
    return "".join(
        f"{q} Q0 {d} {r + 1} {len(docs) - r} {tag}\n" for q, docs in ranking.items() for r, d in enumerate(docs)
    ).encode()


@dataclass
class Deduction:
    """What a transcript of published values says of the labels, read exactly for P@1 and P@5
    (see the module docstring)."""

    groups: dict[str, list[str]]  # group -> its dialogues
    steps: dict[str, float]  # group -> its grid step
    min_counts: int = release.MIN_COUNTS
    noise: float = release.NOISE  # the rule's noise (scale noise / n)
    #: the attacker trusts each noise draw to lie within its interval of this probability
    trust: float = 0.999
    variables: dict[tuple[str, str], int] = field(default_factory=dict)
    rows: list[tuple[list[int], int, int]] = field(default_factory=list)

    def allowed(self, value: float, group: str, depth: int) -> tuple[int, int]:
        """The counts (over depth x n places) whose mean publishes as ``value``, the noise
        within its ``trust`` interval (Laplace: scale x ln(1 / (1 - trust)) either side)."""
        n = len(self.groups[group])
        low, high = release.cell(value, self.steps[group], self.min_counts)
        slack = self.noise / n * math.log(1 / (1 - self.trust))
        places = n * depth
        fits = [k for k in range(places + 1) if low - slack - 1e-9 <= k / places < high + slack]
        return (min(fits), max(fits)) if fits else (1, 0)

    def add(self, ranking: Ranking, group: str, measure: str, value: float) -> None:
        depth = COUNTS[measure]
        cols = [self.variables.setdefault((q, d), len(self.variables)) for q in self.groups[group] for d in ranking[q][:depth]]
        low, high = self.allowed(value, group, depth)
        self.rows.append((cols, low, high))

    def fixed(self) -> dict[tuple[str, str], int]:
        """Every label that takes one value in all assignments consistent with the rows."""
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import lil_matrix

        n = len(self.variables)
        if not n:
            return {}
        matrix = lil_matrix((len(self.rows), n))
        for r, (cols, _, _) in enumerate(self.rows):
            for c in cols:
                matrix[r, c] += 1
        constraint = LinearConstraint(matrix.tocsr(), [lo for _, lo, _ in self.rows], [hi for _, _, hi in self.rows])

        def solve(cost: np.ndarray) -> np.ndarray | None:
            found = milp(cost, constraints=constraint, integrality=np.ones(n), bounds=Bounds(np.zeros(n), np.ones(n)))
            return None if found.x is None else np.round(found.x).astype(int)

        first = solve(np.zeros(n))
        if first is None:
            raise RuntimeError("no label assignment fits the transcript: the deduction is wrong")
        # the backbone: an assignment that flips as many of the undecided labels as it can; those
        # it flips are free; when it flips none, the rest take one value in every assignment
        free = np.zeros(n, dtype=bool)
        while True:
            cost = np.where(free, 0.0, 2.0 * first - 1.0)  # minimising it flips undecided labels
            other = solve(cost)
            flipped = (other != first) & ~free
            if not flipped.any():
                break
            free |= flipped
        names = {j: key for key, j in self.variables.items()}
        return {names[j]: int(first[j]) for j in range(n) if not free[j]}


@dataclass
class Outcome:
    """What an attack learnt: labels fixed exactly (relevant, not relevant, wrong), runs sent,
    published values that moved, and the bound in bits."""

    runs: int
    moved: int
    fixed_relevant: int
    fixed_not_relevant: int
    wrong: int
    bound_bits: float
    released_runs: int = 0

    @property
    def fixed(self) -> int:
        return self.fixed_relevant + self.fixed_not_relevant

    def line(self) -> str:
        return (
            f"{self.runs} runs, {self.released_runs} released, {self.moved} published values moved; labels "
            f"fixed exactly: {self.fixed} ({self.fixed_relevant} relevant, {self.fixed_not_relevant} not "
            f"relevant, {self.wrong} wrong); bound {self.bound_bits:.0f} bits"
        )


def accumulate_until_pass(
    collection: Collection,
    labels: dict[str, dict[str, int]],
    submit: Submit,
    groups: dict[str, list[str]],
    steps: dict[str, float],
    quota: int,
    measures: int,
    min_counts: int = release.MIN_COUNTS,
    noise: float = release.NOISE,
    start: int = 8,
    grow: int = 4,
) -> Outcome:
    """The attack (see the module docstring) through ``submit``; ``labels`` only score it."""
    prior = next_turn_prior(collection)
    anti = {q: docs[::-1] for q, docs in prior.items()}
    order = confidence(collection)
    deduction = Deduction(groups, steps, min_counts, noise)
    seen: dict[str, dict[str, float]] = {}
    moved = released = 0
    best, done, size, sent = dict(anti), 0, start, 0
    while sent < quota:
        switch = order[done : done + size] if sent else []
        run = {**best, **{q: prior[q] for q in switch}}
        values = submit(run, f"a{sent}")
        sent += 1
        changed = [(g, m) for g, ms in values.items() for m, v in ms.items() if seen.get(g, {}).get(m) != v]
        for g, m in changed:
            if m in COUNTS:
                deduction.add(run, g, m, values[g][m])
        moved += len(changed) if sent > 1 else 0
        seen = {g: dict(ms) for g, ms in values.items()}
        if sent > 1 and changed:
            released += 1
            best, done, size = run, done + len(switch), start
        elif sent > 1:
            size += grow
        if done >= len(order):
            break
    fixed = deduction.fixed()
    truth = {key: int(labels[key[0]].get(key[1], 0) > 0) for key in fixed}
    return Outcome(
        sent,
        moved,
        sum(v == 1 for v in fixed.values()),
        sum(v == 0 for v in fixed.values()),
        sum(fixed[k] != truth[k] for k in fixed),
        release.bound({g: len(t) for g, t in groups.items()}, measures, quota, min_counts=min_counts),
        released,
    )


class Simulated:
    """A team's ladder in process (``release.ladder`` over the runs' per-dialogue values, as
    the board computes them), for measuring without a server."""

    def __init__(
        self,
        collection: Collection,
        labels: dict[str, dict[str, int]],
        measures: list[str],
        groups: dict[str, np.ndarray],
        quota: int,
        min_counts: int = release.MIN_COUNTS,
        noise: float = release.NOISE,
        seed: int = 0,
    ):
        from dsr.evaluation.measures import Evaluator

        self.topics = collection.ids
        self.evaluator = Evaluator(labels, measures, self.topics)
        self.measures = self.evaluator.names
        self.groups, self.quota, self.min_counts, self.noise = groups, quota, min_counts, noise
        self.key = np.random.default_rng(seed).bytes(32)
        self.matrices: list[np.ndarray] = []

    def __call__(self, ranking: Ranking, tag: str) -> dict[str, dict[str, float]]:
        run = {q: {d: float(len(docs) - r) for r, d in enumerate(docs)} for q, docs in ranking.items()}
        self.matrices.append(self.evaluator(run).values)
        noise = release.Noise(self.key, tuple(range(len(self.matrices))))
        steps = release.ladder(
            self.matrices, self.groups, self.measures, self.quota, min_counts=self.min_counts, noise=noise, scale=self.noise
        )
        return steps.values[-1]


def measure(
    collection: Collection, min_counts: int, noise: float, quota: int = 20, start: int = 8, grow: int = 4, seed: int = 0
) -> Outcome:
    """The attack on ``collection`` (its own labels hidden) in process, default measures and
    groups (``min_dialogues`` 20)."""
    from dsr.board import scoring
    from dsr.evaluation.experiment import subset_indices

    labels = {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
    groups, _ = scoring.publishable_subsets(subset_indices(collection), scoring.MIN_DIALOGUES)
    ids = collection.ids
    named = {g: [ids[i] for i in idx] for g, idx in groups.items()}
    steps = release.group_steps({g: len(t) for g, t in named.items()}, min_counts=min_counts)
    simulated = Simulated(collection, labels, scoring.default_measures(), groups, quota, min_counts, noise, seed)
    return accumulate_until_pass(
        collection, labels, simulated, named, steps, quota, len(simulated.measures), min_counts, noise, start, grow
    )


#: (min_counts, noise, what): the rule before issue 40, its grid alone, and the board's rule
RULES = (
    (0, 0.0, "before issue 40: the 0.01 grid"),
    (release.MIN_COUNTS, 0.0, "the group grids, no noise"),
    (release.MIN_COUNTS, release.NOISE, "the board's rule: group grids and noise"),
)
#: the attack's (start, grow) variants: how many dialogues a try switches first, and how many more
VARIANTS = ((8, 4), (4, 8), (12, 2), (6, 1), (16, 4))


def main() -> None:
    from dsr.core.data import read_benchmark

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judged", default="../shared/data/judged/cmu_dog-valid-judged.jsonl")
    args = parser.parse_args()
    collection = read_benchmark(args.judged)
    for min_counts, noise, what in RULES:
        for start, grow in VARIANTS:
            print(
                f"{what}; start {start}, grow {grow}: {measure(collection, min_counts, noise, 20, start, grow).line()}",
                flush=True,
            )


if __name__ == "__main__":
    main()
