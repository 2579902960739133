"""Scoring off the request path: a pool of worker processes that check and score runs.

``dsr serve --workers N`` (default: the cores shared among the server processes, at least one
and at most 4 each) starts N processes
(``forkserver``: no copy of the server's threads or database connections), each with a pipe
of its own; a submission's request thread takes an idle worker and sends it the run's bytes
and its phase's key (the phase's :class:`dsr.board.scoring.PhaseSpec` the first time that
worker meets the phase), and the worker parses the run once, validates and scores it
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

import contextlib
import multiprocessing
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from dsr.board.archive import RunStore
from dsr.board.intake import ranking_digest
from dsr.board.scoring import Checked, PhaseData, PhaseSpec, score_text
from dsr.core.atomic import process_running
from dsr.core.errors import InputError
from dsr.db.refused import Refused

_T = TypeVar("_T")

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
            _phase(spec.key, spec, name)
        except InputError:  # the submission that needs it will say so
            pass


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


def _phase(key: str, spec: PhaseSpec | None, name: str) -> PhaseData | None:
    """A phase's scoring data by its spec's key (None: this worker has not seen the spec)."""
    data = _phases.get(key)
    if data is None and spec is not None:
        data = _phases[key] = spec.build(name)
    return data


def _score(key: str, spec: PhaseSpec | None, name: str, text: bytes, strict: bool) -> Checked | None:
    """One run, in a worker (None: send the phase's spec, this worker has not seen it)."""
    try:
        data = _phase(key, spec, name)
    except InputError as err:
        return Checked("", error=err.message)
    if data is None:
        return None
    assert _store is not None, "a worker's store is set when it starts"
    return score_text(data, text, strict, _store.scratch)


def _serve(conn: Connection, store_root: str, specs: list[tuple[PhaseSpec, str]], server: int) -> None:
    """A worker: its start, then calls ``(function, args)`` from its pipe answered with
    ``(True, value)`` or ``(False, exception)``, until ``None`` or the pipe's end."""
    _start(store_root, specs, server)
    conn.send((True, os.getpid()))
    while True:
        try:
            call = conn.recv()
        except (EOFError, OSError):
            return
        if call is None:
            return
        function, args = call
        try:
            answer = (True, function(*args))
        except Exception as err:  # the server raises it in the request's thread
            answer = (False, err)
        try:
            conn.send(answer)
        except Exception as err:  # an answer that does not pickle
            conn.send((False, RuntimeError(f"a scoring worker's answer could not be sent: {err!r}")))


#: the longest path a Unix socket can bind on Linux (sun_path: 108 bytes with the final NUL)
SOCKET_PATH_MAX = 107
#: what the forkserver adds to the temporary folder for its socket: /pymp-XXXXXXXX/listener-XXXXXXXX
_SOCKET_SUFFIX = len("/pymp-12345678/listener-12345678")


def check_socket_room() -> None:
    """Refuse, before anything starts, a temporary folder too long for the scoring pool's
    forkserver socket (multiprocessing binds it at TMPDIR/pymp-*/listener-*): else the pool's
    start fails deep in multiprocessing with "AF_UNIX path too long"."""
    folder = tempfile.gettempdir()
    if len(os.fsencode(folder)) + _SOCKET_SUFFIX > SOCKET_PATH_MAX:
        raise InputError(
            f"the temporary folder is {len(os.fsencode(folder))} bytes long, and the scoring workers' "
            f"socket inside it would pass the {SOCKET_PATH_MAX} bytes a Unix socket's path may have: "
            f"set TMPDIR to a folder of at most {SOCKET_PATH_MAX - _SOCKET_SUFFIX} bytes, or `workers` to 0",
            field="TMPDIR",
        )


class WorkerGone(RuntimeError):
    """A scoring worker ended during a call (killed, out of memory): the request fails, a new
    worker takes its place."""


class Overdue(RuntimeError):
    """A scoring worker did not answer within the pool's time bound: it is killed and replaced,
    and the run refused."""


@dataclass
class _Worker:
    process: multiprocessing.process.BaseProcess
    conn: Any


class ScoringPool:
    """``workers`` processes scoring runs (:meth:`score` blocks the calling thread only).

    Each worker has a pipe of its own; a request's thread takes an idle worker, sends it the
    call and waits on the answer itself. ``concurrent.futures.ProcessPoolExecutor`` moved each
    call through a manager thread and a feeder thread in the server (four hand-overs of the
    server's GIL a run, and a sixth of its CPU under 20 clients, measured with py-spy). A
    phase's spec (its labels, topics and measures) goes to a worker once; later calls name it
    by its key."""

    def __init__(self, workers: int, store_root: Path, specs: list[tuple[PhaseSpec, str]], timeout: float | None = None) -> None:
        """``timeout``: the seconds a call may take before the worker is killed and replaced
        and the run refused (None: no bound)."""
        self.workers = workers
        self.timeout = timeout
        if workers:
            check_socket_room()
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload([__name__])  # not __main__ (the command line)
        self._start_args = (str(store_root), specs, os.getpid())
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        # Start them all now, each building the open phases' data: no request waits for a start.
        started = [self._spawn() for _ in range(workers)]
        for worker in started:
            self._ready(worker)
            self._idle.put(worker)

    def _spawn(self) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, *self._start_args), name="dsr-scoring")
        process.start()
        theirs.close()
        worker = _Worker(process, ours)
        with self._lock:
            self._all.append(worker)
        return worker

    def _ready(self, worker: _Worker) -> None:
        try:
            worker.conn.recv()
        except (EOFError, OSError) as err:
            raise WorkerGone(f"a scoring worker did not start (exit code {worker.process.exitcode})") from err

    @contextlib.contextmanager
    def _worker(self) -> Iterator[_Worker]:
        """An idle worker, the calling thread's until the block ends: back in the pool after
        an answer (a raised one too), replaced when it ended during the call."""
        worker = self._idle.get()
        try:
            yield worker
        except WorkerGone:
            self._replace(worker)
            raise
        except Overdue:  # it may still be unpacking or parsing: its CPU and memory go now
            self._replace(worker)
            raise Refused(
                422,
                f"the run took longer than {self.timeout:g} s to check and score (the board's bound): "
                "refused, nothing stored; a valid run of this board takes far less",
            ) from None
        except Exception:  # the worker's own answer, raised here: the pipe is in step
            self._idle.put(worker)
            raise
        self._idle.put(worker)

    def _ask(self, worker: _Worker, function: Callable[..., _T], *args: Any) -> _T:
        try:
            worker.conn.send((function, args))
            if self.timeout is not None and not worker.conn.poll(self.timeout):
                raise Overdue(f"no answer within {self.timeout} s")
            ok, value = worker.conn.recv()
        except (EOFError, OSError) as err:
            raise WorkerGone("a scoring worker ended during the call") from err
        if not ok:
            raise value
        return value

    def _replace(self, worker: _Worker) -> None:
        with self._lock:
            self._all.remove(worker)
        worker.conn.close()
        worker.process.kill()
        worker.process.join(5)
        fresh = self._spawn()
        self._ready(fresh)
        self._idle.put(fresh)

    def score(self, spec: PhaseSpec, name: str, text: bytes, strict: bool) -> Checked:
        """:func:`dsr.board.scoring.score_text` in a worker: the phase named by its key, and
        sent whole to a worker that has not seen it (once a worker)."""
        key = spec.key
        with self._worker() as worker:
            checked = self._ask(worker, _score, key, None, name, text, strict)
            if checked is None:  # this worker has not seen the phase: the same worker gets it
                checked = self._ask(worker, _score, key, spec, name, text, strict)
        assert checked is not None, "a worker sent the spec builds the phase"
        return checked

    def digest(self, text: bytes) -> str:
        """:func:`dsr.board.intake.ranking_digest` in a worker (a refused run's duplicate check)."""
        with self._worker() as worker:
            return self._ask(worker, ranking_digest, text)

    def close(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            with contextlib.suppress(OSError, ValueError):
                worker.conn.send(None)
        for worker in workers:
            worker.process.join(10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)
            worker.conn.close()
