"""Kill tests: run dsr commands in real processes and SIGKILL them at chosen moments.

Starting Python and importing pandas, scipy and matplotlib takes longer than the
commands under test, so a :class:`Forker` starts one warm helper process (this
file run as a script, the modules to preload as arguments) that forks a fresh
child per job: the child is a real process with its own pid (``dsr``'s
``PROCESS_STARTED`` is reset at the fork), running ``dsr.cli.main(argv)``
or a function ``module:name(*args)``, and the test kills it with ``os.kill``.

Protocol on the helper's stdin/stdout, one JSON line each way: a job
``{"argv": [...]} | {"call": "mod:fn", "args": [...]}`` (plus ``env``, ``log`` and
``pause``; ``warm: true`` runs ``argv`` in the helper itself, so that the children
start with its caches warm) is answered by the child's pid, then by its end
(``{"exit": N}`` or ``{"signal": N}``).

Each child leads its own process group; once it has ended (killed or not), the helper kills
what is left of that group (workers it forked), so no job outlives its trial, and
:meth:`Forker.close` ends the helper for good.

``pause: {"before_rename_to": PATH, "flag": FILE, "moment": "before"|"after"}`` holds the
child, after creating FILE, at a moment of a folder swap onto PATH: ``before`` the new set
takes PATH's place (the one-step exchange, or a rename onto PATH), ``after`` it (the old set
being renamed aside), whatever code does the swap, so a kill can be aimed there.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class Forker:
    """The warm helper process; ``start`` forks a job, ``wait`` reaps it."""

    def __init__(self, preload: list[str], env: dict[str, str] | None = None):
        from tests.support.tiers import require_slow

        require_slow("a helper process")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
        assert self._read() == {"ready": True}

    def _read(self) -> Any:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the helper process ended ({self.proc.wait()})")
        return json.loads(line)

    def start(self, job: dict[str, Any]) -> int:
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        return self._read()["pid"]

    def wait(self) -> dict[str, int]:
        return self._read()

    def run(self, job: dict[str, Any]) -> dict[str, int]:
        self.start(job)
        return self.wait()

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _hold_renames(target: str, flag: str, moment: str = "before") -> None:
    """Sleep (until killed) at a moment of a folder swap onto ``target``, creating ``flag``
    first: ``before`` the new set takes ``target``'s place (the exchange of
    ``dsr.core.atomic.exchange``, or a rename onto ``target`` where there is none), ``after``
    it (the old set, swapped out, is being renamed aside)."""
    import time

    from dsr.core import atomic

    def hold() -> None:
        open(flag, "w").close()
        time.sleep(600)

    for name in ("replace", "rename"):
        real = getattr(os, name)

        def held(src, dst, *args, _real=real, **kwargs):
            if moment == "before" and os.path.abspath(dst) == target:
                hold()
            if (
                moment == "after"
                and os.path.basename(src).startswith(f".{os.path.basename(target)}.ready-")
                and ".old-" in os.path.basename(dst)
            ):
                hold()
            return _real(src, dst, *args, **kwargs)

        setattr(os, name, held)
    real_exchange = atomic.exchange

    def exchange(a, b):
        if moment == "before" and os.path.abspath(b) == target:
            hold()
        return real_exchange(a, b)

    atomic.exchange = exchange


def _child(job: dict[str, Any]) -> int:
    os.setpgid(0, 0)  # the job's own group: what it forks is swept with it
    os.environ.update(job.get("env") or {})
    if job.get("pause"):
        _hold_renames(
            os.path.abspath(job["pause"]["before_rename_to"]), job["pause"]["flag"], job["pause"].get("moment", "before")
        )
    null = os.open(os.devnull, os.O_RDWR)
    log = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if job.get("log") else null
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(log, 2)
    if "argv" in job:
        from dsr.cli import main

        return main(job["argv"])
    module, _, name = job["call"].partition(":")
    getattr(importlib.import_module(module), name)(*job.get("args", ()))
    return 0


def _warm(job: dict[str, Any]) -> dict[str, int]:
    from contextlib import redirect_stdout

    from dsr.cli import main

    with open(os.devnull, "w") as null, redirect_stdout(null):
        return {"exit": main(job["argv"])}


def serve() -> None:
    for name in sys.argv[1:]:
        importlib.import_module(name)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        if job.get("warm"):  # run in the helper itself: its children inherit the warmed caches
            print(json.dumps({"pid": os.getpid()}), flush=True)
            print(json.dumps(_warm(job)), flush=True)
            continue
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = _child(job)
            except SystemExit as end:
                code = end.code if isinstance(end.code, int) else 1
            except BaseException:
                import traceback

                traceback.print_exc()  # into the job's log
            finally:
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # anything the job forked that is still there
        end = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
        print(json.dumps(end), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    serve()
