"""Measuring runs on a collection: the request checked, every run measured once, tuned
families chosen on each split's val half, significance against a baseline; the outcome is a
:class:`~dsr.evaluation.results.Results` (:func:`evaluate_runs`, :func:`tune_and_evaluate`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.forked import forked_map
from dsr.core.run import Run
from dsr.evaluation import significance as sig
from dsr.evaluation.measures import (
    Evaluator,
    TopicValues,
    measure_names,
    parse_measures,
    split_measure_list,
)
from dsr.evaluation.protocol import SplitIndex, Splits, tune
from dsr.evaluation.qrels import qrels_from_collection
from dsr.evaluation.results import ConfigSource, Results, System
from dsr.evaluation.settings import EvaluateSettings
from dsr.indexes.exactness import notes as exactness_notes


def subset_indices(collection: Collection, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """ "all" and each of the collection's subsets (or only ``names``) -> topic indices."""
    labels = np.array([d.subset for d in collection.dialogues])
    available = {"all": np.arange(len(labels))}
    own = collection.subsets
    if own != ["all"]:
        for name in own:  # in a reader's order (Collection.subsets)
            available[name] = np.flatnonzero(labels == name)
    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise InputError(f"no subset {unknown[0]!r} in {collection.name}; it has {', '.join(available)}", field="subsets")
    return {n: available[n] for n in dict.fromkeys(names)}


def configs_from_grid(make_run: Callable[..., Run], grid: Mapping[str, Sequence[Any]]) -> dict[str, Callable[[], Run]]:
    """``{"k1=0.9,b=0.4": lambda: make_run(k1=0.9, b=0.4), ...}`` over the grid's product.

    Order: the grid's keys in order, values in order (the first configuration
    wins ties on val, so list a ranker's default first).
    """
    keys = list(grid)
    configs: dict[str, Callable[[], Run]] = {}
    for values in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, values))
        name = ",".join(f"{k}={v}" for k, v in params.items()) or "default"
        configs[name] = functools.partial(make_run, **params)
    return configs


#: the settings a Results keeps (its report states them)
RESULTS_SETTINGS = ("test", "alpha", "n_resamples", "seed", "correction", "family", "ci")


def evaluate_runs(
    collection: Collection,
    runs: Mapping[str, Run],
    measures: Sequence[Any] | None = None,
    settings: EvaluateSettings | None = None,
    *,
    splits: Splits | None = None,
    families: Mapping[str, Mapping[str, ConfigSource]] | None = None,
    run_info: Mapping[str, dict[str, Any]] | None = None,
    progress: bool = True,
    workers: int | None = None,
    **given: Any,
) -> Results:
    """Evaluate runs (and tune families per split) on a collection, with ``settings`` (an
    :class:`~dsr.evaluation.settings.EvaluateSettings`, whose ``protocol``, ``splits`` and
    trec_eval rules :func:`dsr.evaluation.evaluate.evaluate` applies; keywords of its fields
    build or change one; ``measures``, strings or ir_measures objects, is its ``measures``).

    * ``runs``: name -> Run, reported untuned (over all dialogues, and with ``splits`` also
      on each split's test half).
    * ``families``: family -> {config name: Run or callable -> Run}; needs ``splits``; each
      family is tuned on val per split by ``target`` (added to the measures when missing). A
      Run in ``runs`` and in a family is measured once and shown as the family.
    * ``progress``: a progress bar, on a terminal only; ``workers``: processes measuring a
      tuning grid (default: one per CPU, at most 4, or ``DSR_WORKERS``; the values do not
      depend on it).
    """
    if measures is not None:
        given["measures"] = tuple(map(str, measures))
    settings = EvaluateSettings.of(settings, given)  # each checked by its Param: an InputError naming it
    families = dict(families or {})
    measured, target_name, primary_name = _check_request(runs, families, settings, splits)
    qrels = qrels_from_collection(collection)
    index_by_subset = subset_indices(collection, settings.subsets)
    evaluator = Evaluator(qrels, measured, collection.ids)
    values, info, systems, notes = _measured(
        collection, runs, families, splits, evaluator, index_by_subset, target_name, run_info, progress, workers
    )
    results = Results(
        collection=collection.describe(),
        topics=list(collection.ids),
        topic_subsets=[d.subset for d in collection.dialogues],
        subsets=index_by_subset,
        measures=measure_names(measured),
        runs=values,
        run_info=info,
        systems=systems,
        splits=splits,
        target=target_name,
        notes=notes,
        run_objects=dict(runs),
        qrels=qrels,
        primary=primary_name,
        **{name: getattr(settings, name) for name in RESULTS_SETTINGS},
    )
    _compare(results, families, settings.baseline, settings.all_pairs, workers)
    return results


def _measured(
    collection: Collection,
    runs: Mapping[str, Run],
    families: Mapping[str, Mapping[str, ConfigSource]],
    splits: Splits | None,
    evaluator: Evaluator,
    index_by_subset: dict[str, np.ndarray],
    target: str | None,
    run_info: Mapping[str, dict[str, Any]] | None,
    progress: bool,
    workers: int | None,
) -> tuple[dict[str, TopicValues], dict[str, dict[str, Any]], dict[str, System], list[str]]:
    """Every run and family measured: the runs' values, their info, the table's systems and the
    notes under it."""
    topics = evaluator.topics
    target_j = measure_names(evaluator.measures).index(target) if target else None
    measurer = _Measurer(evaluator, len(runs) + sum(len(c) for c in families.values()), progress, workers)
    # first, so that it is the line under the table: a fast backend's figures are not the exact ones
    notes = exactness_notes(collection.describe(), [*(r.config for r in runs.values()), *(run_info or {}).values()])
    notes += _no_relevant_note(collection, evaluator.measures)
    measurer.measure_all(runs, families)
    values = {name: measurer(run) for name, run in runs.items()}
    notes += _coverage_notes(collection, runs, values)
    info = {name: dict((run_info or {}).get(name, {})) or {"tag": runs[name].tag, "config": runs[name].config} for name in runs}
    systems = _systems(runs, values, families, splits, topics, index_by_subset, measurer, target_j, notes)
    for family_name in families:
        info.setdefault(family_name, {}).update((run_info or {}).get(family_name, {}))
    measurer.close()
    return values, info, systems, notes


def _systems(
    runs: Mapping[str, Run],
    values: Mapping[str, TopicValues],
    families: Mapping[str, Mapping[str, ConfigSource]],
    splits: Splits | None,
    topics: list[str],
    index_by_subset: dict[str, np.ndarray],
    measurer: _Measurer,
    target_j: int | None,
    notes: list[str],
) -> dict[str, System]:
    """The table's rows: the runs themselves without splits; with splits, each untuned
    run on the test halves and each family tuned per split on val by the target."""
    if splits is None:
        return {name: System(name, "run", tv.values) for name, tv in values.items()}
    assert target_j is not None, "a target is measured wherever there are splits (_check_request)"
    index = SplitIndex(splits, topics, index_by_subset)
    never = int((index.test_counts() == 0).sum())
    if never:
        notes.append(f"{never} dialogue(s) are in no test half; they have no tuned per-topic value")
    systems = _untuned_systems(runs, values, families, index, index_by_subset)
    systems.update(_tuned_systems(families, measurer, index, target_j))
    return systems


def _compare(
    results: Results,
    families: Mapping[str, Mapping[str, ConfigSource]],
    baseline: str | None,
    all_pairs: bool,
    workers: int | None = None,
) -> None:
    """Recall curves of tuned families, all-pairs groups and the baseline comparisons."""
    for family_name, configs in families.items():
        # a tuned family's recall@k curve in reports: the configuration chosen most
        # often, when it is a Run in hand (callables were let go)
        chosen = results.modal_config(family_name)
        assert chosen is not None, family_name  # a family is a tuned system of the results
        modal = configs[chosen]
        if isinstance(modal, Run):
            results.run_objects[family_name] = modal
    per_topic = {n: s.per_topic for n, s in results.systems.items()}
    if all_pairs:
        results.pairs = {
            subset: sig.all_pairs(
                per_topic,
                results.measures,
                idx,
                results.test,
                results.correction,
                results.alpha,
                results.n_resamples,
                results.seed,
            )
            for subset, idx in results.subsets.items()
        }
    if baseline is not None:
        if baseline not in results.systems:
            raise InputError(
                f"baseline {baseline!r} is not one of the systems compared: {', '.join(results.systems)}", field="baseline"
            )
        results.baseline = baseline
        results.significance = significance_by_subset(
            per_topic,
            baseline,
            results.measures,
            results.subsets,
            results.n_resamples,
            results.seed,
            results.correction,
            results.family,
            workers,
        )


def _check_request(
    runs: Mapping[str, Run], families: Mapping[str, Any], settings: EvaluateSettings, splits: Splits | None
) -> tuple[list[Any], str | None, str | None]:
    """The measures to compute (the tuning target and the primary measure added), the
    target's name and the primary's; bad requests are InputErrors naming the parameter."""
    measures = parse_measures(split_measure_list(settings.measures) if settings.measures else None)
    primary_name = None
    if settings.primary is not None:  # asked for: measured; by default nDCG@5 when measured, else the first
        primary_measure = parse_measures([settings.primary], field="primary")[0]
        primary_name = str(primary_measure)
        if primary_name not in measure_names(measures):
            measures = [*measures, primary_measure]
    target_name = None
    if families and splits is None:
        raise InputError("tuning a ranker family needs val/test splits (the official protocol)", field="families")
    if splits is not None:
        target_measure = parse_measures([settings.target], field="target")[0]
        target_name = str(target_measure)
        if target_name not in measure_names(measures):
            measures = [*measures, target_measure]
    if not runs and not families:
        raise InputError("no runs to evaluate")
    clash = set(runs) & set(families)
    if clash:
        raise InputError(f"{sorted(clash)[0]!r} names both a run and a family; rename one", field="families")
    return measures, target_name, primary_name


#: a tuning grid of fewer configurations to measure is measured in this process
MIN_FORKED_PIECES = 16


class _Measurer:
    """The evaluator with a memo by run or callable object (a run in ``runs`` and in a
    family is measured once) and one progress bar over every run and configuration."""

    def __init__(self, evaluator: Evaluator, jobs: int, progress: bool, workers: int | None = None) -> None:
        from tqdm import tqdm

        self.evaluator = evaluator
        self.workers = workers
        self.memo: dict[int, TopicValues] = {}
        # disable=None: only on a terminal, never in a log or CI output
        self.bar = tqdm(total=jobs, desc="evaluating", unit="run", disable=None if progress else True, leave=False)

    def __call__(self, run: Run) -> TopicValues:
        key = id(run)
        if key not in self.memo:
            self.memo[key] = self.evaluator(run)
        return self.memo[key]

    def measure_all(self, runs: Mapping[str, Run], families: Mapping[str, Mapping[str, ConfigSource]]) -> None:
        """Measure every run and every configuration of ``families`` (a Run or callable shared
        by several once; each callable's run made, measured and let go), by forked workers
        (:func:`dsr.core.forked.forked_map`) when there are enough of them, in this process
        otherwise: the same values. :meth:`__call__` and :meth:`grid` then read them."""
        sources = [*runs.values(), *(source for configs in families.values() for source in configs.values())]
        by_key = {id(source): source for source in sources}  # held by the caller: ids stay unique
        pieces = [key for key in by_key if key not in self.memo]

        def work(i: int) -> TopicValues:
            source = by_key[pieces[i]]
            return self.evaluator(source if isinstance(source, Run) else source())

        workers = self.workers if len(pieces) >= MIN_FORKED_PIECES else 1
        for key, values in zip(pieces, forked_map(work, len(pieces), workers)):
            self.memo[key] = values
            self.bar.update(1)
        self.bar.update(len(sources) - len(pieces))

    def grid(self, families: Mapping[str, Mapping[str, ConfigSource]]) -> dict[str, np.ndarray]:
        """``{family: values}``, one (configuration, topic, measure) array per family, from
        :meth:`measure_all`."""
        return {
            family: np.stack([self.memo[id(source)].values for source in configs.values()])
            for family, configs in families.items()
        }

    def close(self) -> None:
        self.bar.close()


def _no_relevant_note(collection: Collection, measures: Sequence[Any]) -> list[str]:
    """The dialogues that score 0 whatever a run does: those with no candidate graded above 0
    (every measure), and, for each relevance level above 1 that a measure counts from (``-l 2``,
    ``RR(rel=2)``), those whose best grade is below it (those measures; a graded one such as
    nDCG still counts the lower grades as gains)."""
    norel = sum(1 for d in collection.dialogues if not d.relevant)
    notes = [f"{norel} dialogue(s) have no relevant candidate; they score 0 on every measure (as in trec_eval)"] if norel else []
    by_level: dict[int, list[str]] = {}
    for measure in measures:
        level = getattr(measure, "params", {}).get("rel")
        if isinstance(level, int) and level > 1:
            by_level.setdefault(level, []).append(str(measure))
    for level, named in sorted(by_level.items()):
        below = sum(1 for d in collection.dialogues if d.relevant and max(c.label for c in d.candidates) < level)
        if below:
            notes.append(
                f"{below} {'more ' if norel else ''}dialogue(s) have no candidate graded {level} or more: they score 0 on "
                f"{', '.join(named)}, which count grades from {level} as relevant (as trec_eval -l {level})"
            )
    return notes


def _coverage_notes(collection: Collection, runs: Mapping[str, Run], values: Mapping[str, TopicValues]) -> list[str]:
    """Notes on dialogues a run misses and topics it has that the collection does not;
    a run of no dialogue of the collection is an InputError."""
    notes = []
    for name, tv in values.items():
        if tv.missing:
            notes.append(f"{name}: {tv.missing} of {len(collection)} dialogues not ranked; they count 0")
        if tv.unknown:
            notes.append(f"{name}: {tv.unknown} topic(s) not in {collection.name} were ignored")
        if tv.unknown == len(runs[name]) and len(runs[name]):
            raise InputError(f"run {name!r} ranks no dialogue of {collection.name}: wrong collection?", record=name)
    return notes


def _untuned_systems(
    runs: Mapping[str, Run],
    values: Mapping[str, TopicValues],
    families: Mapping[str, Mapping[str, ConfigSource]],
    index: SplitIndex,
    index_by_subset: Mapping[str, np.ndarray],
) -> dict[str, System]:
    """Each untuned run on the splits' test halves (runs that are a family's member are
    reported as the family)."""
    members = {id(r) for configs in families.values() for r in configs.values() if isinstance(r, Run)}
    return {
        name: System(name, "run", tv.values, {s: index.means(tv.values, "test", s) for s in index_by_subset})
        for name, tv in values.items()
        if id(runs[name]) not in members
    }


def _tuned_systems(
    families: Mapping[str, Mapping[str, ConfigSource]], measurer: _Measurer, index: SplitIndex, target_j: int
) -> dict[str, System]:
    """Each family tuned per split on val by the target; callables are run, measured
    and let go, so a grid never sits in memory."""
    for family, configs in families.items():
        if not configs:
            raise InputError(f"family {family!r} has no configuration", field="families")
    stacks = measurer.grid(families)
    systems = {}
    for family, configs in families.items():
        stack = stacks[family]
        tuned = tune(index, list(configs), stack, target_j)
        systems[family] = System(
            family, "tuned", tuned.per_topic, tuned.test, tuned, {c: stack[k].mean(axis=0) for k, c in enumerate(configs)}
        )
    return systems


def significance_by_subset(
    per_topic: Mapping[str, np.ndarray],
    baseline: str,
    measures: list[str],
    subsets: Mapping[str, np.ndarray],
    n_resamples: int = sig.DEFAULT_RESAMPLES,
    seed: int = 0,
    correction: str = "holm",
    family: str = "runs",
    workers: int | None = 1,
) -> dict[str, dict]:
    """``{subset: dsr.evaluation.significance.compare(...)}``: every system against ``baseline`` per subset,
    then adjusted by ``correction`` over ``family`` (``dsr.evaluation.significance.correct``).
    ``workers`` > 1 (None: :func:`dsr.core.forked.default_workers`): the subsets compared by
    forked workers (the same numbers).

    The shape of :attr:`Results.significance`; the leaderboard server calls it too (in
    its scoring process: one worker).
    """
    names = list(subsets)

    def one(i: int) -> dict:
        return sig.compare(per_topic, baseline, measures, subsets[names[i]], n_resamples, seed)

    if len(names) > 1:
        sig._stats()  # imported once, here, before forked_map's workers copy this process
    out = dict(zip(names, forked_map(one, len(names), workers)))
    sig.correct(out, correction, family)
    return out


def tune_and_evaluate(
    collection: Collection,
    configs: Mapping[str, Mapping[str, ConfigSource]],
    splits: Splits,
    target: str = "nDCG@5",
    measures: Sequence[Any] | None = None,
    **kwargs: Any,
) -> Results:
    """Tune each family per split on val by ``target`` and report its test halves.

    ``results.systems[family].tuned`` holds the chosen configuration per split
    (``chosen_names``), val means, test means per subset and the per-topic
    values used for significance; ``kwargs`` go to :func:`evaluate_runs`
    (``runs=`` for untuned runs beside the families, ``baseline=``...).
    """
    runs = kwargs.pop("runs", {})
    return evaluate_runs(collection, runs, measures, splits=splits, families=configs, target=target, **kwargs)
