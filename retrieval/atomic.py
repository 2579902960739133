"""Atomic file writes: write to a temporary file beside the target, then rename.

A crash or a bad record half way through never leaves a half-written output.

* ``atomic_write(path)``: one file, through ``.NAME.<random>.tmp`` beside it.
* ``atomic_dir(path, allowed)``: a folder written as a set (a report): built in a
  hidden sibling ``.NAME.<pid>-<random>.dsr-new`` and swapped in (old folder
  renamed aside to ``.NAME.old-<pid>-<n>``, new one renamed in, old one removed),
  so a killed process leaves the old set or the new one, never a mix.
* ``check_output_path(path)``: an output whose parent is a file, or whose folder
  cannot be created, is an ``InputError`` naming the path (exit 2), not a
  traceback. Both writers above call it.

Temporaries a killed process left behind (``.NAME.*.tmp``, ``.part``,
``.partial``, ``.dsr-new``, ``.NAME.old-*`` beside NAME) are removed by the next
write to the same target (``clean_stale``): those last modified before this
process started and not owned by a running process.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import IO, Iterable, Iterator

from retrieval.errors import InputError

#: when this process started (as far as dsr can tell): temporaries older than this
#: and not tagged with a live process id are left over from a killed process
PROCESS_STARTED = time.time()
_FILE_SUFFIXES = (".tmp", ".part", ".partial", ".partial.json")
_DIR_SUFFIXES = (".dsr-new",)


def check_output_path(path: str | Path, field: str | None = "--out", *, folder: bool = False) -> Path:
    """Create ``path``'s parent folder (``path`` itself when ``folder``); InputError if impossible.

    Names the path and, when a file stands where a folder must be, that file.
    Also rejects a folder where a file is wanted (and the reverse).
    """
    path = Path(path)
    _make_folder(path if folder else path.parent, path, field)
    if not folder and path.is_dir():
        raise InputError("is a folder; a file name is needed", path=path, field=field)
    return path


def _make_folder(make: Path, path: Path, field: str | None) -> None:
    try:
        make.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        blocker = next((p for p in (make, *make.parents) if p.exists() and not p.is_dir()), None)
        why = (f"{blocker} is a file, not a folder" if blocker is not None
               else f"cannot create the folder {make}: {err.strerror or err}")
        raise InputError(f"cannot write here: {why}", path=path, field=field) from None


def clean_stale(target: str | Path) -> list[Path]:
    """Remove temporaries of ``target`` left by a killed process; returns what was removed.

    Candidates are the hidden siblings ``.NAME.*`` with a dsr temporary suffix.
    One is stale when it was last modified before this process started and the
    process id in its name (when it has one) is not running. Folders are only
    removed when they are a staging (``.dsr-new``) or set-aside (``.NAME.old-PID-N``)
    folder (``dsr train``'s
    resumable ``.NAME.partial`` folder is never touched).
    """
    target = Path(target)
    removed = []
    try:
        siblings = list(target.parent.glob(f".{glob_escape(target.name)}.*"))
    except OSError:
        return removed
    for sibling in siblings:
        name = sibling.name
        try:
            is_dir = sibling.is_dir() and not sibling.is_symlink()
            rest = name[len(target.name) + 2:]
            if is_dir and rest.startswith("old-"):  # replace_folder's
                rest = rest[4:]
            elif not name.endswith(_DIR_SUFFIXES if is_dir else _FILE_SUFFIXES):
                continue
            if sibling.lstat().st_mtime >= PROCESS_STARTED or _owner_running(rest):
                continue
            if is_dir:
                shutil.rmtree(sibling)
            else:
                sibling.unlink()
            removed.append(sibling)
        except OSError:
            continue  # another process got there first, or no permission: not ours to insist
    return removed


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def _owner_running(rest: str) -> bool:
    """Whether the process id that starts ``rest`` (``.NAME.<pid>-...``) is running."""
    match = re.match(r"(\d{1,9})[.-]", rest)
    if match is None:
        return False
    return process_running(int(match.group(1)))


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs (this one included), as far as this machine can tell."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _temp_prefix(path: Path) -> str:
    # the process id lets clean_stale leave a running writer's temporaries alone
    return f".{path.name}.{os.getpid()}-"


@contextlib.contextmanager
def temp_beside(path: str | Path, suffix: str = ".tmp", mode: str = "wb",
                field: str | None = None) -> Iterator[tuple[Path, IO]]:
    """A new temporary file beside ``path`` (removed on exit unless renamed away meanwhile)."""
    path = check_output_path(path, field)
    clean_stale(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=suffix, dir=path.parent)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror or err}", path=path) from None
    handle = os.fdopen(fd, mode)
    try:
        yield Path(tmp), handle
    finally:
        handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # gone already when it was renamed into place


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success rename it over ``path``."""
    path = check_output_path(path, field=None)
    clean_stale(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise InputError(f"cannot write here: {err.strerror or err}", path=path) from None
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


@contextlib.contextmanager
def atomic_dir(path: str | Path, allowed: Iterable[str], field: str | None = None) -> Iterator[Path]:
    """Build a folder as a set: yields an empty staging folder, swapped in on success.

    ``allowed`` (glob patterns) are the names the set may replace: the swap
    removes the old folder entirely, so an existing ``path`` holding anything
    else is refused (InputError) before any work, rather than deleted. On an
    exception the staging folder is removed and ``path`` is untouched.
    """
    path = check_replaceable(path, allowed, field)
    clean_stale(path)
    staging = Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".dsr-new", dir=path.parent))
    try:
        yield staging
        os.chmod(staging, 0o777 & ~_umask())
        # old renamed aside (.NAME.old-PID-N), new renamed in, old removed: a kill
        # between the renames leaves the old set aside, after them clean_stale's work
        replace_folder(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_replaceable(path: str | Path, allowed: Iterable[str], field: str | None = None) -> Path:
    """InputError unless ``path`` can be replaced by ``atomic_dir``: absent, or a folder
    holding only names matching ``allowed``; creates its parent. Call it before long work."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError("exists and is not a folder", path=path, field=field)
    _make_folder(path.parent, path, field)
    patterns = tuple(allowed)
    foreign = sorted(p.name for p in (path.iterdir() if path.is_dir() else ())
                     if not any(fnmatch.fnmatchcase(p.name, pat) for pat in patterns))
    if foreign:
        raise InputError(
            f"holds files this command does not write ({', '.join(foreign[:5])}"
            f"{', ...' if len(foreign) > 5 else ''}); the folder is replaced as a whole, so "
            "choose a new or empty folder (or move those files)", path=path, field=field)
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, obj, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON atomically (keys sorted so files diff cleanly)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=indent, sort_keys=True, ensure_ascii=False)
        handle.write("\n")


def replace_folder(new: Path, target: Path) -> None:
    """Move folder ``new`` to ``target``, replacing what is there (two renames)."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{time.monotonic_ns()}")
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
