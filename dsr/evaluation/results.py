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
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.core.atomic import atomic_write
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.core.textfiles import atomic_write_text
from dsr.evaluation import figures, latex
from dsr.evaluation import significance as sig
from dsr.evaluation.measures import (
    DEFAULT_PRIMARY,
    TopicValues,
    bounded,
    nan_to_none,
)
from dsr.evaluation.protocol import SD_DDOF, TIE_DECIMALS, Splits, Tuned, summarise

if TYPE_CHECKING:  # pandas and matplotlib are imported on first use
    import pandas as pd
    from matplotlib.figure import Figure

ConfigSource = Run | Callable[[], Run]

PAIRING = (
    "paired by topic: an untuned run's value on each dialogue; a tuned family's value is the "
    "mean, over the splits whose test half holds the dialogue, of the configuration chosen "
    "on that split's val half (out of sample)"
)


@dataclass
class System:
    """A row of the protocol's table: an untuned run or a family tuned per split."""

    name: str
    kind: str  # "run" or "tuned"
    per_topic: np.ndarray  # (n_topics, n_measures), for significance
    splits: dict[str, np.ndarray] | None = None  # subset -> (n_splits, n_measures) test means
    tuned: Tuned | None = None
    config_means: dict[str, np.ndarray] | None = None  # tuned: each config over all dialogues


#: :meth:`Results.to_frame`'s columns, in order
FRAME_COLUMNS = (
    "system kind subset measure mean sd p_holm significant p_adj mark topic_mean ci_low ci_high "
    "diff diff_low diff_high d wins ties losses group"
).split()


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
        return {name: dict(zip(self.measures, map(float, tv.mean(self.subsets[subset])))) for name, tv in self.runs.items()}

    def modal_config(self, system: str) -> str | None:
        """A tuned family's configuration chosen most often over the splits (ties: the first given)."""
        tuned = self.systems[system].tuned if system in self.systems else None
        if tuned is None:
            return None
        counts = tuned.choice_counts()
        return max(counts, key=lambda c: (counts[c], -tuned.configs.index(c)))

    def adjusted_p(self, subset: str, system: str, measure: str) -> float | None:
        """The baseline comparison's p of ``test``, adjusted by ``correction`` over ``family``."""
        entry = (self.significance or {}).get(subset, {}).get(system, {}).get(measure)
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
        return f"{sig.CORRECTION_NAMES[self.correction]} over {sig.FAMILY_NAMES[self.family]}"

    def mean_ci(self, subset: str, system: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean per measure of the system's per-topic values on the subset, with a 95%
        interval (``ci``; see :meth:`interval_text`)."""
        key = (subset, system, self.ci, self.seed)
        if key not in self._intervals:  # a bootstrap is worth computing once per report
            values = self.systems[system].per_topic if system in self.systems else self.runs[system].values
            self._intervals[key] = sig.mean_ci(
                values[self.subsets[subset]], self.ci, seed=self.seed, bounded=[_bounded(m) for m in self.measures]
            )
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

    def to_frame(self) -> pd.DataFrame:
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
                    letters = (self.pairs or {}).get(subset, {}).get(measure, {}).get("letters", {}).get(system, "")
                    rows.append(
                        {
                            "system": system,
                            "kind": self.systems[system].kind,
                            "subset": subset,
                            "measure": measure,
                            "mean": mean,
                            "sd": num(sd),
                            "p_holm": num(p),
                            "significant": self.significant(subset, system, measure),
                            "p_adj": num(self.adjusted_p(subset, system, measure)),
                            "mark": self.mark(subset, system, measure),
                            "topic_mean": topic_mean[j],
                            "ci_low": low[j],
                            "ci_high": high[j],
                            "diff": num(entry.get("diff")),
                            "diff_low": num(entry.get("ci_low")),
                            "diff_high": num(entry.get("ci_high")),
                            "d": num(entry.get("d")),
                            "wins": entry.get("wins", pd.NA),
                            "ties": entry.get("ties", pd.NA),
                            "losses": entry.get("losses", pd.NA),
                            "group": letters,
                        }
                    )
        frame = pd.DataFrame(rows, columns=FRAME_COLUMNS)
        for col in ("wins", "ties", "losses"):
            frame[col] = frame[col].astype("Int64")
        return frame

    def per_topic_frame(self) -> pd.DataFrame:
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
        return {
            "name": "official",
            "splits": self.splits.describe(),
            "target": self.target,
            "selection": f"highest val mean of the target (rounded to {TIE_DECIMALS} decimals); "
            "ties go to the configuration given first",
            "sd": f"sample standard deviation over splits (ddof={SD_DDOF})",
            "subsets": "configuration chosen on the whole val half, reported per subset of the test half",
        }

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
            "subsets": {s: len(i) for s, i in self.subsets.items()},
            "runs": {},
            "notes": self.notes,
        }
        for name, tv in self.runs.items():
            out["runs"][name] = {
                **self.run_info.get(name, {}),
                "missing_topics": tv.missing,
                "unknown_topics": tv.unknown,
                "all_dialogues": {s: _means(tv.mean(i), self.measures) for s, i in self.subsets.items()},
            }
        if self.splits is not None:
            out["systems"] = {name: self._system_json(name, system) for name, system in self.systems.items()}
        if self.baseline is not None:
            out["significance"] = self._significance_json()
        if self.pairs is not None:
            out["all_pairs"] = {
                "test": self.test,
                "correction": f"{sig.CORRECTION_NAMES[self.correction]} over the pairs, per subset and measure",
                "alpha": self.alpha,
                "letters": "systems sharing a letter are not significantly different",
                "results": self.pairs,
            }
        out["intervals"] = {
            "method": self.ci,
            "confidence": 0.95,
            "seed": self.seed,
            "described": self.interval_text(),
            "of": "the per-topic mean of each system on each subset",
        }
        return out

    def _significance_json(self) -> dict[str, Any]:
        """How the baseline comparisons were made, and their results."""
        return {
            "baseline": self.baseline,
            "marked_by": f"{self.test}_adj",
            "alpha": self.alpha,
            "marks": {
                sig.BETTER: "significantly better than the baseline",
                sig.WORSE: "significantly worse than the baseline",
            },
            "method": self.correction,
            "family": self.family,
            "effects": "diff: mean paired difference with 95% t interval (ci_low, ci_high); "
            "d: Cohen's d_z (mean / sd of the differences); wins/ties/losses: "
            "topics above / equal to / below the baseline",
            "tests": {
                "t": "paired t-test (scipy.stats.ttest_rel), two-sided",
                "perm": f"paired sign-flip randomisation test, two-sided, {self.n_resamples} resamples, seed {self.seed}",
            },
            "correction": self.correction_text() + " (t_holm/perm_holm: Holm over the systems, per subset and measure)",
            "pairing": PAIRING,
            "results": self.significance,
        }

    def _system_json(self, name: str, system: System) -> dict[str, Any]:
        """A row of the protocol's table: test-half mean and sd per subset and measure; a
        tuned family's configurations (each one's mean over all dialogues) and choice counts."""
        entry: dict[str, Any] = {"kind": system.kind, "test": {}}
        assert system.splits is not None, "written for results with splits"
        for subset, split_means in system.splits.items():
            mean, sd = summarise(split_means)
            entry["test"][subset] = {
                m: {"mean": nan_to_none(mean[j]), "sd": nan_to_none(sd[j])} for j, m in enumerate(self.measures)
            }
        if system.tuned is not None:
            entry["configs"] = {c: _means(v, self.measures) for c, v in (system.config_means or {}).items()}
            entry["choice_counts"] = system.tuned.choice_counts()
            entry.update(self.run_info.get(name, {}))
        return entry

    def split_frame(self) -> pd.DataFrame:
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

    def table(
        self, subset: str | None = None, measures: Sequence[str] | None = None, *, formatted: bool = False, digits: int = 4
    ) -> pd.DataFrame:
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
                raise InputError(f"measure {m!r} was not computed; these were: {', '.join(self.measures)}", field="measures")
        columns, data = [], {}
        for s in subsets:
            if s not in self.subsets:
                raise InputError(f"no subset {s!r}; there are {', '.join(self.subsets)}", field="subset")
            summary = self.summary(s)
            for m in measures:
                columns.append((s, m))
                data[(s, m)] = [_table_cell(summary[n][m], self.mark(s, n, m), formatted, digits) for n in summary]
        frame = pd.DataFrame(
            data,
            index=pd.Index(list(self.summary(subsets[0])), name="system"),
            columns=pd.MultiIndex.from_tuples(columns, names=["subset", "measure"]),
        )
        frame = frame.droplevel("subset", axis=1) if subset is not None else frame
        return _formatted_table_class()(frame) if formatted else frame

    def plot(self, kind: str = "main", measure: str | None = None, subset: str | None = None) -> Figure | dict[str, Any] | None:
        """A matplotlib Figure (``dsr.evaluation.figures``): ``main`` (the primary measure, or
        ``measure``, per system with 95% intervals, one ACM column wide), ``measures`` (a
        panel per measure), ``subsets`` (a panel per subset), ``diff`` (per-topic
        differences against the baseline) or ``recall`` (R@k curves); ``"all"`` gives
        ``{file stem: Figure}`` of every figure a report holds. ``fig.savefig(...)``
        embeds TrueType fonts wherever it is called."""
        return figures.plot(self, kind, measure=measure, subset=subset)


def _pandas() -> ModuleType:
    """pandas, imported on first use, in this one place (``dsr --help`` loads no pandas)."""
    import pandas

    return pandas


_FORMATTED: list = []


def _formatted_table_class() -> type[pd.DataFrame]:
    """A DataFrame whose ``to_latex`` turns the printed cells into LaTeX (:func:`dsr.evaluation.latex.tex`)
    instead of leaving raw ▲/▼/± that pdflatex refuses; made once, on first use."""
    if not _FORMATTED:
        pd = _pandas()
        frame_class: Any = pd.DataFrame

        class FormattedTable(frame_class):
            @property
            def _constructor(self) -> type[FormattedTable]:
                return FormattedTable

            def to_latex(self, *args: Any, **kwargs: Any) -> str:
                frame = pd.DataFrame(self).map(lambda v: latex.tex(v) if isinstance(v, str) else v)
                frame.index = frame.index.map(lambda v: latex.tex(str(v)))
                frame.columns = frame.columns.map(
                    lambda v: tuple(latex.tex(str(x)) for x in v) if isinstance(v, tuple) else latex.tex(str(v))
                )
                kwargs.setdefault("escape", False)
                if kwargs.get("index", True) and frame.index.name:  # no stray "system & & ..." row
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


def _table_cell(mean_sd: tuple[float, float | None], mark: str, formatted: bool, digits: int) -> float | str:
    mean, sd = mean_sd
    if not formatted:
        return mean
    if mean != mean:
        return "–"
    return f"{mean:.{digits}f}" + (f"±{sd:.{digits}f}" if sd is not None else "") + mark


# --- the steps of evaluate_runs ---------------------------------------------------------


def write_per_topic(results: Results, path: str | Path) -> None:
    """Per-topic values of every run (all dialogues) and tuned family (out-of-sample values).

    By the file's suffix: ``.parquet`` (columnar, what reports write), ``.jsonl``/
    ``.json`` (one object per (system, topic)), ``.tsv.gz`` or anything else: TSV
    with a header ``system kind topic subset MEASURE...`` (floats as their shortest
    exact repr; gzipped for ``.gz``). Written atomically.
    """
    write_frame(results.per_topic_frame(), path)


def write_frame(frame: pd.DataFrame, path: str | Path) -> None:
    """A frame of numbers to ``path`` by its suffix (see :func:`write_per_topic`), atomically;
    NaN is an empty TSV cell, null in JSON lines."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
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
            handle.write(
                "\t".join(
                    "" if isinstance(v, float) and math.isnan(v) else repr(float(v)) if isinstance(v, float) else str(v)
                    for v in row
                )
                + "\n"
            )
