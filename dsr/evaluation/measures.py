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
* the order scored is the order a :class:`~dsr.core.run.Run` holds: the
  evaluator is given the scores the run file holds (``Run.as_dict``: float32,
  strictly decreasing, see ``dsr.core.run``), so a run is scored exactly as
  trec_eval scores its written file. A run read from a file holds trec_eval's
  order: scores as float32, ties by doc id, descending
  (``Run.tied_topics`` counts the topics where such a tie decides);
* measure parameters are checked before trec_eval sees them (a cutoff of 0
  aborts trec_eval's process): cutoffs and ``rel`` are whole numbers >= 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, SupportsFloat

import numpy as np

from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.evaluation import ranked, registry
from dsr.evaluation.columns_run import ColumnRun, qrels_columns
from dsr.evaluation.trec_eval_columns import Columns

#: the default set, the primary measure and each family's bounds: declared once, in dsr.evaluation.registry
DEFAULT_MEASURES = registry.DEFAULT_MEASURES
DEFAULT_PRIMARY = registry.DEFAULT_PRIMARY


def bounded(measure: Any) -> bool:
    """Whether a measure (an ir_measures object or its string) takes values in [0, 1]."""
    if isinstance(measure, str):
        measure = _ir_measures().parse_measure(measure)
    return registry.bounded(measure)


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


def _ir_measures() -> ModuleType:
    """ir_measures, imported on first use, in this one place (``dsr --help`` does not load it)."""
    import ir_measures

    return ir_measures


#: the largest cutoff or grade a measure may name: trec_eval and pytrec_eval keep them as C ints
MAX_PARAM = 2**31 - 1


def parse_measures(items: Iterable[str] | None = None, field: str = "measures") -> list:
    """ir_measures Measure objects for the strings (the default set when None), in order, once each.

    An unknown measure, a bad parameter or a malformed string raises an
    InputError naming ``field``.
    """
    ir_measures = _ir_measures()
    names = DEFAULT_MEASURES if items is None else split_measure_list(items)
    if not names:
        raise InputError("no measures given", field=field)
    measures, seen = [], set()
    for name in names:
        try:
            measure = ir_measures.parse_measure(name)
        except Exception as err:  # ir_measures raises NameError, ValueError, SyntaxError...
            raise InputError(
                f"not an ir_measures measure: {name!r} ({err}); e.g. {', '.join(DEFAULT_MEASURES)}, RR(rel=2)", field=field
            ) from None
        # parse_measure accepts any parameter name; a wrong one only fails later.
        unknown = sorted(set(measure.params) - set(measure.SUPPORTED_PARAMS))
        if unknown:
            raise InputError(
                f"measure {name!r}: {measure.NAME} has no parameter "
                f"{', '.join(unknown)}; it takes "
                f"{', '.join(sorted(measure.SUPPORTED_PARAMS)) or 'none'}",
                field=field,
            )
        if measure.NAME == "RBP" and "rel" not in measure.params:
            measure = measure(rel=1)  # cwl_eval needs the grade that counts as relevant
        refused = registry.refusal(measure)
        if refused:
            raise InputError(f"measure {name!r}: dsr does not compute it: {refused}", field=field)
        _check_params(measure, name, field)
        key = str(measure)
        if key not in seen:
            seen.add(key)
            measures.append(measure)
    return measures


def _check_params(measure: Any, name: str, field: str) -> None:
    """InputError for parameter values trec_eval or ir_measures would crash on."""
    if measure.NAME == "IPrec" and "recall" not in measure.params:
        raise InputError(f"measure {name!r} needs a recall level: IPrec@0.5 (trec_eval iprec_at_recall_0.50)", field=field)
    # parameters ir_measures has no default for and the family cannot go without (C/W/L's max_rel)
    cutoff = measure.params.get("cutoff")
    if isinstance(cutoff, float) and not cutoff.is_integer():
        raise InputError(
            f"measure {name!r}: a cutoff counts documents, so it is a whole number of 1 or "
            f"more, got {cutoff!r} (trec_eval reads ndcg_cut.{cutoff!r} as {int(cutoff)}; "
            f"write {measure.NAME}@{int(cutoff)} for that)",
            field=field,
        )
    needed = sorted(
        key
        for key, spec in measure.SUPPORTED_PARAMS.items()
        if key == "max_rel" and type(measure.params.get(key, getattr(spec, "default", None))) is object
    )
    try:
        measure.validate_params()
    except AssertionError as err:
        if needed:  # ir_measures' "invalid param max_rel=<object object at 0x...>"
            raise InputError(
                f"measure {name!r} needs {', '.join(f'{k}=' for k in needed)} (e.g. "
                f"{measure.NAME}({needed[0]}=2)); see dsr/evaluation/registry.py",
                field=field,
            ) from None
        raise InputError(f"measure {name!r}: {err}; e.g. {measure.NAME}@5", field=field) from None
    for key in ("cutoff", "rel", "max_rel"):
        value = measure.params.get(key)
        if value is None or (key == "max_rel" and type(value) is object):
            continue
        what = "cutoff (after @)" if key == "cutoff" else key
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"measure {name!r}: the {what} must be a whole number of 1 or more, got {value!r}", field=field)
        if value > MAX_PARAM:  # trec_eval keeps them as C ints: larger ones crash it
            raise InputError(
                f"measure {name!r}: the {what} must be at most {MAX_PARAM:,} (trec_eval "
                f"keeps it as a 32-bit integer), got {value:,}",
                field=field,
            )


def measure_names(measures: Sequence) -> list[str]:
    """Canonical names (``str(measure)``), which round-trip through parse_measures."""
    return [str(m) for m in measures]


def nan_to_none(value: SupportsFloat) -> float | None:
    """A float, or None for NaN (a mean over no topic), so JSON and tables show it as missing."""
    number = float(value)
    return None if number != number else number


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

    The measures trec_eval computes (P, R, RR, AP, nDCG without custom gains, NumQ, NumRet,
    NumRel; any ``rel``, ``judged_only``) are computed from the run's ranked labels with
    numpy (:mod:`dsr.evaluation.ranked`: trec_eval's arithmetic, the same doubles, many
    topics and runs at a time). ``arrays=False``, a run given as a dict, or a run the arrays
    cannot describe exactly (a topic naming a document twice) sends them to
    ``pytrec_eval.RelevanceEvaluator`` instead (trec_eval's own C code), one evaluator per
    (rel, judged_only), named as ir_measures' pytrec_eval provider names them (``P_5``,
    ``ndcg_cut_5``...): the reference the tests hold the arrays to. Any other measure goes
    through ``ir_measures.evaluator(...).iter_calc``.
    """

    def __init__(
        self,
        qrels: Mapping[str, Mapping[str, int]],
        measures: Sequence | None = None,
        topics: Sequence[str] | None = None,
        *,
        arrays: bool = True,
    ) -> None:
        ir_measures = _ir_measures()
        self.measures = list(measures) if measures is not None else parse_measures()
        if self.measures and isinstance(self.measures[0], str):
            self.measures = parse_measures(self.measures)
        self.names = measure_names(self.measures)
        self.topics = list(topics) if topics is not None else list(qrels)
        self._topic_index = {t: i for i, t in enumerate(self.topics)}
        self._measure_index = {n: j for j, n in enumerate(self.names)}
        qrels = {t: dict(qrels.get(t, {})) for t in self.topics}
        self._qrels = qrels
        groups: dict[tuple, dict[str, int]] = {}
        specs: dict[int, ranked.Spec] = {}
        other = []
        for j, measure in enumerate(self.measures):
            native = _trec_eval_name(measure)
            if native is None:
                other.append(measure)
                continue
            key, name = native
            groups.setdefault(key, {})[name] = j
            spec = ranked.spec_of(native)
            if spec is not None:
                specs[j] = spec
        #: {(rel, judged_only): {trec_eval measure name: column}}, for pytrec_eval (made when needed)
        self._groups = groups
        self._native_evaluators: list | None = None
        #: the columns the arrays compute and how
        self._array_columns = list(specs) if arrays else []
        self._specs = [specs[j] for j in self._array_columns]
        self._made_labels: ranked.Labels | None = None
        self._other = None
        if other:
            # topics go to ir_measures' providers as numbers: gdeval (ERR) reads digits only
            numbered = {str(i): qrels[t] for i, t in enumerate(self.topics)}
            try:
                self._other = ir_measures.evaluator(other, numbered)
                self._other_measures = other
            except Exception as err:
                first = str(err).splitlines()[0] if str(err) else type(err).__name__
                raise InputError(
                    f"no installed ir_measures provider computes {', '.join(map(str, other))} ({first})", field="measures"
                ) from None

    @property
    def _labels(self) -> ranked.Labels | None:
        """The qrels as the ranked labels' arrays (made when first needed: a run read as
        arrays never needs them), or None when no measure is computed so."""
        if self._made_labels is None and self._specs:
            self._made_labels = ranked.Labels(self._qrels, self.topics)
        return self._made_labels

    def __call__(self, run: Run | Mapping[str, Mapping[str, float]]) -> TopicValues:
        values = np.zeros((len(self.topics), len(self.names)))
        judged = self._judged_columns(run.judged) if isinstance(run, ColumnRun) and self._specs else None
        labels = self._labels if judged is None else None
        held = ranked.ranked(run, labels) if labels is not None and isinstance(run, Run) else None
        scores: Mapping[str, Mapping[str, float]] | None = None
        if judged is not None and isinstance(run, ColumnRun):  # a run read as arrays: no Python list per topic
            values[:, self._array_columns] = run.measure(judged, self.topics, self._specs)
            topics = run.topics()
            ranked_topics = {q for q, n in zip(topics, run.lengths.tolist()) if n}
            done = set(self._array_columns)
        elif held is not None and labels is not None and isinstance(run, Run):
            values[np.ix_(held.rows, np.asarray(self._array_columns, dtype=np.int64))] = ranked.compute(held, labels, self._specs)
            flat = run.flat_ranking()
            sizes = flat.sizes.tolist() if flat is not None else [len(r) for r in run.rankings.values()]
            topics = run.topics()
            ranked_topics = {q for q, n in zip(topics, sizes) if n}
            done = set(self._array_columns)
        else:
            scores = run.as_dict() if isinstance(run, Run) else {q: dict(d) for q, d in run.items()}
            topics = list(scores)
            ranked_topics = {q for q, docs in scores.items() if docs}
            done = set()
        # Topics absent from the run keep 0 (trec_eval -c; ir_measures' default too).
        native = any(j not in done for columns in self._groups.values() for j in columns.values())
        if (native or self._other is not None) and scores is None:
            scores = run.as_dict() if isinstance(run, Run) else {q: dict(d) for q, d in run.items()}
        if native and scores is not None:
            self._native_values(scores, values, done)
        if self._other is not None and scores is not None:
            self._other_values(self._other, scores, values)
        missing = sum(1 for t in self.topics if t not in ranked_topics)
        if missing:
            self._fill_missing(values, ranked_topics)
        unknown = sum(1 for q in topics if q not in self._topic_index)
        return TopicValues(list(self.topics), list(self.names), values, missing, unknown)

    def _judged_columns(self, held: Columns) -> Columns | None:
        """The qrels as :mod:`dsr.evaluation.columns_run`'s arrays match them (made once):
        ``held`` (the arrays a run was labelled with) when they are these qrels."""
        made = self.__dict__.setdefault("_columns", {})
        if id(held) not in made:
            made[id(held)] = (held, qrels_columns(self._qrels, held))
        return made[id(held)][1]

    def _native_values(self, scores: Mapping[str, Mapping[str, float]], values: np.ndarray, done: set[int]) -> None:
        """The trec_eval measures not in ``done``, by pytrec_eval (the reference path)."""
        if self._native_evaluators is None:
            import pytrec_eval

            self._native_evaluators = [
                (
                    pytrec_eval.RelevanceEvaluator(
                        self._qrels, list(columns), relevance_level=rel, judged_docs_only_flag=bool(judged)
                    ),
                    columns,
                )
                for (rel, judged), columns in self._groups.items()
            ]
        for evaluator, columns in self._native_evaluators:
            if set(columns.values()) <= done:
                continue
            for qid, by_measure in evaluator.evaluate(scores).items():
                i = self._topic_index.get(qid)
                if i is None:
                    continue
                row = values[i]
                for key, value in by_measure.items():
                    row[columns[key]] = value

    def _fill_missing(self, values: np.ndarray, ranked: set[str]) -> None:
        """A topic the run lacks is still a topic of the qrels (trec_eval -c): NumQ 1, NumRel
        its relevant count; every other measure of an empty ranking is 0, as it stays."""
        for j, measure in enumerate(self.measures):
            if measure.NAME not in ("NumQ", "NumRel"):
                continue
            rel = int(measure.params.get("rel", 1))
            for t, i in self._topic_index.items():
                if t not in ranked:
                    values[i, j] = 1 if measure.NAME == "NumQ" else sum(1 for g in self._qrels[t].values() if g >= rel)

    def _other_values(self, other: Any, scores: Mapping[str, Mapping[str, float]], values: np.ndarray) -> None:
        """The measures ir_measures' other providers compute (``other``, their evaluator), topics
        numbered as their qrels."""
        numbered = {str(self._topic_index[q]): docs for q, docs in scores.items() if q in self._topic_index}
        try:
            for metric in other.iter_calc(numbered):
                values[int(metric.query_id), self._measure_index[str(metric.measure)]] = metric.value
        except Exception as err:  # a provider's own failure (a tool it runs, its parser)
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InputError(
                f"ir_measures could not compute {', '.join(map(str, self._other_measures))}: {first}", field="measures"
            ) from None


def _trec_eval_name(measure: Any) -> tuple[tuple[int, bool], str] | None:
    """``((relevance_level, judged_only), trec_eval measure)`` for a measure trec_eval
    computes as ir_measures defines it, else None (the names pytrec_eval reports back)."""
    name, params = measure.NAME, measure.params
    judged = bool(measure["judged_only"]) if "judged_only" in measure.SUPPORTED_PARAMS else False
    cutoff = params.get("cutoff")
    if name == "nDCG":
        if set(params) - {"cutoff", "judged_only"}:  # gains or dcg: ir_measures decides
            return None
        # trec_eval's ndcg uses the grades as gains; the relevance level does not enter
        return (1, judged), ("ndcg" if cutoff is None else f"ndcg_cut_{cutoff}")
    if name == "NumQ":
        return (1, False), "num_q"
    if name in ("NumRet", "NumRel") and set(params) <= {"rel"}:
        # trec_eval's num_ret (no rel: every retrieved document), num_rel_ret and num_rel
        level = int(params.get("rel", 1))
        return (level, False), ("num_rel" if name == "NumRel" else "num_rel_ret" if "rel" in params else "num_ret")
    if name not in ("P", "R", "RR", "AP") or set(params) - {"cutoff", "rel", "judged_only"}:
        return None
    rel = int(measure["rel"])
    if name == "P" and cutoff is not None:
        return (rel, judged), f"P_{cutoff}"
    if name == "R" and cutoff is not None and "rel" not in params:
        return (rel, judged), f"recall_{cutoff}"
    if name == "RR" and cutoff is None:
        return (rel, judged), "recip_rank"
    if name == "AP":
        return (rel, judged), ("map" if cutoff is None else f"map_cut_{cutoff}")
    return None


def evaluate_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Mapping[str, float]],
    measures: Sequence[Any] | None = None,
    topics: Sequence[str] | None = None,
) -> TopicValues:
    """One-off: per-topic values of ``run`` (build an :class:`Evaluator` for many runs)."""
    return Evaluator(qrels, measures, topics)(run)
