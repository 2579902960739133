"""``dsr reproduce``: from a collection to the paper-style baseline table in one command.

The suite (every row is evaluated on the same dialogues):

* ``random`` (seeded floor) and ``initial`` (the collection's own candidate
  scores, when it has them: the SIGIR 2022 initial ranker);
* ``BM25 (Q)`` for each query strategy Q, tuned per split over the BM25 grid
  (k1, b), and ``BM25``: tuned over the strategy too. ``BM25`` is the baseline
  of the significance tests;
* ``dense (Q)``: all-MiniLM-L6-v2 (or ``--dense-model``) for each strategy;
* ``RRF(BM25, dense)``: reciprocal rank fusion of a BM25 run (default k1, b)
  and a dense run, tuned per split over the BM25 strategy, the dense strategy
  and RRF's k. "The best BM25 and the best dense" are thus chosen on each
  split's val half, never on its test half;
* ``trained bi-encoder``: the bi-encoder ``dsr train`` saves by default
  (``--trained-dense``, else ``dsr:dialogue-minilm-bi`` when it exists), with
  the query strategy and candidate text of its card, and beside it
  ``dense (Q, TEXT)``: the zero-shot dense model with that same query and
  candidate text, so the training gain is read against the same text form
  (a ``body``-only zero-shot row would credit training with the text form's
  share). When the zero-shot row with that query and text is already in the
  table (``dense (Q)`` reads bodies) it is not repeated;
* ``cross-encoder``: a cross-encoder (``--cross-encoder``, else the model
  ``dsr train`` saves by default when it exists) reranking the top k of a
  first stage, tuned per split over the first stage (each BM25 and dense run)
  and k (10, 20, all). Its scores are computed once per (dialogue, sentence)
  and cached, so the grid costs no extra model calls. Without a cross-encoder
  the row is skipped and the report says why;
* ``trained pipeline``: a cross-encoder trained by ``dsr train`` for the trained
  bi-encoder (``--trained-reranker``, e.g. the second stage of ``dsr train --recipe
  recommended``) reranking the ``trained bi-encoder`` row's top k, tuned per split over k
  (10, 20, all), with the query strategy, length and candidate text of its card.

The dense and cross-encoder models run on ``--backend`` (default ``torch``, the
exact path, whose table is the same on every CPU; ``--fast`` is ``openvino-int8``;
``auto`` is int8 where the CPU has VNNI or AMX; see :mod:`dsr.indexes.backends`): a
fast backend's figures differ from torch's, by an amount measured per collection
(:mod:`dsr.indexes.exactness`), which a note under the table states; the manifest and
each run's config name the backend that ran and the models' weights hashes.

With a split file (the official 50 splits of SIGIR 2022), tuning is per split
on val and the table gives the test halves' mean and sd; collections without
one get ``--n-splits`` seeded random splits (recorded in the manifest).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from dsr.collections import REFERENCE, load_collection
from dsr.core import docs_url, forked
from dsr.core.atomic import atomic_dir, check_replaceable, write_json
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.fusion import fuse
from dsr.core.home import models_dir
from dsr.core.jsonio import gc_paused
from dsr.core.models import resolve_model
from dsr.core.params import Param
from dsr.core.provenance import package_versions, sha256_file, slug, stamp
from dsr.core.queries import OWN_STRATEGIES, check_strategy
from dsr.core.run import Run
from dsr.core.timing import StageTimer
from dsr.evaluation import figure_cache
from dsr.evaluation.drawing import Drawing, Workers
from dsr.evaluation.drawing import workers as drawing_workers
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import config_name, grid_configs, resolve_splits
from dsr.evaluation.report import REPORT_FILES, public, report_json, write_report_files
from dsr.evaluation.results import Results
from dsr.evaluation.settings import SPLIT_PARAMS, TEST_PARAMS, EvaluateSettings
from dsr.indexes.backends import DEFAULT_BACKEND, FastModel, export_identity, resolve_backend
from dsr.indexes.backends import export as export_model
from dsr.indexes.exactness import note as exactness_note
from dsr.indexes.exactness import sidecar_part as exactness_sidecar_part
from dsr.indexes.manifest import cached_build, expected_manifest
from dsr.rankers import make_ranker
from dsr.rankers.base import Ranker
from dsr.rankers.bm25 import BM25Ranker
from dsr.rankers.fusion import FusionRanker
from dsr.rerankers.base import rerank_top_k
from dsr.rerankers.cross_encoder import CrossEncoderReranker
from dsr.training.card import ranking_params, read_card

DEFAULT_DENSE = "all-MiniLM-L6-v2"
DEFAULT_CROSS_ENCODER = "dsr:dialogue-minilm"
#: what --fast means: int8 OpenVINO (its measured distance from torch: dsr/indexes/data/backend_deltas.json)
FAST_BACKEND = "openvino-int8"
DEFAULT_TRAINED_DENSE = "dsr:dialogue-minilm-bi"
RERANK_DEPTHS = (10, 20, None)  # None: rerank every candidate
BASELINE = "BM25"

#: the settings :func:`reproduce` shares with :func:`dsr.evaluate` (their Params, with the
#: suite's own help lines); ``REPORT_PARAMS`` too (``dsr.evaluation.settings``)
_EVALUATE = {p.name: p for p in SPLIT_PARAMS + TEST_PARAMS}
REPRODUCE_PARAMS = (
    _EVALUATE["n_splits"],
    replace(_EVALUATE["seed"], help="seed for generated splits, random ranker, permutation test (default 0)"),
    _EVALUATE["target"],
    replace(_EVALUATE["test"], help="test that decides the ▲/▼ marks: paired t-test or permutation (default t)"),
)
#: the bi-encoder of the dense rows (None: no dense or fusion rows; ``--no-dense``)
DENSE_MODEL = Param(
    "dense_model",
    DEFAULT_DENSE,
    "str",
    f"bi-encoder for the dense rows (default {DEFAULT_DENSE})",
    optional=True,
    metavar="MODEL",
)


def trained_default(spec: str = DEFAULT_CROSS_ENCODER) -> str | None:
    """``spec`` (``dsr:NAME``) when ``dsr train`` has saved that model, else None."""
    name = spec.split(":", 1)[1]
    return spec if (models_dir() / name).is_dir() else None


def skip_reason(no_cross_encoder: bool) -> str:
    if no_cross_encoder:
        return "skipped: --no-cross-encoder"
    return (
        f"skipped: no cross-encoder given (--cross-encoder MODEL) and no trained default "
        f"({DEFAULT_CROSS_ENCODER}); train one with `dsr train` (see {docs_url('training')})"
    )


def _check_settings(dense_model: str | None, measures: Sequence[str] | None, **shared: Any) -> EvaluateSettings:
    """:func:`reproduce`'s settings, each checked by its Param (an InputError naming it): the
    ones it shares with ``dsr.evaluate`` as the record the suite is evaluated with (against
    :data:`BASELINE`)."""
    DENSE_MODEL.check(dense_model)
    return EvaluateSettings(measures=tuple(measures) if measures else None, baseline=BASELINE, **shared)


def _check_trained(trained_dense: str | None, trained_reranker: str | None) -> None:
    if trained_reranker and not trained_dense:
        raise InputError(
            "a trained reranker reranks the trained bi-encoder's run: give `trained_dense` too "
            "(the bi-encoder it was trained for, e.g. dsr:M beside dsr:M-ce)",
            field="trained_reranker",
        )


def reproduce(
    collection: Collection | str | Path | None = None,
    out: str | Path | None = None,
    *,
    source: str | Path | None = None,
    split: str | None = None,
    splits_file: str | Path | None = None,
    n_splits: int = 50,
    seed: int = 0,
    target: str = "nDCG@5",
    measures: Sequence[str] | None = None,
    strategies: Sequence[str] | None = None,
    dense_model: str | None = DEFAULT_DENSE,
    trained_dense: str | None = None,
    cross_encoder: str | None = None,
    ce_query: str | None = None,
    trained_reranker: str | None = None,
    backend: str = DEFAULT_BACKEND,
    test: str = "t",
    correction: str = "holm",
    family: str = "runs",
    ci: str = "auto",
    all_pairs: bool = False,
    primary: str | None = None,
    timer: StageTimer | None = None,
    command: list[str] | None = None,
    skipped_reason: str | None = None,
) -> dict[str, Any]:
    """``dsr reproduce`` as a function: the baseline suite on ``collection``, evaluated with
    the split protocol, written into ``out`` (report, ``runs/``, ``manifest.json``).

    ``collection``: a Collection, a registered name (``source``/``split`` as for
    :func:`~dsr.collections.load_collection`) or a benchmark file; ``None``
    is sigir2022 when its files are present. ``out`` defaults to
    ``out/COLLECTION``. ``dense_model=None`` skips the dense and fusion rows;
    ``trained_dense`` and ``cross_encoder`` (a folder, hub id or ``dsr:NAME``)
    add their rows, ``trained_reranker`` (with ``trained_dense``) the trained pipeline's;
    ``backend`` is what runs the models (``torch``, the default: exact;
    ``auto``: the fastest this CPU has, :mod:`dsr.indexes.backends`; resolved before anything
    runs). ``test``, ``correction``, ``family``, ``ci``,
    ``all_pairs`` and ``primary`` are :func:`dsr.evaluate`'s. ``timer`` collects (and, unless
    quiet, prints) each stage's wall time; ``command`` is what the report
    records; ``skipped_reason`` is the note on a skipped cross-encoder row.

    Returns ``{"results": Results, "report": dict, "manifest": dict, "out": Path}``. (Over 60
    lines: its signature alone is its 27 keyword settings.)
    """
    settings = _check_settings(  # first, by their Params
        dense_model, measures, n_splits=n_splits, seed=seed, target=target, test=test, correction=correction, family=family, ci=ci
    )
    settings = replace(settings, all_pairs=all_pairs, primary=primary)
    _check_trained(trained_dense, trained_reranker)
    timer = timer or StageTimer(quiet=True)
    started = time.perf_counter()
    # the figures' workers are forked now and import matplotlib while the runs are made, unless
    # this collection's figures were drawn by this code before (then they are probably reused
    # from the figure cache, and matplotlib is not imported at all; on a miss they start later)
    label = str(getattr(collection, "name", None) or collection or REFERENCE)
    with drawing_workers(0 if figure_cache.likely_hit(label) else None) as drawers:
        with timer("load", str(getattr(collection, "name", collection) or f"{REFERENCE} (default)")):
            collection = _collection(collection, source, split)
        out = Path(out or Path("out") / slug(collection.name, "run"))
        # what out holds, replaced as a set (a file of yours in runs/ is refused, never deleted)
        out_files = (*REPORT_FILES, "runs/*.run.gz", "runs/*.run.gz.json", "runs/*.run", "runs/*.run.json", "manifest.json")
        out = check_replaceable(out, out_files, field="out")  # before the long work
        strategies = _check_suite(collection, strategies, ce_query)
        with timer("splits"):
            splits = resolve_splits(collection, splits_file, n_splits, seed)
        suite = Suite(collection, strategies, seed, timer, resolve_backend(backend))
        models = (dense_model, trained_dense, cross_encoder, ce_query, skipped_reason or "skipped: no cross-encoder given")
        results = _measured(suite, settings, splits, timer, models, trained_reranker)
        command = command or ["dsr", "reproduce", collection.name]
        asked = {"dense model": dense_model, "cross-encoder": cross_encoder, "trained reranker": trained_reranker}
        asked["cross-encoder query"] = ce_query or "from the model card, else all"
        gc.freeze()
        try:
            report, manifest = _write_outputs(out, out_files, suite, results, timer, command, started, asked, drawers)
        finally:
            gc.unfreeze()
        return {"results": results, "report": report, "manifest": manifest, "out": out}


def _measured(
    suite: Suite,
    settings: EvaluateSettings,
    splits: Any,
    timer: StageTimer,
    models: tuple[Any, ...],
    trained_reranker: str | None,
) -> Results:
    """The suite's runs built (``models``: :meth:`Suite.build`'s) and evaluated."""
    # The runs are millions of small objects without cycles: the collector's passes over them
    # were a sixth of a warm run's CPU (measured). Paused while they are built and measured;
    # then kept out of its sight (frozen) while the report's figures, which do make cycles, are drawn.
    with gc_paused():
        suite.build(*models)
        if trained_reranker:
            suite.trained_pipeline(trained_reranker)
        with timer("evaluate", f"{len(suite.runs)} runs and {len(suite.families)} tuned families"):
            results = evaluate_runs(
                suite.collection, suite.runs, settings=settings, splits=splits, families=suite.families, run_info=suite.info
            )
            results.notes.extend(suite.notes)
    return results


def _write_outputs(
    out: Path,
    out_files: tuple[str, ...],
    suite: Suite,
    results: Results,
    timer: StageTimer,
    command: list[str],
    started: float,
    asked: dict[str, Any],
    drawers: Workers | None = None,
) -> tuple[dict, dict]:
    """Write the report, ``runs/`` and ``manifest.json`` into ``out`` as one set: built in a
    hidden sibling and swapped in, so a kill leaves the previous set or this one. Nothing in
    ``out`` is read back: warm runs reuse the caches under DSR_HOME (indexes, embeddings,
    cross-encoder scores). Returns the report's numbers and the manifest."""
    with atomic_dir(out, out_files, field="out") as staging:
        with timer("write", str(out)):
            suite.modal_runs(results)
            # the figures (reused when the same were drawn before), drawn by workers while the runs are written
            drawing = Drawing(results, drawers, label=suite.collection.name)
            written = suite.write_runs(staging / "runs", results, shown=Path("runs"))  # relative to out
            for name, entry in written.items():  # the report names each run file and its hash
                results.run_info.setdefault(name, {}).update(entry)
            write_report_files(results, staging, command=command, shown=out, drawing=drawing)
            report = report_json(results, command)
        timer.seconds["total"] = round(time.perf_counter() - started, 3)
        manifest = _manifest(suite.collection, results, suite, written, timer, command, asked)
        write_json(staging / "manifest.json", public(manifest, out))  # no local path, user or host
    return report, manifest


def _collection(spec: Collection | str | Path | None, source: str | Path | None, split: str | None) -> Collection:
    """``spec`` loaded; ``None``: sigir2022 when its files are present, else an error that says
    what to do."""
    if isinstance(spec, Collection):
        return spec
    if spec is not None:
        return load_collection(spec, source, split)
    try:
        return load_collection(REFERENCE, source, split)
    except InputError as err:
        raise InputError(
            "no COLLECTION given and the SIGIR 2022 files are not available "
            f"({err}). Fetch them with `dsr data fetch {REFERENCE}`, pass them with "
            f"`dsr reproduce {REFERENCE} --source DIR`, or run the bundled example: "
            "`dsr reproduce sample`",
            field="collection",
        ) from None


def _check_suite(collection: Collection, strategies: Sequence[str] | None, ce_query: str | None) -> list[str]:
    """The query strategies to run (default: all), checked with the cross-encoder's, and a
    collection with candidates to rank."""
    if not any(d.candidates for d in collection):
        raise InputError(
            f"collection {collection.name!r} has no candidates to rank; reproduce needs a benchmark with candidate lists",
            field="collection",
        )
    strategies = list(strategies or OWN_STRATEGIES)
    for q in strategies:
        check_strategy(q)
    if ce_query is not None:
        check_strategy(ce_query)
    return strategies


class Suite:
    """Builds the runs (untuned rows) and families (tuned rows) of the baseline table."""

    def __init__(
        self, collection: Collection, strategies: list[str], seed: int, timer: StageTimer, backend: str = "torch"
    ) -> None:
        self.collection = collection
        self.backend = backend
        self.strategies = strategies
        self.seed = seed
        self.timer = timer
        self.runs: dict[str, Any] = {}
        self.families: dict[str, dict[str, Any]] = {}
        self.info: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        #: the rows a model scored (their runs' sidecars carry the backend's exactness note)
        self.model_rows: set[str] = set()
        self.models: dict[str, Any] = {}
        self.bm25_default: dict[str, Any] = {}
        self.dense: dict[str, Any] = {}
        self.order = collection.initial_order()
        self._modal: dict[str, Run] = {}

    def build(
        self,
        dense_model: str | None,
        trained_dense: str | None,
        cross_encoder: str | None,
        ce_query: str | None,
        skipped_reason: str,
    ) -> None:
        """Every row: the floors, BM25, dense and RRF (with a dense model), the trained
        bi-encoder and the cross-encoder (when given; else a note on why not)."""
        export = self._export_in_background(dense_model)
        self.floors()
        self.bm25()
        if dense_model:
            self.dense_rows(dense_model, export)
            self.fusion()
        else:
            self.models["dense"] = "skipped: --no-dense"
            self.notes.append("dense and fusion rows skipped: --no-dense")
        if trained_dense:
            self.trained_dense(trained_dense, dense_model)
        if cross_encoder:
            self.cross_encoder(cross_encoder, ce_query)
        else:
            self.models["cross_encoder"] = skipped_reason
            self.notes.append(f"cross-encoder row {skipped_reason}")

    def floors(self) -> None:
        """``random`` (seeded) and ``initial`` (the collection's own candidate scores)."""
        with self.timer("random"):
            self._add_run("random", make_ranker("random", seed=self.seed))
        with self.timer("initial"):
            if all(cand.score is not None for d in self.collection for cand in d.candidates):
                self._add_run("initial", make_ranker("initial"))
            else:
                self.notes.append("initial ranker skipped: some candidates have no initial score")

    def bm25(self) -> None:
        """``BM25 (Q)`` per strategy over the (k1, b) grid, default first (it wins ties on val),
        and ``BM25`` over the strategies too: the baseline."""
        grid = {k: BM25Ranker.GRID[k] for k in ("k1", "b")}
        configs = grid_configs(grid, first=BM25Ranker.DEFAULTS)
        default = config_name({k: BM25Ranker.DEFAULTS[k] for k in grid})
        with self.timer("bm25", f"{len(self.strategies)} query strategies x {len(configs)} (k1, b)"):
            every: dict[str, Any] = {}
            # one call for every strategy: the index is loaded once, each strategy's query terms made once
            runs = iter(
                BM25Ranker.rank_many(
                    self.collection, [BM25Ranker(query=q, **params) for q in self.strategies for params in configs.values()]
                )
            )
            for q in self.strategies:
                family = {}
                for name, params in configs.items():
                    family[name] = run = next(runs)
                    every[config_name({"query": q, **params})] = run
                self.families[f"BM25 ({q})"] = family
                self.info[f"BM25 ({q})"] = {"ranker": "bm25", "grid": grid, "fixed": {"query": q}}
                self.bm25_default[q] = family[default]
            self.families[BASELINE] = every
            self.info[BASELINE] = {"ranker": "bm25", "grid": {"query": self.strategies, **grid}}

    def dense_rows(self, dense_model: str, export: Future | None = None) -> None:
        """``dense (Q)``: the bi-encoder with each query strategy (after ``export``, a fast
        backend's export started beside the BM25 stage, has finished)."""
        self.models["dense"] = resolve_model(dense_model, "bi-encoder").describe()
        with self.timer("dense", f"{dense_model}, {len(self.strategies)} query strategies"):
            if export is not None:
                export.result()  # the export's own error, if any, is raised here
            for q in self.strategies:
                name = f"dense ({q})"
                self._add_run(name, make_ranker("dense", model=dense_model, query=q, backend=self.backend))
                self.dense[q] = self.runs[name]
                self.model_rows.add(name)

    def _export_in_background(self, dense_model: str | None) -> Future | None:
        """A fast backend's export of the dense model (or the check that it is cached), started
        now in a thread so that it runs while the BM25 stage does (the export's calibration
        leaves a CPU core half idle); None for torch or without a dense model. Its wall time
        is recorded as the ``export (beside bm25)`` stage."""
        if not dense_model or self.backend == "torch":
            return None
        model = resolve_model(dense_model, "bi-encoder")
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsr-export")

        def build() -> FastModel:
            with self.timer("export (beside bm25)"), forked.no_fork():  # BM25 stays in this process meanwhile
                return export_model(model, "bi-encoder", self.backend)

        future = pool.submit(build)
        pool.shutdown(wait=False)
        return future

    def fusion(self) -> None:
        """``RRF(BM25, dense)`` over the BM25 strategy, the dense strategy and RRF's k."""
        grid = {"bm25": self.strategies, "dense": self.strategies, "k": FusionRanker.GRID["k"]}
        configs: dict[str, Callable] = {}
        for name, params in grid_configs(grid).items():

            def make(qb: str = params["bm25"], qd: str = params["dense"], k: int = params["k"]) -> Run:
                run = fuse(
                    [self.bm25_default[qb], self.dense[qd]],
                    "rrf",
                    k=k,
                    initial_order=self.order,
                    tag=f"rrf-bm25_{qb}-dense_{qd}-k{k}",
                )
                dense = self.dense[qd].config
                run.config = {
                    "fusion": "rrf",
                    "k": k,
                    "runs": [f"BM25 ({qb}) k1/b default", f"dense ({qd})"],
                    # the dense run's model and the backend it ran on (its note under a fast backend)
                    "dense": {key: dense[key] for key in ("model", "params") if key in dense},
                    "collection": self.collection.describe(),
                }
                return run

            configs[name] = make
        self.families["RRF(BM25, dense)"] = configs
        self.model_rows.add("RRF(BM25, dense)")
        self.info["RRF(BM25, dense)"] = {
            "fusion": "rrf",
            "grid": {"bm25 query": self.strategies, "dense query": self.strategies, "k": grid["k"]},
        }

    def trained_dense(self, model: str, zero_shot: str | None = None) -> None:
        """The ``trained bi-encoder`` row: ``model`` with the query strategy and candidate text
        of its card; and the row of the zero-shot model ``zero_shot`` with the same query and
        text (see the module docstring), named in the trained row's info."""
        resolved = resolve_model(model, "bi-encoder")
        card = read_card(resolved.path) or {}
        same = ranking_params(card)
        self.models["trained_dense"] = resolved.describe()
        described = ", ".join(f"{k} {v}" for k, v in same.items())
        with self.timer("trained bi-encoder", f"{model}, {described}"):
            self._add_run("trained bi-encoder", make_ranker("dense", model=model, backend=self.backend, **same))
        self.model_rows.add("trained bi-encoder")
        if not zero_shot:
            return
        name = same_text_row(same)
        if name not in self.runs:
            with self.timer("zero-shot, same text", f"{zero_shot}, {described}"):
                self._add_run(name, make_ranker("dense", model=zero_shot, backend=self.backend, **same))
                self.model_rows.add(name)
        self.info["trained bi-encoder"]["zero-shot row"] = name
        self.notes.append(f"trained bi-encoder: the zero-shot row with the same query and candidate text is {name!r}")

    def cross_encoder(self, model: str, query: str | None) -> None:
        """``cross-encoder``: the model reranking the top k of each BM25 and dense run, tuned
        over the first stage and k."""
        with self.timer("cross-encoder", model):
            scores, described, params = cross_encoder_scores(self.collection, model, query, self.backend)
        query = params["query"]
        self.models["cross_encoder"] = described
        stages = {f"BM25 ({q})": r for q, r in self.bm25_default.items()}
        stages.update({f"dense ({q})": r for q, r in self.dense.items()})
        configs: dict[str, Callable] = {}
        for depth in RERANK_DEPTHS:
            # reranking every candidate makes the first stage irrelevant (up to ties): one config
            for stage_name, stage in stages.items() if depth else [next(iter(stages.items()))]:

                def make(stage: Run = stage, depth: int | None = depth, stage_name: str = stage_name) -> Run:
                    run = rerank_top_k(self.collection, stage, scores, depth)
                    run.tag = f"cross-encoder-top{depth or 'all'}"
                    run.config = {
                        "reranker": "cross-encoder",
                        "model": described,
                        "params": {**params, "backend": self.backend},  # what ran: the backend too
                        "query": query,
                        "top_k": depth,
                        "first_stage": stage_name,
                        "collection": self.collection.describe(),
                    }
                    return run

                key = {"first stage": stage_name, "top_k": depth} if depth else {"top_k": "all"}
                configs[config_name(key)] = make
        self.families["cross-encoder"] = configs
        self.model_rows.add("cross-encoder")
        self.info["cross-encoder"] = {
            "reranker": "cross-encoder",
            "model": described,
            "params": params,
            "grid": {"first stage": list(stages), "top_k": [d or "all" for d in RERANK_DEPTHS]},
        }

    def trained_pipeline(self, model: str) -> None:
        """``trained pipeline``: the trained cross-encoder ``model`` reranking the ``trained
        bi-encoder`` run's top k (its card's query, length and candidate text), tuned over k."""
        with self.timer("trained pipeline", model):
            scores, described, params = cross_encoder_scores(self.collection, model, None, self.backend)
        first = self.runs["trained bi-encoder"]
        self.models["trained_reranker"] = described
        configs: dict[str, Callable] = {}
        for depth in RERANK_DEPTHS:

            def make(depth: int | None = depth) -> Run:
                run = rerank_top_k(self.collection, first, scores, depth)
                run.tag = f"trained-pipeline-top{depth or 'all'}"
                run.config = {
                    "reranker": "cross-encoder",
                    "model": described,
                    "params": {**params, "backend": self.backend},
                    "top_k": depth,
                    "first_stage": {"row": "trained bi-encoder", **first.config},
                    "collection": self.collection.describe(),
                }
                return run

            configs[config_name({"top_k": depth or "all"})] = make
        self.families["trained pipeline"] = configs
        self.model_rows.add("trained pipeline")
        self.info["trained pipeline"] = {
            "reranker": "cross-encoder",
            "model": described,
            "params": params,
            "first stage": "trained bi-encoder",
            "grid": {"top_k": [d or "all" for d in RERANK_DEPTHS]},
        }
        self.notes.append(f"trained pipeline: {model} reranking the trained bi-encoder's top k, k tuned on val")

    def _add_run(self, name: str, ranker: Ranker) -> None:
        run = ranker.rank(self.collection)
        self.runs[name] = run
        self.info[name] = ranker.describe()

    def write_runs(self, folder: Path, results: Results, shown: Path | None = None) -> dict[str, dict[str, str]]:
        """Every untuned run, and each family's most often chosen configuration, with sidecars.

        Written into ``folder``; the paths recorded are under ``shown`` (default
        ``folder``), where they will be once the output set is swapped in.
        """
        written = {}
        shown = shown or folder
        for name, run in self.runs.items():
            written[name] = self._write(folder, name, run, {"system": name})
        for family, run in self.modal_runs(results).items():
            tuned = results.systems[family].tuned
            assert tuned is not None, family  # each family of the suite is evaluated as a tuned row
            written[family] = self._write(
                folder,
                family,
                run,
                {
                    "system": family,
                    "config": results.modal_config(family),
                    "chosen_on_val": tuned.choice_counts(),
                    "note": "the configuration chosen most often over the splits; each split's own choice is in results.json",
                },
            )
        for entry in written.values():
            entry["sha256"] = sha256_file(entry["path"])
            entry["path"] = str(shown / Path(entry["path"]).name)
        return written

    def weights(self) -> list[str]:
        """The weights' sha256 of the models the suite ran (the models' rows, on its backend)."""
        described = [m for m in self.models.values() if isinstance(m, dict)]
        return [m["weights_sha256"] for m in described if isinstance(m.get("weights_sha256"), str)]

    def modal_runs(self, results: Results) -> dict[str, Run]:
        """Each family's configuration chosen most often over the splits, as a run (made
        once), also in ``results.run_objects`` (the report's recall@k curve of the family)."""
        for family, configs in self.families.items():
            if family not in self._modal:
                chosen = results.modal_config(family)
                assert chosen is not None, family  # each family of the suite is evaluated as a tuned row
                source = configs[chosen]
                self._modal[family] = results.run_objects[family] = source() if callable(source) else source
        return dict(self._modal)

    def _write(self, folder: Path, name: str, run: Run, extra: dict[str, Any]) -> dict[str, str]:
        path = folder / f"{slug(name, 'run')}.run.gz"  # gzipped: 7x smaller; dsr reads it, `zcat` for trec_eval
        described = self.collection.describe()
        # a model row's note: the model that ran, on the backend its config names
        noted = exactness_sidecar_part(described, run.config) if name in self.model_rows else {}
        run.config = {
            **run.config,
            **extra,
            "collection": described,
            **noted,
            "versions": package_versions(),
        }
        run.write(path)
        return {"path": str(path)}


def same_text_row(params: dict[str, Any]) -> str:
    """The name of the zero-shot dense row with ``params``' query and candidate text:
    ``dense (Q)`` when it reads plain bodies (the table's own row), else ``dense (Q, TEXT)``."""
    extra = {k: v for k, v in params.items() if k != "query" and not (k == "text" and v == "body")}
    if not extra:
        return f"dense ({params['query']})"
    return f"dense ({params['query']}, {', '.join(str(v) if k == 'text' else f'{k}={v}' for k, v in extra.items())})"


def cross_encoder_scores(
    collection: Collection, model: str, query: str | None, backend: str = "torch"
) -> tuple[dict[tuple[str, str], float], dict[str, Any], dict[str, Any]]:
    """Cross-encoder score of every (dialogue, candidate) pair, cached under DSR_HOME/indexes.

    A model made by ``dsr train`` is scored with the query strategy and max
    length it was trained with (its ``dsr_model.json``) unless ``query`` is
    given. The cache key is the collection's content hash, the model (name and
    weights hash), the query strategy and the reranker's parameters. Returns
    the scores, the model's description and the reranker's parameters.
    """
    reranker = CrossEncoderReranker(model=model, backend=backend, **({"query": query} if query else {}))
    resolved = reranker.resolve()  # a trained model's card sets query and max length
    params = {k: v for k, v in reranker.params.items() if k not in ("model", "top_k", "batch_size")}
    if backend == "torch":  # as before backends existed, so the exact path's caches stay valid
        params.pop("backend")
    # a fast backend's scores are those of one export (its calibration): a re-made one scores anew
    keyed = params if backend == "torch" else {**params, "export": export_identity(resolved, "cross-encoder", backend)}
    expected = expected_manifest(
        "cross-encoder-scores",
        inputs=collection.content_hash,
        params=keyed,
        model=resolved.describe(),
        packages=("sentence-transformers", "transformers", "torch"),
    )

    def build(folder: Path) -> None:
        everything = Run({d.id: [(c.id, 0.0) for c in d.candidates] for d in collection}, "pairs")
        scored = reranker.rerank(collection, everything, None)
        table = {q: dict(ranked) for q, ranked in scored.rankings.items()}
        (folder / "scores.json").write_text(json.dumps(table), encoding="utf-8")

    folder, _ = cached_build(
        "cross-encoder-scores",
        f"{collection.name}-{resolved.key}-{params['query']}" + ("" if backend == "torch" else f"-{backend}"),
        expected,
        build,
        files=("scores.json",),
    )
    table = json.loads((folder / "scores.json").read_text(encoding="utf-8"))
    scores = {(q, d): s for q, docs in table.items() for d, s in docs.items()}
    return scores, resolved.describe(), params


def _manifest(
    collection: Collection,
    results: Results,
    suite: Suite,
    written: dict[str, dict[str, str]],
    timer: StageTimer,
    command: list[str],
    models: dict[str, Any],
) -> dict[str, Any]:
    """``manifest.json``: what ran (``models``: the dense model, cross-encoder and its query
    as asked), on what, with which settings, versions and machine, and how long each stage took."""
    provenance = stamp(command)
    return {
        "created": provenance["created"],
        "command": provenance["command"],
        "collection": collection.describe(),
        "protocol": results.protocol_json(),
        "measures": results.measures,
        "baseline": BASELINE,
        "significance": {
            "test": results.test,
            "alpha": results.alpha,
            "correction": results.correction,
            "family": results.family,
            "n_resamples": results.n_resamples,
            "seed": results.seed,
        },
        "models": {
            "dense": suite.models.get("dense"),
            "cross_encoder": suite.models.get("cross_encoder"),
            **({"trained_reranker": suite.models["trained_reranker"]} if "trained_reranker" in suite.models else {}),
        },
        "parameters": {
            "query strategies": suite.strategies,
            "bm25": {"defaults": BM25Ranker.DEFAULTS, "grid": BM25Ranker.GRID},
            "dense model": models["dense model"],
            "cross-encoder": models["cross-encoder"],
            "backend": suite.backend,
            "cross-encoder query": models["cross-encoder query"],
            **({"trained reranker": models["trained reranker"]} if models.get("trained reranker") else {}),
            "rerank depths": [d or "all" for d in RERANK_DEPTHS],
            "seed": suite.seed,
            "systems": suite.info,
        },
        "runs": written,
        "notes": results.notes,
        "versions": provenance["versions"],
        "machine": provenance["machine"],
        "wall_time_s": dict(timer.seconds),
        **({"exactness": note} if (note := exactness_note(collection.describe(), suite.backend, suite.weights())) else {}),
    }
