"""Fusion as stages: ``Fusion`` (runs in, one run out) and ``FusionRanker`` (rankers
fused into one ranker). The kernels (normalisations, RRF, CombSUM, ...) are the core
module :mod:`dsr.core.fusion`, shared with the corpus search."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from dsr import rankers as registry
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.fusion import METHODS, NORMS, canonical, fuse, method_params, tied_input_warnings
from dsr.core.fusion import check_params as check_fusion_params
from dsr.core.fusion_ranx import BACKEND, METRIC, learns, tunes
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.core.stage import Stage
from dsr.rankers.base import Ranker

#: the fusion parameters both stages take (with the values the split protocol tunes);
#: a method reads only its own (:func:`dsr.core.fusion.method_params`)
FUSION_PARAMS = (
    Param("method", "rrf", "str", "fusion method", choices=METHODS),
    Param("k", 60, "float", "rrf: the rank offset", low=0, grid=(1, 10, 30, 60, 100)),
    Param(
        "weight",
        0.5,
        "float",
        "interp: the weight of the first run (ranker)",
        low=0,
        high=1,
        grid=tuple(round(0.1 * i, 1) for i in range(11)),
    ),
    Param("norm", "minmax", "str", "score normalisation of the score-based methods (dsr's and ranx's)", choices=NORMS),
    Param(
        "weights",
        None,
        "str",
        "wsum and ranx's weighted methods: one weight per run (ranker), comma "
        "separated (default: wsum equal, ranx's learnt from the collection's labels)",
    ),
    Param("gamma", None, "float", "gmnz: the exponent (default: learnt from the collection's labels)", low=0),
    Param("phi", None, "float", "rbc: the persistence (default: learnt from the collection's labels)", above=0, high=1),
    Param("sigma", 0.01, "float", "logn_isr: the log base offset", above=0),
    Param("metric", METRIC, "str", "the measure a learnt parameter is searched on (ranx's names: ndcg, ndcg@5, map...)"),
    BACKEND,
)


def own_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters of ``params["method"]``, out of every fusion parameter (the backend apart)."""
    return {k: params[k] for k in method_params(params["method"])}


def fuse_stage(runs: list[Run], params: dict[str, Any], collection: Collection | None, tag: str) -> Run:
    """Both stages' fusion: the method's own parameters, the backend, and the collection's labels
    for a method that learns from them (refused without a collection that has labels)."""
    own = own_params(params)
    labels = None
    if collection is not None and learns(params["method"], own):
        labels = {d.id: {c.id: int(c.label) for c in d.candidates} for d in collection.dialogues}
    order = collection.initial_order() if collection is not None else None
    return fuse(runs, params["method"], initial_order=order, tag=tag, labels=labels, backend=params["backend"], **own)


#: ranx's trained methods: they learn tables, not a parameter a caller could give instead
TRAINED = ("bayesfuse", "mapfuse", "posfuse", "probfuse", "segfuse", "slidefuse")


def fuse_runs(
    runs: Sequence[Run],
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    names: Sequence[str] | None = None,
    collection: Collection | None = None,
    labels: Mapping[str, Mapping[str, int]] | None = None,
    backend: str = "dsr",
    tag: str | None = None,
    switch: str = "backend='ranx'",
) -> Run:
    """The one door of fusion (:func:`dsr.fuse` and ``dsr fuse`` both call it), with its rules:
    two runs or more with a topic in common, the method's own parameters, the labels a learnt
    method learns from (``labels``, else ``collection``'s; refused without either), and a
    warning on stderr for an input run whose own scores tie (``names``: the runs as the caller
    knows them; ``switch``: how the caller asks for the other tie rule)."""
    method = canonical(method)
    params = dict(params or {})
    check_fusion_params(method, params)
    names = list(names) if names is not None else [r.tag or f"run{k + 1}" for k, r in enumerate(runs)]
    if len(runs) < 2:
        raise InputError(f"fuse needs at least two runs, got {len(runs)}", field="runs")
    if not set.intersection(*(set(r.rankings) for r in runs)):
        raise InputError("the runs have no topic in common: are they runs of the same collection?", path=names[-1], field="qid")
    if labels is None and collection is not None and (learns(method, params) or tunes(method, params)):
        labels = {d.id: {c.id: int(c.label) for c in d.candidates} for d in collection.dialogues}
    if labels is None and learns(method, params):
        instead = "" if method in TRAINED else f" (or `params` {learns(method, params)[0]}=...)"
        raise InputError(
            f"{method} learns {', '.join(learns(method, params))} from relevance labels: give `qrels` or `collection`{instead}",
            field="qrels",
        )
    for warning in tied_input_warnings(names, runs, method, backend, switch, params.get("norm")):
        print(warning, file=sys.stderr)
    order = collection.initial_order() if collection is not None else None
    given = {q: dict(d) for q, d in labels.items()} if labels is not None else None
    return fuse(list(runs), method, initial_order=order, tag=tag, labels=given, backend=backend, **params)


def method_grid(method: str) -> dict[str, list[Any]]:
    """What the split protocol tunes for ``method``: k for rrf, weight for interp, nothing for
    combsum and combmnz (a normalisation is a choice, not a value to tune)."""
    grids = {p.name: list(p.grid) for p in FUSION_PARAMS if p.grid}
    return {k: grids[k] for k in method_params(method) if k in grids}


class Fusion(Stage):
    """Runs in, one run out, as a stage: ``Fusion(method="rrf", k=60)(collection, a, b)``.

    Ties follow :data:`dsr.core.fusion.TIE_RULE` with or without a collection. Only
    the method's own parameters are used (``k`` for rrf, ``norm`` for combsum and
    combmnz, ``weight`` and ``norm`` for interp).
    """

    name = "fuse"
    kind = "fusion"
    PARAMS = FUSION_PARAMS

    def describe(self) -> dict[str, Any]:
        learnt = getattr(self, "learnt", None)
        return {
            "fusion": self.params["method"],
            "params": own_params(self.params),
            "backend": self.params["backend"],
            **({"learnt": learnt} if learnt else {}),
        }

    @property
    def tag(self) -> str:
        own = [f"{k}={v}" for k, v in sorted(own_params(self.params).items())]
        return "-".join([self.params["method"], *own]).replace(" ", "_")

    def __call__(self, collection: Collection | None, *runs: Run) -> Run:
        run = fuse_stage(list(runs), self.params, collection, self.tag)
        self.learnt = run.config.pop("fusion_learnt", None)
        return run


class FusionRanker(Ranker):
    """Runs its sub-rankers on the collection and fuses their runs.

    ``rankers`` is a comma-separated list of registered rankers
    (``"bm25,dense"``). ``query`` (when set) is passed to every sub-ranker that
    takes a query strategy. Any sub-ranker parameter is passed through as
    ``RANKER.PARAM`` (``make_ranker("fusion", **{"bm25.k1": 1.2})``, on the
    command line ``--param bm25.k1=1.2``). ``k`` is used by rrf, ``weight`` by
    interp (the weight of the first ranker), ``norm`` by combsum, combmnz and
    interp; the others are ignored and left out of the tag.

    ``GRID`` (what the split protocol tunes on val) is over ``k`` for rrf and
    over ``weight`` for interp; combsum and combmnz have nothing to tune.
    """

    name = "fusion"
    PARAMS = (
        Param("rankers", "bm25,dense", "str", "two or more registered rankers, comma-separated"),
        *FUSION_PARAMS,
        Param("query", None, "str", "query strategy given to every sub-ranker that takes one"),
    )
    GRID = method_grid("rrf")  # the default method's; an instance's is its own method's

    def __init__(self, **params: Any) -> None:
        own = {k: v for k, v in params.items() if "." not in k}
        super().__init__(**own)
        names = [n.strip() for n in str(self.params["rankers"]).split(",") if n.strip()]
        if len(names) < 2:
            raise InputError(f"fusion needs at least two rankers, got {self.params['rankers']!r}", field="rankers")
        for n in names:
            if n not in registry.RANKERS or n == self.name:
                raise InputError(
                    f"unknown ranker {n!r} in rankers; choose from {', '.join(r for r in registry.RANKERS if r != self.name)}",
                    field="rankers",
                )
        method = self.params["method"]
        if method == "interp" and len(names) != 2:
            raise InputError(f"interp fuses exactly two rankers, got {len(names)}", field="rankers")
        self.names = names
        self.sub_params: dict[str, dict[str, Any]] = {n: {} for n in names}
        for key, value in params.items():
            if "." not in key:
                continue
            ranker, _, param = key.partition(".")
            if ranker not in self.sub_params or not param:
                raise InputError(f"parameter {key!r} names no ranker of this fusion ({', '.join(names)})", field="params")
            self.sub_params[ranker][param] = value
        self.GRID = method_grid(method)  # per instance: the grid depends on the method
        self._rankers: list[Ranker] | None = None
        self._configs: list[dict[str, Any]] = [{} for _ in names]

    @property
    def tag(self) -> str:
        parts = [self.name, self.params["method"], "+".join(self.names)]
        parts += [f"{k}={v}" for k, v in sorted(own_params(self.params).items())]
        if self.params["query"] is not None:
            parts.append(f"query={self.params['query']}")
        parts += [f"{r}.{k}={v}" for r in self.names for k, v in sorted(self.sub_params[r].items())]
        return "-".join(str(p) for p in parts).replace(" ", "_")

    def sub_rankers(self) -> list[Ranker]:
        """The sub-rankers, built (once) with their pass-through parameters."""

        if self._rankers is not None:
            return self._rankers
        rankers = []
        for n in self.names:
            cls = registry.ranker_class(n)
            params = dict(self.sub_params[n])
            if self.params["query"] is not None and "query" in cls.DEFAULTS:
                params.setdefault("query", self.params["query"])
            rankers.append(cls(**params))
        self._rankers = rankers
        return rankers

    def describe(self) -> dict[str, Any]:
        learnt = getattr(self, "learnt", None)
        return {
            "ranker": self.name,
            **({"learnt": learnt} if learnt else {}),
            "params": {**self.params, **{f"{r}.{k}": v for r in self.names for k, v in self.sub_params[r].items()}},
            "rankers": [{**config, **r.describe()} for r, config in zip(self.sub_rankers(), self._configs)],
        }

    def rank(self, collection: Collection) -> Run:
        """Each sub-ranker's run on ``collection``, fused. Afterwards describe() also
        holds what each sub-run recorded (models, indexes), less the collection."""
        runs = [ranker.rank(collection) for ranker in self.sub_rankers()]
        self._configs = [{k: v for k, v in run.config.items() if k != "collection"} for run in runs]
        run = fuse_stage(runs, self.params, collection, self.tag)
        self.learnt = run.config.pop("fusion_learnt", None)
        return run
