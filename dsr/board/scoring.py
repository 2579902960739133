"""A phase's collection and labels, checking and scoring a run, and the board's tables.

One code path with the command line: a run is parsed once and checked by
:mod:`dsr.board.runcheck` (numpy over whole columns; a run it cannot prove valid goes to
:func:`dsr.evaluation.validate.validate_run`, ``dsr validate``, for every problem with its
line, then :func:`dsr.core.run.read_trec_run`) and scored by
:class:`dsr.evaluation.measures.Evaluator` (``dsr evaluate``); :func:`score_text` does it
for a submission, in the server process or a scoring worker (:mod:`dsr.board.workers`);
board tables are :class:`dsr.evaluation.results.Results` objects, so their significance
is :func:`dsr.evaluation.experiment.significance_by_subset` (paired t-test,
Holm-corrected) and their CSV/LaTeX exports are ``dsr.evaluation.tables``'.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from dsr.board import runcheck
from dsr.board.intake import compressed, ranking_digest
from dsr.collections import REGISTERED, load_collection
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import read_trec_run
from dsr.evaluation.experiment import significance_by_subset, subset_indices
from dsr.evaluation.measures import DEFAULT_MEASURES, Evaluator, TopicValues, nan_to_none
from dsr.evaluation.qrels import GRADE_RANGE, qrels_from_collection
from dsr.evaluation.results import Results, System
from dsr.evaluation.significance import ALPHA
from dsr.evaluation.validate import Validation, validate_run

#: hidden phases: the fewest dialogues a published mean may cover (``add-phase --min-dialogues``)
MIN_DIALOGUES = 20


@dataclass
class PhaseData:
    """What scoring a phase needs, built once per phase (and collection hash)."""

    collection: Collection  # restricted to the phase's topics, in order
    qrels: dict[str, dict[str, int]]
    measures: list[str]
    subsets: dict[str, np.ndarray]  # the aggregates published: hidden phases, see publishable_subsets
    evaluator: Evaluator
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: which subsets a hidden phase merges or withholds, and why
    subset_notes: list[str] = field(default_factory=list)
    _pairs: runcheck.PairIndex | None = None

    @property
    def topics(self) -> list[str]:
        return self.collection.ids

    def pairs(self) -> runcheck.PairIndex:
        """The phase's (topic, candidate) pairs numbered, built on first use."""
        if self._pairs is None:
            with self.lock:
                if self._pairs is None:
                    self._pairs = runcheck.PairIndex.of(self.collection)
        return self._pairs


@dataclass(frozen=True)
class PhaseSpec:
    """What a phase's :class:`PhaseData` is built from (a phase row's fields): its ``key``
    names it in the server's cache and in every scoring worker's."""

    collection_ref: str
    collection_hash: str
    topics_json: str
    measures_json: str
    labels_json: str | None
    min_dialogues: int | None  # hidden phases: see publishable_subsets
    groups_json: str | None = None  # hidden phases: the subsets' shown names (Phase.groups_json)

    @functools.cached_property
    def key(self) -> str:
        """A digest of the spec (computed once a spec: a hidden phase's labels are megabytes
        on a SIGIR-sized collection)."""
        return hashlib.sha256(
            "\n".join(
                [
                    self.collection_hash,
                    self.measures_json,
                    self.topics_json,
                    self.labels_json or "",
                    str(self.min_dialogues),
                    self.groups_json or "",
                ]
            ).encode()
        ).hexdigest()

    def build(self, name: str) -> PhaseData:
        """Load the collection (an InputError when its content changed since the phase was
        added: ``name`` says which phase) and build the phase's scoring data."""
        collection = load_collection_ref(self.collection_ref)
        if collection.content_hash != self.collection_hash:
            raise InputError(
                f"the collection {self.collection_ref!r} changed since phase "
                f"{name} was added (hash {collection.content_hash[:12]}… instead of "
                f"{self.collection_hash[:12]}…)"
            )
        labels = json.loads(self.labels_json) if self.labels_json else None
        groups = json.loads(self.groups_json) if self.groups_json else None
        return build_phase_data(
            collection,
            json.loads(self.topics_json),
            labels,
            json.loads(self.measures_json),
            min_dialogues=self.min_dialogues,
            groups=groups,
        )


def split_ref(collection: str, split: str | None) -> str:
    """A phase's collection reference: ``collection`` (a registered name or a path), with a
    registered collection's ``split`` as ``NAME:SPLIT``."""
    if split is None:
        return collection
    if collection not in REGISTERED:
        raise InputError(f"a split is for registered collections ({', '.join(REGISTERED)}), not {collection!r}", field="split")
    load_collection(collection, split=split)  # an unknown split is named now
    return f"{collection}:{split}"


def load_collection_ref(ref: str) -> Collection:
    """The collection a phase names: a path, a registered name, or ``NAME:SPLIT``."""
    name, sep, split = ref.partition(":")
    if sep and name in REGISTERED and not Path(ref).exists():
        return load_collection(name, split=split)
    return load_collection(ref)


def phase_topics(collection: Collection, labels: dict[str, dict[str, int]] | None) -> list[str]:
    """The collection's dialogues that a phase scores: all, or those the hidden labels judge.

    Hidden labels must name dialogues and candidates of the collection (an
    InputError names the first that does not).
    """
    if labels is None:
        return collection.ids
    for topic, docs in labels.items():
        if topic not in collection:
            raise InputError(f"topic {topic!r} of the labels is not a dialogue of {collection.name}", record=topic)
        candidates = set(collection.candidate_ids(topic))
        for doc, grade in docs.items():
            if doc not in candidates:
                raise InputError(f"doc {doc!r} of the labels is not a candidate of topic {topic!r}", record=topic, field="docid")
            if isinstance(grade, bool) or not isinstance(grade, int) or not GRADE_RANGE[0] <= grade <= GRADE_RANGE[1]:
                raise InputError(
                    f"the grade of doc {doc!r} is not a whole number trec_eval holds (a 32-bit integer): {grade!r}",
                    record=topic,
                    field="grade",
                )
    return [t for t in collection.ids if t in labels]


def build_phase_data(
    collection: Collection,
    topics: list[str],
    labels: dict | None,
    measures: list[str],
    min_dialogues: int | None = None,
    groups: dict[str, str] | None = None,
) -> PhaseData:
    """``min_dialogues`` (hidden phases): only subsets that pass :func:`publishable_subsets`;
    ``groups``: the subsets' shown names (a subset it does not name keeps its own)."""
    chosen = [collection[t] for t in topics]
    if groups:
        chosen = [replace(d, subset=groups.get(d.subset, d.subset)) for d in chosen]
    sub = Collection(collection.name, chosen, meta=collection.meta)
    qrels = qrels_from_collection(sub) if labels is None else {t: dict(labels[t]) for t in topics}
    evaluator = Evaluator(qrels, list(measures), topics)
    subsets, notes = subset_indices(sub), list[str]()
    if min_dialogues is not None:
        subsets, notes = publishable_subsets(subsets, min_dialogues)
    return PhaseData(sub, qrels, evaluator.names, subsets, evaluator, subset_notes=notes)


def publishable_subsets(subsets: dict[str, np.ndarray], minimum: int) -> tuple[dict[str, np.ndarray], list[str]]:
    """The aggregates a hidden phase may publish, and notes on the subsets merged or withheld.

    Subsets partition the dialogues, and the number of dialogues in each is public, so
    a mean over few dialogues, or the mean of "all" minus the published subsets, gives
    away per-dialogue values. Every published group and the rest of "all" beside them
    covers at least ``minimum`` dialogues (or none): a subset that falls short, or
    whose complement does, is merged with the others that do (one group named
    ``a+b``) when that group passes, else withheld; while the unpublished rest is too
    small, the smallest published subset joins it.
    """
    total = len(subsets["all"])
    if total < minimum:
        raise InputError(
            f"the phase has {total} dialogues, fewer than the {minimum} every mean of "
            "a hidden phase must cover: add dialogues or lower `min_dialogues`",
            field="min_dialogues",
        )
    fits = lambda n: n >= minimum and (total - n >= minimum or n == total)  # noqa: E731
    own = {k: v for k, v in subsets.items() if k != "all"}
    kept = {k: v for k, v in own.items() if fits(len(v))}
    notes = [
        f"subset {k!r} ({len(v)} dialogues): "
        + (
            f"fewer than {minimum} dialogues"
            if len(v) < minimum
            else f"all minus it leaves {total - len(v)} dialogues, fewer than {minimum}"
        )
        for k, v in own.items()
        if k not in kept
    ]
    rest = [k for k in own if k not in kept]
    size = lambda names: sum(len(own[k]) for k in names)  # noqa: E731
    while rest and 0 < size(rest) < minimum and kept:
        joins = min(kept, key=lambda k: len(kept[k]))
        notes.append(
            f"subset {joins!r} ({len(kept.pop(joins))} dialogues): all minus the published "
            f"subsets would leave {size(rest)} dialogues, fewer than {minimum}"
        )
        rest.append(joins)
    rest = [k for k in own if k in rest]
    out = {"all": subsets["all"], **kept}
    merged = "+".join(rest)
    if len(rest) > 1 and fits(size(rest)) and size(rest) < total:
        out[merged] = np.sort(np.concatenate([own[k] for k in rest]))
        notes = [f"{n}: merged into {merged!r} ({size(rest)} dialogues)" for n in notes]
    else:
        notes = [f"{n}: withheld" for n in notes]
    return out, notes


@dataclass
class Scored:
    validation: Validation
    values: TopicValues | None = None

    def means(self, subsets: dict[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
        assert self.values is not None, "a refused run has no means"
        return {s: dict(zip(self.values.measures, map(nan_to_none, self.values.mean(idx)))) for s, idx in subsets.items()}


def check_and_score(data: PhaseData, path: str | Path, strict: bool = False) -> Scored:
    """Validate the run file at ``path`` against the phase (``strict``: ties as float32 are
    problems, ``dsr validate --strict``); score it when valid."""
    validation = validate_run(data.collection, path, strict=strict)
    if not validation.valid:
        return Scored(validation)
    run = read_trec_run(path)
    with data.lock:  # one evaluator per phase, shared by the server's threads
        values = data.evaluator(run)
    return Scored(validation, values)


@dataclass
class Checked:
    """A submitted run checked and scored (:func:`score_text`): ``scored`` and the ranking's
    digest, or ``error`` (the reader refused a run the validator passed: should not happen)."""

    ranking: str
    scored: Scored | None = None
    error: str | None = None
    #: the run's problems in all, when the validation keeps only the first :data:`MAX_PROBLEMS`
    problems: int = 0


#: the problems of an invalid run kept in its answer (a run of millions of bad lines, a few KB
#: gzipped, made the worker's answer and the 422 hundreds of megabytes)
MAX_PROBLEMS = 100

Scratch = Callable[[bytes], AbstractContextManager[Path]]


def score_text(data: PhaseData, text: bytes, strict: bool, scratch: Scratch) -> Checked:
    """A submitted run's bytes parsed once (:func:`dsr.board.runcheck.parse`), validated and
    scored; a run that is not the plain case is written to ``scratch(text)`` (a private
    temporary file) for the line-by-line validator, which names every problem."""
    packed = compressed(text)
    if packed is not None:  # intake refuses it first; never unpacked here (no cap would hold)
        return Checked("", error=f"the run holds a {packed} stream: the board unpacks one layer of gzip, no more")
    parsed = runcheck.parse(data.pairs(), text)
    if parsed is None or (strict and parsed.tied_topics):
        ranking = ranking_digest(text)
        with scratch(text) as path:
            try:
                scored = check_and_score(data, path, strict=strict)
            except InputError as err:
                return Checked(ranking, error=err.message)
        found = len(scored.validation.problems)
        del scored.validation.problems[MAX_PROBLEMS:]
        return Checked(ranking, scored, problems=found)
    validation = Validation(
        "run",
        data.collection.name,
        lines=parsed.lines,
        topics=len(data.topics),
        expected_topics=len(data.topics),
        tags=parsed.tags,
        tied_topics=parsed.tied_topics,
    )
    with data.lock:
        values = data.evaluator(parsed.scores)
    return Checked(parsed.ranking_sha256, Scored(validation, values))


def matrix_bytes(values: np.ndarray) -> bytes:
    return np.ascontiguousarray(values, dtype="<f8").tobytes()


def matrix_from_bytes(blob: bytes, n_measures: int) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f8").reshape(-1, n_measures)


@dataclass
class BoardRow:
    """One row of a board: a stored submission and its per-topic values."""

    key: str  # unique row label (team / system #id)
    submission_id: int
    team: str
    system: str
    baseline: bool
    created_at: object
    values: np.ndarray  # (topics, measures)


def board_results(data: PhaseData, phase_label: str, rows: list[BoardRow], baseline_key: str | None) -> Results:
    """The rows as an :class:`dsr.evaluation.results.Results` (all-dialogue means per subset), with the
    paired t-test (Holm across the rows) against ``baseline_key`` when given."""
    runs = {r.key: TopicValues(data.topics, data.measures, r.values) for r in rows}
    systems = {r.key: System(r.key, "run", r.values) for r in rows}
    info = {r.key: {"submission": r.submission_id, "team": r.team, "system": r.system} for r in rows}
    described = {**data.collection.describe(), "phase": phase_label}
    described.pop("meta", None)  # holds the organiser's file path
    results = Results(
        described,
        data.topics,
        [d.subset for d in data.collection.dialogues],
        data.subsets,
        data.measures,
        runs,
        info,
        systems,
        test="t",
        alpha=ALPHA,
        n_resamples=0,
    )
    if baseline_key is not None and baseline_key in systems and len(rows) > 1:
        results.baseline = baseline_key
        results.significance = significance_by_subset(
            {k: s.per_topic for k, s in systems.items()}, baseline_key, data.measures, data.subsets, n_resamples=0
        )
    return results


def direction(results: Results, subset: str, key: str, measure: str) -> str:
    """ "better", "worse" or "tie" against the baseline (Holm-adjusted t-test p < alpha), "" untested."""
    entry = (results.significance or {}).get(subset, {}).get(key, {}).get(measure)
    if not entry or entry.get("t_holm") is None:
        return ""
    if entry["t_holm"] < results.alpha:
        return "better" if entry["diff"] > 0 else "worse"
    return "tie"


def labels_to_json(labels: dict[str, dict[str, int]]) -> str:
    return json.dumps(labels, sort_keys=True)


def default_measures() -> list[str]:
    return list(DEFAULT_MEASURES)
