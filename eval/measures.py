"""Measures through ir_measures (pytrec_eval, i.e. trec_eval's own C code, as backend).

A measure is an ir_measures string, exactly as papers print it: ``RR``,
``nDCG@5``, ``P@1``, ``AP``, ``R@10``, ``RR(rel=2)``... The default set is
:data:`DEFAULT_MEASURES`.

Per-topic values are computed once per run into a numpy matrix (topics x
measures, :class:`TopicValues`); every mean, subset, split and significance
test is a numpy operation on that matrix, so the evaluator runs once per run.

What counts, as ``trec_eval -c`` counts it:

* every dialogue of the collection is a topic, in the collection's order;
* a topic the run does not rank counts 0 for every measure (trec_eval ``-c``);
  :attr:`TopicValues.missing` says how many there were;
* a topic with no relevant candidate is kept and scores 0 (trec_eval does the
  same); it is not dropped from the mean;
* topics of the run that are not in the collection are ignored
  (:attr:`TopicValues.unknown` counts them);
* the order scored is the order a :class:`~retrieval.run.Run` holds: the
  evaluator is given the scores the run file holds (``Run.as_dict``: float32,
  strictly decreasing, see ``retrieval.run``), so a run is scored exactly as
  trec_eval scores its written file. A run read from a file holds trec_eval's
  order: scores as float32, ties by doc id, descending
  (``Run.tied_topics`` counts the topics where such a tie decides);
* measure parameters are checked before trec_eval sees them (a cutoff of 0
  aborts trec_eval's process): cutoffs and ``rel`` are whole numbers >= 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from retrieval.errors import InputError
from retrieval.run import Run

DEFAULT_MEASURES = ("RR", "nDCG@1", "nDCG@3", "nDCG@5", "nDCG@10", "P@1", "P@5", "AP", "R@10")


def split_measure_list(items: Iterable[str]) -> list[str]:
    """``["RR,nDCG@5", "P(rel=2,judged_only=True)@5"]`` -> one string per measure.

    Commas separate measures only outside parentheses, so parameters survive.
    """
    out: list[str] = []
    for item in items:
        depth, start = 0, 0
        for i, ch in enumerate(item):
            depth += (ch == "(") - (ch == ")")
            if ch == "," and depth == 0:
                out.append(item[start:i])
                start = i + 1
        out.append(item[start:])
    return [s.strip() for s in out if s.strip()]


def parse_measures(items: Iterable[str] | None = None, field: str = "--measures") -> list:
    """ir_measures Measure objects for the strings (the default set when None), in order, once each.

    An unknown measure, a bad parameter or a malformed string raises an
    InputError naming ``field``.
    """
    import ir_measures

    names = DEFAULT_MEASURES if items is None else split_measure_list(items)
    if not names:
        raise InputError("no measures given", field=field)
    measures, seen = [], set()
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except Exception as err:  # ir_measures raises NameError, ValueError, SyntaxError...
            raise InputError(f"not an ir_measures measure: {name!r} ({err}); e.g. "
                             f"{', '.join(DEFAULT_MEASURES)}, RR(rel=2)", field=field) from None
        # parse_measure accepts any parameter name; a wrong one only fails later.
        unknown = sorted(set(measure.params) - set(measure.SUPPORTED_PARAMS))
        if unknown:
            raise InputError(f"measure {name!r}: {measure.NAME} has no parameter "
                             f"{', '.join(unknown)}; it takes "
                             f"{', '.join(sorted(measure.SUPPORTED_PARAMS)) or 'none'}", field=field)
        _check_params(measure, name, field)
        key = str(measure)
        if key not in seen:
            seen.add(key)
            measures.append(measure)
    return measures


def _check_params(measure, name: str, field: str) -> None:
    """InputError for parameter values trec_eval or ir_measures would crash on."""
    try:
        measure.validate_params()
    except AssertionError as err:
        raise InputError(f"measure {name!r}: {err}; e.g. {measure.NAME}@5", field=field) from None
    for key in ("cutoff", "rel"):
        value = measure.params.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            what = "cutoff (after @)" if key == "cutoff" else "rel"
            raise InputError(f"measure {name!r}: the {what} must be a whole number of 1 or more, "
                             f"got {value!r}", field=field)


def measure_names(measures: Sequence) -> list[str]:
    """Canonical names (``str(measure)``), which round-trip through parse_measures."""
    return [str(m) for m in measures]


def nan_to_none(value) -> float | None:
    """A float, or None for NaN (a mean over no topic), so JSON and tables show it as missing."""
    value = float(value)
    return None if value != value else value


@dataclass
class TopicValues:
    """Per-topic values of one run: ``values[i, j]`` is measure ``j`` on topic ``i``."""

    topics: list[str]
    measures: list[str]
    values: np.ndarray
    #: topics of the collection the run does not rank (they count 0)
    missing: int = 0
    #: topics of the run that are not in the collection (ignored)
    unknown: int = 0

    def column(self, measure: str) -> np.ndarray:
        return self.values[:, self.measures.index(measure)]

    def mean(self, index: np.ndarray | None = None) -> np.ndarray:
        """Mean per measure over all topics or over the topics at ``index``."""
        rows = self.values if index is None else self.values[index]
        return rows.mean(axis=0) if len(rows) else np.full(len(self.measures), np.nan)


class Evaluator:
    """Qrels and measures bound once; call it on each run.

    Measures pytrec_eval supports go through it (trec_eval's code); any other
    ir_measures measure goes through the provider ir_measures picks for it.
    """

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], measures: Sequence | None = None,
                 topics: Sequence[str] | None = None):
        import ir_measures

        self.measures = list(measures) if measures is not None else parse_measures()
        if self.measures and isinstance(self.measures[0], str):
            self.measures = parse_measures(self.measures)
        self.names = measure_names(self.measures)
        self.topics = list(topics) if topics is not None else list(qrels)
        self._topic_index = {t: i for i, t in enumerate(self.topics)}
        self._measure_index = {n: j for j, n in enumerate(self.names)}
        qrels = {t: dict(qrels.get(t, {})) for t in self.topics}
        native = [m for m in self.measures if ir_measures.pytrec_eval.supports(m)]
        other = [m for m in self.measures if not ir_measures.pytrec_eval.supports(m)]
        self._evaluators = []
        if native:
            self._evaluators.append(ir_measures.pytrec_eval.evaluator(native, qrels))
        if other:
            try:
                self._evaluators.append(ir_measures.evaluator(other, qrels))
            except Exception as err:
                raise InputError(f"no installed ir_measures provider computes "
                                 f"{', '.join(map(str, other))} ({err})", field="--measures") from None

    def __call__(self, run: Run | Mapping[str, Mapping[str, float]]) -> TopicValues:
        scores = run.as_dict() if isinstance(run, Run) else {q: dict(d) for q, d in run.items()}
        values = np.zeros((len(self.topics), len(self.names)))
        for evaluator in self._evaluators:
            invokers = _pytrec_invokers(evaluator)
            if invokers is not None:
                self._fill_fast(invokers, scores, values)
                continue
            for metric in evaluator.iter_calc(scores):
                i = self._topic_index.get(metric.query_id)
                if i is not None:
                    values[i, self._measure_index[str(metric.measure)]] = metric.value
        ranked = {q for q, docs in scores.items() if docs}
        missing = sum(1 for t in self.topics if t not in ranked)
        unknown = sum(1 for q in scores if q not in self._topic_index)
        return TopicValues(list(self.topics), list(self.names), values, missing, unknown)


    def _fill_fast(self, invokers, scores, values: np.ndarray) -> None:
        # ir_measures' per-topic objects (a Metric, a Measure repr and hash per
        # value) cost ~10x pytrec_eval's own C++ evaluation; read pytrec_eval's
        # result dicts directly, with ir_measures' own measure mapping.
        # Topics absent from the run keep 0 (ir_measures' DEFAULT for these).
        for invoker in invokers:
            columns = {key: self._measure_index[str(measure)]
                       for key, (measure, _) in invoker.measure_map.items()}
            for qid, by_measure in invoker.evaluator.evaluate(scores).items():
                i = self._topic_index.get(qid)
                if i is None:
                    continue
                row = values[i]
                for key, value in by_measure.items():
                    row[columns[key]] = value


def _pytrec_invokers(evaluator):
    """The pytrec_eval invokers of an ir_measures pytrec_eval evaluator (None for other providers).

    Relies on ir_measures internals (``invokers``, ``measure_map``,
    ``evaluator``), checked here so a change there falls back to ``iter_calc``.
    """
    invokers = getattr(evaluator, "invokers", None)
    if type(evaluator).__name__ != "PytrecEvalEvaluator" or not invokers:
        return None
    if not all(hasattr(i, "measure_map") and hasattr(i, "evaluator") for i in invokers):
        return None
    return invokers


def evaluate_run(qrels, run, measures=None, topics=None) -> TopicValues:
    """One-off: per-topic values of ``run`` (build an :class:`Evaluator` for many runs)."""
    return Evaluator(qrels, measures, topics)(run)
