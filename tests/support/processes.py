"""The suite leaves no process behind.

At the start of a run, :func:`mark_this_run` puts a token in the environment
(``DSR_TEST_RUN``); every process a test starts inherits it (servers, PostgreSQL through
``runuser``, Ray, browsers, forked helpers and their children, xdist's workers), even when it
leaves the test's process group or is reparented to init. At the end of the run (in the xdist
controller, once its workers are gone) :func:`strays` lists the processes still carrying the
token; ``tests/conftest.py`` reports them, kills them and fails the run.

That check runs when a run ends. A run interrupted (SIGINT or SIGTERM to ``make test``'s
process group, or a SIGKILL) ends no fixture, and what left the group on its own is not
signalled with it: PostgreSQL (``pg_ctl`` starts the server in a session of its own) and
Chromium (Playwright starts it in a process group of its own). So a fixture that starts one
hands :func:`stop_with_me` how to stop it: a small watcher, in a session of its own, waits on
a pipe from the process that started the server and, when that pipe closes without the word
"released" (the process ended, however it ended), stops the server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

__all__ = ["MARK", "mark_this_run", "strays", "describe", "kill_all", "Watch", "stop_with_me", "started_by"]

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


#: the watcher of :func:`stop_with_me` (standard library only: it must start fast and alone)
WATCHER = r"""
import json, os, shutil, signal, subprocess, sys
for each in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(each, signal.SIG_IGN)
plan = json.loads(sys.argv[1])
said = sys.stdin.buffer.read()  # until the owner closes the pipe, or ends
if said.strip() != b"released":
    for argv in plan["run"]:
        try:
            subprocess.run(argv, capture_output=True, timeout=60)
        except Exception:
            pass
    for pid, started in plan["kill"]:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[19] == started:  # not a new process
                    os.kill(pid, signal.SIGKILL)
        except (OSError, IndexError):
            pass
    for path in plan["remove"]:
        shutil.rmtree(path, ignore_errors=True)
"""


class Watch:
    """A watcher started by :func:`stop_with_me`: :meth:`release` once the server is stopped
    the ordinary way."""

    def __init__(self, plan: dict):
        self.process = subprocess.Popen(
            [sys.executable, "-c", WATCHER, json.dumps(plan)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not signalled with the run's process group
        )

    def release(self) -> None:
        """The server was stopped: the watcher ends without doing anything."""
        try:
            self.process.stdin.write(b"released")
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait(timeout=30)


def stop_with_me(run: list[list[str]] = (), kill: list[int] = (), remove: list[str] = ()) -> Watch:
    """When this process ends without :meth:`Watch.release` (an interrupted or killed run),
    run the commands ``run``, SIGKILL the processes ``kill`` (those still running, not newer
    ones under a reused id) and remove the folders ``remove``."""
    return Watch({"run": [list(a) for a in run], "kill": [[pid, _started(pid)] for pid in kill], "remove": list(remove)})


def _started(pid: int) -> str:
    """A process's start time (clock ticks since boot, /proc/PID/stat), which tells it from a
    later process under the same id."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def started_by(start: Callable[[], object], named: str) -> tuple[object, list[int]]:
    """``start()``'s result and the processes it started: those of this run (tagged with its
    :data:`MARK`) new since, that descend from this process or whose name holds ``named``
    (a helper that left for a session of its own; not another xdist worker's servers)."""
    import psutil

    token = mark_this_run()
    before = {p.pid for p in _tagged(token)}
    result = start()
    mine = {p.pid for p in psutil.Process().children(recursive=True)}
    found = []
    for proc in _tagged(token):
        try:
            if proc.pid not in before and (proc.pid in mine or named in proc.name()):
                found.append(proc.pid)
        except psutil.Error:
            continue
    return result, found
