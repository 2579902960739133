"""Fusion through ranx (Bassani, "ranx.fuse: a Python library for metasearch", CIKM 2022):
every one of its 25 methods and 7 normalisations, called as ranx calls them.

dsr computes six of ranx's methods with its own numpy kernels (:mod:`dsr.core.fusion`:
``rrf``, ``isr``, ``borda`` = ranx ``bordafuse``, ``combsum`` = ``sum``, ``combmnz`` = ``mnz``,
``wsum``; the same fused runs as ranx's, file for file, and RRF's kernel is what the 181
fusions of ``dsr reproduce`` need to stay fast); every other method is ranx's own code,
through :func:`fuse_with_ranx`. :data:`RANX_METHODS` declares them: ranx's name, what the
method reads of each run (``rank``: the order only; ``score``: normalised scores), its
parameters, and which of those it learns from relevance labels when not given:

* ``trained``: bayesfuse, mapfuse, posfuse, probfuse, segfuse and slidefuse always learn from
  labels (probabilities per rank or segment, each run's MAP), by ranx's ``optimize_fusion``;
* the weighted methods (``mixed``, ``w_bordafuse``, ``w_condorcet``, ``wmnz``) take ``weights``,
  and ``gmnz`` its ``gamma``, ``rbc`` its ``phi``; without them they are learnt from labels the
  same way (a grid search of ranx's on ``metric``, ranx's default ``ndcg``);
* ``rrf``'s ``k``, ``wsum``'s ``weights``, ``logn_isr``'s ``sigma`` and ``interp``'s ``weight``
  (:data:`TUNED`) have defaults, and are learnt the same way when labels are given and they are
  not (then ranx fuses with what it learnt, so the run is ranx's).

Without labels such a method is refused (InputError naming ``labels``). Labels are relevance
grades ``{topic: {doc: grade}}``: a collection's, or a qrels file's. Learning on the labels a
fused run is then scored on overstates it (as it would with ranx): learn on a held-out split.

What a run hands ranx (``backend``):

* ``"dsr"`` (the default): each run's documents in dsr's order, which is trec_eval's (score as
  float32 descending, ties by doc id descending), so a rank-based method sees the ranks
  trec_eval scores the input run by;
* ``"ranx"``: each run as ``ranx.Run.from_file`` reads its file: the lines in file order, then
  ranx's own sort by score. ranx sorts with numba's ``np.argsort`` (quicksort, not stable), so
  the order it gives documents whose scores tie is neither the file's nor the doc ids': RRF of
  integer-scored BM25 runs (Anserini's) differs between the two by that alone. ``backend="ranx"``
  reproduces ranx's fused run file for file.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dsr.core.errors import InputError
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.core.ties import strictly_decreasing

Scores = dict[str, dict[str, float]]

#: ranx's normalisations, by its names; dsr's names for the same ones are aliases
RANX_NORMS = ("min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda")
NORM_ALIASES = {"minmax": "min-max", "min_max": "min-max", "min_max_inverted": "min-max-inverted"}
BACKENDS = ("dsr", "ranx")
#: the fusion backend as a setting (``dsr.fuse(backend=...)``, ``dsr fuse --backend``, the fusion
#: ranker's ``backend``)
BACKEND = Param(
    "backend",
    "dsr",
    "str",
    "dsr: runs as dsr reads them, dsr's kernels where it has one; ranx: runs as ranx reads their files, every method by ranx",
    choices=BACKENDS,
)
#: ranx's default optimisation measure (its name: ranx's metric strings, e.g. ndcg@5, map)
METRIC = "ndcg"


@dataclass(frozen=True)
class RanxMethod:
    """One of ranx's fusion methods as dsr offers it."""

    #: ranx's name (``ranx.fuse(method=...)``)
    ranx: str
    #: ``rank`` (reads each run's order), ``score`` (normalised scores) or ``trained``
    kind: str
    #: its parameters (dsr's names, which are ranx's) and defaults; None: learnt from labels
    params: dict[str, Any] = field(default_factory=dict)
    #: one line of help, with the paper
    about: str = ""

    @property
    def name(self) -> str:
        """dsr's name of the method, ranx's (its key in the registry)."""
        return self.ranx


_W = {"weights": None}
RANX_METHODS: dict[str, RanxMethod] = {
    "anz": RanxMethod("anz", "score", {"norm": "min-max"}, "CombANZ: CombSUM / runs retrieving d (Fox and Shaw, TREC-2 1994)"),
    "max": RanxMethod("max", "score", {"norm": "min-max"}, "CombMAX: the highest score (Fox and Shaw 1994)"),
    "min": RanxMethod("min", "score", {"norm": "min-max"}, "CombMIN: the lowest score (Fox and Shaw 1994)"),
    "med": RanxMethod("med", "score", {"norm": "min-max"}, "CombMED: the median score (Fox and Shaw 1994)"),
    "gmnz": RanxMethod(
        "gmnz",
        "score",
        {"norm": "min-max", "gamma": None},
        "CombGMNZ: CombSUM x (runs retrieving d)^gamma (Joon Ho Lee, SIGIR 1997)",
    ),
    "wmnz": RanxMethod("wmnz", "score", {"norm": "min-max", **_W}, "weighted CombMNZ (Wu, Data Fusion in IR, 2012)"),
    "mixed": RanxMethod("mixed", "score", {"norm": "min-max", **_W}, "mixed: weighted RRF and CombSUM (Wu 2012)"),
    "log_isr": RanxMethod("log_isr", "rank", {}, "log inverse square rank (Mourão et al., CMIG 2015)"),
    "logn_isr": RanxMethod("logn_isr", "rank", {"sigma": 0.01}, "logN inverse square rank (Mourão et al., CMIG 2015)"),
    "condorcet": RanxMethod("condorcet", "rank", {}, "Condorcet voting (Montague and Aslam, CIKM 2002)"),
    "w_condorcet": RanxMethod("w_condorcet", "rank", dict(_W), "weighted Condorcet (Montague and Aslam 2002)"),
    "w_bordafuse": RanxMethod("w_bordafuse", "rank", dict(_W), "weighted Borda count (Aslam and Montague, SIGIR 2001)"),
    "rbc": RanxMethod("rbc", "rank", {"phi": None}, "rank-biased centroids (Bailey et al., SIGIR 2017)"),
    "bayesfuse": RanxMethod(
        "bayesfuse", "trained", {"norm": "min-max"}, "Bayes-fuse: log-odds of relevance by rank, learnt (Aslam and Montague 2001)"
    ),
    "mapfuse": RanxMethod(
        "mapfuse", "trained", {"norm": "min-max"}, "MAPFuse: each run's MAP / rank, learnt (Lillis et al., SIGIR 2010)"
    ),
    "posfuse": RanxMethod(
        "posfuse", "trained", {"norm": "min-max"}, "PosFuse: relevance probability per rank, learnt (Lillis et al. 2010)"
    ),
    "probfuse": RanxMethod(
        "probfuse",
        "trained",
        {"norm": "min-max"},
        "ProbFuse: relevance probability per segment, learnt (Lillis et al., SIGIR 2006)",
    ),
    "segfuse": RanxMethod(
        "segfuse", "trained", {"norm": "min-max"}, "SegFuse: probabilities of growing segments, learnt (Shokouhi, ECIR 2007)"
    ),
    "slidefuse": RanxMethod(
        "slidefuse",
        "trained",
        {"norm": "min-max"},
        "SlideFuse: probabilities over a sliding window, learnt (Lillis et al., ECIR 2008)",
    ),
}
#: dsr's own kernels, and ranx's method and parameters for each (computed by ranx with
#: ``backend="ranx"`` or a normalisation dsr does not compute)
SHARED = {"rrf": "rrf", "isr": "isr", "borda": "bordafuse", "combsum": "sum", "combmnz": "mnz", "wsum": "wsum", "interp": "wsum"}
#: ranx's names for dsr's methods, accepted as they are
RANX_ALIASES = {"bordafuse": "borda", "sum": "combsum", "mnz": "combmnz"}


#: the methods ranx's ``optimize_fusion`` tunes by a search on ``metric`` (the others are trained
#: without one: bayesfuse, mapfuse, posfuse, segfuse)
SEARCHED = frozenset(
    {"gmnz", "wmnz", "mixed", "w_condorcet", "w_bordafuse", "rbc", "probfuse", "slidefuse", "logn_isr", "rrf", "wsum"}
)


def ranx_norm(norm: str | None) -> str | None:
    """ranx's name of a normalisation (dsr's ``minmax`` is ranx's ``min-max``); InputError
    naming ``norm`` for one neither has."""
    if norm is None:
        return None
    norm = NORM_ALIASES.get(norm, norm)
    if norm not in RANX_NORMS:
        raise InputError(
            f"unknown normalisation {norm!r}; choose from {', '.join(RANX_NORMS)} (dsr's minmax, zscore, sum and rank too)",
            field="norm",
        )
    return norm


def reads_order(method: str, norm: str | None) -> bool:
    """Whether ``method`` under ``norm`` reads each run's order (then ties in a run decide ranks):
    the rank-based and trained methods, and any under the rank or borda normalisation."""
    spec = RANX_METHODS.get(method)
    kind = spec.kind if spec else ("rank" if method in ("rrf", "isr", "borda") else "score")
    return kind in ("rank", "trained") or norm in ("rank", "borda")


#: parameters that have a default and that ranx's ``optimize_fusion`` tunes: not given, they are
#: learnt when labels are given (``dsr fuse --qrels`` or ``--collection``), else the default holds
#: (rrf k = 60, wsum equal weights, logn_isr sigma = 0.01, interp weight = 0.5: interp is ranx's
#: wsum of two runs, whose weights ``(weight, 1 - weight)`` ranx learns); a value given is kept
TUNED = {"rrf": "k", "wsum": "weights", "logn_isr": "sigma", "interp": "weight"}


def tunes(method: str, params: Mapping[str, Any]) -> list[str]:
    """The parameter of :data:`TUNED` that ``method`` would learn from labels with ``params``
    (one not given: a key absent, as the command line and ``dsr.fuse`` leave it; [] otherwise)."""
    name = TUNED.get(method)
    return [name] if name is not None and name not in params else []


def learns(method: str, params: Mapping[str, Any]) -> list[str]:
    """What ``method`` would learn from labels with ``params``: its trained probabilities, or
    the parameters left None ([] when it learns nothing)."""
    spec = RANX_METHODS.get(method)
    if spec is None:
        return []
    missing = [k for k, default in spec.params.items() if params.get(k, default) is None]
    return ["its model"] if spec.kind == "trained" else missing


def fuse_with_ranx(
    runs: Sequence[Run],
    method: str,
    *,
    labels: Mapping[str, Mapping[str, int]] | None = None,
    backend: str = "dsr",
    **params: Any,
) -> tuple[Scores, dict[str, Any]]:
    """Fuse ``runs`` with ranx's ``method`` (a :data:`RANX_METHODS` name, or one of dsr's methods
    by :data:`SHARED`): ``(fused scores per topic, what was learnt from labels)``. Topics are the
    union of the runs'; a run lacking one contributes nothing to it."""
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}", field="backend")
    ranx = _ranx()
    name, norm, given = _ranx_call(method, params, len(runs))
    topics = list(dict.fromkeys(q for run in runs for q in run.rankings))
    missing = learns(method, params) or (tunes(method, params) if labels else [])
    learnt: dict[str, Any] = {}
    shown: dict[str, Any] = {}
    if missing:
        metric = params.get("metric", METRIC)
        learnt = _learn(runs, method, name, norm, labels, backend, missing, metric)
        shown = {**_shown(learnt), **({"metric": metric, "grid": _grid(name)} if name in SEARCHED else {})}
        if method == "interp":
            shown["weight"] = shown["weights"][0]  # ranx's wsum weights (weight, 1 - weight)
    by_order = reads_order(method, norm)
    with _quiet():
        fused = ranx.fuse(
            [_to_ranx(run, topics, backend, by_order) for run in runs], norm=norm, method=name, params={**given, **learnt}
        )
    out = fused.to_dict()
    return {q: out[q] for q in topics if q in out}, shown


def _ranx_call(method: str, params: Mapping[str, Any], n_runs: int) -> tuple[str, str | None, dict[str, Any]]:
    """ranx's method name, normalisation and parameters for dsr's ``method`` and ``params``."""
    params = {k: v for k, v in params.items() if k != "metric"}
    norm = ranx_norm(params.pop("norm", "min-max" if method in ("combsum", "combmnz", "wsum", "interp") else None))
    if method in SHARED:
        if method == "interp":
            weight = float(params.pop("weight", 0.5))
            params["weights"] = [weight, 1 - weight]
        elif method == "wsum" and params.get("weights") is None:
            params["weights"] = [1.0 / n_runs] * n_runs
        if method in ("rrf", "isr", "borda"):
            norm = None
        return SHARED[method], norm, _weights(params)
    spec = RANX_METHODS[method]
    if "norm" not in spec.params:
        norm = None
    elif norm is None:
        norm = spec.params["norm"]
    given = {k: v for k, v in params.items() if v is not None}
    return spec.ranx, norm, _weights(given)


def _weights(params: dict[str, Any]) -> dict[str, Any]:
    """``weights`` as a list of floats (``0.3,0.7`` from the command line)."""
    weights = params.get("weights")
    if isinstance(weights, str):
        try:
            params["weights"] = [float(w) for w in weights.split(",") if w.strip()]
        except ValueError:
            raise InputError(f"weights must be numbers, comma separated, got {weights!r}", field="weights") from None
    return params


def _learn(
    runs: Sequence[Run],
    method: str,
    name: str,
    norm: str | None,
    labels: Mapping[str, Mapping[str, int]] | None,
    backend: str,
    missing: list[str],
    metric: str,
) -> dict[str, Any]:
    """ranx's ``optimize_fusion`` on the topics that have labels: the learnt parameters."""
    ranx = _ranx()
    if not labels:
        raise InputError(
            f"{method} learns {', '.join(missing)} from relevance labels, and none were "
            "given: pass `labels` (a collection's or a qrels file's)"
            + (f", or give {', '.join(missing)}" if missing != ["its model"] else ""),
            field="labels",
        )
    topics = [q for q in dict.fromkeys(q for run in runs for q in run.rankings) if labels.get(q)]
    if not topics:
        raise InputError(f"no topic of the runs has labels to learn {method} from", field="labels")
    qrels = ranx.Qrels.from_dict({q: {d: int(g) for d, g in labels[q].items()} for q in topics})
    options = {"metric": metric, "show_progress": False} if name in SEARCHED else {}
    try:
        with _quiet():
            return dict(
                ranx.optimize_fusion(
                    qrels,
                    [_to_ranx(run, topics, backend, reads_order(method, norm)) for run in runs],
                    norm=norm,
                    method=name,
                    **options,
                )
            )
    except (ValueError, KeyError) as err:
        raise InputError(f"ranx could not learn {method}: {err}", field="metric") from None


def _grid(name: str) -> dict[str, Any]:
    """The grid ranx's optimiser of ``name`` searches: its keyword defaults (``min_k``, ``max_k``,
    ``step``...), read from ranx itself so that the sidecar says what this ranx searched."""
    signature = inspect.signature(_ranx().fusion_optimization.optimization_switch(name)).parameters.values()
    return {
        p.name: p.default
        for p in signature
        if isinstance(p.default, (int, float)) and not isinstance(p.default, bool) and p.name != "show_progress"
    }


def _shown(learnt: Mapping[str, Any]) -> dict[str, Any]:
    """What was learnt, for a sidecar: numbers and weights as they are, tables by their size."""
    shown: dict[str, Any] = {}
    for key, value in learnt.items():
        if isinstance(value, int) and not isinstance(value, bool):
            shown[key] = value  # rrf's k, probfuse's segments: integers in ranx's grid
        elif isinstance(value, float) or getattr(value, "ndim", 1) == 0:
            shown[key] = float(value)
        elif all(isinstance(v, (int, float)) or getattr(v, "ndim", 1) == 0 for v in value):
            shown[key] = [float(v) for v in value]  # weights, each run's MAP
        else:
            shown[key] = f"learnt from labels (a table per run, {len(value)} runs)"
    return shown


def _to_ranx(run: Run, topics: Sequence[str], backend: str, by_order: bool = True) -> Any:
    """``run`` as a ranx Run over ``topics`` (an empty ranking for a topic it lacks). ranx sorts a
    run by score when it makes one: under ``dsr``, for a method that reads the order (``by_order``),
    each topic keeps its scores where they strictly decrease in dsr's order and takes the scores
    dsr writes (the tie rule's, strictly decreasing as float32) where they do not, so ranx's sort
    gives dsr's order; a method that reads only scores gets them as they are. Under ``ranx`` the
    file's lines go in as ranx reads them and ranx's sort decides."""
    lines = getattr(run, "line_order", None) or {} if backend == "ranx" else {}
    scores: dict[str, dict[str, float]] = {}
    for qid in topics:
        ranked = lines.get(qid) or run.rankings.get(qid, [])
        if backend == "dsr" and by_order and any(a[1] <= b[1] for a, b in zip(ranked, ranked[1:])):
            ranked = strictly_decreasing(ranked)
        scores[qid] = {doc: float(score) for doc, score in ranked}
    if not any(scores.values()):
        raise InputError(f"run {run.tag!r} ranks no document of these topics", field="runs")
    return _ranx().Run.from_dict(scores, name=run.tag)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """numba's warnings about ranx's casts kept off users' screens."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"ranx(\.|$)")
        warnings.filterwarnings("ignore", message=".*unsafe cast.*")
        yield


def _ranx() -> Any:
    """ranx (and numba through it), imported on first use, in this one place; its first call
    compiles numba code (cached by numba after that, see docs/api.md)."""
    try:
        import ranx
    except ImportError:
        raise InputError("fusion with ranx's methods needs ranx: pip install ranx") from None
    return ranx
