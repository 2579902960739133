"""Bytes over the wire and out of archives, for :mod:`dsr.collections.fetch`: what one
download is (:class:`Remote`), its bounds (:class:`Limits`: waits, a deadline, sizes, an
unpacking budget), the bounded download itself and the members of a downloaded archive,
each checked as it is read.

Bounds, each an exit 2 naming the URL or file (never a traceback):

- **size**: a file whose size the manifest (or CHECKSUMS.json) records may
  have that size plus 10 % + 64 KiB (``size_cap``); any other download, and
  archive members without a recorded size, at most ``DEFAULT_MAX_BYTES``
  (1 GiB). A larger ``Content-Length`` is refused before reading; a body
  that grows past the cap is stopped.
- **time**: each file's whole download, headers included, must finish within
  ``DEFAULT_DEADLINE`` seconds (``$DSR_FETCH_DEADLINE``, ``deadline=``); a
  server that trickles bytes is cut off then, not only one that goes silent
  (``timeout``, per read).
- **integrity**: a body shorter than its ``Content-Length``, a cut chunked
  body, a corrupt zip (central directory, or a member's CRC) or a truncated
  tar.gz fail the fetch.
- **archives**: members are unpacked to temporary files and take their names
  only after the whole archive has been read without error; declared member
  sizes are checked against their caps before unpacking, and everything
  unpacked (for a tar.gz, the whole decompressed stream) must stay within
  ``MAX_RATIO`` (100) times the archive's size, at most ``DEFAULT_MAX_BYTES``
  (real archives expand about 5 times; a bomb is stopped). A member path
  that leaves the archive's folder (``..``, absolute) fails the fetch.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import hashlib
import http.client
import io
import socket
import sys
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from tqdm import tqdm

from dsr.core import __version__
from dsr.core.errors import InputError

DEFAULT_BASE_URL = "https://github.com"
BASE_URL_ENV = "DSR_FETCH_BASE_URL"
#: seconds to wait for a connection or for the next bytes; short so offline fails fast
DEFAULT_TIMEOUT = 15.0
#: seconds one file's whole download may take (the CMU_DoG archive, about 5 MB, needs
#: under a minute on a slow link); ``$DSR_FETCH_DEADLINE`` or ``deadline=`` changes it
DEFAULT_DEADLINE = 1800.0
DEADLINE_ENV = "DSR_FETCH_DEADLINE"
#: bytes allowed for a download (or archive member) without a recorded size: the
#: largest real file is well under 100 MB, so 1 GiB only stops runaway servers
DEFAULT_MAX_BYTES = 1 << 30
#: an archive may unpack to at most this many times its size (real ones: about 5)
MAX_RATIO = 100.0
CHECKSUMS = "CHECKSUMS.json"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Remote:
    """One download: a raw repository file, the commit's tar.gz, or a zip to unpack."""

    path: str
    kind: str = "raw"  # "raw" | "tarball" | "zip"
    #: commit to take it from when not the plan's own (``PINNED``: the source's pinned commit,
    #: e.g. the split file of an older revision)
    commit: str | None = None
    #: archives: glob patterns (repository-relative) of the members to keep
    keep: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, entry: str | dict) -> Remote:
        """A manifest's file entry: a path (a raw file) or ``{"path", "kind", "keep", "commit"}``."""
        if isinstance(entry, str):
            return cls(entry)
        return cls(entry["path"], entry.get("kind", "raw"), entry.get("commit"), tuple(entry.get("keep", ())))


#: Remote.commit meaning "the source's pinned commit" in a plan for another revision
PINNED = "pinned"


@dataclass(frozen=True)
class Limits:
    """Bounds on one fetch: waits, time and bytes (see the module docstring)."""

    #: seconds to wait for a connection or for the next bytes
    timeout: float = DEFAULT_TIMEOUT
    #: seconds one file's whole download may take, however the server trickles
    deadline: float = DEFAULT_DEADLINE
    #: bytes a download or an archive member without a recorded size may have
    max_bytes: int = DEFAULT_MAX_BYTES
    #: an archive may unpack to at most this many times its own size
    max_ratio: float = MAX_RATIO


def size_cap(size: int) -> int:
    """Bytes allowed for a file whose size is recorded: the size plus a margin."""
    return size + size // 10 + (64 << 10)


def _members(
    archive: Path, remote: Remote, url: str, cap: Callable[[str], int], limits: Limits
) -> Iterator[tuple[str, IO[bytes]]]:
    """(repository path, readable) for each wanted member of a downloaded archive.

    Checked before anything is unpacked, where the format allows: a zip's
    central directory and every wanted member's declared size (against ``cap``
    and the unpacking budget); a tar's member names and declared sizes as the
    stream reaches them, and the whole decompressed stream against the budget
    (``max_ratio`` times the archive's size, at most ``max_bytes``, at least 1 MiB).
    Member data is CRC-checked (zip) or length-checked (tar) while it is read.
    A broken or truncated archive, an unsafe member path or a budget overrun
    raises InputError naming the URL (wrap the reading in ``_archive_errors``).
    """
    budget = max(1 << 20, min(limits.max_bytes, int(limits.max_ratio * archive.stat().st_size)))
    if remote.kind == "tarball":
        return _tar_members(archive, remote, url, cap, budget)
    return _zip_members(archive, remote, url, cap, budget)


@contextlib.contextmanager
def _archive_errors(remote: Remote, url: str, archive: Path) -> Iterator[None]:
    """A broken, truncated or unsupported archive (while listing or reading) is an InputError."""
    kind = {"tarball": "tar.gz", "zip": "zip"}[remote.kind]
    try:
        yield
    except (
        tarfile.TarError,
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        zlib.error,
        RuntimeError,
        NotImplementedError,
    ) as err:
        raise InputError(
            f"not a readable {kind} archive ({str(err) or type(err).__name__}); downloaded from {url}", path=archive
        ) from None


def _tar_members(
    archive: Path, remote: Remote, url: str, cap: Callable[[str], int], budget: int
) -> Iterator[tuple[str, IO[bytes]]]:
    with gzip.open(archive, "rb") as raw:
        stream = _Budgeted(raw, budget, url)
        with tarfile.open(fileobj=stream, mode="r|") as tar:  # one pass, no seeking back
            for member in tar:
                # GitHub archives hold everything under "<repo>-<commit>/"
                parts = PurePosixPath(member.name).parts
                if member.name.startswith("/") or ".." in parts:
                    raise InputError(f"unsafe member path {member.name!r} refused; downloaded from {url}", path=archive)
                rel = "/".join(parts[1:])
                if not member.isfile() or not _safe(parts[1:]) or not _matches(rel, remote.keep):
                    continue
                if member.size > cap(rel):
                    raise InputError(
                        f"{rel} declares {member.size} bytes, more than the {cap(rel)} allowed; downloaded from {url}",
                        path=archive,
                    )
                handle = tar.extractfile(member)
                if handle is not None:
                    yield rel, handle


def _zip_members(
    archive: Path, remote: Remote, url: str, cap: Callable[[str], int], budget: int
) -> Iterator[tuple[str, IO[bytes]]]:
    with zipfile.ZipFile(archive) as zf:  # reads (and checks) the central directory
        # members are matched by name wherever the zip puts them
        wanted = [
            (PurePosixPath(info.filename).name, info)
            for info in zf.infolist()
            if not info.is_dir() and _matches(PurePosixPath(info.filename).name, remote.keep)
        ]
        for name, info in wanted:
            if info.file_size > cap(name):
                raise InputError(
                    f"{name} declares {info.file_size} bytes, more than the {cap(name)} allowed; downloaded from {url}",
                    path=archive,
                )
        total = sum(info.file_size for _, info in wanted)
        if total > budget:
            raise InputError(
                f"the wanted members would unpack to {total} bytes, more than the "
                f"budget of {budget} for a {archive.stat().st_size}-byte archive "
                f"(a zip bomb?); downloaded from {url}",
                path=archive,
            )
        for name, info in wanted:
            with zf.open(info) as handle:  # raises BadZipFile on a CRC mismatch at the end
                yield name, handle


class _Budgeted(io.RawIOBase):
    """A reader that stops (InputError) once more than ``budget`` bytes came through."""

    def __init__(self, raw: IO[bytes] | io.BufferedIOBase, budget: int, url: str) -> None:
        self.raw, self.budget, self.url, self.seen = raw, budget, url, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.seen += len(data)
        if self.seen > self.budget:
            raise InputError(
                f"the archive unpacks to more than {self.budget} bytes (a tar bomb?); stopped. Downloaded from {self.url}"
            )
        return data


def _copy(source: IO[bytes], out: IO[bytes], cap: int, what: str) -> int:
    """Copy in blocks; InputError as soon as more than ``cap`` bytes arrive."""
    n = 0
    for block in iter(lambda: source.read(_CHUNK), b""):
        n += len(block)
        if n > cap:
            raise InputError(f"{what} is larger than the {cap} bytes allowed; stopped")
        out.write(block)
    return n


def _safe(parts: tuple[str, ...]) -> bool:
    return bool(parts) and all(p not in ("", ".", "..") for p in parts)


class _Deadline:
    """Shuts the connection's socket when time is up, so a trickling server cannot
    hold a download open: a per-read timeout alone never fires while bytes come."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self.sockets: list[socket.socket] = []
        self.timer = threading.Timer(seconds, self.expire)
        self.timer.daemon = True

    def __enter__(self) -> _Deadline:
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        self.sockets.append(sock)
        if self.expired:
            self.expire()

    def expire(self) -> None:
        self.expired = True
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def opener(self) -> urllib.request.OpenerDirector:
        deadline = self

        def watched(base: Any) -> Any:
            class Connection(base):
                def connect(self) -> None:
                    super().connect()
                    deadline.watch(self.sock)

            return Connection

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
                return self.do_open(
                    watched(http.client.HTTPSConnection), req, context=getattr(self, "_context", None)
                )  # what the handler was made with

        return urllib.request.build_opener(HTTP, HTTPS)


def _download(url: str, out: IO[bytes], name: str, limits: Limits, cap: int, progress: bool, label: str) -> int:
    """Stream ``url`` into ``out`` (at most ``cap`` bytes, within ``limits.deadline``)."""
    request = urllib.request.Request(url, headers={"User-Agent": f"dsr/{__version__}"})
    received = 0
    with _Deadline(limits.deadline) as deadline:
        try:
            response = deadline.opener().open(request, timeout=limits.timeout)
            with response:
                length = response.headers.get("Content-Length")
                length = int(length) if length and length.isdigit() else None
                if length is not None and length > cap:
                    raise InputError(f"{url} is {length} bytes, more than the {cap} allowed for this file; not downloaded")
                with tqdm(
                    total=length,
                    unit="B",
                    unit_scale=True,
                    unit_divisor=1024,
                    desc=label,
                    file=sys.stderr,
                    disable=not progress or None,
                    leave=False,
                ) as bar:
                    # read1: whatever has arrived, so the deadline is seen between reads
                    while block := response.read1(_CHUNK):
                        received += len(block)
                        if received > cap:
                            raise InputError(f"{url} sent more than the {cap} bytes allowed for this file; stopped")
                        out.write(block)
                        bar.update(len(block))
        except urllib.error.HTTPError as err:
            raise InputError(
                f"HTTP {err.code} {err.reason} for {url}: the file is not at the "
                "pinned commit there (a mirror given as `base_url` / "
                f"${BASE_URL_ENV} must mirror GitHub's layout)"
            ) from None
        except (http.client.HTTPException, urllib.error.URLError, TimeoutError, OSError) as err:
            if deadline.expired:
                raise _too_slow(url, limits, received) from None
            if isinstance(err, http.client.HTTPException) and not isinstance(err, OSError):
                raise _cut_short(url, received, err) from None
            raise _offline(url, name, getattr(err, "reason", err)) from None
        if deadline.expired:
            raise _too_slow(url, limits, received)
    if length is not None and received < length:
        raise _cut_short(url, received, f"{received} of the {length} bytes announced")
    return received


def _too_slow(url: str, limits: Limits, received: int) -> InputError:
    return InputError(
        f"the download of {url} did not finish within {limits.deadline:g} s "
        f"({received} bytes arrived); stopped. A slow link may need a longer "
        f"${DEADLINE_ENV}"
    )


def _cut_short(url: str, received: int, why: object) -> InputError:
    return InputError(f"the download of {url} was cut short after {received} bytes ({why}); nothing was kept, try again")


def _offline(url: str, name: str, reason: object) -> InputError:
    host = urllib.parse.urlsplit(url).netloc or url
    return InputError(
        f"cannot download from {host} ({reason}). `dsr data fetch` needs the network; if you "
        f"have the files already, point dsr at their folder with --source DIR, e.g. "
        f"`dsr stats {name} --source DIR` or `dsr data build {name} --source DIR --out FILE` "
        f"(or use a mirror with --base-url URL / ${BASE_URL_ENV})"
    )


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    # fnmatch's * crosses "/", so require the same depth as the pattern
    return any(fnmatch.fnmatchcase(path, p) and path.count("/") == p.count("/") for p in patterns)


# --- hashing ----------------------------------------------------------------


def git_blob_file(path: str | Path) -> str:
    """The git blob id of a file: sha1 of ``b"blob <size>\\0" + content``, read in chunks."""
    return _hashes(Path(path))[0]


def _hashes(path: Path) -> tuple[str, str]:
    """(git blob id, sha256) in one read."""
    blob = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            blob.update(block)
            sha.update(block)
    return blob.hexdigest(), sha.hexdigest()
