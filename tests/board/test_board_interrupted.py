"""A run of the suite interrupted (SIGTERM or SIGINT to its process group, as ``make test``
gets from a terminal or a CI runner that gives up) leaves no server running: a small pytest
session in its own process group takes the fixtures that start a PostgreSQL cluster and
Chromium and starts ``dsr serve``, then the group is signalled mid-test. PostgreSQL and
Chromium leave the group when they start (``pg_ctl`` runs the server in a session of its own,
Playwright the browser in a group of its own), so their fixtures hand the stop to a watcher
(``tests.support.processes.stop_with_me``); afterwards no process of that session is left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support import processes
from tests.support.tiers import require_slow

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

INNER = """
import json, os, time

from tests.support.board import ServerProcess


def test_holds_its_servers(postgres, chromium, tmp_path):
    with ServerProcess(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path / "store") as server:
        held = {"data": str(postgres.root / "data"), "root": str(postgres.root), "serve": server.process.pid}
        with open(os.environ["INNER_OUT"], "w") as handle:
            json.dump(held, handle)
        time.sleep(600)
"""


def processes_with(text: str) -> list[int]:
    """Live processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupted_run_leaves_no_database_browser_or_server(tmp_path, sig):
    require_slow("a pytest session with PostgreSQL and Chromium")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "held.json"
    token = uuid.uuid4().hex  # the inner session's mark: its processes, and only them
    env = {**os.environ, processes.MARK: token, "INNER_OUT": str(out), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "tests.conftest"]
    argv += ["--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"), str(tmp_path / "test_inner.py")]
    with open(tmp_path / "inner.log", "wb") as log:
        inner = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 180
            while not out.exists() and inner.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert out.exists(), (tmp_path / "inner.log").read_text()[-2000:]
            held = json.loads(out.read_text())
            assert processes_with(held["data"]) and processes.strays(token, grace=0)  # all running
            os.killpg(inner.pid, sig)
            inner.wait(timeout=120)
        finally:
            if inner.poll() is None:
                os.killpg(inner.pid, signal.SIGKILL)
                inner.wait()
    left = processes.strays(token, grace=60)  # the watchers stop what left the group
    described = [processes.describe(p) for p in left]
    processes.kill_all(left)
    assert described == [], described
    assert processes_with(held["data"]) == [] and not Path(held["root"]).exists()
