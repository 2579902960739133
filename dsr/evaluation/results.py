"""The evaluator's Python API: ``evaluate_runs``, ``tune_and_evaluate`` and their ``Results``.

``dsr evaluate`` and ``dsr reproduce`` both call :func:`evaluate_runs`::

    results = evaluate_runs(collection, {"bm25": run_a, "dense": run_b},
                            splits=resolve_splits(collection), baseline="bm25")
    results.summary("all")          # {system: {measure: (mean, sd)}}
    results.table()                 # pandas: systems x (subset, measure), the paper's table
    results.plot("main")            # a matplotlib Figure (dsr.evaluation.figures)
    write_report(results, "report/")  # dsr.evaluation.report

Ranker families are tuned per split on val (see ``dsr.evaluation.protocol``): pass
``families={"bm25": {"k1=0.9,b=0.4": run_or_callable, ...}}``; a callable
(no arguments, returns a Run) is called once, evaluated and dropped, so a grid
never has to sit in memory. :func:`configs_from_grid` builds those callables
from a ranker's ``GRID``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_write
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.core.textfiles import atomic_write_text
from dsr.evaluation import figures, latex
from dsr.evaluation import significance as sig
from dsr.evaluation.measures import (
    DEFAULT_PRIMARY,
    Evaluator,
    TopicValues,
    bounded,
    measure_names,
    nan_to_none,
    parse_measures,
)
from dsr.evaluation.protocol import SD_DDOF, TIE_DECIMALS, SplitIndex, Splits, Tuned, summarise, tune
from dsr.evaluation.qrels import qrels_from_collection

ConfigSource = Run | Callable[[], Run]

PAIRING = ("paired by topic: an untuned run's value on each dialogue; a tuned family's value is the "
           "mean, over the splits whose test half holds the dialogue, of the configuration chosen "
           "on that split's val half (out of sample)")


@dataclass
class System:
    """A row of the protocol's table: an untuned run or a family tuned per split."""

    name: str
    kind: str                                  # "run" or "tuned"
    per_topic: np.ndarray                      # (n_topics, n_measures), for significance
    splits: dict[str, np.ndarray] | None = None  # subset -> (n_splits, n_measures) test means
    tuned: Tuned | None = None
    config_means: dict[str, np.ndarray] | None = None   # tuned: each config over all dialogues


@dataclass
class Results:
    """Everything measured: per-topic matrices, split means, choices, significance.

    ``runs`` holds each untuned run's per-topic values over all dialogues;
    ``systems`` what the table reports (with splits: test-half values per
    split; without: the runs themselves).
    """

    collection: dict[str, Any]
    topics: list[str]
    topic_subsets: list[str]
    subsets: dict[str, np.ndarray]
    measures: list[str]
    runs: dict[str, TopicValues]
    run_info: dict[str, dict[str, Any]]
    systems: dict[str, System]
    splits: Splits | None = None
    target: str | None = None
    baseline: str | None = None
    significance: dict[str, dict] | None = None
    test: str = "t"
    alpha: float = sig.ALPHA
    n_resamples: int = sig.DEFAULT_RESAMPLES
    seed: int = 0
    notes: list[str] = field(default_factory=list)
    #: multiple-comparison correction (dsr.evaluation.significance.CORRECTIONS) and the family it spans
    correction: str = "holm"
    family: str = "runs"
    #: confidence interval of each mean: "auto" (bootstrap for measures bounded to [0, 1],
    #: t otherwise), "bootstrap" (over topics, ``seed``) or "t" (clipped to [0, 1] when bounded)
    ci: str = "auto"
    #: ``{subset: dsr.evaluation.significance.all_pairs(...)}`` when every pair was tested
    pairs: dict[str, dict] | None = None
    #: Run objects for recall-at-k curves in reports: the untuned runs, and for a
    #: tuned family its configuration chosen most often (:meth:`modal_config`); not serialised
    run_objects: dict[str, Run] = field(default_factory=dict, repr=False)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _intervals: dict = field(default_factory=dict, repr=False)
    #: the measure every comparison, legend and main figure is on (None: nDCG@5 when
    #: measured, else the first measure)
    primary: str | None = None

    @property
    def primary_measure(self) -> str:
        """The primary measure: ``primary``, else nDCG@5 when measured, else the first."""
        if self.primary in self.measures:
            return self.primary
        return DEFAULT_PRIMARY if DEFAULT_PRIMARY in self.measures else self.measures[0]

    @property
    def protocol(self) -> str:
        return "official" if self.splits is not None else "all"

    def summary(self, subset: str = "all") -> dict[str, dict[str, tuple[float, float | None]]]:
        """{system: {measure: (mean, sd)}}: test halves over splits, or all dialogues (sd None)."""
        out = {}
        for name, system in self.systems.items():
            if system.splits is not None:
                mean, sd = summarise(system.splits[subset])
                out[name] = {m: (float(mean[j]), nan_to_none(sd[j])) for j, m in enumerate(self.measures)}
            else:
                mean = self.runs[name].mean(self.subsets[subset])
                out[name] = {m: (float(mean[j]), None) for j, m in enumerate(self.measures)}
        return out

    def untuned(self, subset: str = "all") -> dict[str, dict[str, float]]:
        """{run: {measure: mean over the subset's dialogues}} for every untuned run."""
        return {name: dict(zip(self.measures, map(float, tv.mean(self.subsets[subset]))))
                for name, tv in self.runs.items()}

    def modal_config(self, system: str) -> str | None:
        """A tuned family's configuration chosen most often over the splits (ties: the first given)."""
        tuned = self.systems[system].tuned if system in self.systems else None
        if tuned is None:
            return None
        counts = tuned.choice_counts()
        return max(counts, key=lambda c: (counts[c], -tuned.configs.index(c)))

    def adjusted_p(self, subset: str, system: str, measure: str) -> float | None:
        """The baseline comparison's p of ``test``, adjusted by ``correction`` over ``family``."""
        entry = ((self.significance or {}).get(subset, {}).get(system, {}).get(measure))
        if not entry:
            return None
        return entry.get(f"{self.test}_adj", entry.get(f"{self.test}_holm"))

    def significant(self, subset: str, system: str, measure: str) -> bool:
        """Whether the baseline comparison's adjusted p (of ``test``) is below alpha."""
        p = self.adjusted_p(subset, system, measure)
        return p is not None and p < self.alpha

    def mark(self, subset: str, system: str, measure: str) -> str:
        """▲ significantly better than the baseline, ▼ significantly worse, else ""."""
        entry = ((self.significance or {}).get(subset, {}).get(system, {}).get(measure)) or {}
        return sig.direction(entry.get("diff"), self.adjusted_p(subset, system, measure), self.alpha)

    def correction_text(self) -> str:
        """What the marks were corrected over, in words (the report states it)."""
        return (f"{sig.CORRECTION_NAMES[self.correction]} over {sig.FAMILY_NAMES[self.family]}")

    def mean_ci(self, subset: str, system: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean per measure of the system's per-topic values on the subset, with a 95%
        interval (``ci``; see :meth:`interval_text`)."""
        key = (subset, system, self.ci, self.seed)
        if key not in self._intervals:   # a bootstrap is worth computing once per report
            values = self.systems[system].per_topic if system in self.systems else self.runs[system].values
            self._intervals[key] = sig.mean_ci(values[self.subsets[subset]], self.ci, seed=self.seed,
                                               bounded=[_bounded(m) for m in self.measures])
        return self._intervals[key]

    def interval_text(self, measure: str | None = None) -> str:
        """How the 95% intervals of the means were made, in words (tables and figures say it)."""
        measures = [measure] if measure else self.measures
        boot = self.ci == "bootstrap" or (self.ci == "auto" and all(map(_bounded, measures)))
        if boot:
            return f"95% percentile bootstrap interval (2000 resamples of the dialogues, seed {self.seed})"
        if self.ci == "t" and any(map(_bounded, measures)):
            return "95% t interval, clipped to [0, 1]"
        if self.ci == "auto" and len(measures) > 1:
            return "95% interval: percentile bootstrap for measures in [0, 1], t for the others"
        return "95% t interval"

    def to_frame(self):
        """The table as a pandas DataFrame, one row per (system, subset, measure).

        Columns: ``system``, ``kind`` (run or tuned), ``subset``, ``measure``,
        ``mean``, ``sd`` (over the splits' test halves; NaN without splits),
        ``p_holm`` (the baseline comparison's Holm-adjusted p of ``test``, NaN
        for the baseline and without one), ``significant``, then ``p_adj``
        (adjusted by ``correction`` over ``family``), ``mark`` (▲/▼/""),
        ``topic_mean``, ``ci_low``, ``ci_high`` (the per-topic mean and its 95%
        interval), ``diff``, ``diff_low``, ``diff_high``, ``d``, ``wins``,
        ``ties``, ``losses`` (against the baseline) and ``group`` (all-pairs
        letters). Pivot it for a
        wide table: ``frame.pivot_table(index="system", columns="measure", values="mean")``.
        """
        pd = _pandas()
        nan = float("nan")
        num = lambda v: nan if v is None else v  # noqa: E731
        rows = []
        for subset in self.subsets:
            for system, means in self.summary(subset).items():
                topic_mean, low, high = self.mean_ci(subset, system)
                for j, (measure, (mean, sd)) in enumerate(means.items()):
                    entry = (self.significance or {}).get(subset, {}).get(system, {}).get(measure) or {}
                    p = entry.get(f"{self.test}_holm")
                    letters = ((self.pairs or {}).get(subset, {}).get(measure, {})
                               .get("letters", {}).get(system, ""))
                    rows.append({"system": system, "kind": self.systems[system].kind, "subset": subset,
                                 "measure": measure, "mean": mean, "sd": num(sd), "p_holm": num(p),
                                 "significant": self.significant(subset, system, measure),
                                 "p_adj": num(self.adjusted_p(subset, system, measure)),
                                 "mark": self.mark(subset, system, measure),
                                 "topic_mean": topic_mean[j], "ci_low": low[j], "ci_high": high[j],
                                 "diff": num(entry.get("diff")), "diff_low": num(entry.get("ci_low")),
                                 "diff_high": num(entry.get("ci_high")), "d": num(entry.get("d")),
                                 "wins": entry.get("wins", pd.NA), "ties": entry.get("ties", pd.NA),
                                 "losses": entry.get("losses", pd.NA), "group": letters})
        columns = ["system", "kind", "subset", "measure", "mean", "sd", "p_holm", "significant",
                   "p_adj", "mark", "topic_mean", "ci_low", "ci_high", "diff", "diff_low", "diff_high",
                   "d", "wins", "ties", "losses", "group"]
        frame = pd.DataFrame(rows, columns=columns)
        for col in ("wins", "ties", "losses"):
            frame[col] = frame[col].astype("Int64")
        return frame

    def per_topic_frame(self):
        """Per-topic values as a pandas DataFrame: ``system``, ``kind``, ``topic``, ``subset``
        and a column per measure (tuned families: out-of-sample values, as in significance)."""
        pd = _pandas()
        frames = []
        rows = [(n, "run", tv.values) for n, tv in self.runs.items()]
        rows += [(n, "tuned", s.per_topic) for n, s in self.systems.items() if s.kind == "tuned"]
        for name, kind, matrix in rows:
            frame = pd.DataFrame(matrix, columns=self.measures)
            frame.insert(0, "subset", self.topic_subsets)
            frame.insert(0, "topic", self.topics)
            frame.insert(0, "kind", kind)
            frame.insert(0, "system", name)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    def protocol_json(self) -> dict[str, Any]:
        if self.splits is None:
            return {"name": "all", "description": "every dialogue once, no tuning"}
        return {"name": "official", "splits": self.splits.describe(), "target": self.target,
                "selection": f"highest val mean of the target (rounded to {TIE_DECIMALS} decimals); "
                             "ties go to the configuration given first",
                "sd": f"sample standard deviation over splits (ddof={SD_DDOF})",
                "subsets": "configuration chosen on the whole val half, reported per subset of the test half"}

    def to_json(self) -> dict[str, Any]:
        """The numbers of the tables (and more), JSON-ready; NaN becomes null.

        A summary: means, sds, choice counts, significance. The values per split
        (and each split's chosen configuration) are :meth:`split_frame`, the values
        per dialogue :meth:`per_topic_frame` (reports write both as Parquet)."""
        out: dict[str, Any] = {
            "collection": self.collection,
            "protocol": self.protocol_json(),
            "measures": self.measures,
            "primary": self.primary_measure,
            "subsets": {s: int(len(i)) for s, i in self.subsets.items()},
            "runs": {},
            "notes": self.notes,
        }
        for name, tv in self.runs.items():
            out["runs"][name] = {
                **self.run_info.get(name, {}),
                "missing_topics": tv.missing, "unknown_topics": tv.unknown,
                "all_dialogues": {s: _means(tv.mean(i), self.measures) for s, i in self.subsets.items()},
            }
        if self.splits is not None:
            out["systems"] = {name: self._system_json(name, system) for name, system in self.systems.items()}
        if self.baseline is not None:
            out["significance"] = {
                "baseline": self.baseline, "marked_by": f"{self.test}_adj", "alpha": self.alpha,
                "marks": {sig.BETTER: "significantly better than the baseline",
                          sig.WORSE: "significantly worse than the baseline"},
                "method": self.correction, "family": self.family,
                "effects": "diff: mean paired difference with 95% t interval (ci_low, ci_high); "
                           "d: Cohen's d_z (mean / sd of the differences); wins/ties/losses: "
                           "topics above / equal to / below the baseline",
                "tests": {"t": "paired t-test (scipy.stats.ttest_rel), two-sided",
                          "perm": f"paired sign-flip randomisation test, two-sided, "
                                  f"{self.n_resamples} resamples, seed {self.seed}"},
                "correction": self.correction_text() + " (t_holm/perm_holm: Holm over the systems, "
                              "per subset and measure)",
                "pairing": PAIRING,
                "results": self.significance,
            }
        if self.pairs is not None:
            out["all_pairs"] = {"test": self.test, "correction": f"{sig.CORRECTION_NAMES[self.correction]}"
                                f" over the pairs, per subset and measure", "alpha": self.alpha,
                                "letters": "systems sharing a letter are not significantly different",
                                "results": self.pairs}
        out["intervals"] = {"method": self.ci, "confidence": 0.95, "seed": self.seed,
                            "described": self.interval_text(),
                            "of": "the per-topic mean of each system on each subset"}
        return out

    def _system_json(self, name: str, system: System) -> dict[str, Any]:
        """A row of the protocol's table: test-half mean and sd per subset and measure; a
        tuned family's configurations (each one's mean over all dialogues) and choice counts."""
        entry: dict[str, Any] = {"kind": system.kind, "test": {}}
        for subset, split_means in system.splits.items():
            mean, sd = summarise(split_means)
            entry["test"][subset] = {m: {"mean": nan_to_none(mean[j]), "sd": nan_to_none(sd[j])}
                                     for j, m in enumerate(self.measures)}
        if system.tuned is not None:
            entry["configs"] = {c: _means(v, self.measures) for c, v in (system.config_means or {}).items()}
            entry["choice_counts"] = system.tuned.choice_counts()
            entry.update(self.run_info.get(name, {}))
        return entry

    def split_frame(self):
        """Per split, the test half's mean of every system (official protocol; empty
        otherwise): ``system``, ``kind``, ``subset``, ``split`` (0-based), ``config``
        (a tuned family's configuration chosen on that split's val half, else "")
        and a column per measure."""
        pd = _pandas()
        frames = []
        for name, system in self.systems.items():
            chosen = system.tuned.chosen_names if system.tuned is not None else None
            for subset, split_means in (system.splits or {}).items():
                frame = pd.DataFrame(split_means, columns=self.measures)
                frame.insert(0, "config", chosen if chosen is not None else [""] * len(frame))
                frame.insert(0, "split", np.arange(len(frame)))
                frame.insert(0, "subset", subset)
                frame.insert(0, "kind", system.kind)
                frame.insert(0, "system", name)
                frames.append(frame)
        if not frames:
            return pd.DataFrame(columns=["system", "kind", "subset", "split", "config", *self.measures])
        return pd.concat(frames, ignore_index=True)

    def table(self, subset: str | None = None, measures: Sequence[str] | None = None, *,
              formatted: bool = False, digits: int = 4):
        """The paper's table as a wide pandas DataFrame: one row per system, a column per
        measure, under a column level per subset (``subset=`` picks one, flat columns).

        Values: with splits, the test halves' mean over splits (tuned families as
        tuned); without, the mean over all dialogues. ``formatted=True`` gives the
        cells as printed: ``0.5220±0.0659▲`` (sd over splits, and ▲/▼ where the system
        is significantly better/worse than the baseline); its ``to_latex()`` writes LaTeX
        that plain pdflatex compiles (marks as amssymb's ``$^{\\blacktriangle}$``, ± as
        ``$\\pm$``, names escaped: :mod:`dsr.evaluation.latex`).
        """
        pd = _pandas()
        subsets = [subset] if subset is not None else list(self.subsets)
        measures = list(measures) if measures is not None else list(self.measures)
        for m in measures:
            if m not in self.measures:
                raise InputError(f"measure {m!r} was not computed; these were: "
                                 f"{', '.join(self.measures)}", field="measures")
        columns, data = [], {}
        for s in subsets:
            if s not in self.subsets:
                raise InputError(f"no subset {s!r}; there are {', '.join(self.subsets)}", field="subset")
            summary = self.summary(s)
            for m in measures:
                columns.append((s, m))
                data[(s, m)] = [_table_cell(summary[n][m], self.mark(s, n, m), formatted, digits)
                                for n in summary]
        frame = pd.DataFrame(data, index=pd.Index(list(self.summary(subsets[0])), name="system"),
                             columns=pd.MultiIndex.from_tuples(columns, names=["subset", "measure"]))
        frame = frame.droplevel("subset", axis=1) if subset is not None else frame
        return _formatted_table_class()(frame) if formatted else frame

    def plot(self, kind: str = "main", measure: str | None = None, subset: str | None = None):
        """A matplotlib Figure (``dsr.evaluation.figures``): ``main`` (the primary measure, or
        ``measure``, per system with 95% intervals, one ACM column wide), ``measures`` (a
        panel per measure), ``subsets`` (a panel per subset), ``diff`` (per-topic
        differences against the baseline) or ``recall`` (R@k curves); ``"all"`` gives
        ``{file stem: Figure}`` of every figure a report holds. ``fig.savefig(...)``
        embeds TrueType fonts wherever it is called."""
        return figures.plot(self, kind, measure=measure, subset=subset)


def _pandas():
    """pandas, imported on first use, in this one place (``dsr --help`` loads no pandas)."""
    import pandas

    return pandas


_FORMATTED: list = []


def _formatted_table_class():
    """A DataFrame whose ``to_latex`` turns the printed cells into LaTeX (:func:`dsr.evaluation.latex.tex`)
    instead of leaving raw ▲/▼/± that pdflatex refuses; made once, on first use."""
    if not _FORMATTED:
        pd = _pandas()

        class FormattedTable(pd.DataFrame):
            @property
            def _constructor(self):
                return FormattedTable

            def to_latex(self, *args: Any, **kwargs: Any) -> str:
                frame = pd.DataFrame(self).map(lambda v: latex.tex(v) if isinstance(v, str) else v)
                frame.index = frame.index.map(lambda v: latex.tex(str(v)))
                frame.columns = frame.columns.map(lambda v: tuple(latex.tex(str(x)) for x in v)
                                                  if isinstance(v, tuple) else latex.tex(str(v)))
                kwargs.setdefault("escape", False)
                if kwargs.get("index", True) and frame.index.name:   # no stray "system & & ..." row
                    frame, kwargs["index"] = frame.reset_index(), False
                return frame.to_latex(*args, **kwargs)

        _FORMATTED.append(FormattedTable)
    return _FORMATTED[0]


def _means(values: np.ndarray, measures: list[str]) -> dict[str, float | None]:
    return {m: nan_to_none(values[j]) for j, m in enumerate(measures)}


@functools.cache
def _bounded(measure: str) -> bool:
    try:
        return bounded(measure)
    except Exception:  # a name ir_measures cannot parse (a board's stored label): no bound known
        return False


def _table_cell(mean_sd: tuple[float, float | None], mark: str, formatted: bool, digits: int):
    mean, sd = mean_sd
    if not formatted:
        return mean
    if mean != mean:
        return "–"
    return f"{mean:.{digits}f}" + (f"±{sd:.{digits}f}" if sd is not None else "") + mark


def subset_indices(collection: Collection, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """"all" and each of the collection's subsets (or only ``names``) -> topic indices."""
    labels = np.array([d.subset for d in collection.dialogues])
    available = {"all": np.arange(len(labels))}
    own = collection.subsets
    if own != ["all"]:
        for name in own:                       # in a reader's order (Collection.subsets)
            available[name] = np.flatnonzero(labels == name)
    if not names:
        return available
    unknown = [n for n in names if n not in available]
    if unknown:
        raise InputError(f"no subset {unknown[0]!r} in {collection.name}; it has "
                         f"{', '.join(available)}", field="--subset")
    return {n: available[n] for n in dict.fromkeys(names)}


def configs_from_grid(make_run: Callable[..., Run], grid: Mapping[str, Sequence[Any]]) -> dict[str, Callable[[], Run]]:
    """``{"k1=0.9,b=0.4": lambda: make_run(k1=0.9, b=0.4), ...}`` over the grid's product.

    Order: the grid's keys in order, values in order (the first configuration
    wins ties on val, so list a ranker's default first).
    """
    keys = list(grid)
    configs = {}
    for values in itertools.product(*(grid[k] for k in keys)):
        params = dict(zip(keys, values))
        name = ",".join(f"{k}={v}" for k, v in params.items()) or "default"
        configs[name] = (lambda p=params: make_run(**p))
    return configs


def evaluate_runs(collection: Collection, runs: Mapping[str, Run], measures: Sequence | None = None, *,
                  subsets: Sequence[str] | None = None, splits: Splits | None = None,
                  families: Mapping[str, Mapping[str, ConfigSource]] | None = None,
                  target: str = "nDCG@5", baseline: str | None = None, test: str = "t",
                  n_resamples: int = sig.DEFAULT_RESAMPLES, seed: int = 0, alpha: float = sig.ALPHA,
                  run_info: Mapping[str, dict] | None = None, progress: bool = True,
                  correction: str = "holm", family: str = "runs", ci: str = "auto",
                  all_pairs: bool = False, primary: str | None = None) -> Results:
    """Evaluate runs (and tune families per split) on a collection.

    * ``runs``: name -> Run, reported untuned (over all dialogues, and with
      ``splits`` also on each split's test half).
    * ``families``: family -> {config name: Run or callable -> Run}; needs
      ``splits``; each family is tuned on val per split by ``target`` (added
      to the measures when missing). A Run object that is both in ``runs``
      and in a family is evaluated once and shown as the family in the
      protocol's table (and as itself in the untuned one).
    * ``baseline``: a run or family name; every other system is tested
      against it (``test`` "t" or "perm" decides the table marks).
    * ``subsets``: restrict to these ("all" and the collection's own by default).
    * ``correction`` (holm, bonferroni, bh) over ``family`` (runs,
      runs+measures, runs+measures+subsets) decides the marks; ``ci`` (auto:
      bootstrap for measures in [0, 1], else t; bootstrap; t) the intervals;
      ``all_pairs`` tests every pair of systems.
    * ``primary``: the measure comparisons, legends and the main figure are on
      (added to the measures when missing; default: nDCG@5 when measured, else
      the first measure).
    * ``progress``: a progress bar, on a terminal only.
    """
    families = dict(families or {})
    correction_family = family      # ``family`` is reused below for each tuned family
    measures, target_name, primary_name = _check_request(
        runs, families, measures, splits, target, test, correction, family, ci, primary)
    names = measure_names(measures)
    qrels = qrels_from_collection(collection)
    topics = collection.ids
    index_by_subset = subset_indices(collection, subsets)
    measurer = _Measurer(Evaluator(qrels, measures, topics),
                         len(runs) + sum(len(c) for c in families.values()), progress)
    notes = _no_relevant_note(collection)
    values = {name: measurer(run) for name, run in runs.items()}
    notes += _coverage_notes(collection, runs, values)
    info = {name: dict((run_info or {}).get(name, {})) or {"tag": runs[name].tag, "config": runs[name].config}
            for name in runs}
    systems = _systems(runs, values, families, splits, topics, index_by_subset, measurer,
                       names.index(target_name) if target_name else None, notes)
    for family_name in families:
        info.setdefault(family_name, {}).update((run_info or {}).get(family_name, {}))
    measurer.close()

    results = Results(collection=collection.describe(), topics=list(topics),
                      topic_subsets=[d.subset for d in collection.dialogues], subsets=index_by_subset,
                      measures=names, runs=values, run_info=info, systems=systems, splits=splits,
                      target=target_name, test=test, alpha=alpha, n_resamples=n_resamples, seed=seed,
                      notes=notes, run_objects=dict(runs), qrels=qrels, correction=correction,
                      family=correction_family, ci=ci, primary=primary_name)
    _compare(results, families, baseline, all_pairs)
    return results


def _systems(runs, values, families, splits, topics, index_by_subset, measurer, target_j,
             notes: list[str]) -> dict[str, System]:
    """The table's rows: the runs themselves without splits; with splits, each untuned
    run on the test halves and each family tuned per split on val by the target."""
    if splits is None:
        return {name: System(name, "run", tv.values) for name, tv in values.items()}
    index = SplitIndex(splits, topics, index_by_subset)
    never = int((index.test_counts() == 0).sum())
    if never:
        notes.append(f"{never} dialogue(s) are in no test half; they have no tuned per-topic value")
    systems = _untuned_systems(runs, values, families, index, index_by_subset)
    systems.update(_tuned_systems(families, measurer, index, target_j))
    return systems


def _compare(results: Results, families, baseline: str | None, all_pairs: bool) -> None:
    """Recall curves of tuned families, all-pairs groups and the baseline comparisons."""
    for family_name, configs in families.items():
        # a tuned family's recall@k curve in reports: the configuration chosen most
        # often, when it is a Run in hand (callables were let go)
        modal = configs[results.modal_config(family_name)]
        if isinstance(modal, Run):
            results.run_objects[family_name] = modal
    per_topic = {n: s.per_topic for n, s in results.systems.items()}
    if all_pairs:
        results.pairs = {subset: sig.all_pairs(per_topic, results.measures, idx, results.test,
                                               results.correction, results.alpha, results.n_resamples,
                                               results.seed)
                         for subset, idx in results.subsets.items()}
    if baseline is not None:
        if baseline not in results.systems:
            raise InputError(f"baseline {baseline!r} is not one of the systems compared: "
                             f"{', '.join(results.systems)}", field="--baseline")
        results.baseline = baseline
        results.significance = significance_by_subset(
            per_topic, baseline, results.measures, results.subsets, results.n_resamples, results.seed,
            results.correction, results.family)


# --- the steps of evaluate_runs ---------------------------------------------------------

def _check_request(runs, families, measures, splits, target, test, correction="holm", family="runs",
                   ci="auto", primary=None):
    """The measures to compute (the tuning target and the primary measure added), the
    target's name and the primary's; bad requests are InputErrors naming the option."""
    if test not in ("t", "perm"):
        raise InputError(f"unknown test {test!r}: use t or perm", field="--test")
    for value, allowed, option in ((correction, sig.CORRECTIONS, "--correction"),
                                   (family, sig.FAMILIES, "--family"), (ci, sig.INTERVALS, "--ci")):
        if value not in allowed:
            raise InputError(f"unknown value {value!r}: use {', '.join(allowed)}", field=option)
    measures = list(measures) if measures is not None else None
    if measures is None or all(isinstance(m, str) for m in measures):
        measures = parse_measures(measures)
    primary_name = None
    if primary is not None:   # asked for: measured; by default nDCG@5 when measured, else the first
        primary_measure = parse_measures([primary], field="--primary")[0]
        primary_name = str(primary_measure)
        if primary_name not in measure_names(measures):
            measures = [*measures, primary_measure]
    target_name = None
    if families and splits is None:
        raise InputError("tuning a ranker family needs val/test splits (the official protocol)",
                         field="--tune")
    if splits is not None:
        target_measure = parse_measures([target], field="--target")[0]
        target_name = str(target_measure)
        if target_name not in measure_names(measures):
            measures = [*measures, target_measure]
    if not runs and not families:
        raise InputError("no runs to evaluate")
    clash = set(runs) & set(families)
    if clash:
        raise InputError(f"{sorted(clash)[0]!r} names both a run and a family; rename one", field="--tune")
    return measures, target_name, primary_name


class _Measurer:
    """The evaluator with a memo by run object (a run in ``runs`` and in a family is
    measured once) and one progress bar over every run and configuration."""

    def __init__(self, evaluator: Evaluator, jobs: int, progress: bool):
        from tqdm import tqdm

        self.evaluator = evaluator
        self.memo: dict[int, TopicValues] = {}
        # disable=None: only on a terminal, never in a log or CI output
        self.bar = tqdm(total=jobs, desc="evaluating", unit="run", disable=None if progress else True,
                        leave=False)

    def __call__(self, run: Run) -> TopicValues:
        key = id(run)
        if key not in self.memo:
            self.memo[key] = self.evaluator(run)
        self.bar.update(1)
        return self.memo[key]

    def forget(self, run: Run) -> None:
        self.memo.pop(id(run), None)

    def close(self) -> None:
        self.bar.close()


def _no_relevant_note(collection: Collection) -> list[str]:
    norel = sum(1 for d in collection.dialogues if not d.relevant)
    return [f"{norel} dialogue(s) have no relevant candidate; they score 0 on every measure "
            "(as in trec_eval)"] if norel else []


def _coverage_notes(collection: Collection, runs: Mapping[str, Run],
                    values: Mapping[str, TopicValues]) -> list[str]:
    """Notes on dialogues a run misses and topics it has that the collection does not;
    a run of no dialogue of the collection is an InputError."""
    notes = []
    for name, tv in values.items():
        if tv.missing:
            notes.append(f"{name}: {tv.missing} of {len(collection)} dialogues not ranked; they count 0")
        if tv.unknown:
            notes.append(f"{name}: {tv.unknown} topic(s) not in {collection.name} were ignored")
        if tv.unknown == len(runs[name]) and len(runs[name]):
            raise InputError(f"run {name!r} ranks no dialogue of {collection.name}: "
                             "wrong collection?", record=name)
    return notes


def _untuned_systems(runs, values, families, index: SplitIndex, index_by_subset) -> dict[str, System]:
    """Each untuned run on the splits' test halves (runs that are a family's member are
    reported as the family)."""
    members = {id(r) for configs in families.values() for r in configs.values() if isinstance(r, Run)}
    return {name: System(name, "run", tv.values, {s: index.means(tv.values, "test", s) for s in index_by_subset})
            for name, tv in values.items() if id(runs[name]) not in members}


def _tuned_systems(families, measurer: _Measurer, index: SplitIndex, target_j: int) -> dict[str, System]:
    """Each family tuned per split on val by the target; callables are run, measured
    and let go, so a grid never sits in memory."""
    systems = {}
    for family, configs in families.items():
        if not configs:
            raise InputError(f"family {family!r} has no configuration", field="--tune")
        stack = []
        for source in configs.values():
            run = source if isinstance(source, Run) else source()
            stack.append(measurer(run).values)
            if not isinstance(source, Run):
                measurer.forget(run)   # produced here, not shared: let it go
        stack = np.stack(stack)
        tuned = tune(index, list(configs), stack, target_j)
        systems[family] = System(family, "tuned", tuned.per_topic, tuned.test, tuned,
                                 {c: stack[k].mean(axis=0) for k, c in enumerate(configs)})
    return systems


def significance_by_subset(per_topic: Mapping[str, np.ndarray], baseline: str, measures: list[str],
                           subsets: Mapping[str, np.ndarray], n_resamples: int = sig.DEFAULT_RESAMPLES,
                           seed: int = 0, correction: str = "holm", family: str = "runs") -> dict[str, dict]:
    """``{subset: dsr.evaluation.significance.compare(...)}``: every system against ``baseline`` per subset,
    then adjusted by ``correction`` over ``family`` (``dsr.evaluation.significance.correct``).

    The shape of :attr:`Results.significance`; the leaderboard server calls it too.
    """
    out = {subset: sig.compare(per_topic, baseline, measures, idx, n_resamples, seed)
           for subset, idx in subsets.items()}
    sig.correct(out, correction, family)
    return out


def tune_and_evaluate(collection: Collection, configs: Mapping[str, Mapping[str, ConfigSource]],
                      splits: Splits, target: str = "nDCG@5", measures: Sequence | None = None,
                      **kwargs) -> Results:
    """Tune each family per split on val by ``target`` and report its test halves.

    ``results.systems[family].tuned`` holds the chosen configuration per split
    (``chosen_names``), val means, test means per subset and the per-topic
    values used for significance; ``kwargs`` go to :func:`evaluate_runs`
    (``runs=`` for untuned runs beside the families, ``baseline=``...).
    """
    runs = kwargs.pop("runs", {})
    return evaluate_runs(collection, runs, measures, splits=splits, families=configs,
                         target=target, **kwargs)


def write_per_topic(results: Results, path: str | Path) -> None:
    """Per-topic values of every run (all dialogues) and tuned family (out-of-sample values).

    By the file's suffix: ``.parquet`` (columnar, what reports write), ``.jsonl``/
    ``.json`` (one object per (system, topic)), ``.tsv.gz`` or anything else: TSV
    with a header ``system kind topic subset MEASURE...`` (floats as their shortest
    exact repr; gzipped for ``.gz``). Written atomically.
    """
    write_frame(results.per_topic_frame(), path)


def write_frame(frame, path: str | Path) -> None:
    """A frame of numbers to ``path`` by its suffix (see :func:`write_per_topic`), atomically;
    NaN is an empty TSV cell, null in JSON lines."""
    import json

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import io

        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False, compression="zstd")
        with atomic_write(path, "wb") as handle:
            handle.write(buffer.getvalue())
        return
    numbers = [c for c in frame.columns if frame[c].dtype.kind == "f"]
    with atomic_write_text(path) as handle:
        if suffix in (".jsonl", ".json"):
            for row in frame.itertuples(index=False):
                record = dict(zip(frame.columns, row))
                values = {m: nan_to_none(record.pop(m)) for m in numbers}
                handle.write(json.dumps({**record, "values": values}) + "\n")
            return
        handle.write("\t".join(map(str, frame.columns)) + "\n")
        for row in frame.itertuples(index=False):
            handle.write("\t".join("" if isinstance(v, float) and math.isnan(v) else
                                   repr(float(v)) if isinstance(v, float) else str(v)
                                   for v in row) + "\n")
