"""Manifests: what an index on disk was built from, so a stale one is never reused.

Every index and cache lives in its own folder under ``DSR_HOME/indexes/KIND/NAME``
with a ``manifest.json`` recording the inputs' hash, the model (name and weights
sha256), the parameters and the library versions that shape the files. An
index is reused only when the manifest a caller expects equals the one on
disk (the ``built`` time and the machine are informative and not compared);
otherwise it is rebuilt and the reason printed on stderr.

Folders are replaced atomically (:func:`dsr.core.atomic.atomic_dir`): the new
index is built in a staging folder beside the old one, its manifest written
last, then swapped in by rename. A crash leaves the old index or the new one
(a swap cut between its renames is finished by the next use), never a
half-written one; a staging folder left by a killed build is removed by the
next build of the same index.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dsr.core.atomic import atomic_dir, recover_folder, write_json
from dsr.core.home import index_dir, require_writable
from dsr.core.provenance import machine, package_versions, sha256_file, slug
from dsr.core.quiet import progress

MANIFEST = "manifest.json"
#: manifest keys that describe a build but do not decide whether it is reusable
#: (``checksums`` is checked apart: against the files, not the expected manifest)
INFORMATIVE = ("built", "machine", "seconds", "checksums")


def text_hash(texts: Iterable[str]) -> str:
    """sha256 over texts (length-prefixed, so ["ab", "c"] and ["a", "bc"] differ)."""
    digest = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def checksum(path: Path) -> str:
    """sha256 of a file, or of a folder's files (relative names and contents, sorted)."""

    if not path.is_dir():
        return sha256_file(path)
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(item.relative_to(path)).encode("utf-8") + b"\0")
        digest.update(bytes.fromhex(sha256_file(item)))
    return digest.hexdigest()


def failed_checksums(folder: Path, files: Iterable[str], recorded: Any) -> list[str]:
    """The ``files`` of ``folder`` that are missing or whose sha256 differs from ``recorded``."""
    recorded = recorded if isinstance(recorded, dict) else {}
    bad = []
    for name in files:
        path = folder / name
        try:
            ok = path.exists() and recorded.get(name) == checksum(path)
        except OSError:
            ok = False
        if not ok:
            bad.append(name)
    return bad


def safe_name(name: str) -> str:
    """A folder name from any string (model ids, collection names): a :func:`slug` that starts
    and ends with neither ``.`` nor ``_``."""
    return slug(name, "index", strip="._")


def expected_manifest(
    kind: str,
    *,
    inputs: str,
    params: dict[str, Any] | None = None,
    model: dict[str, Any] | None = None,
    packages: Iterable[str] = (),
) -> dict[str, Any]:
    """The manifest an index of ``kind`` built now from these inputs would have.

    ``packages`` names the libraries whose version changes the files (faiss-cpu
    for a FAISS index, sentence-transformers for vectors): their versions are
    compared, so an upgrade rebuilds rather than loads something incompatible.
    """
    versions = package_versions(tuple(packages)) if packages else {}
    versions.pop("python", None)
    return {
        "kind": kind,
        "inputs": inputs,
        "params": dict(params or {}),
        "model": dict(model) if model else None,
        "versions": versions,
        "format": 1,
    }


def read_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The folder's manifest, or None when it has none or it is unreadable."""
    try:
        found = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # missing, unreadable, damaged
        return None
    return found if isinstance(found, dict) else None


def mismatch(found: dict[str, Any] | None, expected: dict[str, Any]) -> str | None:
    """None when ``found`` matches ``expected``; otherwise why not, in words."""
    if found is None:
        return "no index yet"
    reasons = []
    for key in sorted(set(found) | set(expected)):
        if key in INFORMATIVE:
            continue
        old, new = found.get(key), expected.get(key)
        if _normal(old) == _normal(new):
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            changed = [
                f"{k}: {old.get(k)!r} -> {new.get(k)!r}"
                for k in sorted(set(old) | set(new))
                if _normal(old.get(k)) != _normal(new.get(k))
            ]
            reasons.append(f"{key} changed ({'; '.join(changed)})")
        else:
            reasons.append(f"{key} changed ({_short(old)} -> {_short(new)})")
    return "; ".join(reasons) or None


def _normal(value: Any) -> str:
    # JSON round trip: tuples become lists, so an in-memory manifest compares
    # equal to the one read back.
    return json.dumps(value, sort_keys=True)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 24 else text[:12] + "..." + text[-8:]


def index_folder(kind: str, name: str) -> Path:
    return index_dir() / safe_name(kind) / safe_name(name)


def cached_build(
    kind: str,
    name: str,
    expected: dict[str, Any],
    build: Callable[[Path], None],
    *,
    files: Iterable[str] = (),
    announce_new: bool = True,
    folder: Path | None = None,
) -> tuple[Path, bool]:
    """Reuse ``DSR_HOME/indexes/KIND/NAME`` if its manifest matches, else build it.

    ``build(folder)`` writes the index files into an empty temporary folder;
    the manifest is added and the folder swapped in atomically. ``files``
    names what the index must hold: they are recorded in the manifest (so a
    change of layout between versions rebuilds) and a folder missing one is
    rebuilt, never half-loaded. Each file's sha256 is recorded in the
    manifest (``checksums``) and checked on every reuse: a file that is
    missing, empty, truncated or edited fails it and the index is rebuilt.
    Returns the index folder and whether it was (re)built. A rebuild is
    always announced on stderr with its reason; a first build, on a terminal, unless
    ``announce_new`` is False. ``folder`` puts it elsewhere than under
    ``DSR_HOME/indexes`` (exported models live under ``models/``).
    """
    folder = Path(folder) if folder is not None else index_folder(kind, name)
    recover_folder(folder)
    files = sorted(files)
    if files:
        expected = {**expected, "files": files}
    found = read_manifest(folder)
    reason = mismatch(found, expected)
    if reason is None and found is not None and files:
        missing = [f for f in files if not (folder / f).exists()]
        bad = failed_checksums(folder, files, found.get("checksums"))
        if missing:
            reason = f"missing {', '.join(missing)}"
        elif bad:
            reason = f"{', '.join(bad)} fails its checksum (damaged or edited)"
    if reason is None:
        return folder, False
    require_writable(folder.parent)  # a read-only cache: exit 2 naming the folder
    if reason != "no index yet":
        print(f"dsr: rebuilding {kind} index {folder.name!r}: {reason}", file=sys.stderr)
    elif announce_new:  # progress: on a terminal only (a rebuild's reason is printed everywhere)
        progress(f"dsr: building {kind} index {folder.name!r}")
    with atomic_dir(folder, None) as tmp:  # a folder dsr owns whole
        start = time.perf_counter()
        build(tmp)
        write_json(
            tmp / MANIFEST,
            {
                **expected,
                "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "checksums": {f: checksum(tmp / f) for f in files},
                "machine": machine(),
                "seconds": round(time.perf_counter() - start, 3),
            },
        )
    return folder, True
