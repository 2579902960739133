"""Verified downloads of the raw source files into ``DSR_HOME/data/NAME``.

``dsr data fetch sigir2022|cmu_dog|redial|ccpe`` downloads from each source's
official GitHub repository at a pinned commit (../shared/data/SOURCES.md) and
verifies every file before it takes its final name:

- by **git blob id** (``sha1(b"blob <size>\\0" + data)``, the id git gives the
  content) for every file whose id we know: the SIGIR 2022 files (ids
  published in SOURCES.md) and every file we have an unchanged upstream copy
  of (listed in ``retrieval/collections/manifests/NAME.json``, written by
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

The base URL (default ``https://github.com``) can be replaced by a mirror or a
test server with ``base_url=`` / ``--base-url`` or ``$DSR_FETCH_BASE_URL``; it
must serve ``{base}/{owner}/{repo}/raw/{commit}/{path}`` and, for CMU_DoG,
``{base}/{owner}/{repo}/archive/{commit}.tar.gz`` as GitHub does.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fnmatch
import hashlib
import json
import os
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import IO, Iterator

from tqdm import tqdm

from retrieval.atomic import write_json
from retrieval.errors import InputError
from retrieval.home import data_dir

DEFAULT_BASE_URL = "https://github.com"
BASE_URL_ENV = "DSR_FETCH_BASE_URL"
#: seconds to wait for a connection or for the next bytes; short so offline fails fast
DEFAULT_TIMEOUT = 15.0
CHECKSUMS = "CHECKSUMS.json"
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Remote:
    """One download: a raw repository file, the commit's tar.gz, or a zip to unpack."""

    path: str
    kind: str = "raw"  # "raw" | "tarball" | "zip"
    #: commit to take it from when not the plan's own (the old SIGIR schema's split file)
    commit: str | None = None
    #: archives: glob patterns (repository-relative) of the members to keep
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """What ``dsr data fetch NAME`` downloads, from where, and how each file is checked."""

    name: str
    repository: str
    commit: str
    remotes: tuple[Remote, ...]
    #: files (glob patterns) verified by a sha256 recorded on first use
    first_use: tuple[str, ...] = ()
    #: files whose presence means "available" (a bare name may also sit at the folder root)
    required: tuple[str, ...] = ()
    #: the manifest whose git blob ids apply (plans of one source share it)
    manifest: str = ""
    #: default folder name under DSR_HOME/data
    folder: str = ""
    description: str = ""

    @property
    def manifest_name(self) -> str:
        return self.manifest or self.name

    @property
    def folder_name(self) -> str:
        return self.folder or self.name


SIGIR_REPOSITORY = "SIGIR-2022/A-Dataset-for-Sentence-Retrieval-for-Open-Ended-Dialogues"
SIGIR_COMMIT = "bc72a50686642cc25bd4f98fa6c12045b159c530"
SIGIR_OLD_COMMIT = "b351828"
_SIGIR_DIALOGUES = ("datasets/dialogues.json", "datasets/wikipedia_grounded_dialogues.json")

PLANS: dict[str, Plan] = {
    "sigir2022": Plan(
        "sigir2022", SIGIR_REPOSITORY, SIGIR_COMMIT,
        remotes=tuple(Remote(p) for p in (*_SIGIR_DIALOGUES, "evaluation/val_test_splits.json",
                                          "README.md", "LICENSE.md")),
        required=_SIGIR_DIALOGUES,
        description="the 846 dialogues (both files) and the official split file"),
    "cmu_dog": Plan(
        "cmu_dog", "festvox/datasets-CMU_DoG", "618a14f27546165859305649aa84e6ac8710bb63",
        remotes=(Remote("", kind="tarball", keep=(
            "Conversations/train/*.json", "Conversations/valid/*.json",
            "Conversations/test/*.json", "WikiData/*.json", "README.md")),),
        first_use=("Conversations/test/*.json",),
        required=("WikiData", "Conversations"),
        description="the repository at the pinned commit (one tar.gz): conversations "
                    "(train, valid, test) and the 30 WikiData documents"),
    "redial": Plan(
        "redial", "ReDialData/website", "849e9eb1bb60e312f8bf4daa82fc10a285e9318b",
        remotes=(Remote("movies_with_mentions.csv"),
                 Remote("redial_dataset.zip", kind="zip",
                        keep=("train_data.jsonl", "test_data.jsonl"))),
        first_use=("train_data.jsonl",),
        required=("test_data.jsonl", "movies_with_mentions.csv"),
        description="branch `data`: movies_with_mentions.csv and redial_dataset.zip "
                    "(train_data.jsonl and test_data.jsonl are unpacked from it)"),
    "ccpe": Plan(
        "ccpe", "google-research-datasets/ccpe", "2c9cd30f33f3a154b5a27d015333679262ff36f5",
        remotes=(Remote("data.json"), Remote("README.md")),
        first_use=("data.json",),
        required=("data.json",),
        description="data.json (the 502 dialogues) and its README"),
}

#: other revisions a source can be fetched at (``--revision``)
REVISIONS: dict[tuple[str, str], Plan] = {
    ("sigir2022", "old"): Plan(
        "sigir2022", SIGIR_REPOSITORY, SIGIR_OLD_COMMIT,
        # the split file did not change meaning; take the pinned one
        remotes=(*(Remote(p) for p in _SIGIR_DIALOGUES),
                 Remote("evaluation/val_test_splits.json", commit=SIGIR_COMMIT)),
        required=_SIGIR_DIALOGUES, manifest="sigir2022", folder=f"sigir2022-{SIGIR_OLD_COMMIT}",
        description=f"the older schema (commit {SIGIR_OLD_COMMIT}, candidates as pos/neg) "
                    "and the pinned split file"),
}


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
    text = resources.files("retrieval.collections").joinpath("manifests", f"{name}.json").read_text(
        encoding="utf-8")
    return json.loads(text)["git_blobs"]


# --- the plan ---------------------------------------------------------------

def plan_for(name: str, revision: str | None = None) -> Plan:
    if name not in PLANS:
        raise InputError(f"cannot fetch {name!r}; sources: {', '.join(PLANS)} "
                         "(the sample collection ships with the package)", field="NAME")
    if revision in (None, "", "pinned", "current"):
        return PLANS[name]
    plan = REVISIONS.get((name, revision))
    if plan is None:
        known = [r for (n, r) in REVISIONS if n == name]
        raise InputError(f"no revision {revision!r} for {name}; "
                         f"known: {', '.join(['current', *known])}", field="--revision")
    return plan


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
    commit = remote.commit or plan.commit
    if remote.kind == "tarball":
        return f"{base}/{plan.repository}/archive/{commit}.tar.gz"
    return f"{base}/{plan.repository}/raw/{commit}/{urllib.parse.quote(remote.path)}"


# --- fetching ---------------------------------------------------------------

def fetch(name: str, dest: str | Path | None = None, *, base_url: str | None = None,
          revision: str | None = None, force: bool = False, timeout: float = DEFAULT_TIMEOUT,
          manifest: dict[str, str] | None = None, progress: bool = True) -> FetchResult:
    """Download and verify a source into ``dest`` (default ``DSR_HOME/data/NAME``).

    ``manifest`` replaces the shipped git blob ids (``{[commit:]path: blob}``);
    tests use it to serve fixtures. Raises InputError when the server cannot be
    reached (after at most ``timeout`` seconds), when a file is missing upstream,
    or when any file fails verification (the file is deleted; the others stay).
    """
    plan = plan_for(name, revision)
    dest = Path(dest) if dest is not None else data_dir(plan.folder_name)
    base = _base_url(base_url)
    blobs = manifest if manifest is not None else load_manifest(plan.manifest_name)
    record = _read_record(dest / CHECKSUMS, plan)
    result = FetchResult(plan.name, dest, plan.commit)
    new_records: dict[str, dict] = {}
    dest.mkdir(parents=True, exist_ok=True)

    def expected(rel: str, commit: str) -> tuple[str, str] | None:
        """("git-blob", id) or ("sha256", digest) or None (first use) for a file."""
        # the manifest lists the source's pinned commit by path, other commits as "commit:path"
        key = rel if commit == PLANS[plan.manifest_name].commit else f"{commit}:{rel}"
        if key in blobs:
            return "git-blob", blobs[key]
        if rel in record:
            return "sha256", record[rel]["sha256"]
        if _matches(rel, plan.first_use):
            return None
        return "unknown", ""

    def check(tmp: Path, rel: str, commit: str) -> bool:
        """Verify a downloaded file; rename it into place or delete it."""
        final = dest / rel
        blob, sha = _hashes(tmp)
        want = expected(rel, commit)
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
            with contextlib.suppress(FileNotFoundError):
                final.unlink()  # a stale copy that no longer verifies must not stay either
            result.failed[rel] = why
            print(f"dsr: verification FAILED for {rel}: {why}; the file was deleted",
                  file=sys.stderr)
            return False
        os.replace(tmp, final)
        result.files[rel] = how
        new_records[rel] = {"sha256": sha, "git_blob": blob, "commit": commit,
                            "verified_by": how if want is not None else "first use",
                            "recorded": record.get(rel, {}).get("recorded") or _today()}
        return True

    def local_ok(rel: str, commit: str) -> bool:
        final = dest / rel
        if force or not final.is_file():
            return False
        want = expected(rel, commit)
        if want is None or want[0] == "unknown":
            return False
        blob, sha = _hashes(final)
        if (blob if want[0] == "git-blob" else sha) != want[1]:
            return False
        result.files[rel] = "already present, verified"
        new_records[rel] = {**record.get(rel, {}), "sha256": sha, "git_blob": blob,
                            "commit": commit, "verified_by": record.get(rel, {}).get(
                                "verified_by", want[0]),
                            "recorded": record.get(rel, {}).get("recorded") or _today()}
        return True

    try:
        for remote in plan.remotes:
            commit = remote.commit or plan.commit
            url = _url(base, plan, remote)
            if remote.kind == "raw":
                if local_ok(remote.path, commit):
                    continue
                (dest / remote.path).parent.mkdir(parents=True, exist_ok=True)
                tmp = _download(url, dest / remote.path, plan.name, timeout, progress)
                check(tmp, remote.path, commit)
                continue
            wanted = _archive_expected(plan, remote, blobs, record)
            if wanted and all(local_ok(rel, commit) for rel in sorted(wanted)):
                continue
            archive = _download(url, dest / (PurePosixPath(remote.path).name or "archive.tar.gz"),
                                plan.name, timeout, progress)
            try:
                seen = set()
                members = tqdm(_members(archive, remote, url), desc=f"{plan.name}: verifying",
                               unit="file", total=len(wanted) or None, file=sys.stderr,
                               disable=not progress, leave=False)
                for rel, handle in members:
                    seen.add(rel)
                    target = dest / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with _temp_beside(target) as (tmp, out):
                        for block in iter(lambda: handle.read(1 << 20), b""):
                            out.write(block)
                        out.close()
                        check(tmp, rel, commit)
            finally:
                archive.unlink(missing_ok=True)
            for rel in sorted(wanted - seen):
                result.failed[rel] = "missing from the downloaded archive"
                print(f"dsr: verification FAILED for {rel}: missing from the downloaded archive",
                      file=sys.stderr)
    finally:
        # also after a network error: what verified so far is recorded
        _write_record(dest / CHECKSUMS, plan, record, new_records, trust_new=not result.failed)
    if result.failed:
        lines = "\n".join(f"  {rel}: {why}" for rel, why in sorted(result.failed.items()))
        raise InputError(f"{len(result.failed)} file(s) failed verification (downloaded from "
                         f"{base}); each one that arrived was deleted:\n{lines}\n"
                         "No first-use checksum was recorded from this fetch. If a mirror served them, check --base-url / "
                         f"${BASE_URL_ENV}; otherwise report it.", path=dest)
    return result


def _archive_expected(plan: Plan, remote: Remote, blobs: dict[str, str],
                      record: dict[str, dict]) -> set[str]:
    """Members an archive must contain: those with a known blob id or a first-use record."""
    return {p for p in (*blobs, *record) if ":" not in p and _matches(p, remote.keep)}


def _members(archive: Path, remote: Remote, url: str) -> Iterator[tuple[str, IO[bytes]]]:
    """(repository path, readable) for each wanted member of a downloaded archive."""
    if remote.kind == "tarball":
        try:
            with tarfile.open(archive, "r:gz") as tar:
                for member in tar:
                    # GitHub archives hold everything under "<repo>-<commit>/"
                    parts = PurePosixPath(member.name).parts[1:]
                    rel = "/".join(parts)
                    if not member.isfile() or not _safe(parts) or not _matches(rel, remote.keep):
                        continue
                    handle = tar.extractfile(member)
                    if handle is not None:
                        yield rel, handle
        except (tarfile.TarError, EOFError, OSError) as err:
            raise InputError(f"not a readable tar.gz archive ({err}); downloaded from {url}",
                             path=archive) from None
    elif remote.kind == "zip":
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    # members are matched by name wherever the zip puts them
                    name = PurePosixPath(info.filename).name
                    if info.is_dir() or not _matches(name, remote.keep):
                        continue
                    with zf.open(info) as handle:
                        yield name, handle
        except zipfile.BadZipFile as err:
            raise InputError(f"not a readable zip archive ({err}); downloaded from {url}",
                             path=archive) from None
    else:  # pragma: no cover - plans are static
        raise ValueError(remote.kind)


def _safe(parts: tuple[str, ...]) -> bool:
    return bool(parts) and all(p not in ("", ".", "..") for p in parts)


@contextlib.contextmanager
def _temp_beside(target: Path):
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    handle = os.fdopen(fd, "wb")
    try:
        yield Path(tmp), handle
    finally:
        handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # gone already when it was verified and renamed


def _download(url: str, target: Path, name: str, timeout: float, progress: bool) -> Path:
    """Stream ``url`` to a temporary file beside ``target``; returns its path."""
    from retrieval import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"dsr/{__version__}"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        raise InputError(f"HTTP {err.code} {err.reason} for {url}: the file is not at the "
                         "pinned commit there (a mirror given with --base-url / "
                         f"${BASE_URL_ENV} must mirror GitHub's layout)") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise _offline(url, name, getattr(err, "reason", err)) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    size = response.headers.get("Content-Length")
    try:
        with response, os.fdopen(fd, "wb") as out, tqdm(
                total=int(size) if size and size.isdigit() else None, unit="B", unit_scale=True,
                unit_divisor=1024, desc=target.name, file=sys.stderr, disable=not progress,
                leave=False) as bar:
            while block := response.read(_CHUNK):
                out.write(block)
                bar.update(len(block))
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise _offline(url, name, getattr(err, "reason", err)) from None
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


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
