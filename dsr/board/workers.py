"""Scoring off the request path: a pool of worker processes that check and score runs.

``dsr serve --workers N`` (default: the cores shared among the server processes, at least one
and at most 4 each) starts N processes
(``forkserver``: no copy of the server's threads or database connections); a submission's
request sends the run's bytes and its phase's :class:`dsr.board.scoring.PhaseSpec` to one
of them, which parses the run once, validates and scores it
(:func:`dsr.board.scoring.score_text`) and sends back the per-topic values, the
validation summary and the ranking digest. Each worker builds a phase's scoring data once
(on first use, or at start for the phases open then) and keeps it. The request waits on
the answer with the event loop and the server's GIL free, so N runs are scored at once on
N cores while the server goes on answering other requests; the write transaction stays in
the server (quotas are re-counted there under the lock, as before).

``workers=0`` (the library's and the admin commands' default) scores in the calling
thread: the same function, no pool.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from dsr.board.archive import RunStore
from dsr.board.intake import ranking_digest
from dsr.board.scoring import Checked, PhaseData, PhaseSpec, score_text
from dsr.core.atomic import process_running
from dsr.core.errors import InputError

#: ``dsr serve``'s default pool: one worker per core, at most this many
MAX_DEFAULT_WORKERS = 4

_phases: dict[str, PhaseData] = {}  # a worker's phases, by PhaseSpec.key
_store: RunStore | None = None


def default_workers(processes: int = 1) -> int:
    """Scoring workers of each of ``processes`` server processes: the cores shared among
    them, at least one and at most :data:`MAX_DEFAULT_WORKERS` each."""
    return max(1, min(MAX_DEFAULT_WORKERS, (os.cpu_count() or 1) // processes))


def _start(store_root: str, specs: list[tuple[PhaseSpec, str]], server: int) -> None:
    """A worker's start: its scratch folder, a watch on the server process (a worker ends
    when the server is gone, however it ended: uvicorn re-raises SIGTERM after its shutdown,
    and SIGKILL runs nothing) and the scoring data of the phases open now."""
    global _store
    _store = RunStore(store_root)
    threading.Thread(target=_end_with, args=(server,), daemon=True, name="watch-server").start()
    for spec, name in specs:
        try:
            _phase(spec, name)
        except InputError:  # the submission that needs it will say so
            pass


def _ready() -> int:
    time.sleep(0.2)
    return os.getpid()


def _end_with(server: int) -> None:
    while process_running(server) and not _zombie(server):
        time.sleep(1.0)
    os._exit(0)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` ended and waits for its parent to collect it (Linux; else False)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _phase(spec: PhaseSpec, name: str) -> PhaseData:
    data = _phases.get(spec.key)
    if data is None:
        data = _phases[spec.key] = spec.build(name)
    return data


def _score(spec: PhaseSpec, name: str, text: bytes, strict: bool) -> Checked:
    """One run, in a worker."""
    try:
        data = _phase(spec, name)
    except InputError as err:
        return Checked("", error=err.message)
    return score_text(data, text, strict, _store.scratch)


class ScoringPool:
    """``workers`` processes scoring runs (:meth:`score` blocks the calling thread only)."""

    def __init__(self, workers: int, store_root: Path, specs: list[tuple[PhaseSpec, str]]):
        self.workers = workers
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])  # not __main__ (the command line)
        self.executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_start, initargs=(str(store_root), specs, os.getpid())
        )
        # Start them all now, and wait until each has built the open phases' data (each submit
        # without an idle worker adds one; a task that waits a little keeps its worker busy, so
        # the next goes to another): no request waits for a worker's start.
        ready = [self.executor.submit(_ready) for _ in range(workers)]
        for future in ready:
            future.result()

    def score(self, spec: PhaseSpec, name: str, text: bytes, strict: bool) -> Checked:
        return self.executor.submit(_score, spec, name, text, strict).result()

    def digest(self, text: bytes) -> str:
        """:func:`dsr.board.intake.ranking_digest` in a worker (a refused run's duplicate check)."""
        return self.executor.submit(ranking_digest, text).result()

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
