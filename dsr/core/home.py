"""Where dsr keeps downloads, built collections, indexes and models."""

from __future__ import annotations

import os
from pathlib import Path

from dsr.core.errors import InputError


def dsr_home() -> Path:
    """``$DSR_HOME`` if set, else ``~/.cache/dsr``."""
    return Path(os.environ.get("DSR_HOME") or Path.home() / ".cache" / "dsr").expanduser()


def data_dir(name: str) -> Path:
    """Raw downloaded files of one source (``DSR_HOME/data/NAME``)."""
    return dsr_home() / "data" / name


def index_dir() -> Path:
    return dsr_home() / "indexes"


def models_dir() -> Path:
    return dsr_home() / "models"


def require_writable(folder: Path, advice: str = "set DSR_HOME to a writable folder") -> Path:
    """Create ``folder`` (a cache folder under DSR_HOME) if needed and check it can be written.

    Raises InputError (exit 2) naming the folder and saying to set DSR_HOME
    when it cannot be created (DSR_HOME is a file, or lies under one) or is
    not writable (a read-only DSR_HOME), instead of a PermissionError
    traceback half way through a build.
    """

    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"cannot create the cache folder ({err.strerror or err}); {advice} (DSR_HOME is {dsr_home()})", path=folder
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"the cache folder is not writable; {advice} (DSR_HOME is {dsr_home()})", path=folder)
    return folder
