"""Whether a run belongs to a collection: the collection hash its sidecar records, every topic
and sentence known, several runs of one collection.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run, sidecar_path
from dsr.core.textfiles import read_lines


def recorded_collection_hash(config: Mapping[str, Any]) -> str | None:
    """The collection hash a run's sidecar records (``collection.hash`` or ``collection_hash``)."""
    collection = config.get("collection")
    recorded = collection.get("hash") if isinstance(collection, dict) else None
    if isinstance(recorded, str) and recorded:
        return recorded
    value = config.get("collection_hash")
    return value if isinstance(value, str) and value else None


def check_collection_hash(run: Run, path: str | Path, collection: Collection, allow: bool = False) -> str | None:
    """The one policy for a run whose sidecar names another collection: an InputError
    (exit 2) naming the run file and both hashes, unless ``allow``
    (``--allow-collection-mismatch``), which returns the message as a warning
    (and prints it on stderr). None when the hashes agree or none is recorded."""
    recorded = recorded_collection_hash(run.config)
    if recorded is None or recorded == collection.content_hash:
        return None
    named = run.config.get("collection", {}).get("name") if isinstance(run.config.get("collection"), dict) else None
    message = (
        f"{path} was made for collection {named!r} (hash {recorded}), not {collection.name!r} (hash {collection.content_hash})"
    )
    if not allow:
        raise InputError(
            f"{message}: rank this collection again, or pass `allow_mismatch` to use it anyway",
            path=sidecar_path(path),
            field="collection.hash",
        )
    print(f"dsr: warning: {message} (--allow-collection-mismatch)", file=sys.stderr)
    return message


def check_run(run: Run, path: str | Path, collection: Collection, allow_mismatch: bool = False) -> None:
    """InputError unless ``run`` (read from ``path``) belongs to ``collection``.

    The sidecar's collection hash, when there is one, must be the
    collection's (:func:`check_collection_hash`; ``allow_mismatch``
    makes it a warning); every topic must be one of its dialogues and every
    sentence a candidate of it (or of its sentence pool, for open retrieval).
    The error names the sidecar field or the run file's line.
    """

    check_collection_hash(run, path, collection, allow=allow_mismatch)
    missing_topic = next((q for q in run.rankings if q not in collection), None)
    candidates = {}
    missing_doc = None
    for qid, ranked in run.rankings.items():
        if qid not in collection:
            continue
        candidates[qid] = set(collection.candidate_ids(qid))
        if any(doc not in candidates[qid] for doc, _ in ranked):
            missing_doc = qid
            break
    if missing_topic is None and missing_doc is None:
        return
    pool = collection.sentences() if missing_doc is not None else {}
    # Find the first offending line of the file, so the user can go to it.
    for lineno, line in enumerate(read_lines(path), start=1):
        parts = line.split()
        if len(parts) < 6 or line.startswith("#"):  # "#": an ir_metadata header
            continue
        qid, doc = parts[0], parts[2]
        if qid not in collection:
            raise InputError(
                f"topic {qid!r} is not a dialogue of collection {collection.name!r}: is this a run of another collection?",
                path=path,
                line=lineno,
                field="qid",
            )
        if doc not in candidates.get(qid, ()) and doc not in pool:
            raise InputError(
                f"sentence {doc!r} is not a candidate of dialogue {qid!r} nor in "
                f"collection {collection.name!r}: is this a run of another collection?",
                path=path,
                line=lineno,
                field="docid",
            )


def check_same_collection(paths: list[str], runs: list[Run], allow: bool = False) -> None:
    """Without a collection: the sidecars that name a collection hash must agree
    (``allow``: a warning instead)."""
    first = None
    for path, run in zip(paths, runs):
        recorded = run.config.get("collection")
        if not (isinstance(recorded, dict) and recorded.get("hash")):
            continue
        if first is None:
            first = (path, recorded)
        elif recorded["hash"] != first[1]["hash"]:
            message = (
                f"{path} was made for collection {recorded.get('name')!r} (hash {recorded['hash']}) "
                f"but {first[0]} for {first[1].get('name')!r} (hash {first[1]['hash']})"
            )
            if allow:
                print(f"dsr: warning: {message} (--allow-collection-mismatch)", file=sys.stderr)
                continue
            raise InputError(
                f"{message}: fuse runs of one collection (or pass `allow_mismatch`)",
                path=sidecar_path(path),
                field="collection.hash",
            )
