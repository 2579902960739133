"""Helpers shared by the collection builders: parameters, source folders, cached builds."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsr.core.atomic import write_json
from dsr.core.data import Collection, read_benchmark, write_benchmark
from dsr.core.errors import InputError
from dsr.core.home import data_dir, dsr_home, require_writable
from dsr.core.params import Declaration, resolve
from dsr.indexes.manifest import checksum, failed_checksums


def check_params(params: dict[str, Any], declared: Declaration, name: str) -> dict[str, Any]:
    """The builder's declared defaults overridden by ``params``, each checked against its
    declaration (one resolver for every parameter: :func:`dsr.core.params.resolve`)."""
    return resolve(params, declared, f"collection {name!r}")


def params_note(declared: Declaration) -> str:
    """The ``SourceInfo`` note listing a builder's parameters and their defaults."""
    return "parameters: " + ", ".join(f"{p.name} ({json.dumps(p.default)})" for p in declared)


def build_key(name: str, split: str | None, source: Path, inputs: list[Path], params: dict[str, Any], version: int) -> str:
    """The cache key of a build: the builder version, split, parameters and every input
    file's bytes (path relative to ``source`` + sha256)."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"name": name, "split": split, "params": params, "version": version}, sort_keys=True).encode())
    for path in inputs:
        digest.update(str(path.relative_to(source)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _cached(folder: Path, bench: Path, manifest_path: Path, key: str, label: str) -> Collection | None:
    """The cached build when its manifest's key matches and the file passes its checksum and
    content hash; None (with why on stderr when there was one) otherwise."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not JSON (JSONDecodeError, Unicode)
        manifest = None
    if not isinstance(manifest, dict):
        manifest = None
    if manifest and manifest.get("key") == key and bench.exists():
        cached = None
        if not failed_checksums(folder, [bench.name], {bench.name: manifest.get("sha256")}):
            try:
                cached = read_benchmark(bench, name=label)
            except InputError:
                pass
        if cached is not None and cached.content_hash == manifest.get("content_hash"):
            cached.meta = {**manifest.get("meta", {}), "cache": str(bench)}
            return cached
        print(f"{label}: cached build at {bench} is damaged (fails its checksum); rebuilding", file=sys.stderr)
    elif manifest:
        print(f"{label}: source, parameters or builder changed; rebuilding", file=sys.stderr)
    return None


def cached_build(
    name: str,
    split: str | None,
    source: Path,
    inputs: list[Path],
    params: dict[str, Any],
    version: int,
    builder: Callable[[], Collection],
) -> Collection:
    """``builder()``'s collection, cached as a benchmark file under ``$DSR_HOME/collections/NAME``.

    The cache key hashes the builder version, split, parameters and every input
    file's bytes (path relative to ``source`` + sha256), so any change to the
    raw files or the conversion rebuilds. A cached file is used only when its
    manifest's key matches, the file's sha256 and its content hash equal the
    ones recorded at build time (a damaged file is rebuilt, not trusted). The
    benchmark file is written first and the manifest last, both atomically:
    an interrupted build leaves no manifest that points at it.
    """
    key = build_key(name, split, source, inputs, params, version)
    folder = dsr_home() / "collections" / name
    stem = split or "all"
    bench, manifest_path = folder / f"{stem}.jsonl", folder / f"{stem}.manifest.json"
    label = f"{name}-{split}" if split else name
    cached = _cached(folder, bench, manifest_path, key, label)
    if cached is not None:
        return cached
    require_writable(folder)
    started = time.perf_counter()
    collection = builder()
    write_benchmark(collection, bench)
    write_json(
        manifest_path,
        {
            "key": key,
            "name": name,
            "split": split,
            "params": params,
            "builder_version": version,
            "sha256": checksum(bench),
            "content_hash": collection.content_hash,
            "dialogues": len(collection),
            "source": str(source),
            "inputs": len(inputs),
            "seconds": round(time.perf_counter() - started, 3),
            "meta": collection.meta,
        },
    )
    collection.meta = {**collection.meta, "cache": str(bench)}
    return collection


def resolve_source(name: str, source: Path | None) -> Path:
    """``source`` or ``$DSR_HOME/data/NAME``; missing -> InputError saying how to get it."""
    folder = Path(source) if source is not None else data_dir(name)
    if not folder.exists():
        how = (
            "pass the folder with --source DIR"
            if source is not None
            else f"run `dsr data fetch {name}` to download it, or pass a local copy with --source DIR"
        )
        raise InputError(f"no {name} data here; {how}", path=folder)
    return folder
