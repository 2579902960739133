"""``dsr.evaluate``, the one door of an evaluation: ``dsr evaluate`` parses its command line
into an :class:`~dsr.evaluation.settings.EvaluateSettings` and calls :func:`evaluate`, and so
does a script (``dsr.evaluate(collection, runs, settings)``, or keywords that build the same
record). The rules between settings are checked here, once for both doors: the protocol and
its splits, tuning and the protocol, trec_eval's ``-l`` against the measures and its release.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from dsr.collections import load_collection
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run, as_run
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.grouping import auto_families, run_names
from dsr.evaluation.measures import parse_measures, split_measure_list
from dsr.evaluation.protocol import Splits, resolve_splits
from dsr.evaluation.qrels import as_qrels, collection_from_qrels
from dsr.evaluation.results import ConfigSource, Results
from dsr.evaluation.settings import EvaluateSettings
from dsr.evaluation.trec_eval import apply_rules, check_release, with_relevance_level


def evaluate(
    collection: Collection | str | os.PathLike[str] | None = None,
    runs: Mapping[str, Any] | Sequence[Any] = (),
    settings: EvaluateSettings | None = None,
    *,
    qrels: Any = None,
    tune: Mapping[str, Any] | str | None = None,
    run_info: Mapping[str, dict[str, Any]] | None = None,
    progress: bool = False,
    **given: Any,
) -> Results:
    """Measure ``runs`` on ``collection`` with ``settings`` (an
    :class:`~dsr.evaluation.settings.EvaluateSettings`; keywords of its fields build or
    change one: ``dsr.evaluate(c, runs, measures=["RR"], baseline="BM25")``).

    * ``collection``: a Collection, a registered name or a benchmark path; or None
      with ``qrels`` (a TREC qrels path, ``ranx.Qrels``, a DataFrame qid/docno/label
      or ``{qid: {docno: grade}}``): every topic of the qrels is scored, as trec_eval -c.
    * ``runs``: ``{name: run}`` or a list of runs; a run is a path, a ``Run``, a
      PyTerrier-shaped DataFrame (qid, docno, score[, rank]), a ``ranx.Run`` or a dict
      ``{qid: {docno: score}}`` (see :func:`dsr.core.run.as_run`). A list names
      files as ``dsr evaluate`` does, other runs by their tag (else run1, run2, ...).
      A callable (no arguments, returning a Run) in a mapping is a lazy configuration.
    * ``tune``: ``{family: {config name: run}}`` (or a list of runs) tuned per split
      on val by ``target``; ``"auto"`` groups ``runs`` whose sidecars share a family.
    * ``run_info``: what the report says of each run (its sidecar), by name.
    * the settings: ``protocol`` ``"all"`` scores every dialogue once; ``"official"`` uses
      the collection's val/test splits (or the ``splits`` file, else ``n_splits`` seeded
      ones) and reports each run on the test halves; default: official when there are
      splits (or ``tune``), else all. ``baseline``: the run or family every other system is
      tested against; ``relevance_level``, ``max_docs`` and ``trec_eval``: trec_eval's
      ``-l``, ``-M`` and release. See :class:`~dsr.evaluation.settings.EvaluateSettings`.

    Returns :class:`dsr.evaluation.results.Results` (``table()``, ``plot()``, ``to_frame()``,
    ``per_topic_frame()``).
    """
    settings = EvaluateSettings.of(settings, given)  # checked first, by their Params
    measures = asked_measures(settings)
    loaded = _collection(collection, qrels)
    named = _named_runs(runs)
    families = _families(tune, named)
    splits = _splits(settings, loaded, tuned=tune is not None)
    apply_rules(_distinct_runs(named, families), settings.trec_eval, settings.max_docs)
    return evaluate_runs(
        loaded,
        named,
        settings=replace(settings, measures=measures),
        splits=splits,
        families=families,
        run_info=run_info,
        progress=progress,
    )


def asked_measures(settings: EvaluateSettings) -> tuple[str, ...] | None:
    """The measures asked for (None: the default set), with trec_eval's ``-l`` applied and
    checked against its release, before any file is read."""
    written = split_measure_list(settings.measures) if settings.measures else None
    measures = parse_measures(written) if written else None
    if settings.relevance_level is not None:
        measures = with_relevance_level(measures or parse_measures(), settings.relevance_level, written or [])
    check_release(measures or parse_measures(), settings.trec_eval)
    if settings.primary:
        parse_measures([settings.primary], field="primary")
    return tuple(map(str, measures)) if measures is not None else None


def _splits(settings: EvaluateSettings, collection: Collection, tuned: bool) -> Splits | None:
    """The protocol's splits (None: every dialogue once): ``official`` when asked, or by
    default when there are splits (the file's, the collection's) or families to tune
    (``tuned``: ``tune`` was given, whether or not it formed a family)."""
    protocol = settings.protocol or ("official" if (settings.splits or collection.splits or tuned) else "all")
    if protocol == "all" and tuned:
        raise InputError("tuning needs val/test splits: use `protocol` official", field="tune")
    if protocol == "all" and settings.splits:
        raise InputError("`splits` is for `protocol` official", field="splits")
    if protocol != "official":
        return None
    return resolve_splits(collection, settings.splits, settings.n_splits, settings.seed)


def _families(tune: Mapping[str, Any] | str | None, named: Mapping[str, Any]) -> dict[str, dict[str, ConfigSource]]:
    if isinstance(tune, str):
        if tune != "auto":
            raise InputError(f"tune must be 'auto' or {{family: runs}}, got {tune!r}", field="tune")
        return {f: dict(configs) for f, configs in auto_families(named, list(named)).items()}
    return {f: dict(_named_runs(c)) for f, c in (tune or {}).items()}


def _distinct_runs(named: Mapping[str, Any], families: Mapping[str, Mapping[str, Any]]) -> list[Run]:
    """Every Run given, once (a run in ``runs`` and in a family is one object)."""
    every = [*named.values(), *(r for configs in families.values() for r in configs.values())]
    return list({id(r): r for r in every if isinstance(r, Run)}.values())


def _collection(collection: Collection | str | os.PathLike[str] | None, qrels: Any) -> Collection:
    if qrels is not None:
        if collection is not None:
            raise InputError("give a collection or qrels, not both (a collection holds its qrels)", field="qrels")
        return collection_from_qrels(as_qrels(qrels))
    if collection is None:
        raise InputError("give a collection (a name, a path or a Collection) or qrels=", field="collection")
    return load_collection(os.fspath(collection)) if isinstance(collection, (str, os.PathLike)) else collection


def _named_runs(runs: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    """``{name: Run}`` from a mapping or a list of anything :func:`dsr.core.run.as_run` reads."""
    if isinstance(runs, Mapping):  # a callable (no arguments, returns a Run) is a lazy configuration
        return {str(name): run if callable(run) else as_run(run, str(name)) for name, run in runs.items()}
    paths = [str(r) for r in runs if isinstance(r, (str, os.PathLike))]
    file_names = run_names(paths)
    out: dict[str, Any] = {}
    for k, run in enumerate(runs):
        converted = as_run(run)
        tag = converted.tag if converted.tag not in (None, "", "dsr") else f"run{k + 1}"
        name = file_names[str(run)] if isinstance(run, (str, os.PathLike)) else tag
        while name in out:
            name = f"{name}#{k + 1}"
        out[name] = converted
    return out
