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

Bounds on time, size, integrity and archives, each an exit 2 naming the URL or file
(never a traceback), are :mod:`dsr.collections.transfer`'s.

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
import functools
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath

from tqdm import tqdm

from dsr.collections.transfer import (
    BASE_URL_ENV,
    CHECKSUMS,
    DEADLINE_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_DEADLINE,
    DEFAULT_MAX_BYTES,
    DEFAULT_TIMEOUT,
    PINNED,
    Limits,
    Remote,
    _archive_errors,
    _copy,
    _download,
    _hashes,
    _matches,
    _members,
    size_cap,
)
from dsr.core.atomic import check_output_path, temp_beside, write_json
from dsr.core.errors import InputError
from dsr.core.home import data_dir
from dsr.core.params import Param


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
    names = sorted(entry.name[: -len(".json")] for entry in folder.iterdir() if entry.name.endswith(".json"))
    return [name for name in names if "fetch" in _manifest_file(name)]


def plan_for(name: str, revision: str | None = None) -> Plan:
    """The download plan of source ``name`` (at ``revision``: its pinned commit by default)."""
    if name not in sources():
        raise InputError(
            f"cannot fetch {name!r}; sources: {', '.join(sources())} (a bundled collection ships with the package)", field="name"
        )
    manifest = _manifest_file(name)
    section = manifest["fetch"]
    plan = section
    if revision not in (None, "", "pinned", "current"):
        plan = section.get("revisions", {}).get(revision)
        if plan is None:
            known = ["current", *section.get("revisions", {})]
            raise InputError(f"no revision {revision!r} for {name}; known: {', '.join(known)}", field="revision")
    return Plan(
        name,
        manifest["repository"],
        plan.get("commit", manifest["commit"]),
        manifest["commit"],
        tuple(Remote.from_json(f) for f in plan["files"]),
        tuple(plan.get("first_use", ())),
        tuple(plan.get("required", ())),
        plan.get("description", ""),
        (revision or "") if plan is not section else "",
    )


@dataclass
class FetchResult:
    """What a fetch did: the folder, and per file how it was verified."""

    name: str
    dest: Path
    commit: str
    files: dict[str, str] = field(default_factory=dict)  # path -> how it was verified
    failed: dict[str, str] = field(default_factory=dict)  # path -> why it was rejected


def load_manifest(name: str) -> dict[str, str]:
    """The git blob ids shipped for a source: ``{[commit:]path: blob id}``."""
    return _manifest_file(name)["git_blobs"]


def load_sizes(name: str) -> dict[str, int]:
    """The sizes in bytes shipped for a source's files: ``{[commit:]path: bytes}``."""
    return _manifest_file(name).get("sizes", {})


@functools.cache
def _manifest_file(name: str) -> dict:
    """``manifests/NAME.json``: the source's repository, pinned commit, fetch plan, git blob
    ids and sizes (read once)."""
    text = resources.files("dsr.collections").joinpath("manifests", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


# --- the plan ---------------------------------------------------------------


def default_dest(name: str, revision: str | None = None) -> Path:
    return data_dir(plan_for(name, revision).folder_name)


def is_available(name: str, folder: str | Path | None = None) -> bool:
    """Whether ``folder`` (default: the cache) holds what ``load``/``build`` needs."""
    plan = plan_for(name)
    folder = Path(folder) if folder is not None else data_dir(plan.folder_name)
    return all((folder / p).exists() or (folder / PurePosixPath(p).name).exists() for p in plan.required)


def _base_url(base_url: str | None) -> str:
    base = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return base.rstrip("/")


def _url(base: str, plan: Plan, remote: Remote) -> str:
    commit = plan.commit_of(remote)
    if remote.kind == "tarball":
        return f"{base}/{plan.repository}/archive/{commit}.tar.gz"
    return f"{base}/{plan.repository}/raw/{commit}/{urllib.parse.quote(remote.path)}"


# --- fetching ---------------------------------------------------------------


#: how long a silent connection is waited for (``dsr data fetch --timeout``)
TIMEOUT = Param(
    "timeout", DEFAULT_TIMEOUT, "float", "give up on a silent connection after this long (default 15)", above=0, metavar="SECONDS"
)


def fetch(
    name: str,
    dest: str | Path | None = None,
    *,
    base_url: str | None = None,
    revision: str | None = None,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    manifest: dict[str, str] | None = None,
    progress: bool = True,
    deadline: float | None = None,
    max_bytes: int | None = None,
) -> FetchResult:
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
    timeout = TIMEOUT.check(timeout)
    plan = plan_for(name, revision)
    limits = Limits(
        timeout=timeout, deadline=_deadline(deadline), max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    )
    job = _Fetch(
        plan,
        Path(dest) if dest is not None else data_dir(plan.folder_name),
        _base_url(base_url),
        manifest if manifest is not None else load_manifest(plan.name),
        limits,
        force,
        progress,
    )
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

    def __init__(
        self, plan: Plan, dest: Path, base: str, blobs: dict[str, str], limits: Limits, force: bool, progress: bool
    ) -> None:
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
                f"check `base_url` / ${BASE_URL_ENV}; otherwise report it.",
                path=self.dest,
            )
        return self.result

    def fetch_raw(self, remote: Remote) -> None:
        commit = self.plan.commit_of(remote)
        if self.local_ok(remote.path, commit):
            return
        target = self.dest / remote.path
        self.mkdir(target.parent)
        with temp_beside(target, ".part") as (tmp, out):
            _download(self.url(remote), out, self.plan.name, self.limits, self.cap(remote.path), self.progress, target.name)
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
            _download(url, out, self.plan.name, self.limits, self.limits.max_bytes, self.progress, target.name)
            out.close()
            # every wanted member goes to a temporary file first; only once the whole
            # archive has been read without error are they verified and renamed
            members: dict[str, Path] = {}
            with _archive_errors(remote, url, archive):
                self.unpack(archive, remote, url, wanted, staged, members)
            for rel, tmp in members.items():
                self.verify(tmp, rel, commit)
        for rel in sorted(wanted - set(members)):
            self.fail(rel, "missing from the downloaded archive")

    def unpack(
        self, archive: Path, remote: Remote, url: str, wanted: set[str], staged: contextlib.ExitStack, members: dict[str, Path]
    ) -> None:
        """Copy each wanted member to a temporary file beside its target (into ``members``)."""
        for rel, handle in tqdm(
            _members(archive, remote, url, self.cap, self.limits),
            desc=f"{self.plan.name}: unpacking",
            unit="file",
            total=len(wanted) or None,
            file=sys.stderr,
            disable=not self.progress or None,
            leave=False,
        ):
            if rel in members:
                raise InputError(f"the archive holds {rel} twice; downloaded from {url}", path=self.dest / rel)
            target = self.dest / rel
            self.mkdir(target.parent)
            tmp, out = staged.enter_context(temp_beside(target, ".part"))
            _copy(handle, out, self.cap(rel), f"{rel} in {url}")
            out.close()
            members[rel] = tmp

    def finish(self, ok: bool) -> None:
        _write_record(self.dest / CHECKSUMS, self.plan, self.record, self.new_records, trust_new=ok)
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
        self.new_records[rel] = {
            "sha256": sha,
            "git_blob": blob,
            "commit": commit,
            "size": final.stat().st_size,
            "verified_by": how if want is not None else "first use",
            "recorded": self.record.get(rel, {}).get("recorded") or _today(),
        }
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
        self.new_records[rel] = {
            **old,
            "sha256": sha,
            "git_blob": blob,
            "commit": commit,
            "size": final.stat().st_size,
            "verified_by": old.get("verified_by", want[0]),
            "recorded": old.get("recorded") or _today(),
        }
        return True

    def fail(self, rel: str, why: str, done: str = "") -> None:
        self.result.failed[rel] = why
        print(f"dsr: verification FAILED for {rel}: {why}" + (f"; {done}" if done else ""), file=sys.stderr)


def _archive_expected(plan: Plan, remote: Remote, blobs: dict[str, str], record: dict[str, dict]) -> set[str]:
    """Members an archive must contain: those with a known blob id or a first-use record."""
    return {p for p in (*blobs, *record) if ":" not in p and _matches(p, remote.keep)}


# --- CHECKSUMS.json ---------------------------------------------------------


def _read_record(path: Path, plan: Plan) -> dict[str, dict]:
    """Per-file records of an earlier fetch at the same commit ({} when none)."""
    if not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(
            f"unreadable checksum record ({err}); delete it only if you trust the files beside it", path=path
        ) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("files"), dict):
        raise InputError("not a dsr checksum record", path=path, field="files")
    if obj.get("commit") != plan.commit or obj.get("repository") != plan.repository:
        return {}  # another pinned commit: its records say nothing about this one
    files = {}
    for rel, entry in obj["files"].items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise InputError('expected {"sha256": ...}', path=path, record=rel, field="sha256")
        files[rel] = entry
    return files


def _write_record(path: Path, plan: Plan, old: dict[str, dict], new: dict[str, dict], trust_new: bool) -> None:
    files = dict(old)
    for rel, entry in new.items():
        if entry.get("verified_by") == "first use" and not trust_new:
            continue
        files[rel] = entry
    if not files and not path.exists():
        return
    write_json(
        path,
        {
            "name": plan.name,
            "repository": plan.repository,
            "commit": plan.commit,
            "about": "sha256 of each file as verified by dsr data fetch; files without a published "
            "git blob id were recorded on first use and every later fetch must match",
            "files": dict(sorted(files.items())),
        },
    )


def _today() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
