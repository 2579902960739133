"""Fusion: several runs in, one run out.

Each method is one small function over runs, returning unordered scores
``{topic: {doc: score}}``; :func:`fuse` turns them into a :class:`Run` with one
tie rule on every path (:data:`TIE_RULE`): the fused scores in the order trec_eval
9.0.8 gives a run file holding them (the score as float32, descending, ties by
sentence id, descending), whether or not a collection is given.

Methods
-------
``rrf``      Reciprocal rank fusion, ``sum 1 / (k + rank)`` (Cormack, Clarke and
             Büttcher, "Reciprocal rank fusion outperforms Condorcet and
             individual rank learning methods", SIGIR 2009; k = 60 there).
``combsum``  Sum of normalised scores (Fox and Shaw, "Combination of multiple
             searches", TREC-2, 1994).
``combmnz``  CombSUM times the number of runs that retrieved the document
             (Fox and Shaw 1994).
``interp``   ``weight * a + (1 - weight) * b`` on normalised scores of exactly
             two runs (Vogt and Cottrell, "Fusion via a linear combination of
             scores", Information Retrieval 1(3), 1999).
``wsum``     ``sum_i weights[i] * s_i(d)`` on normalised scores of any number of
             runs, one weight per run (the weighted CombSUM / linear combination
             of Bartell, Cottrell and Belew, "Automatic combination of multiple
             ranked retrieval systems", SIGIR 1994).
``isr``      Inverse square rank: ``n(d) * sum 1 / rank(d)^2``, n(d) the number of
             runs that retrieved d (Mourão, Martins and Magalhães, "Multimodal
             medical information retrieval with unsupervised rank fusion",
             CMIG 39, 2015).
``borda``    Borda count: in a topic with N documents in the union, a run gives
             ``N - rank + 1`` points to each document it ranks and shares the
             remaining points equally among those it does not (Aslam and
             Montague, "Models for metasearch", SIGIR 2001).

Score normalisation (per run, per topic) for the score-based methods:
``minmax`` maps the run's scores of a topic to [0, 1] (Lee, "Analyses of
multiple evidence combination", SIGIR 1997); ``zscore`` subtracts their mean
and divides by their (population) standard deviation (Montague and Aslam,
"Relevance score normalization for metasearch", CIKM 2001); ``sum`` shifts
them to start at 0 (min-max without the division) and divides by their sum,
so they add up to 1 (Montague and Aslam 2001, "Sum"); ``rank`` replaces each
score by ``1 - (rank - 1) / n`` for the run's n documents of the topic
(Renda and Straccia, "Web metasearch: rank vs. score based rank aggregation
methods", SAC 2003). A topic whose scores in a run are all equal carries no
ranking information and normalises to 0 under minmax, zscore and sum.

ranx (Bassani, ECIR 2022) implements several of these: ``rrf``, ``isr``, ``borda``
(``bordafuse``), ``combsum`` (``sum``), ``combmnz`` (``mnz``) and ``wsum`` under
min-max give the same fused scores as ``ranx.fuse`` (the documents a run lacks
score 0 in both), and, by the tie rule, the same run: ranx's fused run saved with
``Run.save`` and dsr's score the same per topic (property tests with heavy ties on
run files written to disk, ``tests/core/test_fusion_ranx.py``). ranx's own
``evaluate`` orders tied scores as its sort leaves them, which no file keeps.

Missing topics and documents
----------------------------
The fused run holds the union of the runs' topics, and for each topic the
union of their documents. A run that lacks a topic contributes nothing to it.
A document that a run lacks (for a topic the run has) is treated as ranked
below everything that run retrieved:

* ``rrf``: it gets no term from that run (the sum in Cormack et al. runs over
  the rankings that contain the document);
* ``isr``: it gets no term from that run, and the run does not count in n(d);
* ``borda``: it shares the points that run did not give out (as above);
* ``combsum`` / ``interp`` / ``wsum``: it gets that run's lowest normalised score
  for the topic (0 under min-max and sum, which is the usual "missing counts as
  zero"; under z-score, zero would be the mean and would lift an unretrieved
  document above half the retrieved ones; under rank, 1/n, the score of the run's last
  retrieved document, where ranx's methods give 0);
* ``combmnz``: as combsum, and it does not count towards the multiplier, which
  counts the runs that retrieved it (Fox and Shaw count non-zero scores; a
  min-max normalised last document scores 0 but was still retrieved).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dsr.core import registry
from dsr.core.errors import InputError
from dsr.core.fusion_ranx import (
    BACKEND,
    METRIC,
    RANX_ALIASES,
    RANX_METHODS,
    RANX_NORMS,
    SEARCHED,
    SHARED,
    TUNED,
    fuse_with_ranx,
    reads_order,
    tunes,
)
from dsr.core.run import Run
from dsr.core.ties import F32_MAX

Scores = dict[str, dict[str, float]]

NORMS: tuple[str, ...] = ("minmax", "zscore", "sum", "rank")


# --- normalisation -----------------------------------------------------------


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """``(s - min) / (max - min)``; all 0 when the scores are all equal (Lee 1997)."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    low, high = float(values.min()), float(values.max())
    span = high - low
    if span == 0 or not math.isfinite(span):
        return {doc: 0.0 for doc in scores}
    return {doc: (float(s) - low) / span for doc, s in scores.items()}


def zscore(scores: Mapping[str, float]) -> dict[str, float]:
    """``(s - mean) / std`` with the population std; all 0 when the scores are all equal
    (Montague and Aslam 2001)."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    mean, std = float(values.mean()), float(values.std())
    if std == 0:
        return {doc: 0.0 for doc in scores}
    return {doc: (float(s) - mean) / std for doc, s in scores.items()}


def sum_norm(scores: Mapping[str, float]) -> dict[str, float]:
    """``(s - min) / sum(s - min)``: shifted to start at 0, adding up to 1; all 0 when the
    scores are all equal (Montague and Aslam 2001)."""
    shifted = minmax(scores)
    if not shifted:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    low = float(values.min())
    total = float((values - low).sum())
    if total == 0 or not math.isfinite(total):
        return {doc: 0.0 for doc in scores}
    return {doc: (float(s) - low) / total for doc, s in scores.items()}


def rank_norm(scores: Mapping[str, float]) -> dict[str, float]:
    """``1 - (rank - 1) / n`` by the scores' order, highest first (ties: the order given,
    which is the run's ranked order) (Renda and Straccia 2003)."""
    n = len(scores)
    docs, values = list(scores), [float(v) for v in scores.values()]
    order = sorted(range(n), key=lambda i: -values[i])
    return {docs[i]: 1.0 - rank / n for rank, i in enumerate(order)}


NORMALISERS: dict[str, Callable[[Mapping[str, float]], dict[str, float]]] = {
    "minmax": minmax,
    "zscore": zscore,
    "sum": sum_norm,
    "rank": rank_norm,
}


def normalise(run: Run, norm: str) -> Scores:
    """Each topic of ``run`` normalised on its own with ``norm`` (one of :data:`NORMS`)."""
    if norm not in NORMALISERS:
        raise InputError(f"unknown normalisation {norm!r}; choose from {', '.join(NORMS)}", field="norm")
    return {qid: NORMALISERS[norm](dict(ranked)) for qid, ranked in run.rankings.items()}


def _topics(runs: Sequence[Run]) -> list[str]:
    """Union of the runs' topics, in order of first appearance."""
    return list(dict.fromkeys(qid for run in runs for qid in run.rankings))


def _docs(runs: Sequence[Mapping[str, Any]], qid: str) -> list[str]:
    return list(dict.fromkeys(doc for run in runs for doc in run.get(qid, ())))


# --- methods -------------------------------------------------------------------


def _check_k(k: float) -> None:
    """RRF's k: a number >= 0 (InputError naming ``k``)."""
    if not k >= 0:
        raise InputError(f"k must be >= 0, got {k!r}", field="k")


def rrf(runs: Sequence[Run], k: float = 60) -> Scores:
    """Reciprocal rank fusion: ``score(d) = sum over runs containing d of 1 / (k + rank(d))``,
    ranks from 1 (Cormack, Clarke and Büttcher, SIGIR 2009)."""
    _check_k(k)
    fused: Scores = {}
    longest = max((len(r) for run in runs for r in run.rankings.values()), default=0)
    weights = [1.0 / (k + rank) for rank in range(1, longest + 1)]  # the same floats, computed once
    for run in runs:
        for qid, ranked in run.rankings.items():
            topic = fused.setdefault(qid, {})
            get = topic.get
            for (doc, _), weight in zip(ranked, weights):
                topic[doc] = get(doc, 0.0) + weight
    return {qid: fused[qid] for qid in _topics(runs)}


def _with_floor(normalised: Sequence[Scores], qid: str, docs: list[str]) -> list[dict[str, float] | None]:
    """Per run, each doc's normalised score in ``qid``, a missing doc getting the run's
    lowest score for the topic; None for a run without the topic."""
    out: list[dict[str, float] | None] = []
    for scores in normalised:
        topic = scores.get(qid)
        if topic is None:
            out.append(None)
            continue
        floor = min(topic.values()) if topic else 0.0
        out.append({doc: topic.get(doc, floor) for doc in docs})
    return out


def combsum(runs: Sequence[Run], norm: str = "minmax") -> Scores:
    """CombSUM: the sum of each run's normalised score (Fox and Shaw 1994)."""
    normalised = [normalise(run, norm) for run in runs]
    fused: Scores = {}
    for qid in _topics(runs):
        docs = _docs(normalised, qid)
        per_run = [r for r in _with_floor(normalised, qid, docs) if r is not None]
        fused[qid] = {doc: sum(r[doc] for r in per_run) for doc in docs}
    return fused


def combmnz(runs: Sequence[Run], norm: str = "minmax") -> Scores:
    """CombMNZ: CombSUM times the number of runs that retrieved the document
    (Fox and Shaw 1994)."""
    summed = combsum(runs, norm)
    fused: Scores = {}
    for qid, topic in summed.items():
        retrieved = [{doc for doc, _ in run.rankings.get(qid, ())} for run in runs]
        fused[qid] = {doc: score * sum(doc in r for r in retrieved) for doc, score in topic.items()}
    return fused


def interp(runs: Sequence[Run], weight: float = 0.5, norm: str = "minmax") -> Scores:
    """Linear interpolation of two runs: ``weight * a + (1 - weight) * b`` on normalised
    scores (Vogt and Cottrell 1999). A topic only one run has takes that run's
    weighted score alone."""
    if len(runs) != 2:
        raise InputError(f"interp fuses exactly two runs, got {len(runs)}", field="method")
    if not 0 <= weight <= 1:
        raise InputError(f"weight must be in [0, 1], got {weight!r}", field="weight")
    normalised = [normalise(run, norm) for run in runs]
    fused: Scores = {}
    for qid in _topics(runs):
        docs = _docs(normalised, qid)
        a, b = _with_floor(normalised, qid, docs)
        fused[qid] = {
            doc: (weight * a[doc] if a is not None else 0.0) + ((1 - weight) * b[doc] if b is not None else 0.0) for doc in docs
        }
    return fused


def wsum(runs: Sequence[Run], weights: Sequence[float] | str | None = None, norm: str = "minmax") -> Scores:
    """Weighted sum of normalised scores, one weight per run (Bartell, Cottrell and Belew,
    SIGIR 1994); equal weights (None) are CombSUM divided by the number of runs.
    ``weights`` may be a comma-separated string (``--param weights=0.3,0.7``)."""
    if weights is None:
        weights = [1.0 / len(runs)] * len(runs)
    if isinstance(weights, str):
        try:
            weights = [float(w) for w in weights.split(",") if w.strip()]
        except ValueError:
            raise InputError(f"weights must be numbers, comma separated, got {weights!r}", field="weights") from None
    weights = [float(w) for w in weights]
    if len(weights) != len(runs) or not all(math.isfinite(w) for w in weights):
        raise InputError(f"wsum takes one finite weight per run: {len(runs)} runs, weights {weights!r}", field="weights")
    normalised = [normalise(run, norm) for run in runs]
    fused: Scores = {}
    for qid in _topics(runs):
        docs = _docs(normalised, qid)
        per_run = _with_floor(normalised, qid, docs)
        fused[qid] = {doc: sum(w * r[doc] for w, r in zip(weights, per_run) if r is not None) for doc in docs}
    return fused


def isr(runs: Sequence[Run]) -> Scores:
    """Inverse square rank: ``n(d) * sum over runs containing d of 1 / rank(d)^2``, ranks
    from 1, n(d) the number of runs that retrieved d (Mourão et al., CMIG 2015)."""
    fused: Scores = {}
    counts: dict[str, dict[str, int]] = {}
    for run in runs:
        for qid, ranked in run.rankings.items():
            topic, count = fused.setdefault(qid, {}), counts.setdefault(qid, {})
            for rank, (doc, _) in enumerate(ranked, start=1):
                topic[doc] = topic.get(doc, 0.0) + 1.0 / rank**2
                count[doc] = count.get(doc, 0) + 1
    return {qid: {doc: s * counts[qid][doc] for doc, s in fused[qid].items()} for qid in _topics(runs)}


def borda(runs: Sequence[Run]) -> Scores:
    """Borda count over the union of the runs' documents of each topic (N of them): a run
    gives ``N - rank + 1`` points to each document it ranks and the mean of the points it
    did not give, ``(N - len(run) + 1) / 2``, to each it does not (Aslam and Montague,
    SIGIR 2001)."""
    fused: Scores = {}
    for qid in _topics(runs):
        docs = list(dict.fromkeys(doc for run in runs for doc, _ in run.rankings.get(qid, ())))
        n = len(docs)
        topic = dict.fromkeys(docs, 0.0)
        for run in runs:
            ranked = run.rankings.get(qid)
            if ranked is None:
                continue
            given = {doc: float(n - rank) for rank, (doc, _) in enumerate(ranked)}
            rest = (n - len(ranked) + 1) / 2
            for doc in docs:
                topic[doc] += given.get(doc, rest)
        fused[qid] = topic
    return fused


#: method -> its function: the runs, then the method's own keyword parameters with their
#: defaults. A new method is one small function above and one line here (or, for one of
#: ranx's, a line in :data:`dsr.core.fusion_ranx.RANX_METHODS`).
FUSERS: dict[str, Callable[..., Scores]] = {
    "rrf": rrf,
    "isr": isr,
    "borda": borda,
    "combsum": combsum,
    "combmnz": combmnz,
    "wsum": wsum,
    "interp": interp,
}
#: one line about each of dsr's kernels (``dsr fuse --help``; ranx's are in RANX_METHODS)
FUSER_ABOUT = {
    "rrf": "reciprocal rank fusion, sum 1/(k + rank) (Cormack et al., SIGIR 2009; ranx rrf)",
    "isr": "inverse square rank (Mourão et al., CMIG 2015; ranx isr)",
    "borda": "Borda count (Aslam and Montague, SIGIR 2001; ranx bordafuse)",
    "combsum": "CombSUM, the sum of normalised scores (Fox and Shaw, TREC-2 1994; ranx sum)",
    "combmnz": "CombMNZ, CombSUM x runs retrieving d (Fox and Shaw 1994; ranx mnz)",
    "wsum": "weighted sum of normalised scores (Bartell et al., SIGIR 1994; ranx wsum)",
    "interp": "weight * a + (1 - weight) * b of two runs (Vogt and Cottrell 1999; ranx wsum)",
}
# the registry's fusion methods (kind ``fusion``): dsr's kernels, then the rest of ranx's 25
# (computed by ranx); another package's kernel comes from the entry points ``dsr.fusion``
for _name, _method in {**FUSERS, **RANX_METHODS}.items():
    registry.register("fusion", _name, _method)
#: every method's name: dsr's kernels, ranx's, then other packages' (read when used)
METHODS = registry.Names("fusion")
#: every normalisation: dsr's four (with its rule for a document a run lacks, see above) and
#: ranx's (``min-max`` is dsr's ``minmax``; ``zmuv``, ``rank`` and ``sum`` under ranx give a
#: missing document 0); a score-based method of dsr's under one of ranx's only is ranx's
NORMS = tuple(dict.fromkeys((*NORMS, *(n for n in RANX_NORMS if n != "min-max"))))


def canonical(method: str) -> str:
    """dsr's name of a method (ranx's ``bordafuse``, ``sum``, ``mnz`` are dsr's ``borda``,
    ``combsum``, ``combmnz``); InputError naming ``method`` for an unknown one."""
    method = RANX_ALIASES.get(method, method)
    if method not in METHODS:
        raise InputError(
            f"unknown fusion method {method!r}; choose from {', '.join(METHODS)} (or ranx's names {', '.join(RANX_ALIASES)})",
            field="method",
        )
    return method


def method_params(method: str) -> dict[str, Any]:
    """The parameters ``method`` takes and their defaults (None: learnt from labels when not
    given), read from its function or its ranx declaration."""
    method = canonical(method)
    if method in RANX_METHODS:
        spec = RANX_METHODS[method]
        return {
            **spec.params,
            **({"metric": METRIC} if spec.ranx in SEARCHED and (spec.kind == "trained" or None in spec.params.values()) else {}),
        }
    signature = inspect.signature(registry.get("fusion", method)).parameters
    return {name: p.default for name, p in list(signature.items())[1:]}


def check_params(method: str, params: Mapping[str, Any]) -> None:
    """InputError when ``params`` holds a name ``method`` does not take (a typo is not
    silently ignored)."""
    takes = {**method_params(method), **({"metric": METRIC} if method in TUNED else {})}
    unknown = sorted(set(params) - set(takes))
    if unknown:
        raise InputError(f"fusion method {method!r} takes {', '.join(takes)}, not {', '.join(unknown)}", field="params")


def fuse(
    runs: Sequence[Run],
    method: str = "rrf",
    *,
    initial_order: Mapping[str, list[str]] | None = None,
    tag: str | None = None,
    labels: Mapping[str, Mapping[str, int]] | None = None,
    backend: str = "dsr",
    **params: Any,
) -> Run:
    """Fuse ``runs`` with ``method`` (``rrf`` k=; ``isr``, ``borda``; ``combsum``/``combmnz``
    norm=; ``wsum`` weights=, norm=; ``interp`` weight=, norm=) into one run: the one public
    way to fuse runs (the stages :class:`dsr.rankers.fusion.Fusion` and
    ``FusionRanker``, ``dsr fuse`` and ``dsr.fuse`` call it).

    The tie rule (:data:`TIE_RULE`), the same on every path: the fused scores are ordered as
    trec_eval 9.0.8 (and pytrec_eval, ir_measures) orders a run file holding them, the score
    as a 32-bit float descending, ties by sentence id descending; then made strictly
    decreasing in float32 as every dsr run is. So the fused run scores exactly as ``ranx.fuse``'s
    run of the same method, saved and scored by those tools. ``initial_order`` (the collection's
    candidates) never decides a tie: it only lets RRF of runs that each rank exactly those
    candidates be summed in numpy. Parameters a method does not take are an InputError.

    ranx's methods (:data:`dsr.core.fusion_ranx.RANX_METHODS`) are ranx's own code; those that
    learn from relevance ``labels`` (``{topic: {doc: grade}}``) are refused without them. With
    labels, ``rrf``'s k, ``wsum``'s weights and ``logn_isr``'s sigma, when not given, are learnt
    as ranx's ``optimize_fusion`` learns them (:data:`dsr.core.fusion_ranx.TUNED`; its grid and
    ``metric``) and the run is ranx's fusion with them; without labels their defaults hold. The
    fused run's ``config["fusion_learnt"]`` holds what was learnt (and the metric and grid). ``backend="ranx"`` hands ranx
    every run as ranx reads its file and lets ranx compute dsr's methods too (see
    :mod:`dsr.core.fusion_ranx`: the order of documents whose scores tie in an input run).
    """
    method = canonical(method)
    if len(runs) < 2:
        raise InputError(f"fusion needs at least two runs, got {len(runs)}", field="runs")
    check_params(method, params)
    backend = BACKEND.check(backend)
    shown = ",".join(f"{k}={v}" for k, v in sorted(params.items()))
    tag = tag or f"fusion-{method}" + (f"-{shown}" if shown else "")
    ranx_has = method in RANX_METHODS or method in SHARED
    if not ranx_has and (backend == "ranx" or params.get("norm") in RANX_ONLY_NORMS):
        raise InputError(f"fusion method {method!r} is not one ranx computes: use backend dsr and dsr's norms", field="backend")
    if method == "interp" and len(runs) != 2:
        raise InputError(f"interp fuses exactly two runs, got {len(runs)}", field="method")
    tuned = tunes(method, params) if labels else []
    if method in RANX_METHODS or backend == "ranx" or params.get("norm") in RANX_ONLY_NORMS or tuned:
        scores, learnt = fuse_with_ranx(runs, method, labels=labels, backend=backend, **params)
        run = fused_run(scores, tag)
        if learnt:
            run.config["fusion_learnt"] = learnt
        return run
    if method == "rrf" and initial_order is not None:
        fast_run = _rrf_aligned(runs, params.get("k", 60), initial_order, tag)
        if fast_run is not None:
            return fast_run
    own = {k: v for k, v in params.items() if k != "metric"}  # what a learnt parameter is searched on
    if "norm" in own:
        own["norm"] = NORM_ALIASES_DSR.get(own["norm"], own["norm"])
    kernel: Callable[..., Scores] = registry.get("fusion", method)
    return fused_run(kernel(runs, **own), tag)


#: ranx's normalisations dsr's kernels do not compute (a dsr method under one is ranx's)
RANX_ONLY_NORMS = frozenset({"min-max-inverted", "max", "zmuv", "borda"})
#: ranx's name of a normalisation dsr computes under its own name
NORM_ALIASES_DSR = {"min-max": "minmax", "min_max": "minmax"}


def tied_input_warnings(
    paths: Sequence[Any],
    runs: Sequence[Run],
    method: str,
    backend: str = "dsr",
    switch: str = "backend='ranx'",
    norm: str | None = None,
) -> list[str]:
    """One warning per input run whose own scores tie (as float32) in some topic, as ``dsr
    evaluate`` and ``dsr validate`` warn: how fusion ranks those documents, and the other rule
    (``switch``: how the caller asks for it)."""
    out = []
    for path, run in zip(paths, runs):
        tied = run.tied_topics()
        if not tied:
            continue
        rule = (
            "as ranx does (numba's unstable sort of the file's lines)"
            if backend == "ranx"
            else f"as trec_eval ranks them (doc id descending); ranx's own order differs: {switch} reproduces it"
        )
        if not reads_order(method, norm):
            out.append(
                f"dsr: warning: {path}: {len(tied)} topic(s) hold scores that tie as 32-bit floats "
                f"(e.g. {tied[0]!r}); {method} fuses scores, not ranks, so the ties do not change "
                "the fused run"
            )
            continue
        out.append(
            f"dsr: warning: {path}: {len(tied)} topic(s) hold scores that tie as 32-bit floats "
            f"(e.g. {tied[0]!r}); {method} reads their ranks: tied documents are ranked {rule}"
        )
    return out


#: The fused runs' tie rule, as the sidecar and ir_metadata state it.
TIE_RULE = (
    "fused score as float32 descending, ties by sentence id descending (trec_eval 9.0.8's order; ranx's run saved and scored)"
)


def fused_run(scores: Mapping[str, Mapping[str, float]], tag: str) -> Run:
    """A Run of fused ``scores`` under :data:`TIE_RULE`."""
    topics = list(scores)
    docs = [d for q in topics for d in scores[q]]
    sizes = np.fromiter((len(scores[q]) for q in topics), dtype=np.int64, count=len(topics))
    values = np.fromiter((float(v) for q in topics for v in scores[q].values()), dtype=np.float64, count=len(docs))
    return _trec_eval_ordered(topics, docs, sizes, values, tag)


def _descending_places(topics: list[str], docs: list[str], sizes: np.ndarray) -> np.ndarray:
    """Each doc's place among its topic's ids in descending order (docs laid end to end)."""
    topic = np.repeat(np.arange(len(topics)), sizes)
    by_id = np.lexsort((np.array(docs, dtype=object).astype(str) if docs else np.zeros(0, dtype=str), topic))
    starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
    place = np.empty(len(docs), dtype=np.int64)
    place[by_id] = np.arange(len(docs)) - starts  # ascending place of the id in its topic
    return np.repeat(sizes, sizes) - 1 - place if len(docs) else place


def _trec_eval_ordered(
    topics: list[str], docs: list[str], sizes: np.ndarray, values: np.ndarray, tag: str, descending: np.ndarray | None = None
) -> Run:
    """Scores laid end to end ranked by :data:`TIE_RULE`: each doc's place among its topic's
    ids in descending order (``descending``, computed when not given) is the tie-break key of
    ``Run.from_flat``, and the scores are rounded to float32 first so that scores equal as
    float32 tie. The rounding keeps subnormals, as trec_eval's C ``float`` does: ranx's CombMIN
    and CombMED of min-max normalised runs score documents 1e-45 to 1e-39 apart, which trec_eval
    ranks by those values; the run then writes them as the tie rule's normal scores below 0, in
    that order."""
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise InputError(f"fused score of {docs[int(bad[0])]!r} is not finite: {values[int(bad[0])]!r}", field="runs")
    if descending is None:
        descending = _descending_places(topics, docs, sizes)
    return Run.from_flat(topics, docs, sizes, _c_float(values), descending, tag=tag)


def _c_float(values: np.ndarray) -> np.ndarray:
    """``values`` as C's ``float`` holds them (trec_eval 9.0.8's ``atof`` into a float): rounded
    to nearest float32, clamped to its range, subnormals kept; -0.0 made 0.0 (equal in C)."""
    out: np.ndarray = np.clip(values, -F32_MAX, F32_MAX).astype(np.float32).astype(np.float64) + 0.0
    return out


def _rrf_aligned(runs: Sequence[Run], k: float, initial_order: Mapping[str, list[str]], tag: str) -> Run | None:
    """RRF of runs that each rank exactly every document of ``initial_order``, topic by topic
    in its order (dsr reproduce's BM25 and dense runs): the sums in numpy over documents laid
    end to end in the initial order, the same floats as :func:`rrf` (each 0.0 + 1 / (k + rank)
    of the first run, + that of the next...) and the same Run. None when the runs are not
    so aligned (then the general path runs)."""
    _check_k(k)
    ranks = [_initial_ranks(run, initial_order) for run in runs]
    if any(r is None for r in ranks):
        return None
    topics, docs, sizes, descending = _aligned_layout(initial_order)
    weights = np.array([1.0 / (k + rank) for rank in range(1, int(sizes.max(initial=0)) + 1)])
    values = np.zeros(int(sizes.sum()))
    for rank in ranks:
        values = values + weights[rank]
    return _trec_eval_ordered(topics, docs, sizes, values, tag, descending)


#: the last initial order laid end to end (topics, docs, sizes, ids' descending places): a grid
#: of fusions (dsr reproduce: 181 RRF configurations) shares one initial order, whose layout
#: and sort of 42,300 ids were otherwise computed again for each
_LAYOUT: list[Any] = [None, None]


def _aligned_layout(initial_order: Mapping[str, list[str]]) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """``initial_order``'s topics, its documents laid end to end, the sizes and each id's
    descending place among its topic's ids; kept while the same (unchanged) mapping comes back."""
    sizes_now = tuple(len(v) for v in initial_order.values())
    if _LAYOUT[0] is initial_order and _LAYOUT[1][0] == sizes_now:
        kept: tuple[list[str], list[str], np.ndarray, np.ndarray] = _LAYOUT[1][1]
        return kept
    topics = list(initial_order)
    sizes = np.fromiter((len(initial_order[q]) for q in topics), dtype=np.int64, count=len(topics))
    docs = [d for q in topics for d in initial_order[q]]
    layout = (topics, docs, sizes, _descending_places(topics, docs, sizes))
    _LAYOUT[:] = [initial_order, (sizes_now, layout)]
    return layout


def _initial_ranks(run: Run, initial_order: Mapping[str, list[str]]) -> np.ndarray | None:
    """For documents laid end to end in ``initial_order``, each one's 0-based rank in ``run``;
    None unless ``run`` ranks exactly those documents, topic by topic in that order. Kept on
    the run (a run is fused many times in a grid) while its rankings and the order are the same
    objects."""
    kept = run._initial_ranks
    if kept is not None and kept[0] is run.rankings and kept[1] is initial_order:
        ranks: np.ndarray | None = kept[2]
        return ranks
    ranks = None
    if list(run.rankings) == list(initial_order):
        out: list[np.ndarray] = []
        for qid, initial in initial_order.items():
            position = {d: i for i, d in enumerate(initial)}
            ranked = run.rankings[qid]
            where = [position.get(d, -1) for d, _ in ranked]
            if len(ranked) != len(initial) or len(set(where)) != len(where) or -1 in where:
                break
            inverse = np.empty(len(where), dtype=np.int64)
            inverse[where] = np.arange(len(where))
            out.append(inverse)
        else:  # every topic aligned
            ranks = np.concatenate(out) if out else np.zeros(0, dtype=np.int64)
    run._initial_ranks = (run.rankings, initial_order, ranks)
    return ranks
