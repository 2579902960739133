"""The suite leaves no process behind.

At the start of a run, :func:`mark_this_run` puts a token in the environment
(``DSR_TEST_RUN``); every process a test starts inherits it (servers, PostgreSQL through
``runuser``, Ray, browsers, forked helpers and their children, xdist's workers), even when it
leaves the test's process group or is reparented to init. At the end of the run (in the xdist
controller, once its workers are gone) :func:`strays` lists the processes still carrying the
token; ``tests/conftest.py`` reports them, kills them and fails the run.
"""

from __future__ import annotations

import os
import time
import uuid

__all__ = ["MARK", "mark_this_run", "strays", "describe", "kill_all"]

#: the environment variable that tags every process started during one test run
MARK = "DSR_TEST_RUN"


def mark_this_run() -> str:
    """This run's token (set in the environment when not already, e.g. in an xdist worker)."""
    return os.environ.setdefault(MARK, uuid.uuid4().hex)


def strays(token: str, grace: float = 10.0) -> list:
    """The live processes (``psutil.Process``) tagged with ``token``, other than this one, after
    waiting up to ``grace`` seconds for them to end (servers being stopped, workers exiting)."""
    deadline = time.monotonic() + grace
    while True:
        found = _tagged(token)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)


def _tagged(token: str) -> list:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if proc.environ().get(MARK) == token:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def describe(proc) -> str:
    """``pid (parent N, up S s): command line``."""
    import psutil

    try:
        command = " ".join(proc.cmdline())[:200] or proc.name()
        return f"{proc.pid} (parent {proc.ppid()}, up {time.time() - proc.create_time():.0f} s): {command}"
    except psutil.Error:
        return f"{proc.pid} (ended)"


def kill_all(procs) -> None:
    import psutil

    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)
