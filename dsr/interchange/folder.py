"""Writing an export folder as a whole: all files or none, and a manifest.

An export is built in a staging folder beside ``--out`` and swapped in at the
end (:func:`dsr.core.atomic.atomic_dir`, the one way dsr replaces a folder), so
an error or a kill half way leaves the previous export (or nothing). ``--out``
must be absent, empty, or an earlier dsr export holding only the files its
``dsr_export.json`` lists: a folder with any other file is refused (exit 2)
and left as it is, never emptied.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dsr.core import __version__
from dsr.core.atomic import atomic_dir, check_replaceable, glob_escape, recover_folder, write_json
from dsr.core.provenance import sha256_file

MANIFEST = "dsr_export.json"


def check_export_out(out: str | Path) -> Path:
    """``out`` once a swap a killed export left is finished or undone; InputError when it holds
    anything an earlier export did not write. Call it before the work."""
    out = Path(out)
    recover_folder(out)
    return check_replaceable(out, replaceable(out), field="out")


@contextlib.contextmanager
def export_folder(out: str | Path) -> Iterator[Path]:
    """Yield an empty staging folder; on success it replaces ``out`` as a whole."""
    out = check_export_out(out)
    with atomic_dir(out, replaceable(out), field="out") as staging:
        yield staging


def replaceable(out: Path) -> tuple[str, ...]:
    """What an export may replace in ``out``: an earlier export's manifest and the files it lists."""
    try:
        files = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
        names = [name for name in files if isinstance(name, str)]
    except (OSError, ValueError, KeyError, TypeError):
        return ()  # no readable manifest: only an empty folder may be written
    return (MANIFEST, *(glob_escape(name) for name in names))


def write_manifest(
    folder: Path, fmt: str, described: dict[str, Any], files: list[str], extra: dict[str, Any] | None = None
) -> None:
    """``dsr_export.json``: format, the collection and view, files with sha256, versions."""

    write_json(
        folder / MANIFEST,
        {
            "format": fmt,
            **described,
            **(extra or {}),
            "files": {name: sha256_file(folder / name) for name in files},
            "dsr_version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )


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
