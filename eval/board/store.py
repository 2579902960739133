"""Content-addressed run files: ``ROOT/ab/abcdef...`` named by the sha256 of their bytes.

A file is written to a temporary name, fsynced, renamed into place and its
folder fsynced *before* the database row that names it is committed, so a
crash leaves at worst an orphan file (harmless: nothing names it) and never a
row without its file. Paths are built from the hex digest only, never from
anything a user sent.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

_HEX = re.compile(r"^[0-9a-f]{64}$")


class RunStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmp = self.root / "tmp"
        self.tmp.mkdir(exist_ok=True)

    def path(self, digest: str) -> Path:
        if not _HEX.match(digest):
            raise ValueError(f"not a sha256 hex digest: {digest!r}")
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def put(self, data: bytes) -> str:
        """Store ``data`` durably and return its sha256 (a file already there is kept)."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.is_file():
            return digest
        target.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.tmp, prefix="put-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)
        return digest

    def get(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()

    def verify(self, digest: str) -> bool:
        """Whether the stored file exists and still hashes to its name."""
        path = self.path(digest)
        return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest

    def scratch(self, data: bytes) -> Path:
        """A private temporary file holding ``data`` (for the validator); the caller deletes it."""
        fd, tmp = tempfile.mkstemp(dir=self.tmp, prefix="check-", suffix=".run")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return Path(tmp)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
