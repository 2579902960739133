"""A report's figures kept by what they show: a report showing the same numbers again (a
second ``dsr reproduce`` of a collection, in any output folder) reuses the files instead of
drawing them.

The key is a sha256 of everything a figure is drawn from: the results' numbers and names
(per-topic values of every system, subsets, measures, significance, intervals' settings,
the runs' information the colours read, the splits), the ranked labels of the runs whose
recall curves are drawn, the qrels, the source of the evaluation code that draws them
(``dsr/evaluation/*.py``: styles, sizes, captions) and the versions of matplotlib, Pillow
and numpy. Values are fed in a canonical form (type, length, then contents; arrays by dtype,
shape and bytes), so the key does not depend on which objects happen to be shared.

An entry is a folder ``DSR_HOME/indexes/figures/KEY/`` holding the PNG and PDF files, a
``figures.json`` (stems, captions, and the bootstrap intervals computed while drawing,
which the tables read too) and a ``manifest.json`` with every file's sha256
(:mod:`dsr.indexes.manifest`): a damaged or edited file is noticed and the figures drawn
again. The :data:`KEEP` most recent entries are kept. ``DSR_FIGURE_CACHE=0`` turns the
cache off (every report draws its figures).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_write
from dsr.core.provenance import package_versions
from dsr.evaluation import ranked
from dsr.indexes.manifest import (
    cached_build,
    expected_manifest,
    failed_checksums,
    index_folder,
    mismatch,
    read_manifest,
)

KIND = "figures"
#: entries kept (the most recently used); older ones are removed when a new one is stored
KEEP = 16
#: the environment variable that turns the cache off (``0``)
CACHE_ENV = "DSR_FIGURE_CACHE"
PACKAGES = ("matplotlib", "pillow", "numpy")
INDEX = "figures.json"

Drawn = tuple[dict[str, str], dict[str, bytes], dict]  # captions, files, intervals


def enabled() -> bool:
    return os.environ.get(CACHE_ENV, "1").strip() != "0"


@lru_cache(maxsize=1)
def code_hash() -> str:
    """sha256 of the evaluation package's source (what draws, styles and captions figures)."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def content_key(results: Any, stems: list[str]) -> str | None:
    """The sha256 of what ``results``' figures ``stems`` are drawn from; None when the results
    hold something this cannot read in a canonical form (then nothing is cached)."""
    digest = hashlib.sha256()
    feed = _Feeder(digest)
    try:
        feed(["code", code_hash(), package_versions(PACKAGES), stems])
        for item in dataclasses.fields(results):
            if item.name not in ("run_objects", "_intervals", "qrels"):
                feed([item.name, getattr(results, item.name)])
        digest.update(
            "\x1e".join(f"{q}\x1f{d}\x1f{g}" for q, docs in results.qrels.items() for d, g in docs.items()).encode("utf-8")
        )
        labels = ranked.Labels(results.qrels, results.topics)
        for name, run in results.run_objects.items():  # what the recall curves are drawn from
            held = ranked.ranked(run, labels)
            if held is None:
                return None
            feed([name, held.rows, held.labels, held.lengths])
    except TypeError:
        return None
    return digest.hexdigest()


class _Feeder:
    """Feeds values into a digest in a canonical form (see the module docstring)."""

    def __init__(self, digest: hashlib._Hash) -> None:
        self.update = digest.update

    def __call__(self, value: Any) -> None:
        update = self.update
        if value is None or isinstance(value, (bool, int, float, str)):
            update(f"{type(value).__name__}:{value!r};".encode("utf-8", "surrogatepass"))
        elif isinstance(value, np.ndarray):
            if value.dtype.kind == "O":
                self(value.tolist())
            else:
                update(f"array:{value.dtype.str}:{value.shape};".encode())
                update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, np.generic):
            self(value.item())
        elif isinstance(value, dict):
            update(f"dict:{len(value)};".encode())
            for key, item in value.items():
                self(key)
                self(item)
        elif isinstance(value, (list, tuple)):
            if value and all(type(v) is str for v in value):
                update(f"strs:{len(value)};".encode())
                update("\x1f".join(value).encode("utf-8", "surrogatepass") + b"\x1e")
                return
            update(f"{type(value).__name__}:{len(value)};".encode())
            for item in value:
                self(item)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            update(f"{type(value).__name__}:".encode())
            for item in dataclasses.fields(value):
                self([item.name, getattr(value, item.name)])
        else:
            raise TypeError(f"no canonical form for {type(value).__name__}")


def _expected(key: str, stems: list[str], label: str) -> dict[str, Any]:
    return expected_manifest(KIND, inputs=key, params={"code": code_hash(), "stems": stems, "label": label}, packages=PACKAGES)


def lookup(key: str | None, stems: list[str], label: str = "") -> Drawn | None:
    """The figures stored under ``key`` (captions, files, intervals), or None."""
    if key is None or not enabled():
        return None
    folder = index_folder(KIND, key)
    found = read_manifest(folder)
    if found is None or not isinstance(found.get("files"), list):
        return None
    files = found["files"]
    expected = {**_expected(key, stems, found.get("params", {}).get("label", label)), "files": files}
    if mismatch(found, expected) is not None or failed_checksums(folder, files, found.get("checksums")):
        return None
    try:
        index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
        images = {name: (folder / name).read_bytes() for name in index["files"]}
        intervals = {
            tuple(entry["key"]): tuple(np.array(v, dtype=np.float64) for v in entry["values"]) for entry in index["intervals"]
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.utime(folder / "manifest.json")  # recently used: kept longest
    except OSError:
        pass
    return dict(index["captions"]), images, intervals


def store(key: str | None, stems: list[str], drawn: Drawn, label: str = "") -> None:
    """Keep ``drawn`` under ``key`` (nothing when the cache is off or the key unknown), and
    remove the least recently used entries beyond :data:`KEEP`."""
    if key is None or not enabled():
        return
    captions, images, intervals = drawn
    index = {
        "captions": captions,
        "files": list(images),
        "intervals": [
            {"key": list(k), "values": [np.asarray(v, dtype=np.float64).tolist() for v in value]}
            for k, value in intervals.items()
        ],
    }

    def build(folder: Path) -> None:
        for name, data in images.items():
            with atomic_write(folder / name, "wb") as handle:
                handle.write(data)
        (folder / INDEX).write_text(json.dumps(index, allow_nan=True), encoding="utf-8")

    try:
        cached_build(KIND, key, _expected(key, stems, label), build, files=[*images, INDEX], announce_new=False)
        _prune(index_folder(KIND, key).parent)
    except OSError:  # a cache that cannot be written costs the next report a drawing, no more
        pass


def likely_hit(label: str) -> bool:
    """Whether an entry drawn by this code for a collection of this name is stored: then a
    report of it will probably reuse its figures, and no workers need to be ready to draw."""
    if not enabled():
        return False
    parent = index_folder(KIND, "x").parent
    try:
        folders = list(parent.iterdir())
    except OSError:
        return False
    for folder in folders:
        params = (read_manifest(folder) or {}).get("params") or {}
        if params.get("code") == code_hash() and params.get("label") == label:
            return True
    return False


def _prune(parent: Path) -> None:
    entries = []
    for folder in parent.iterdir():
        try:
            entries.append(((folder / "manifest.json").stat().st_mtime, folder))
        except OSError:
            continue
    for _, folder in sorted(entries, reverse=True)[KEEP:]:
        shutil.rmtree(folder, ignore_errors=True)
