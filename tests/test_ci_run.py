"""CI's script (``.ci/run``) as CI runs it, with its installers replaced by stand-ins on PATH:
Debian's packages and Label Studio's venv install side by side with ``make venv``, each one's
output is shown whole, lint and the tests start only when every install is done, a failed
Debian install fails CI, a failed Label Studio install is said and tolerated, and a failed
``make venv`` waits for the installs it started before CI exits."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the script (and the stand-ins' sleep) needs of a machine besides the commands it installs or runs
TOOLS = ("bash", "ls", "cat", "rm", "mktemp", "dirname", "sleep")

pytestmark = pytest.mark.slow  # starts bash and its stand-ins (helper processes)


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    path.chmod(0o755)


def ci(tmp_path: Path, *, apt: int = 0, labelstudio: int = 0, venv: int = 0) -> tuple[int, str, list[str]]:
    """Run a copy of .ci/run with stand-ins for apt-get, sh (Label Studio's script) and make; its
    exit status, output, and the events the stand-ins logged in order."""
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in TOOLS:
        os.symlink(shutil.which(tool), bin_ / tool)
    events = tmp_path / "events"
    # the installs take a while (longer than starting `make` takes on a busy machine), so that
    # what runs beside them and what waits for them are seen
    stub(bin_, "apt-get", f'sleep 1.5; echo "apt-get $*"; echo "apt-get-$1" >> {events}; exit {apt}')
    stub(bin_, "sh", f'sleep 1.5; echo "label studio: $*"; echo labelstudio >> {events}; exit {labelstudio}')
    stub(bin_, "make", f'echo "make-$1" >> {events}; echo "making $1"; [ "$1" != venv ] || exit {venv}')
    done = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")],
        env={"PATH": str(bin_), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = events.read_text().split() if events.exists() else []
    return done.returncode, done.stdout + done.stderr, lines


def test_the_installs_run_beside_make_venv_and_lint_and_tests_wait_for_them(tmp_path):
    rc, out, events = ci(tmp_path)
    assert rc == 0, out
    assert events[0] == "make-venv"  # started while apt-get and Label Studio's script still ran
    assert events[-2:] == ["make-lint", "make-test"]
    assert {"apt-get-update", "apt-get-install", "labelstudio"} <= set(events[1:-2])
    # each background step's output, whole, with its seconds
    assert "apt-get install -y postgresql chromium chromium-driver poppler-utils" in out
    assert "label studio: tools/labelstudio_venv.sh" in out
    assert "ci: debian took" in out and "ci: labelstudio took" in out and "ci: make venv took" in out


def test_a_failed_debian_install_fails_ci_before_lint_and_tests(tmp_path):
    rc, out, events = ci(tmp_path, apt=100)
    assert rc == 100, out
    assert "installing Debian's packages failed" in out and "apt-get update" in out
    assert "make-lint" not in events and "make-test" not in events


def test_a_failed_label_studio_install_is_said_and_the_tests_still_run(tmp_path):
    rc, out, events = ci(tmp_path, labelstudio=3)
    assert rc == 0, out
    assert "the Label Studio venv could not be made" in out
    assert events[-2:] == ["make-lint", "make-test"]


def test_a_failed_make_venv_waits_for_the_installs_it_started(tmp_path):
    rc, out, events = ci(tmp_path, venv=2)
    assert rc == 2, out
    # apt-get and Label Studio's script ran to their end before CI exited: none is left behind
    assert events[0] == "make-venv" and {"apt-get-install", "labelstudio"} <= set(events)
    assert "make-lint" not in events and "make-test" not in events
