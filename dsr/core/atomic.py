"""Atomic file writes: write to a temporary file beside the target, then rename.

A crash or a bad record half way through never leaves a half-written output.

* ``atomic_write(path)``: one file, through ``.NAME.<random>.tmp`` beside it.
* ``atomic_dir(path, allowed)``: a folder written as a set (a report, an export,
  ``dsr reproduce``'s and ``dsr kfold``'s output, a cache folder): built in a
  hidden sibling ``.NAME.<pid>-<random>.dsr-new`` and swapped in by
  ``replace_folder``. It is the one way dsr replaces a folder. ``allowed`` (glob
  patterns, ``sub/*.run`` for files in a subfolder) names what the set may
  replace: a folder holding anything else is refused (exit 2) before any work,
  never deleted (``check_replaceable``).
* ``check_output_path(path)``: an output whose parent is a file, or whose folder
  cannot be created, is an ``InputError`` naming the path (exit 2), not a
  traceback. Both writers above call it.

A folder swap exchanges the new set and the old folder in one step (Linux's
``renameat2(RENAME_EXCHANGE)``): NAME is the old set until it is the new one, never
missing, whenever the process is killed. Where that is not supported it is two renames
(the old folder aside, the new one in), and a process killed between them leaves no
folder at NAME; so the swap marks the new set complete first (``.NAME.ready-TAG``), and
the next write to NAME (``recover_folder``, run by every writer before anything else)
finishes it (the complete new set is renamed in) or undoes it (the old set renamed
back). A full disk while writing is an InputError naming the output (exit 2), and the
temporaries are removed: nothing half-written is left.

Temporaries a killed process left behind (``.NAME.*.tmp``, ``.part``,
``.partial``, ``.dsr-new`` beside NAME) are removed by the next write to the
same target (``clean_stale``): those last modified before this process started
and not owned by a running process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fnmatch
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from dsr.core.errors import InputError

#: when this process started (as far as dsr can tell): temporaries older than this
#: and not tagged with a live process id are left over from a killed process
PROCESS_STARTED = time.time()
_FILE_SUFFIXES = (".tmp", ".part", ".partial", ".partial.json")
#: staging folders: ours, and the ``.NAME.XXXX.tmp`` of index builds by earlier dsr versions
_DIR_SUFFIXES = (".dsr-new", ".tmp")


#: the errors of a full disk (or a quota, or a file the filesystem cannot hold)
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


class FullDisk(InputError):
    """A full disk while writing an output (exit 2): nothing of it was left behind."""


def disk_full(err: BaseException) -> bool:
    """Whether ``err`` is a full disk: an OSError of :data:`DISK_FULL`, SQLite's "database or
    disk is full" (through SQLAlchemy or not), or a :class:`FullDisk` already said."""
    if isinstance(err, FullDisk) or (isinstance(err, OSError) and err.errno in DISK_FULL):
        return True
    return "database or disk is full" in str(err)


def full_disk_error(path: str | Path | None, err: BaseException) -> FullDisk:
    """The error of a full disk while writing ``path`` (an output file or folder, or a
    database): nothing of it was written."""
    if "database or disk is full" in str(err):
        return FullDisk(
            "the database or its disk is full: the transaction was rolled back, nothing of it "
            "was stored; free some space and run it again",
            path=path,
        )
    what = getattr(err, "strerror", None) or "no space left on the device"
    return FullDisk(
        f"cannot write: {what} (the disk is full or over its quota); nothing was written, free some space and run it again",
        path=path,
    )


def _forked() -> None:
    global PROCESS_STARTED
    PROCESS_STARTED = time.time()  # a forked child is a new process: its own start


os.register_at_fork(after_in_child=_forked)


def check_output_path(path: str | Path, field: str | None = "out", *, folder: bool = False) -> Path:
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
        why = (
            f"{blocker} is a file, not a folder"
            if blocker is not None
            else f"cannot create the folder {make}: {err.strerror or err}"
        )
        raise InputError(f"cannot write here: {why}", path=path, field=field) from None


def clean_stale(target: str | Path) -> list[Path]:
    """Remove temporaries of ``target`` left by a killed process; returns what was removed.

    Candidates are the hidden siblings ``.NAME.*`` with a dsr temporary suffix.
    One is stale when it was last modified before this process started and the
    process id in its name (when it has one) is not running. Folders are only
    removed when they are a staging folder (``.dsr-new``, or an older version's
    ``.tmp``): ``dsr train``'s resumable ``.NAME.partial`` folder is never touched.
    """
    target = Path(target)
    removed = []
    for sibling in _siblings(target):
        name = sibling.name
        try:
            is_dir = sibling.is_dir() and not sibling.is_symlink()
            if not name.endswith(_DIR_SUFFIXES if is_dir else _FILE_SUFFIXES):
                continue
            if not _is_stale(sibling, name[len(target.name) + 2 :]):
                continue
            if is_dir:
                shutil.rmtree(sibling)
            else:
                sibling.unlink()
            removed.append(sibling)
        except OSError:
            continue  # another process got there first, or no permission: not ours to insist
    return removed


def _siblings(target: Path) -> list[Path]:
    try:
        return list(target.parent.glob(f".{glob_escape(target.name)}.*"))
    except OSError:
        return []


def _is_stale(path: Path, rest: str) -> bool:
    """Left by a killed process: modified before this one started, its owner (``rest``'s pid) gone."""
    try:
        return path.lstat().st_mtime < PROCESS_STARTED and not _owner_running(rest)
    except OSError:
        return False


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
def temp_beside(
    path: str | Path, suffix: str = ".tmp", mode: str = "wb", field: str | None = None
) -> Iterator[tuple[Path, IO[Any]]]:
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
    except OSError as err:
        if disk_full(err):
            raise full_disk_error(path, err) from None
        raise
    finally:
        with contextlib.suppress(OSError):
            handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # gone already when it was renamed into place


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
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
        text = "b" not in mode
        with os.fdopen(fd, mode, encoding=encoding if text else None, newline="\n" if text else None) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if disk_full(err):
            raise full_disk_error(path, err) from None
        raise


@contextlib.contextmanager
def atomic_dir(path: str | Path, allowed: Iterable[str] | None, field: str | None = None) -> Iterator[Path]:
    """Build a folder as a set: yields an empty staging folder, swapped in on success.

    ``allowed`` (glob patterns, see ``check_replaceable``) are the names the set
    may replace: the swap removes the old folder entirely, so an existing
    ``path`` holding anything else is refused (InputError) before any work,
    rather than deleted. ``None``: a folder dsr owns whole (a cache folder under
    DSR_HOME), replaced whatever it holds. On an exception the staging folder
    is removed and ``path`` is untouched.
    """
    path = Path(path)
    if allowed is not None:
        check_replaceable(path, allowed, field)
    else:
        recover_folder(path)
        _make_folder(path.parent, path, field)
        clean_stale(path)
    staging = make_staging(path, field)
    try:
        yield staging
        os.chmod(staging, 0o777 & ~_umask())
        replace_folder(staging, path)
    except BaseException as err:
        shutil.rmtree(staging, ignore_errors=True)
        if disk_full(err):
            raise full_disk_error(path, err) from None
        raise


def make_staging(path: Path, field: str | None = None) -> Path:
    """A new empty hidden folder ``.NAME.<pid>-<random>.dsr-new`` beside ``path``
    (removed by ``clean_stale`` once its process is gone); InputError naming the
    folder when it cannot be created there (a read-only folder)."""
    try:
        return Path(tempfile.mkdtemp(prefix=_temp_prefix(path), suffix=".dsr-new", dir=path.parent))
    except OSError as err:
        raise InputError(
            f"cannot write here ({err.strerror or err}): the folder {path.parent} is not writable", path=path, field=field
        ) from None


def check_replaceable(path: str | Path, allowed: Iterable[str], field: str | None = None) -> Path:
    """InputError unless ``path`` can be replaced by ``atomic_dir``: absent, or a folder
    holding only names matching ``allowed``; creates its parent. Call it before long work.

    A pattern matches a name in ``path`` (``*.png``; a folder matching it is
    replaced whole) or, with a ``/``, names in a subfolder (``runs/*.run``: the
    folder ``runs`` may hold only those). A swap a killed process left half done
    is finished or undone first (``recover_folder``), and stale temporaries removed.
    """
    path = Path(path)
    recover_folder(path)
    if path.exists() and not path.is_dir():
        raise InputError("is a file; a folder is needed", path=path, field=field)
    _make_folder(path.parent, path, field)
    clean_stale(path)
    foreign = _foreign(path, tuple(allowed)) if path.is_dir() else []
    if foreign:
        raise InputError(
            f"holds files this command does not write ({', '.join(foreign[:5])}"
            f"{', ...' if len(foreign) > 5 else ''}); the folder is replaced as a whole, so "
            "choose a new or empty folder (or move those files)",
            path=path,
            field=field,
        )
    return path


def _foreign(folder: Path, patterns: tuple[str, ...], prefix: str = "") -> list[str]:
    """Paths under ``folder`` (relative, sorted) that no pattern covers."""
    out = []
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if any(fnmatch.fnmatchcase(name, pat) for pat in patterns if "/" not in pat):
            continue
        inner = tuple(
            rest for head, _, rest in (pat.partition("/") for pat in patterns if "/" in pat) if fnmatch.fnmatchcase(name, head)
        )
        if inner and entry.is_dir() and not entry.is_symlink():
            out += _foreign(entry, inner, f"{prefix}{name}/")
        else:
            out.append(prefix + name + ("/" if entry.is_dir() else ""))
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(path: str | Path, obj: Any, indent: int | None = 2) -> None:
    """Write ``obj`` as JSON atomically (keys sorted so files diff cleanly)."""
    with atomic_write(path) as handle:
        json.dump(obj, handle, indent=indent, sort_keys=True, ensure_ascii=False)
        handle.write("\n")


def replace_folder(new: Path, target: Path) -> None:
    """Move folder ``new`` to ``target``, replacing what is there:

    1. ``new`` -> ``.NAME.ready-TAG`` (the new set is complete);
    2. when ``NAME`` is a folder: ``.NAME.ready-TAG`` and ``NAME`` exchanged in one step
       (Linux's ``renameat2(RENAME_EXCHANGE)``), so ``NAME`` is never missing, not even for
       an instant: it holds the old set until it holds the new one; then the old set, now
       at ``.NAME.ready-TAG``, is renamed ``.NAME.old-TAG`` and removed. Where the exchange
       is not supported (another system or filesystem): ``NAME`` -> ``.NAME.old-TAG``,
       ``.NAME.ready-TAG`` -> ``NAME``, ``.NAME.old-TAG`` removed;
    3. when there is no ``NAME``: ``.NAME.ready-TAG`` -> ``NAME``.

    TAG is ``<pid>-<n>``. A kill leaves what ``recover_folder`` needs: it renames a set in
    only when ``NAME`` is missing (the fallback's gap between its two renames), and
    otherwise removes what is left (after an exchange, the old set).
    """
    target = Path(target)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    ready, old = _swap_name(target, "ready", tag), _swap_name(target, "old", tag)
    os.replace(new, ready)
    moved = target.exists() or target.is_symlink()
    if moved and target.is_dir() and not target.is_symlink() and exchange(ready, target):
        os.replace(ready, old)  # the old set
        _remove(old)
        return
    if moved:
        os.replace(target, old)
    os.replace(ready, target)
    if moved:
        _remove(old)


#: ``renameat2``'s flag that swaps two paths atomically (Linux 3.15+, glibc 2.28+)
RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one atomic step; False where the system or the
    filesystem cannot (then nothing changed)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _swap_name(target: Path, step: str, tag: str) -> Path:
    return target.with_name(f".{target.name}.{step}-{tag}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def recover_folder(target: str | Path) -> str | None:
    """Finish or undo a folder swap (``replace_folder``) that a killed process left.

    With ``NAME`` missing, a complete new set (``.NAME.ready-TAG``) is renamed in
    (the swap finished); without one, the set-aside old folder
    (``.NAME.old-TAG``) is renamed back (the swap undone). What is left of the
    swap is then removed. Only swaps of processes that are gone (as
    ``clean_stale`` decides) are touched. Returns ``"finished"``, ``"undone"``,
    ``"cleaned"`` or None (nothing to do); says so on stderr when it renamed.
    """
    target = Path(target)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(old|ready)-(\d+-\d+)")
    swaps: dict[str, dict[str, Path]] = {}
    for sibling in _siblings(target):
        match = pattern.fullmatch(sibling.name)
        if match:
            swaps.setdefault(match.group(2), {})[match.group(1)] = sibling
    done = None
    for tag in sorted(swaps, key=lambda t: tuple(map(int, t.split("-")))):
        parts = swaps[tag]
        if not all(_is_stale(p, tag) for p in parts.values()):
            continue
        done = "cleaned"
        if not (target.exists() or target.is_symlink()):
            back = parts.get("ready") or parts["old"]
            try:
                os.replace(back, target)
            except OSError:
                continue
            done = "finished" if back is parts.get("ready") else "undone"
            print(
                f"dsr: {target}: {'finished' if done == 'finished' else 'undid'} a folder swap "
                "that a killed process left half done",
                file=sys.stderr,
            )
        for left in parts.values():
            _remove(left)
    return done
