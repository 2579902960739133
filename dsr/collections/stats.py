"""What is in a collection, and which sources are registered: the numbers behind
``dsr stats`` and ``dsr collections`` (also for the Python API)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from dsr.collections import REGISTERED, source_module
from dsr.collections.fetch import default_dest, is_available, sources
from dsr.core import registry
from dsr.core.data import Collection, Dialogue
from dsr.core.text import tokenize


def collections_info() -> list[dict[str, Any]]:
    """One dict per registered source: what it is, its licence, its cache and availability."""
    fetchable = sources()
    rows = []
    for name in REGISTERED:
        row: dict[str, Any] = {"name": name, "provider": registry.owner("collection", name)}
        try:
            info = source_module(name).SOURCE
        except ModuleNotFoundError as err:
            if err.name != f"dsr.collections.{name}":
                raise
            info = None
        if info is not None:
            row.update(
                description=info.description,
                licence=info.licence,
                repository=info.repository,
                commit=info.commit,
                splits=list(info.splits),
                has_candidates=info.has_candidates,
            )
        else:
            row.update(description="(module not installed)", licence="", repository="", commit="", splits=[], has_candidates=None)
        module = source_module(name) if info is not None else None
        if module is not None and hasattr(module, "is_available"):  # read from a folder, not fetched
            row.update(fetchable=False, cache=str(module.default_folder()), available=module.is_available())
        elif name in fetchable:
            folder = default_dest(name)
            row.update(fetchable=True, cache=str(folder), available=info is not None and is_available(name, folder))
        else:
            bundled = "bundled with the package" if row["provider"] == registry.DSR else f"provided by {row['provider']}"
            row.update(fetchable=False, cache=bundled, available=info is not None)
        rows.append(row)
    return rows


def collection_stats(collection: Collection) -> dict[str, Any]:
    """Per subset and overall ("all"): counts, per-dialogue mean/min/max, labels, token lengths."""
    out = {
        "collection": collection.name,
        "hash": collection.content_hash,
        "subsets": {name: _group_stats(collection.subset(name)) for name in collection.subsets},
        "all": _group_stats(collection.dialogues),
    }
    if collection.splits is not None:
        out["splits"] = {
            "count": len(collection.splits),
            "val": _summary([len(v) for v, _ in collection.splits]),
            "test": _summary([len(t) for _, t in collection.splits]),
        }
    return out


def _group_stats(dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    labels: dict[str, int] = {}
    for d in dialogues:
        for c in d.candidates:
            labels[str(c.label)] = labels.get(str(c.label), 0) + 1
    return {
        "dialogues": len(dialogues),
        "candidates_per_dialogue": _summary([len(d.candidates) for d in dialogues]),
        "relevant_per_dialogue": _summary([len(d.relevant) for d in dialogues]),
        "labels": dict(sorted(labels.items(), key=lambda kv: int(kv[0]))),
        "context_turns": _summary([len(d.context) for d in dialogues]),
        "tokens": {
            "context_turn": _summary([len(tokenize(t.body)) for d in dialogues for t in d.context]),
            "target": _summary([len(tokenize(d.target.body)) for d in dialogues if d.target is not None]),
            "candidate": _summary([len(tokenize(c.body)) for d in dialogues for c in d.candidates]),
        },
    }


def _summary(values: list[int]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "min": None, "max": None}
    return {"n": len(values), "mean": round(statistics.fmean(values), 2), "min": min(values), "max": max(values)}
