"""The project's decision rule: does a candidate pipeline replace the current default?

A candidate replaces the default only if it is **better on both label sets**: on the
judged development set (real relevance, few points) and on silver valid (computed
relevance, many points). "Better" is a positive mean difference of the primary measure
whose paired two-sided test, Holm-corrected over the candidates tried, is significant at
``alpha`` (0.05). Otherwise the simpler pipeline (the default) stays.

* **Tests.** Per label set, every candidate is compared with the default by topic
  (:func:`dsr.evaluation.significance.compare`: the paired t-test and the sign-flip randomisation
  test). ``test="both"`` (the default) asks both adjusted p-values to be below ``alpha``;
  ``"t"`` or ``"perm"`` one of them.
* **Holm over the candidates tried**, separately on each label set: trying more
  candidates makes each harder to accept. The two label sets are not corrected together:
  the rule asks for *both* (an intersection-union test), which is already no more
  permissive than each test alone.
* **More than one winner.** When several candidates pass, the one with the highest mean on
  the judged set replaces the default (then silver, then the order given).

:func:`decide` takes per-topic values; :func:`decide_runs` measures runs first (a run
may cover more topics than a label set holds, e.g. a CMU_DoG valid run measured on the
judged points it contains; a topic a run does not rank counts 0, as in ``dsr evaluate``).
``dsr decide`` prints the table and the decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.params import Settings, setting
from dsr.core.run import Run
from dsr.evaluation.measures import Evaluator, nan_to_none
from dsr.evaluation.qrels import qrels_from_collection
from dsr.evaluation.significance import ALPHA, DEFAULT_RESAMPLES, compare, mean_ci

#: the label sets the rule asks about, in the order printed
LABEL_SETS = ("dev", "silver")
TESTS = ("both", "t", "perm")


@dataclass(frozen=True, kw_only=True)
class DecideSettings(Settings):
    """The decision rule's settings (``dsr decide``'s flags): the measure, which test, the level."""

    measure: str = setting("nDCG@5", "the primary measure", metavar="M")
    test: str = setting("both", "which Holm-adjusted paired test must be significant: both, t or perm (sign-flip)", choices=TESTS)
    alpha: float = setting(ALPHA, "significance level", above=0, below=1)


DECIDE_PARAMS = DecideSettings.params()


@dataclass
class Decision:
    """The table (per system and label set: mean, interval, difference, adjusted p-values,
    better or not) and the rule's outcome."""

    measure: str
    default: str
    candidates: list[str]
    test: str
    alpha: float
    topics: dict[str, int]
    rows: dict[str, dict[str, dict]] = field(default_factory=dict)
    passed: list[str] = field(default_factory=list)
    chosen: str = ""

    @property
    def switch(self) -> bool:
        return self.chosen != self.default

    def reason(self) -> str:
        if self.switch:
            others = [c for c in self.passed if c != self.chosen]
            also = f" ({', '.join(others)} also passed; {self.chosen} is best on dev)" if others else ""
            return (
                f"{self.chosen} replaces {self.default}: better on the judged dev set and on "
                f"silver valid, Holm-corrected over {len(self.candidates)} candidate(s){also}"
            )
        return (
            f"{self.default} stays: no candidate is significantly better on both the judged "
            f"dev set and silver valid (Holm over {len(self.candidates)} candidate(s), "
            f"alpha {self.alpha})"
        )

    def as_dict(self) -> dict:
        return {
            "measure": self.measure,
            "default": self.default,
            "candidates": self.candidates,
            "test": self.test,
            "alpha": self.alpha,
            "correction": "holm over the candidates, per label set",
            "topics": self.topics,
            "rows": self.rows,
            "passed": self.passed,
            "decision": self.chosen,
            "switch": self.switch,
            "reason": self.reason(),
        }


def decide(
    values: Mapping[str, Mapping[str, np.ndarray]],
    default: str,
    measure: str = "nDCG@5",
    test: str = "both",
    alpha: float = ALPHA,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Decision:
    """The rule on per-topic values: ``values[label_set][system]`` is a 1-D array over that label
    set's topics (``label_set`` in :data:`LABEL_SETS`); every other system is a candidate."""
    DecideSettings(measure=measure, test=test, alpha=alpha)  # by their Params, as dsr decide
    missing = [s for s in LABEL_SETS if s not in values]
    if missing:
        raise InputError(f"no values for the label set(s) {', '.join(missing)}", field="values")
    systems = list(values["dev"])
    if default not in systems:
        raise InputError(f"the default {default!r} is not among the systems", field="default")
    candidates = [s for s in systems if s != default]
    if not candidates:
        raise InputError("give at least one candidate beside the default", field="candidates")
    if set(values["silver"]) != set(systems):
        raise InputError("the same systems are needed on both label sets", field="values")
    result = Decision(measure, default, candidates, test, alpha, {s: len(next(iter(values[s].values()))) for s in LABEL_SETS})
    for label_set in LABEL_SETS:
        per_topic = {name: np.asarray(v, float).reshape(-1, 1) for name, v in values[label_set].items()}
        tests = compare(per_topic, default, [measure], n_resamples=n_resamples, seed=seed)
        for name in systems:
            mean, low, high = mean_ci(per_topic[name], method="bootstrap", seed=seed)
            row = {"mean": float(mean[0]), "ci_low": nan_to_none(low[0]), "ci_high": nan_to_none(high[0])}
            if name != default:
                entry = tests[name][measure]
                row.update(
                    diff=entry["diff"],
                    # the paired difference's 95 % t interval (not corrected for the candidates)
                    diff_ci_low=entry["ci_low"],
                    diff_ci_high=entry["ci_high"],
                    t_holm=entry["t_holm"],
                    perm_holm=entry["perm_holm"],
                    wins=entry["wins"],
                    losses=entry["losses"],
                    better=_better(entry, test, alpha),
                )
            result.rows.setdefault(name, {})[label_set] = row
    result.passed = [c for c in candidates if all(result.rows[c][s]["better"] for s in LABEL_SETS)]
    result.chosen = (
        max(result.passed, key=lambda c: (result.rows[c]["dev"]["mean"], result.rows[c]["silver"]["mean"], -candidates.index(c)))
        if result.passed
        else default
    )
    return result


def _better(entry: dict, test: str, alpha: float) -> bool:
    keys = {"both": ("t_holm", "perm_holm"), "t": ("t_holm",), "perm": ("perm_holm",)}[test]
    ps = [entry[k] for k in keys]
    return entry["diff"] > 0 and all(p is not None and p < alpha for p in ps)


def decide_runs(
    dev: Collection,
    silver: Collection,
    runs: Mapping[str, Mapping[str, Run | Mapping[str, Mapping[str, float]]]],
    default: str,
    measure: str = "nDCG@5",
    **options: Any,
) -> Decision:
    """The rule on runs: ``runs[system] = {"dev": run, "silver": run}`` (a :class:`~dsr.core.run.Run`
    or ``{topic: {doc: score}}``), measured with the labels of the ``dev`` and ``silver``
    collections on each collection's own topics."""
    values: dict[str, dict[str, np.ndarray]] = {}
    for label_set, collection in (("dev", dev), ("silver", silver)):
        evaluator = Evaluator(qrels_from_collection(collection), [measure], collection.ids)
        values[label_set] = {}
        for name, by_set in runs.items():
            run = by_set[label_set]
            rankings = (
                run.rankings if isinstance(run, Run) else {q: sorted(d.items(), key=lambda x: -x[1]) for q, d in run.items()}
            )
            _check_coverage(name, label_set, collection, rankings)
            # ranks, not scores: the run's own order is measured (as in dsr.evaluation.ordering_agreement)
            ranked = {q: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)} for q, docs in rankings.items()}
            values[label_set][name] = evaluator(ranked).column(evaluator.names[0])
    return decide(values, default, evaluator.names[0], **options)


def _check_coverage(
    name: str, label_set: str, collection: Collection, rankings: Mapping[str, Sequence[tuple[str, float]]]
) -> None:
    """InputError unless the run ranks every query point of ``collection``, each among its own
    candidates: a point the run lacks would count as 0 and a sentence of another candidate list
    as unjudged, so a run of another collection (a CMU_DoG valid run given for cmu_dog_dev, whose
    points and pools are its own) would be measured, silently, on what it never ranked."""
    hint = f"rank {collection.name!r} itself (`dsr run`) and give the runs as SILVER_RUN,DEV_RUN"
    missing = [q for q in collection.ids if not rankings.get(q)]
    if missing:
        raise InputError(
            f"run {name!r} ranks {len(collection.ids) - len(missing)} of the {len(collection.ids)} query points of "
            f"{collection.name!r} (the {label_set} label set; {missing[0]!r} is missing): {hint}",
            field="runs",
        )
    for q in collection.ids:
        ranked = rankings[q]
        known = set(collection.candidate_ids(q))
        stray = next((d for d, _ in ranked if d not in known), None)
        if stray is not None:
            raise InputError(
                f"run {name!r} ranks {stray!r} for query point {q!r}, which is not one of its candidates in "
                f"{collection.name!r} (the {label_set} label set): {hint}",
                field="runs",
            )


def format_table(decision: Decision, names: Sequence[str] | None = None) -> list[str]:
    """The decision as aligned text lines: one row per system, both label sets side by side."""
    names = list(names or [decision.default, *decision.candidates])
    width = max(len(n) for n in [*names, "system"])
    t = decision.topics
    lines = [
        f"{decision.measure}, mean [95% bootstrap CI]; difference to the default "
        f"({decision.default}) and Holm-adjusted p (t / sign-flip)",
        f"{'system':{width}s}  {'judged dev (' + str(t['dev']) + ')':>40s}  "
        f"{'silver valid (' + str(t['silver']) + ')':>40s}  passes",
    ]
    for name in names:
        cells = []
        for label_set in LABEL_SETS:
            row = decision.rows[name][label_set]
            cell = f"{row['mean']:.4f} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
            if "diff" in row:
                cell += f" {row['diff']:+.4f} {_p(row['t_holm'])}/{_p(row['perm_holm'])}"
                cell += " ▲" if row["better"] else (" ▼" if row["diff"] < 0 and _sig(row, decision) else "  ")
            cells.append(f"{cell:>40s}")
        mark = "default" if name == decision.default else ("yes" if name in decision.passed else "no")
        lines.append(f"{name:{width}s}  {cells[0]}  {cells[1]}  {mark}")
    lines.append(f"decision: {decision.reason()}")
    return lines


def _sig(row: dict, decision: Decision) -> bool:
    keys = {"both": ("t_holm", "perm_holm"), "t": ("t_holm",), "perm": ("perm_holm",)}[decision.test]
    return all(row[k] is not None and row[k] < decision.alpha for k in keys)


def _p(p: float | None) -> str:
    return "n/a" if p is None else (f"{p:.3f}" if p >= 0.001 else "<.001")
