"""``dsr corpus build``: documents -> sentences -> Parquet shards with a manifest.

The source is read once, streaming, in order; every ``docs_per_shard``
documents form a shard, so shard boundaries depend only on the source and
that number. Each shard is cleaned (wiki markup), split into sentences
(:mod:`dsr.indexes.corpus.sentences`) and written as ``shards/shard-NNNNN.parquet``
by a unit of work (in-process or a Ray task, see
:mod:`dsr.indexes.corpus.distributed`), then marked done with its checksum. A
rerun skips the shards already done for the same source and parameters, so a
killed build resumes; the manifest ``corpus.json`` is written last
(atomically), listing every shard with its counts and sha256, the source's
files and hash, the parameters and the library versions.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsr.core.atomic import atomic_write, check_replaceable, write_json
from dsr.core.errors import InputError
from dsr.core.params import Param, resolve
from dsr.core.provenance import package_versions
from dsr.indexes.corpus.distributed import Executor
from dsr.indexes.corpus.layout import MANIFEST, file_sha256, read_marker, shard_name, write_marker
from dsr.indexes.corpus.sentences import CHUNK_CHARS, MAX_TOKEN_CHARS, sentences_table
from dsr.indexes.corpus.sources import Document, detect_format, read_documents, source_files, source_hash

PACKAGES = ("pysbd", "mwparserfromhell", "pyarrow")


@dataclass
class StageReport:
    """What a stage did: shards built now and shards reused from an earlier (killed) run."""

    built: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    seconds: float = 0.0


#: what a corpus folder may hold (anything else is refused, never overwritten): the manifest,
#: the shards with their markers and a killed build's temporaries, and the indexes
CORPUS_FILES = ("corpus.json", ".corpus.json.*", "shards/shard-*", "shards/.shard-*", "bm25", "dense")


#: how documents become shards (``build_corpus``; ``dsr corpus build`` flags)
BUILD_PARAMS = (
    Param("docs_per_shard", 10_000, "int", "documents per shard (default 10000)", low=1, metavar="N"),
    Param("min_chars", 1, "int", "drop sentences shorter than N characters (default 1)", low=0, metavar="N"),
)


def shard_key(source: str, fmt: str, docs_per_shard: int, min_chars: int) -> dict[str, Any]:

    versions = package_versions(PACKAGES)
    versions.pop("python", None)
    return {
        "stage": "sentences",
        "source": source,
        "format": fmt,
        "docs_per_shard": docs_per_shard,
        "min_chars": min_chars,
        "versions": versions,
        "split": {"chunk_chars": CHUNK_CHARS, "max_token_chars": MAX_TOKEN_CHARS},
    }


def write_shard(
    folder: str, number: int, docs: list[tuple[str, str, str, str]], key: dict[str, Any], min_chars: int
) -> dict[str, Any]:
    """One unit: documents -> a Parquet shard and its done-marker (runs in a Ray task or in-process)."""
    import pyarrow.parquet as pq

    out = Path(folder)
    name = shard_name(number)
    documents = [Document(*doc).plain() for doc in docs]
    table = sentences_table(documents, min_chars)
    ids = table.column("id").to_pylist()
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"duplicate sentence id {dup!r}: two documents share a title and id", record=dup, field="id")
    path = out / f"{name}.parquet"
    with atomic_write(path, "wb") as handle:
        pq.write_table(table, handle, compression="zstd")
    return write_marker(
        out, name, key, [path], name=name, documents=len(documents), sentences=table.num_rows, sha256=file_sha256(path)
    )


def _batches(docs: Iterator[Document], size: int) -> Iterator[list[Document]]:
    while batch := list(itertools.islice(docs, size)):
        yield batch


def build_corpus(
    source: str | Path,
    out: str | Path,
    *,
    fmt: str | None = None,
    docs_per_shard: int = 10_000,
    min_chars: int = 1,
    executor: Executor | None = None,
) -> StageReport:
    """Build (or resume) the corpus folder ``out`` from ``source``."""

    start = time.perf_counter()
    source, out = Path(source), Path(out)
    resolve({"docs_per_shard": docs_per_shard, "min_chars": min_chars}, BUILD_PARAMS, "")
    check_replaceable(out, CORPUS_FILES, field="out")  # a folder of other files is refused
    fmt = fmt or detect_format(source)
    files = source_files(source, fmt)
    key = shard_key(source_hash(files), fmt, docs_per_shard, min_chars)
    shards_dir = out / "shards"
    shards_dir.mkdir(parents=True, exist_ok=True)
    report = StageReport()
    markers: dict[int, dict[str, Any]] = {}
    seen_docs: set[str] = set()

    def jobs() -> Iterator[tuple]:
        for number, batch in enumerate(_batches(_checked(read_documents(source, fmt), seen_docs, source), docs_per_shard)):
            marker = read_marker(shards_dir, shard_name(number), key)
            if marker is not None:
                markers[number] = marker
                report.reused.append(marker["name"])
                continue
            yield (str(shards_dir), number, [(d.id, d.title, d.text, d.markup) for d in batch], key, min_chars)

    executor = executor or Executor(0)
    with executor:
        for marker in executor.map(write_shard, jobs(), desc="corpus shards"):
            markers[int(marker["name"].rsplit("-", 1)[1])] = marker
            report.built.append(marker["name"])
    if not markers:
        raise InputError("the source holds no documents", path=source)
    shards = [markers[n] for n in range(len(markers))]
    if not any(s["sentences"] for s in shards):
        raise InputError(
            f"the source's {sum(s['documents'] for s in shards)} documents hold no sentence "
            "(every text is empty, or shorter than `min_chars`): nothing to search",
            path=source,
            field="text",
        )
    _drop_stale(shards_dir, len(shards))
    report.built.sort()
    report.reused.sort()
    report.seconds = time.perf_counter() - start
    write_json(out / MANIFEST, _manifest(source, fmt, files, key, docs_per_shard, min_chars, shards, executor))
    return report


def _drop_stale(shards_dir: Path, count: int) -> None:
    """The shards an earlier, longer source left beyond the ``count`` built now."""
    for stale in sorted(shards_dir.glob("shard-*.parquet")):  # left by an earlier, longer source
        number = int(stale.stem.rsplit("-", 1)[1])
        if number >= count:
            stale.unlink()
            (shards_dir / f"{stale.stem}.done.json").unlink(missing_ok=True)


def _manifest(
    source: Path,
    fmt: str,
    files: list[Path],
    key: dict[str, Any],
    docs_per_shard: int,
    min_chars: int,
    shards: list[dict[str, Any]],
    executor: Any,
) -> dict[str, Any]:
    """The corpus's manifest: its source, settings, counts, shards and versions."""
    return {
        "kind": "dsr-corpus",
        "format": 1,
        "source": {
            "path": str(source.resolve()),
            "format": fmt,
            "sha256": key["source"],
            "files": [str(f.relative_to(source)) if source.is_dir() else f.name for f in files],
        },
        "params": {"docs_per_shard": docs_per_shard, "min_chars": min_chars},
        "counts": {
            "documents": sum(s["documents"] for s in shards),
            "sentences": sum(s["sentences"] for s in shards),
            "shards": len(shards),
        },
        "shards": [{k: s[k] for k in ("name", "documents", "sentences", "sha256")} for s in shards],
        "versions": package_versions(PACKAGES),
        "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "executor": executor.describe(),
        "id_scheme": "TITLE_DOC_SECTION_PASSAGE_SENTENCE",
    }


def _checked(docs: Iterator[Document], seen: set[str], source: Path) -> Iterator[Document]:
    for doc in docs:
        if doc.id in seen:
            raise InputError(f"duplicate document id {doc.id!r}", path=source, record=doc.title, field="id")
        seen.add(doc.id)
        yield doc
