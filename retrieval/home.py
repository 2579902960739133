"""Where dsr keeps downloads, built collections, indexes and models."""

from __future__ import annotations

import os
from pathlib import Path


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
