"""Atomic file writes: write to a temporary file beside the target, then rename.

A crash or a bad record half way through never leaves a half-written output.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode an ordinary open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
        with os.fdopen(fd, mode, **kwargs) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, obj, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON atomically (keys sorted so files diff cleanly)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=indent, sort_keys=True, ensure_ascii=False)
        handle.write("\n")
