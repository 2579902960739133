"""Independent pieces of one computation spread over forked copies of this process.

:func:`forked_map` calls ``work(i)`` for ``i`` in ``range(n)`` in worker processes made by
``fork``: each starts as a copy of this one, so ``work`` may be a closure over anything in
memory (runs, a collection, a tuned grid's callables) and nothing but ``i`` and the
answer crosses the pipe. Used where a stage is many independent, CPU-bound pieces of
Python (measuring a tuning grid's configurations, BM25's grid scores): the same answers
in the same order, in less wall time (on the 2-core development machine a SIGIR-sized
tuning grid took 0.65x the wall time and 1.2x the CPU time of one process).

Serial (in this process, no pool) when asked for one worker, for fewer than two pieces,
where ``fork`` does not exist or is not safe (Windows, macOS), inside a worker already, or while
a thread runs native work that must not be forked (:func:`no_fork`: the int8 export).
``DSR_WORKERS`` (an integer) sets the default; else one worker per CPU this process may
use, at most :data:`MAX_WORKERS`.

A worker ends with the process that forked it, however that one ends (SIGKILL included: on
Linux through ``PR_SET_PDEATHSIG``): an orphaned pool worker would otherwise wait on its task
queue forever, holding its memory (two long outlived a killed ``dsr reproduce``).
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

#: the default pool's cap (the pieces are small: more processes cost more than they give)
MAX_WORKERS = 4

_work: Callable[[int], Any] | None = None  # what a forked worker calls
_in_worker = False
_held = 0  # threads now inside no_fork()
_held_lock = threading.Lock()


@contextlib.contextmanager
def no_fork() -> Iterator[None]:
    """While a thread is in this block, :func:`forked_map` works in this process: a thread
    running native code with its own threads and locks (a model's export and calibration)
    must not be copied mid-work by a fork."""
    global _held
    with _held_lock:
        _held += 1
    try:
        yield
    finally:
        with _held_lock:
            _held -= 1


def default_workers() -> int:
    """``DSR_WORKERS`` when set, else the CPUs this process may run on (at most 4)."""
    asked = os.environ.get("DSR_WORKERS", "").strip()
    if asked.isdigit():
        return max(1, int(asked))
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cpus))


def can_fork() -> bool:
    """Linux and the other Unixes where ``fork`` is safe (not macOS, whose system
    libraries may not survive a fork), not inside a worker already, and no thread in
    :func:`no_fork`."""
    return "fork" in multiprocessing.get_all_start_methods() and sys.platform != "darwin" and not _in_worker and not _held


def forked_map(work: Callable[[int], Any], n: int, workers: int | None = None) -> Iterator[Any]:
    """``work(0) ... work(n - 1)``, in that order, computed by up to ``workers`` forked
    processes (default :func:`default_workers`); answers must pickle. An exception in a
    piece is raised here, as it would be serially."""
    workers = default_workers() if workers is None else workers
    workers = min(workers, n)
    if workers <= 1 or not can_fork():
        yield from (work(i) for i in range(n))
        return
    # with fork, a worker's initializer and its arguments are not pickled: the closure is
    # inherited as it is in memory
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"), initializer=_start_worker, initargs=(work, os.getpid())
    )
    try:
        # in order, a few pieces per message: the answers stream back as they come
        yield from pool.map(_call, range(n), chunksize=max(1, n // (workers * 8)))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _start_worker(work: Callable[[int], Any], parent: int) -> None:
    global _work, _in_worker
    _work, _in_worker = work, True
    die_with_parent(parent)


#: Linux's prctl option: the signal a process gets when the thread that forked it ends
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a forked child: be killed when the process ``parent`` ends (Linux; elsewhere nothing
    is set), and end now if it already has (it died before this call)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):  # no C library to call: the check below still runs
            pass
    if os.getppid() != parent:
        os._exit(1)


def _call(i: int) -> Any:
    assert _work is not None, "called only in a worker _start_worker has set up"
    return _work(i)
