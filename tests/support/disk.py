"""A full disk, a real one: ``tiny_disk``, a 4 MiB tmpfs mounted for a test (root only:
skipped elsewhere), and :func:`fill`, which fills it. The writers then meet the kernel's own
ENOSPC where they would on a server. The fixture is registered for the whole suite by
tests/conftest.py (``pytest_plugins``)."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

__all__ = ["fill", "tiny_disk"]


def fill(folder) -> None:
    """Write zeros into ``folder`` until its disk is full (again, after a command freed some)."""
    with open(folder / "fill", "ab", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 512)
        except OSError as err:
            assert err.errno == errno.ENOSPC


@pytest.fixture
def tiny_disk(tmp_path):
    """A 4 MiB tmpfs (unmounted after the test)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True).returncode != 0
    ):
        pytest.skip("cannot mount a tmpfs here (root and mount needed)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)
