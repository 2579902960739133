"""``dsr agreement``: do two label sets rank systems alike? Kendall tau over systems.

Given a silver collection (e.g. CMU_DoG valid), a judged one (the judged
development set: the same query points and candidates, other labels) and
several runs, each run is measured with both label sets on the query points
the two collections share, and the systems' orderings are compared with
Kendall's tau (``scipy.stats.kendalltau``, tau-b: ties in either ordering are
handled, not broken). A tau near 1 means the silver labels rank systems as
judged relevance does, so silver is a sound signal for tuning and training.

A run may rank more query points than are shared (a run on CMU_DoG valid
ranks all 502): only the shared ones count. A shared point a run does not
rank counts 0 (as ``dsr evaluate`` does) and is reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.evaluation.measures import Evaluator
from dsr.evaluation.qrels import qrels_from_collection

#: the measure the systems are ordered by (``dsr agreement --measure``)
MEASURE = Param("measure", "nDCG@5", "str", "measure (default nDCG@5)")


@dataclass
class Agreement:
    """Per-system means under both label sets, and Kendall's tau between the orderings."""

    measure: str
    topics: list[str]
    systems: list[str]
    silver: list[float]
    judged: list[float]
    tau: float
    p_value: float
    missing: dict[str, int]

    def as_dict(self) -> dict:
        return {
            "measure": self.measure,
            "topics": len(self.topics),
            "tau": self.tau,
            "p_value": self.p_value,
            "systems": [
                {"run": s, "silver": a, "judged": b, "missing_topics": self.missing[s]}
                for s, a, b in zip(self.systems, self.silver, self.judged)
            ],
        }


def agreement(silver: Collection, judged: Collection, runs: Mapping[str, Run], measure: str = "nDCG@5") -> Agreement:
    """Kendall tau between the systems' mean ``measure`` under ``silver`` and ``judged`` labels,
    over the query points both collections hold."""
    from scipy.stats import kendalltau

    measure = MEASURE.check(measure)
    if len(runs) < 2:
        raise InputError("give at least two runs: Kendall's tau compares orderings of systems", field="RUN")
    judged_ids = set(judged.ids)
    topics = [q for q in silver.ids if q in judged_ids]
    if not topics:
        raise InputError(
            f"collections {silver.name!r} and {judged.name!r} share no query point "
            "(compare a silver collection with its judged counterpart)",
            field="COLLECTION",
        )
    _check_same_candidates(silver, judged, topics)
    by_silver = Evaluator(qrels_from_collection(silver), [measure], topics)
    by_judged = Evaluator(qrels_from_collection(judged), [measure], topics)
    names, silver_means, judged_means, missing = [], [], [], {}
    for name, run in runs.items():
        # Scores replaced by rank positions: the run's own order is what is compared, and
        # near-tied float scores cannot be re-tied (and reordered by id) downstream.
        ranked = {q: {d: float(len(docs) - i) for i, (d, _) in enumerate(docs)} for q, docs in run.rankings.items()}
        a, b = by_silver(ranked), by_judged(ranked)
        names.append(name)
        silver_means.append(float(a.mean()[0]))
        judged_means.append(float(b.mean()[0]))
        missing[name] = a.missing
    result = kendalltau(silver_means, judged_means)
    return Agreement(measure, topics, names, silver_means, judged_means, float(result.statistic), float(result.pvalue), missing)


def _check_same_candidates(silver: Collection, judged: Collection, topics: Sequence[str]) -> None:
    for q in topics:
        if set(silver.candidate_ids(q)) != set(judged.candidate_ids(q)):
            raise InputError(
                f"query point {q!r} has other candidates in {silver.name!r} than in "
                f"{judged.name!r}: the label sets must judge the same pools",
                record=q,
                field="candidates",
            )
