"""Verified downloads of the raw source files into ``DSR_HOME/data/NAME``.

``dsr data fetch sigir2022|cmu_dog|redial|ccpe`` downloads from each source's
official GitHub repository at a pinned commit (../shared/data/SOURCES.md) and
verifies every file before it takes its final name. This module knows no source:
what to download is data, the ``fetch`` section of the source's manifest
(``dsr/collections/manifests/NAME.json``, beside its ``repository`` and
pinned ``commit``): ``files`` (a path for a raw file, or ``{"path", "kind":
"tarball"|"zip", "keep": [glob...]}`` for an archive), ``first_use`` (globs verified
by a sha256 recorded on first use), ``required`` (what makes the folder usable) and
``revisions`` (other commits, ``--revision NAME``). A source with such a section is
fetchable (:func:`sources`). Every file is verified:

- by **git blob id** (``sha1(b"blob <size>\\0" + data)``, the id git gives the
  content) for every file whose id we know: the SIGIR 2022 files (ids
  published in SOURCES.md) and every file we have an unchanged upstream copy
  of (listed in ``dsr/collections/manifests/NAME.json``, written by
  ``tools/make_manifests.py``);
- by **sha256 recorded on first use** for the files nobody here has seen
  (CMU_DoG's ``Conversations/test``, ReDial's ``train_data.jsonl``, CCPE-M's
  ``data.json``): the first download is trusted and its sha256 recorded in
  ``DSR_HOME/data/NAME/CHECKSUMS.json``; every later download is checked
  against that record. This protects against a file changing later, not
  against a first download that was already wrong; nothing better is possible
  without a published checksum. No first-use sha256 is recorded from a fetch
  in which any file failed verification.

A download goes to a temporary name beside its destination and is renamed only
after it verifies; one that fails is deleted and reported (exit 2). Files
already present that verify are kept (``--force`` downloads them again).
Without network the first request fails within ``timeout`` seconds with a
message saying how to use local files (``--source DIR``).

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

A fetch that fails leaves only what verified: temporaries (``.part``), files
that only this fetch's first-use checksum would vouch for, and folders it
created that stay empty are removed.

The base URL (default ``https://github.com``) can be replaced by a mirror or a
test server with ``base_url=`` / ``--base-url`` or ``$DSR_FETCH_BASE_URL``; it
must serve ``{base}/{owner}/{repo}/raw/{commit}/{path}`` and, for CMU_DoG,
``{base}/{owner}/{repo}/archive/{commit}.tar.gz`` as GitHub does.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fnmatch
import functools
import gzip
import hashlib
import http.client
import io
import json
import os
import socket
import sys
import tarfile
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import IO, Iterator

from tqdm import tqdm

from dsr.core import __version__
from dsr.core.atomic import check_output_path, temp_beside, write_json
from dsr.core.errors import InputError
from dsr.core.home import data_dir

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
    def from_json(cls, entry: str | dict) -> "Remote":
        """A manifest's file entry: a path (a raw file) or ``{"path", "kind", "keep", "commit"}``."""
        if isinstance(entry, str):
            return cls(entry)
        return cls(entry["path"], entry.get("kind", "raw"), entry.get("commit"),
                   tuple(entry.get("keep", ())))


#: Remote.commit meaning "the source's pinned commit" in a plan for another revision
PINNED = "pinned"


@dataclass(frozen=True)
class Plan:
    """What ``dsr data fetch NAME`` downloads, from where, and how each file is checked: the
    ``fetch`` section of ``dsr/collections/manifests/NAME.json`` (:func:`plan_for`)."""

    name: str
    repository: str
    #: the commit this plan fetches (the pinned one, or another revision's)
    commit: str
    #: the source's pinned commit: the manifest lists its files by path, others as "commit:path"
    pinned: str
    remotes: tuple[Remote, ...]
    #: files (glob patterns) verified by a sha256 recorded on first use
    first_use: tuple[str, ...] = ()
    #: files whose presence means "available" (a bare name may also sit at the folder root)
    required: tuple[str, ...] = ()
    description: str = ""
    #: another revision's name ("" for the pinned commit)
    revision: str = ""

    def commit_of(self, remote: Remote) -> str:
        """The commit a remote file is taken from: its own pin, else the plan's."""
        if remote.commit == PINNED:
            return self.pinned
        return remote.commit or self.commit

    @property
    def folder_name(self) -> str:
        """The default folder under DSR_HOME/data: NAME, or NAME-COMMIT for another revision."""
        return f"{self.name}-{self.commit}" if self.revision else self.name


def sources() -> list[str]:
    """The sources ``dsr data fetch`` can download: those whose manifest has a fetch section."""
    folder = resources.files("dsr.collections").joinpath("manifests")
    names = sorted(entry.name[:-len(".json")] for entry in folder.iterdir()
                   if entry.name.endswith(".json"))
    return [name for name in names if "fetch" in _manifest_file(name)]


def plan_for(name: str, revision: str | None = None) -> Plan:
    """The download plan of source ``name`` (at ``revision``: its pinned commit by default)."""
    if name not in sources():
        raise InputError(f"cannot fetch {name!r}; sources: {', '.join(sources())} "
                         "(a bundled collection ships with the package)", field="name")
    manifest = _manifest_file(name)
    section = manifest["fetch"]
    plan = section
    if revision not in (None, "", "pinned", "current"):
        plan = section.get("revisions", {}).get(revision)
        if plan is None:
            known = ["current", *section.get("revisions", {})]
            raise InputError(f"no revision {revision!r} for {name}; known: {', '.join(known)}",
                             field="revision")
    return Plan(name, manifest["repository"], plan.get("commit", manifest["commit"]),
                manifest["commit"], tuple(Remote.from_json(f) for f in plan["files"]),
                tuple(plan.get("first_use", ())), tuple(plan.get("required", ())),
                plan.get("description", ""), revision if plan is not section else "")


@dataclass
class FetchResult:
    """What a fetch did: the folder, and per file how it was verified."""

    name: str
    dest: Path
    commit: str
    files: dict[str, str] = field(default_factory=dict)  # path -> how it was verified
    failed: dict[str, str] = field(default_factory=dict)  # path -> why it was rejected


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


def load_manifest(name: str) -> dict[str, str]:
    """The git blob ids shipped for a source: ``{[commit:]path: blob id}``."""
    return _manifest_file(name)["git_blobs"]


def load_sizes(name: str) -> dict[str, int]:
    """The sizes in bytes shipped for a source's files: ``{[commit:]path: bytes}``."""
    return _manifest_file(name).get("sizes", {})


@functools.lru_cache(maxsize=None)
def _manifest_file(name: str) -> dict:
    """``manifests/NAME.json``: the source's repository, pinned commit, fetch plan, git blob
    ids and sizes (read once)."""
    text = resources.files("dsr.collections").joinpath("manifests", f"{name}.json").read_text(
        encoding="utf-8")
    return json.loads(text)


# --- the plan ---------------------------------------------------------------

def default_dest(name: str, revision: str | None = None) -> Path:
    return data_dir(plan_for(name, revision).folder_name)


def is_available(name: str, folder: str | Path | None = None) -> bool:
    """Whether ``folder`` (default: the cache) holds what ``load``/``build`` needs."""
    plan = plan_for(name)
    folder = Path(folder) if folder is not None else data_dir(plan.folder_name)
    return all((folder / p).exists() or (folder / PurePosixPath(p).name).exists()
               for p in plan.required)


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    # fnmatch's * crosses "/", so require the same depth as the pattern
    return any(fnmatch.fnmatchcase(path, p) and path.count("/") == p.count("/") for p in patterns)


def _base_url(base_url: str | None) -> str:
    base = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return base.rstrip("/")


def _url(base: str, plan: Plan, remote: Remote) -> str:
    commit = plan.commit_of(remote)
    if remote.kind == "tarball":
        return f"{base}/{plan.repository}/archive/{commit}.tar.gz"
    return f"{base}/{plan.repository}/raw/{commit}/{urllib.parse.quote(remote.path)}"


# --- fetching ---------------------------------------------------------------

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


def fetch(name: str, dest: str | Path | None = None, *, base_url: str | None = None,
          revision: str | None = None, force: bool = False, timeout: float = DEFAULT_TIMEOUT,
          manifest: dict[str, str] | None = None, progress: bool = True,
          deadline: float | None = None, max_bytes: int | None = None) -> FetchResult:
    """Download and verify a source into ``dest`` (default ``DSR_HOME/data/NAME``).

    ``manifest`` replaces the shipped git blob ids (``{[commit:]path: blob}``);
    tests use it to serve fixtures. ``deadline`` (default ``$DSR_FETCH_DEADLINE``
    or DEFAULT_DEADLINE seconds) bounds each file's whole download; ``max_bytes``
    (default DEFAULT_MAX_BYTES) caps files without a recorded size. Raises
    InputError when the server cannot be reached (after at most ``timeout``
    seconds), when a file is missing upstream, too large, too slow, cut short or
    a broken archive, or when any file fails verification. Files that verified
    stay; everything else this fetch wrote is removed (``.part`` files, files
    only a first-use checksum would vouch for, folders it created that are empty).
    """
    plan = plan_for(name, revision)
    limits = Limits(timeout=timeout, deadline=_deadline(deadline),
                    max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes))
    job = _Fetch(plan, Path(dest) if dest is not None else data_dir(plan.folder_name),
                 _base_url(base_url), manifest if manifest is not None else
                 load_manifest(plan.name), limits, force, progress)
    return job.run()


def _deadline(value: float | None) -> float:
    if value is not None:
        return float(value)
    text = os.environ.get(DEADLINE_ENV)
    if not text:
        return DEFAULT_DEADLINE
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise InputError(f"expected a number of seconds > 0, got {text!r}", field=f"${DEADLINE_ENV}")
    return seconds


class _Fetch:
    """One ``dsr data fetch``: the plan, what is expected of each file, and what happened.

    The steps: ``run`` fetches each remote (``fetch_raw`` / ``fetch_archive``),
    skipping files already present that verify (``local_ok``); every download is
    verified by ``verify`` before it takes its final name; ``finish`` records the
    checksums and, after a failure, removes what this fetch wrote unverified.
    """

    def __init__(self, plan: Plan, dest: Path, base: str, blobs: dict[str, str], limits: Limits,
                 force: bool, progress: bool):
        self.plan, self.dest, self.base, self.blobs = plan, dest, base, blobs
        self.limits, self.force, self.progress = limits, force, progress
        self.sizes = load_sizes(plan.name)
        self.record = _read_record(dest / CHECKSUMS, plan)
        self.result = FetchResult(plan.name, dest, plan.commit)
        self.new_records: dict[str, dict] = {}
        self.first_use_written: list[Path] = []  # vouched for only by this fetch's record
        self.made_dirs: list[Path] = []

    # -- the steps ----------------------------------------------------------

    def run(self) -> FetchResult:
        self.mkdir(self.dest)
        ok = False
        try:
            for remote in self.plan.remotes:
                if remote.kind == "raw":
                    self.fetch_raw(remote)
                else:
                    self.fetch_archive(remote)
            ok = not self.result.failed
        finally:
            self.finish(ok)  # also after a network error: what verified so far is recorded
        if self.result.failed:
            lines = "\n".join(f"  {rel}: {why}" for rel, why in sorted(self.result.failed.items()))
            raise InputError(
                f"{len(self.result.failed)} file(s) failed verification (downloaded from "
                f"{self.base}); each one that arrived was deleted:\n{lines}\n"
                "No first-use checksum was recorded from this fetch. If a mirror served them, "
                f"check --base-url / ${BASE_URL_ENV}; otherwise report it.", path=self.dest)
        return self.result

    def fetch_raw(self, remote: Remote) -> None:
        commit = self.plan.commit_of(remote)
        if self.local_ok(remote.path, commit):
            return
        target = self.dest / remote.path
        self.mkdir(target.parent)
        with temp_beside(target, ".part") as (tmp, out):
            _download(self.url(remote), out, self.plan.name, self.limits, self.cap(remote.path),
                      self.progress, target.name)
            out.close()
            self.verify(tmp, remote.path, commit)

    def fetch_archive(self, remote: Remote) -> None:
        commit = self.plan.commit_of(remote)
        wanted = _archive_expected(self.plan, remote, self.blobs, self.record)
        if wanted and all(self.local_ok(rel, commit) for rel in sorted(wanted)):
            return
        url = self.url(remote)
        target = self.dest / (PurePosixPath(remote.path).name or "archive.tar.gz")
        with temp_beside(target, ".part") as (archive, out), contextlib.ExitStack() as staged:
            _download(url, out, self.plan.name, self.limits, self.limits.max_bytes,
                      self.progress, target.name)
            out.close()
            # every wanted member goes to a temporary file first; only once the whole
            # archive has been read without error are they verified and renamed
            members = {}
            with _archive_errors(remote, url, archive):
                self.unpack(archive, remote, url, wanted, staged, members)
            for rel, tmp in members.items():
                self.verify(tmp, rel, commit)
        for rel in sorted(wanted - set(members)):
            self.fail(rel, "missing from the downloaded archive")

    def unpack(self, archive: Path, remote: Remote, url: str, wanted: set[str],
               staged: contextlib.ExitStack, members: dict[str, Path]) -> None:
        """Copy each wanted member to a temporary file beside its target (into ``members``)."""
        for rel, handle in tqdm(_members(archive, remote, url, self.cap, self.limits),
                                desc=f"{self.plan.name}: unpacking", unit="file",
                                total=len(wanted) or None, file=sys.stderr,
                                disable=not self.progress or None, leave=False):
            if rel in members:
                raise InputError(f"the archive holds {rel} twice; downloaded from {url}",
                                 path=self.dest / rel)
            target = self.dest / rel
            self.mkdir(target.parent)
            tmp, out = staged.enter_context(temp_beside(target, ".part"))
            _copy(handle, out, self.cap(rel), f"{rel} in {url}")
            out.close()
            members[rel] = tmp

    def finish(self, ok: bool) -> None:
        _write_record(self.dest / CHECKSUMS, self.plan, self.record, self.new_records,
                      trust_new=ok)
        if ok:
            return
        for path in self.first_use_written:  # no record vouches for them now
            path.unlink(missing_ok=True)
        for folder in reversed(self.made_dirs):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty

    # -- helpers --------------------------------------------------------------

    def url(self, remote: Remote) -> str:
        return _url(self.base, self.plan, remote)

    def mkdir(self, folder: Path) -> None:
        """Create ``folder`` (and parents), remembering which ones were new."""
        new = [p for p in (folder, *folder.parents) if not p.exists()]
        check_output_path(folder, "dest", folder=True)
        self.made_dirs.extend(reversed(new))

    def expected(self, rel: str, commit: str) -> tuple[str, str] | None:
        """("git-blob", id) or ("sha256", digest) or None (first use) for a file."""
        key = self.key(rel, commit)
        if key in self.blobs:
            return "git-blob", self.blobs[key]
        if rel in self.record:
            return "sha256", self.record[rel]["sha256"]
        if _matches(rel, self.plan.first_use):
            return None
        return "unknown", ""

    def key(self, rel: str, commit: str) -> str:
        # the manifest lists the source's pinned commit by path, other commits as "commit:path"
        return rel if commit == self.plan.pinned else f"{commit}:{rel}"

    def cap(self, rel: str, commit: str | None = None) -> int:
        """Bytes allowed for ``rel``: its recorded size plus a margin, else ``max_bytes``."""
        size = self.sizes.get(self.key(rel, commit or self.plan.commit))
        if size is None:
            size = self.record.get(rel, {}).get("size")
        return size_cap(size) if isinstance(size, int) else self.limits.max_bytes

    def verify(self, tmp: Path, rel: str, commit: str) -> bool:
        """Verify a downloaded file; rename it into place or delete it."""
        final = self.dest / rel
        blob, sha = _hashes(tmp)
        want = self.expected(rel, commit)
        if want is None:
            how = "sha256 recorded (first use)"
        elif want[0] == "git-blob" and blob == want[1]:
            how = "git blob id"
        elif want[0] == "sha256" and sha == want[1]:
            how = "sha256 recorded on first use"
        else:
            tmp.unlink(missing_ok=True)
            if want[0] == "unknown":
                why = "not listed in the manifest or in CHECKSUMS.json"
            else:
                got = blob if want[0] == "git-blob" else sha
                why = f"{want[0]} {got} does not match the expected {want[1]}"
            final.unlink(missing_ok=True)  # a stale copy that no longer verifies must not stay either
            self.fail(rel, why, "the file was deleted")
            return False
        os.replace(tmp, final)
        if want is None:
            self.first_use_written.append(final)
        self.result.files[rel] = how
        self.new_records[rel] = {"sha256": sha, "git_blob": blob, "commit": commit,
                                 "size": final.stat().st_size,
                                 "verified_by": how if want is not None else "first use",
                                 "recorded": self.record.get(rel, {}).get("recorded") or _today()}
        return True

    def local_ok(self, rel: str, commit: str) -> bool:
        """Whether ``rel`` is already in place and verifies (then it is not downloaded)."""
        final = self.dest / rel
        if self.force or not final.is_file():
            return False
        want = self.expected(rel, commit)
        if want is None or want[0] == "unknown":
            return False
        blob, sha = _hashes(final)
        if (blob if want[0] == "git-blob" else sha) != want[1]:
            return False
        old = self.record.get(rel, {})
        self.result.files[rel] = "already present, verified"
        self.new_records[rel] = {**old, "sha256": sha, "git_blob": blob, "commit": commit,
                                 "size": final.stat().st_size,
                                 "verified_by": old.get("verified_by", want[0]),
                                 "recorded": old.get("recorded") or _today()}
        return True

    def fail(self, rel: str, why: str, done: str = "") -> None:
        self.result.failed[rel] = why
        print(f"dsr: verification FAILED for {rel}: {why}" + (f"; {done}" if done else ""),
              file=sys.stderr)


def _archive_expected(plan: Plan, remote: Remote, blobs: dict[str, str],
                      record: dict[str, dict]) -> set[str]:
    """Members an archive must contain: those with a known blob id or a first-use record."""
    return {p for p in (*blobs, *record) if ":" not in p and _matches(p, remote.keep)}


def _members(archive: Path, remote: Remote, url: str, cap, limits: Limits
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
def _archive_errors(remote: Remote, url: str, archive: Path):
    """A broken, truncated or unsupported archive (while listing or reading) is an InputError."""
    kind = {"tarball": "tar.gz", "zip": "zip"}[remote.kind]
    try:
        yield
    except (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError,
            zlib.error, RuntimeError, NotImplementedError) as err:
        raise InputError(f"not a readable {kind} archive ({err or type(err).__name__}); "
                         f"downloaded from {url}", path=archive) from None


def _tar_members(archive: Path, remote: Remote, url: str, cap, budget: int):
    with gzip.open(archive, "rb") as raw:
        stream = _Budgeted(raw, budget, url)
        with tarfile.open(fileobj=stream, mode="r|") as tar:  # one pass, no seeking back
            for member in tar:
                # GitHub archives hold everything under "<repo>-<commit>/"
                parts = PurePosixPath(member.name).parts
                if member.name.startswith("/") or ".." in parts:
                    raise InputError(f"unsafe member path {member.name!r} refused; downloaded "
                                     f"from {url}", path=archive)
                rel = "/".join(parts[1:])
                if not member.isfile() or not _safe(parts[1:]) or not _matches(rel, remote.keep):
                    continue
                if member.size > cap(rel):
                    raise InputError(f"{rel} declares {member.size} bytes, more than the "
                                     f"{cap(rel)} allowed; downloaded from {url}", path=archive)
                handle = tar.extractfile(member)
                if handle is not None:
                    yield rel, handle


def _zip_members(archive: Path, remote: Remote, url: str, cap, budget: int):
    with zipfile.ZipFile(archive) as zf:  # reads (and checks) the central directory
        # members are matched by name wherever the zip puts them
        wanted = [(PurePosixPath(info.filename).name, info) for info in zf.infolist()
                  if not info.is_dir() and _matches(PurePosixPath(info.filename).name, remote.keep)]
        for name, info in wanted:
            if info.file_size > cap(name):
                raise InputError(f"{name} declares {info.file_size} bytes, more than the "
                                 f"{cap(name)} allowed; downloaded from {url}", path=archive)
        total = sum(info.file_size for _, info in wanted)
        if total > budget:
            raise InputError(f"the wanted members would unpack to {total} bytes, more than the "
                             f"budget of {budget} for a {archive.stat().st_size}-byte archive "
                             f"(a zip bomb?); downloaded from {url}", path=archive)
        for name, info in wanted:
            with zf.open(info) as handle:  # raises BadZipFile on a CRC mismatch at the end
                yield name, handle


class _Budgeted(io.RawIOBase):
    """A reader that stops (InputError) once more than ``budget`` bytes came through."""

    def __init__(self, raw: IO[bytes], budget: int, url: str):
        self.raw, self.budget, self.url, self.seen = raw, budget, url, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.seen += len(data)
        if self.seen > self.budget:
            raise InputError(f"the archive unpacks to more than {self.budget} bytes (a tar "
                             f"bomb?); stopped. Downloaded from {self.url}")
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

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self.sockets: list[socket.socket] = []
        self.timer = threading.Timer(seconds, self.expire)
        self.timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()

    def watch(self, sock) -> None:
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

        def watched(base):
            class Connection(base):
                def connect(self):
                    super().connect()
                    deadline.watch(self.sock)
            return Connection

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req):
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req):
                return self.do_open(watched(http.client.HTTPSConnection), req,
                                    context=self._context)

        return urllib.request.build_opener(HTTP, HTTPS)


def _download(url: str, out: IO[bytes], name: str, limits: Limits, cap: int, progress: bool,
              label: str) -> int:
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
                    raise InputError(f"{url} is {length} bytes, more than the {cap} allowed for "
                                     "this file; not downloaded")
                with tqdm(total=length, unit="B", unit_scale=True, unit_divisor=1024, desc=label,
                          file=sys.stderr, disable=not progress or None, leave=False) as bar:
                    # read1: whatever has arrived, so the deadline is seen between reads
                    while block := response.read1(_CHUNK):
                        received += len(block)
                        if received > cap:
                            raise InputError(f"{url} sent more than the {cap} bytes allowed for "
                                             "this file; stopped")
                        out.write(block)
                        bar.update(len(block))
        except urllib.error.HTTPError as err:
            raise InputError(f"HTTP {err.code} {err.reason} for {url}: the file is not at the "
                             "pinned commit there (a mirror given with --base-url / "
                             f"${BASE_URL_ENV} must mirror GitHub's layout)") from None
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
    return InputError(f"the download of {url} did not finish within {limits.deadline:g} s "
                      f"({received} bytes arrived); stopped. A slow link may need a longer "
                      f"${DEADLINE_ENV}")


def _cut_short(url: str, received: int, why) -> InputError:
    return InputError(f"the download of {url} was cut short after {received} bytes ({why}); "
                      "nothing was kept, try again")


def _offline(url: str, name: str, reason) -> InputError:
    host = urllib.parse.urlsplit(url).netloc or url
    return InputError(
        f"cannot download from {host} ({reason}). `dsr data fetch` needs the network; if you "
        f"have the files already, point dsr at their folder with --source DIR, e.g. "
        f"`dsr stats {name} --source DIR` or `dsr data build {name} --source DIR --out FILE` "
        f"(or use a mirror with --base-url URL / ${BASE_URL_ENV})")


# --- CHECKSUMS.json ---------------------------------------------------------

def _read_record(path: Path, plan: Plan) -> dict[str, dict]:
    """Per-file records of an earlier fetch at the same commit ({} when none)."""
    if not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"unreadable checksum record ({err}); delete it only if you trust "
                         "the files beside it", path=path) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("files"), dict):
        raise InputError("not a dsr checksum record", path=path, field="files")
    if obj.get("commit") != plan.commit or obj.get("repository") != plan.repository:
        return {}  # another pinned commit: its records say nothing about this one
    files = {}
    for rel, entry in obj["files"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise InputError("expected {\"sha256\": ...}", path=path, record=rel, field="sha256")
        files[rel] = entry
    return files


def _write_record(path: Path, plan: Plan, old: dict[str, dict], new: dict[str, dict],
                  trust_new: bool) -> None:
    files = dict(old)
    for rel, entry in new.items():
        if entry.get("verified_by") == "first use" and not trust_new:
            continue
        files[rel] = entry
    if not files and not path.exists():
        return
    write_json(path, {
        "name": plan.name,
        "repository": plan.repository,
        "commit": plan.commit,
        "about": "sha256 of each file as verified by dsr data fetch; files without a published "
                 "git blob id were recorded on first use and every later fetch must match",
        "files": dict(sorted(files.items())),
    })


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
