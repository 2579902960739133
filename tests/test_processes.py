"""The check that a test run leaves no process behind (tests/support/processes.py, run by
tests/conftest.py at the end of a run): it finds what a run started, wherever it went."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from tests.support import processes


def test_a_process_started_during_the_run_is_found_even_in_its_own_session_and_killed():
    token = uuid.uuid4().hex  # another run's mark: this run's own check is not disturbed
    env = {**os.environ, processes.MARK: token}
    # a grandchild in a new session whose parent has already exited (reparented, as a daemon is)
    launcher = subprocess.run(
        [
            sys.executable,
            "-c",
            "import subprocess; print(subprocess.Popen(['sleep', '60'], "
            "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(launcher.stdout)
    untagged = subprocess.Popen(["sleep", "60"], env={k: v for k, v in env.items() if k != processes.MARK})
    try:
        found = processes.strays(token, grace=0)
        assert [p.pid for p in found] == [orphan]
        assert "sleep 60" in processes.describe(found[0])
        processes.kill_all(found)
        assert processes.strays(token, grace=0) == []
    finally:
        untagged.kill()
        untagged.wait()


def test_this_run_is_marked():
    assert len(os.environ[processes.MARK]) == 32
