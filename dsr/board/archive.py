"""Content-addressed run files: ``ROOT/ab/abcdef...`` named by the sha256 of their bytes.

A new run file is *staged*: written to ``ROOT/tmp/stage-PID-DIGEST-*`` and
fsynced, then hard-linked into place (its folder fsynced) *before* the
database row that names it is committed, so no row is ever without its file;
after the commit the staged name is removed (:meth:`RunStore.stage`,
:meth:`RunStore.finish`). A refused submission unlinks the file it placed
unless a row names it (:meth:`RunStore.abandon`). The staged name marks a file
as in flight: after a crash, the next start keeps the file when its row was
committed and removes it otherwise (:meth:`dsr.board.service.Board.recover`),
so the store holds no file that no row names. The validator's scratch copies
are ``ROOT/tmp/check-PID-*.run``. Temporaries carry the process id: a start
handles those of processes that are gone (:meth:`RunStore.leftovers`), never a
live process's. Paths are built from the hex digest only, never from anything
a user sent.

What the organisers' commands (:mod:`dsr.board.admin`) need of the store is :class:`RunFiles`:
the stored runs by digest (read, verified, put, deleted, listed) and a scratch copy for the
validator; they never build a path into it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from dsr.core.atomic import process_running

_HEX = re.compile(r"^[0-9a-f]{64}$")
_TEMP = re.compile(r"^(stage|check)-(\d+)-(.*)$")


class RunFiles(Protocol):
    """The stored run files, each named by the sha256 of its bytes: what the organisers'
    commands use (:class:`RunStore` is the one on disk)."""

    def put(self, data: bytes) -> str:
        """Store ``data`` durably; its sha256."""
        ...

    def get(self, digest: str) -> bytes:
        """The stored bytes (``FileNotFoundError`` when there are none)."""
        ...

    def read(self, digest: str) -> bytes | None:
        """The stored bytes when they still hash to ``digest``; None when missing or altered."""
        ...

    def delete(self, digest: str) -> bool:
        """Remove the stored file; whether there was one."""
        ...

    def digests(self) -> list[str]:
        """The digests of every stored file, sorted."""
        ...

    def scratch(self, data: bytes) -> contextlib.AbstractContextManager[Path]:
        """A private temporary file holding ``data`` (for the validator), removed afterwards."""
        ...


class RunStore:
    """The run files on disk (:class:`RunFiles`, and the staging the submission transaction
    uses)."""

    def __init__(self, root: str | Path) -> None:
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

    def stage(self, data: bytes) -> Staged:
        """Write ``data`` durably to a staging file and link it into place unless the store
        has it already (the row naming it comes next; then :meth:`finish` or :meth:`abandon`)."""
        digest = hashlib.sha256(data).hexdigest()
        fd, name = tempfile.mkstemp(dir=self.tmp, prefix=f"stage-{os.getpid()}-{digest}-")
        staged = Staged(digest, Path(name))
        with _removed_on_failure(staged.path):
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            staged.placed = self._link(staged)
        return staged

    def _link(self, staged: Staged) -> bool:
        """Link the staged file into place; False when a file is there already."""
        target = self.path(staged.digest)
        target.parent.mkdir(exist_ok=True)
        try:
            os.link(staged.path, target)
        except FileExistsError:
            return False
        _fsync_dir(target.parent)
        return True

    def finish(self, staged: Staged) -> None:
        """The row is committed: make sure the file is in place, drop the staged name."""
        if not self.has(staged.digest):  # removed meanwhile by a start that saw no row yet
            self._link(staged)
        staged.path.unlink(missing_ok=True)

    def abandon(self, staged: Staged, named: bool) -> None:
        """The row was not written: remove the staged name, and the file it placed unless a
        row names it (``named``) or the file there is not this one."""
        target = self.path(staged.digest)
        with contextlib.suppress(FileNotFoundError):
            if not named and os.path.samefile(target, staged.path):
                target.unlink()
        staged.path.unlink(missing_ok=True)

    def put(self, data: bytes) -> str:
        """Store ``data`` durably now and return its sha256 (for files a row names already)."""
        staged = self.stage(data)
        self.finish(staged)
        return staged.digest

    def get(self, digest: str) -> bytes:
        return self.path(digest).read_bytes()

    def read(self, digest: str) -> bytes | None:
        """The stored bytes when the file exists and still hashes to its name, else None."""
        try:
            data = self.path(digest).read_bytes()
        except FileNotFoundError:
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None

    def verify(self, digest: str) -> bool:
        """Whether the stored file exists and still hashes to its name."""
        return self.read(digest) is not None

    def delete(self, digest: str) -> bool:
        """Remove the stored file (its folder fsynced); whether there was one."""
        path = self.path(digest)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        _fsync_dir(path.parent)
        return True

    def digests(self) -> list[str]:
        """The digests of every stored file (staging and scratch files are not runs), sorted."""
        return sorted(path.name for path in self.root.glob("??/*") if _HEX.match(path.name) and path.parent.name == path.name[:2])

    @contextlib.contextmanager
    def scratch(self, data: bytes) -> Iterator[Path]:
        """A private temporary file holding ``data`` (for the validator), removed afterwards."""
        fd, tmp = tempfile.mkstemp(dir=self.tmp, prefix=f"check-{os.getpid()}-", suffix=".run")
        path = Path(tmp)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            yield path
        finally:
            path.unlink(missing_ok=True)

    def leftovers(self) -> list[tuple[str, Path, str]]:
        """Temporaries of processes that are gone: (kind, path, digest), kind ``stage`` (with
        the digest of its content) or ``check`` (digest ""); live processes' are not listed."""
        out = []
        for path in self.tmp.iterdir():
            found = _TEMP.match(path.name)
            if found and not process_running(int(found.group(2))):
                kind, rest = found.group(1), found.group(3)
                out.append((kind, path, rest[:64] if kind == "stage" and _HEX.match(rest[:64]) else ""))
        return out


@dataclass
class Staged:
    """A run file in flight: its digest, its staged name, whether staging placed it."""

    digest: str
    path: Path
    placed: bool = False


@contextlib.contextmanager
def _removed_on_failure(path: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        path.unlink(missing_ok=True)
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
