"""Where corpus work runs: in this process, on a local Ray, or on a Ray cluster.

Every stage of the corpus (sentence splitting, BM25 counting and indexing,
encoding, FAISS shard adding) is a list of independent shard units. An
:class:`Executor` runs them:

* ``workers=0`` (``--workers 0``): one after the other in this process — for
  tests and small corpora; no Ray needed;
* ``workers=N`` without an address: a local Ray started with
  ``ray.init(num_cpus=N)`` (no dashboard), shut down when the stage ends;
* ``address=...`` (``--ray-address``, e.g. ``ray://head:10001`` or ``auto``):
  joins that cluster; the ``dsr`` package travels with
  the job (``runtime_env py_modules``), so the nodes need only the
  dependencies.

Shard units are Ray tasks (one CPU each, at most 2 x workers in flight, so a
huge corpus never floods the object store). Encoding uses Ray actors
(:class:`EncoderActor`, in a ``ray.util.ActorPool``) that load the model once
and keep it; each call encodes a whole shard (read by the actor, on its node)
and returns its vectors, which the driver writes as each shard completes. An
encoder actor takes a whole node's CPUs (a local Ray: all its workers; a
cluster: the smallest node's CPUs; ``actor_cpus`` overrides it) and runs the
encoder on that many threads, as the in-process path does: one model in
memory per node instead of one per CPU, and no two encoders contending for
the same cores. (Measured: one-thread actors under Ray Data made Ray 1.44x
slower than in-process with 3x its memory; Ray Data's own actors and reader
tasks alone took ~12 CPU s and ~2 GB before the first vector.)

Results are identical on every path (tests check it): each unit's output
depends only on its inputs, and units are written by the driver or by the
task to its own files.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from dsr.core.errors import InputError, require_extra
from dsr.core.models import ResolvedModel, load_sentence_transformer
from dsr.indexes.backends import load_fast
from dsr.indexes.embeddings import encode

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = Path(__file__).resolve().parents[2]  # dsr/, shipped to a cluster's nodes
#: environment the Ray workers need to find data, models and caches as the driver does
PASSED_ENV = ("DSR_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME")


def _pyarrow() -> ModuleType:
    """pyarrow, imported on first use, in this one place (importing this module does not load it)."""
    import pyarrow
    import pyarrow.parquet

    return pyarrow


def check_workers(workers: int) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise InputError(f"must be a whole number >= 0, got {workers!r}", field="workers")
    return workers


class Executor:
    """Runs shard units in-process (``workers=0``) or on Ray; use as a context manager."""

    def __init__(self, workers: int = 0, address: str | None = None, actor_cpus: int | None = None) -> None:
        self.workers = check_workers(workers)
        self.address = address
        if actor_cpus is not None:
            check_workers(actor_cpus)
        self.actor_cpus = actor_cpus or None
        self._started = False
        self._depth = 0  # nested `with` blocks share one Ray session

    @property
    def uses_ray(self) -> bool:
        return bool(self.workers) or self.address is not None

    def describe(self) -> dict[str, Any]:
        return {"workers": self.workers, "ray_address": self.address}

    def __enter__(self) -> Executor:
        self._depth += 1
        if self.uses_ray and self._depth == 1:
            ray = import_ray()
            if not ray.is_initialized():
                if self.address is None:
                    # A local Ray's processes are this process's children: its workers inherit
                    # the environment (PASSED_ENV, and PYTHONPATH naming this checkout) as it is
                    # during ray.init. No runtime_env: with one, every worker (the encoder actor
                    # too) is started through Ray's runtime-env agent, a slower start each.
                    path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
                    with _environ(PYTHONPATH=path):
                        ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
                else:
                    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
                    ray.init(
                        address=self.address,
                        log_to_driver=False,
                        logging_level="ERROR",
                        runtime_env={"env_vars": env, "py_modules": [str(PACKAGE)]},
                    )
                self._started = True
            if not self.workers:
                self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._started and self._depth == 0:
            import_ray().shutdown()
            self._started = False

    def map(
        self, function: Callable[..., Any], jobs: Iterable[tuple], *, desc: str, total: int | None = None, unit: str = "shard"
    ) -> Iterator[Any]:
        """``function(*job)`` for each job; results in completion order, with a progress bar."""
        from tqdm import tqdm

        with tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=total == 0 or None) as bar:
            if not self.uses_ray:
                for job in jobs:
                    yield function(*job)
                    bar.update(1)
                return
            ray = import_ray()
            remote = ray.remote(num_cpus=1, max_retries=1)(_call)
            pending: list = []
            limit = 2 * self.workers
            for job in jobs:
                pending.append(remote.remote(function, *job))
                while len(pending) >= limit:
                    done, pending = ray.wait(pending, num_returns=1)
                    yield _get(ray, done[0])
                    bar.update(1)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield _get(ray, done[0])
                bar.update(1)

    def encoder_cpus(self) -> int:
        """CPUs (and threads) of one encoder actor: ``actor_cpus``, else a node's CPUs (a local
        Ray: all of them; a cluster: those of its smallest node), at most ``workers``."""
        if self.actor_cpus:
            return max(1, min(self.actor_cpus, self.workers))
        if self.address is None:
            return max(1, self.workers)
        ray = import_ray()
        nodes = [int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")]
        return max(1, min([c for c in nodes if c > 0] or [1]))

    def encode_parquet(
        self, files: list[Path], counts: list[int], model: ResolvedModel, batch_size: int, backend: str = "torch"
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Vectors of the ``text`` column of each Parquet file: ``(file index, vectors)`` per file.

        In-process: one file at a time with :func:`dsr.indexes.embeddings.encode`.
        On Ray: a pool of :class:`EncoderActor` (each on :meth:`encoder_cpus` CPUs and as many
        threads), one shard per call, in completion order.
        """
        if not self.uses_ray:
            pq = _pyarrow().parquet
            for number, path in enumerate(files):
                texts = pq.read_table(path, columns=["text"]).column("text").to_pylist()
                yield number, encode(texts, model, batch_size, cache=False, progress=False, backend=backend)
            return
        ray = import_ray()
        cpus = self.encoder_cpus()
        # One actor per node (cpus = a node's CPUs), each encoding whole shards: it reads the
        # shard's texts itself and returns its vectors. Plain Ray actors, not Ray Data: Ray Data's
        # own actors and reader tasks cost ~12 CPU s and ~2 GB at start (measured).
        actor = ray.remote(num_cpus=cpus, max_restarts=0, max_task_retries=0)(EncoderActor)
        pool = ray.util.ActorPool([actor.remote(model, batch_size, backend, cpus) for _ in range(max(1, self.workers // cpus))])
        jobs = [(str(path), number) for number, path in enumerate(files)]
        try:
            yield from pool.map_unordered(lambda a, job: a.encode_file.remote(*job), jobs)
        except ray.exceptions.RayTaskError as err:
            raise (err.cause if isinstance(err.cause, InputError) else err) from None


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set inside the block, restored as it was after it."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _get(ray: ModuleType, ref: Any) -> Any:
    """A task's result; bad input found in a task is raised here as the InputError it is (exit 2)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        if isinstance(err.cause, InputError):
            raise err.cause from None
        raise


def _call(function: Callable[..., Any], *args: Any) -> Any:
    # One Ray task body for every unit: the function travels as an argument, so any
    # picklable callable (a module function or a bound helper object) can be a unit.
    return function(*args)


class EncoderActor:
    """A Ray actor: loads the sentence encoder once, on ``threads`` CPU threads (the CPUs Ray
    gave it: no oversubscription), and encodes whole shards."""

    def __init__(self, model: ResolvedModel, batch_size: int, backend: str = "torch", threads: int = 1) -> None:
        self.threads = int(threads)
        self.model = model  # a ResolvedModel: the driver resolved it, the folder is shared
        self.backend = backend  # a fast one was exported by the driver: the actor only loads it
        if backend == "torch":
            import torch

            torch.set_num_threads(self.threads)
            load_sentence_transformer(self.model)
        else:
            load_fast(self.model, "bi-encoder", backend, threads=self.threads)
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        return encode(texts, self.model, self.batch_size, cache=False, progress=False, backend=self.backend, threads=self.threads)

    def encode_file(self, path: str, number: int) -> tuple[int, np.ndarray]:
        """``(number, vectors)`` of the ``text`` column of the Parquet file ``path``."""
        texts = _pyarrow().parquet.read_table(path, columns=["text"]).column("text").to_pylist()
        return number, self.encode(texts)


def import_ray() -> ModuleType:
    return require_extra("ray", "distributed", field="workers", also=" (or run with --workers 0)")
