"""Writing an export folder as a whole: all files or none, and a manifest.

An export is written into a temporary folder beside ``--out`` and renamed into
place at the end, so an error half way leaves the previous export (or
nothing). ``--out`` must be empty, absent, or an earlier dsr export (it has
``dsr_export.json``): a folder of other files is never replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from retrieval import __version__
from retrieval.atomic import write_json
from retrieval.errors import InputError
from retrieval.provenance import sha256_file

MANIFEST = "dsr_export.json"


@contextlib.contextmanager
def export_folder(out: str | Path) -> Iterator[Path]:
    """Yield a temporary folder; on success it replaces ``out``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("is a file; --out takes a folder", path=out, field="out")
    if out.is_dir() and any(out.iterdir()) and not (out / MANIFEST).exists():
        raise InputError(f"folder is not empty and holds no {MANIFEST}: give a new or empty folder "
                         "(an earlier dsr export is replaced)", path=out, field="out")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    old = out.with_name(f".{out.name}.{os.getpid()}.old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
        if out.exists():
            os.replace(out, old)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)


def write_manifest(folder: Path, fmt: str, described: dict[str, Any], files: list[str],
                   extra: dict[str, Any] | None = None) -> None:
    """``dsr_export.json``: format, the collection and view, files with sha256, versions."""

    write_json(folder / MANIFEST, {
        "format": fmt, **described, **(extra or {}),
        "files": {name: sha256_file(folder / name) for name in files},
        "dsr_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    })


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False))
            handle.write("\n")


def write_lines(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line)
            handle.write("\n")
