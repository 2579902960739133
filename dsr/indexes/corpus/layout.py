"""The corpus folder on disk: shards, done-markers, and reading sentences back.

Layout of a corpus ``DIR`` (see docs/scale.md)::

    DIR/corpus.json                        manifest: source hash, counts, shards, versions
    DIR/shards/shard-00000.parquet         sentences (columns: dsr.indexes.corpus.sentences.COLUMNS)
    DIR/shards/shard-00000.done.json       done-marker: inputs key, file sha256, counts
    DIR/bm25/...                           dsr.indexes.corpus.bm25
    DIR/dense/MODEL/...                    dsr.indexes.corpus.dense

Every unit of work (a shard of sentences, its BM25 counts, its index, its
vectors) is written atomically and then marked done by a small JSON file that
records the key of its inputs and parameters and the sha256 of each file it
wrote. A unit is reused only when its marker's key matches and every file
still has that checksum, so a killed build resumes from its finished shards
and a changed input rebuilds exactly what depends on it.

Reading checks the same checksums: a sentence shard is compared with the
sha256 in ``corpus.json`` before it is first read (:meth:`Corpus.table`), and
the searchers check each index unit against its marker (:func:`check_unit`)
before loading it, so a truncated, edited or permuted file is an InputError
naming it (exit 2) rather than a traceback or a silently wrong score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.core.atomic import write_json
from dsr.core.errors import InputError

if TYPE_CHECKING:  # pyarrow is imported where a shard is read
    import pyarrow as pa

MANIFEST = "corpus.json"


def shard_name(number: int) -> str:
    return f"shard-{number:05d}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def key_hash(key: Any) -> str:
    """A short digest of a JSON-able key (used to tie later stages to earlier outputs)."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).hexdigest()


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON file's object, or None when it is missing or unreadable (an unfinished stage)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def marker_path(folder: Path, name: str) -> Path:
    return folder / f"{name}.done.json"


def write_marker(folder: Path, unit: str, key: dict[str, Any], files: Iterable[Path], **info: Any) -> dict[str, Any]:
    """Mark ``unit`` done: its key, each file's sha256 (files under ``folder``), ``info``."""
    marker = {"key": key, "files": {str(Path(f).relative_to(folder)): _checksum(Path(f)) for f in files}, **info}
    write_json(marker_path(folder, unit), marker)
    return marker


def _checksum(path: Path) -> str:
    if path.is_dir():  # a saved index folder: hash its files in name order
        digest = hashlib.sha256()
        for child in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(child.relative_to(path)).encode("utf-8") + b"\0")
            digest.update(file_sha256(child).encode("ascii"))
        return digest.hexdigest()
    return file_sha256(path)


def check_unit(folder: Path, name: str, rebuild: str) -> dict[str, Any]:
    """The marker of a finished unit whose files still have their checksums, else InputError
    naming the damaged file and the command that rebuilds it (``rebuild``)."""
    marker = read_json(marker_path(folder, name))
    if marker is None or not isinstance(marker.get("files"), dict):
        raise InputError(
            f"{name} has no readable done-marker (unfinished or damaged): run `{rebuild}`", path=marker_path(folder, name)
        )
    for rel, digest in marker["files"].items():
        path = folder / rel
        if not path.exists() or _checksum(path) != digest:
            raise InputError(
                f"{'missing' if not path.exists() else 'damaged'}: it differs from the "
                f"checksum recorded when it was built (truncated, edited or replaced); "
                f"rebuild it with `{rebuild}`",
                path=path,
            )
    return marker


def read_marker(folder: Path, name: str, key: dict[str, Any]) -> dict[str, Any] | None:
    """The unit's marker when it is done for this ``key`` and its files are intact, else None."""
    marker = read_json(marker_path(folder, name))
    if marker is None:
        return None
    if json.dumps(marker.get("key"), sort_keys=True) != json.dumps(key, sort_keys=True):
        return None
    for rel, digest in marker.get("files", {}).items():
        path = folder / rel
        if not path.exists() or _checksum(path) != digest:
            return None
    return marker


class Corpus:
    """A built corpus folder: its manifest, shards and sentences by global row.

    Rows are numbered across shards in order (shard 0's rows, then shard
    1's...); ``offsets[i]`` is the first global row of shard ``i``.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        path = self.folder / MANIFEST
        try:
            self.manifest = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError("not a corpus folder (no corpus.json): build it with `dsr corpus build`", path=self.folder) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError(f"unreadable manifest ({err})", path=path) from None
        self.shards: list[dict[str, Any]] = self.manifest["shards"]
        counts = [s["sentences"] for s in self.shards]
        self.offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._tables: dict[int, pa.Table] = {}
        self._verified: set[int] = set()

    def __len__(self) -> int:
        return int(self.offsets[-1])

    @property
    def names(self) -> list[str]:
        return [s["name"] for s in self.shards]

    def shard_path(self, number: int) -> Path:
        return self.folder / "shards" / f"{self.shards[number]['name']}.parquet"

    @cached_property
    def key(self) -> str:
        """Identity of the corpus content: later stages key their outputs on it."""
        return key_hash([(s["name"], s["sha256"]) for s in self.shards])

    def table(self, number: int, columns: Sequence[str] | None = None) -> pa.Table:
        import pyarrow.parquet as pq

        return pq.read_table(self.verified(number), columns=list(columns) if columns else None)

    def verified(self, number: int) -> Path:
        """Shard ``number``'s file once its sha256 equals ``corpus.json``'s (checked once)."""
        path = self.shard_path(number)
        if number not in self._verified:
            if not path.is_file() or file_sha256(path) != self.shards[number].get("sha256"):
                why = "missing" if not path.is_file() else "damaged: its sha256 differs from corpus.json's"
                raise InputError(
                    f"shard {self.shards[number]['name']} is {why} (truncated, edited or "
                    "replaced); rebuild it with `dsr corpus build` (intact shards are kept), "
                    "then `dsr corpus index`",
                    path=path,
                )
            self._verified.add(number)
        return path

    def texts(self, number: int) -> list[str]:
        return self.table(number, ["text"]).column("text").to_pylist()

    def _full(self, number: int) -> pa.Table:
        if number not in self._tables:
            self._tables[number] = self.table(number)
        return self._tables[number]

    def locate(self, row: int) -> tuple[int, int]:
        """Global row -> (shard number, row in shard)."""
        shard = int(np.searchsorted(self.offsets, row, side="right") - 1)
        if not 0 <= row < len(self):
            raise IndexError(row)
        return shard, int(row - self.offsets[shard])

    def records(self, rows: Sequence[int]) -> list[dict[str, Any]]:
        """Sentence records (every column) of global ``rows``, in the order given."""
        out = []
        for row in rows:
            shard, local = self.locate(int(row))
            table = self._full(shard)
            out.append({c: table.column(c)[local].as_py() for c in table.column_names})
        return out

    def ids(self, rows: Sequence[int]) -> list[str]:
        return [r["id"] for r in self.records(rows)]
