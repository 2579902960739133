"""The one line under a table made on a fast backend: how far its figures may be from the exact one's.

The exact backend is torch fp32 (:data:`dsr.indexes.backends.EXACT`), the default of
every ranker, reranker and ``dsr reproduce``: its scores do not depend on the CPU's
instruction set (what OpenVINO's bf16 and int8 do). A table, report or run sidecar made
with ``openvino``, ``openvino-bf16`` or ``openvino-int8`` carries :func:`note`, e.g.

    openvino-int8: figures differ from the exact backend (torch) by up to 0.0251 nDCG@5 on this
    collection (at most 1 ▲/▼ mark of the table flipped there, 13 over every measure; the largest
    of 3 kinds of CPU measured: AMD EPYC (VNNI) 2026-11-27, Intel Xeon (no VNNI/AMX) 2026-11-28,
    Intel Xeon (AMX) 2026-12-01); marks may differ

The figures are measured, not promised: ``bench/backend_deltas.py --write`` runs the
baseline suite on each backend and on torch and stores, per collection and backend,
the largest difference of a cell of the printed table and the marks that flipped, with
the date and the CPU, in ``data/backend_deltas.json`` beside this module; each kind of CPU
measured keeps its figures, and the note quotes the largest of each (:func:`merge_measurement`). A collection
with no measurement (or another build of one: its content hash differs) gets a note
that says so and gives the largest figure measured elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from dsr.core import docs_url
from dsr.indexes.backends import INT8_UNITS

#: the backend whose figures every note is measured against
EXACT = "torch"
#: the ``backend`` parameter's help (dense ranker, rerankers): what a user reads when choosing
BACKEND_HELP = (
    "inference backend (torch, the default: exact, the same figures on every CPU; openvino, "
    "openvino-bf16, openvino-int8: faster on CPUs, figures differ by amounts measured per "
    f"collection, see {docs_url('models')}; auto: openvino-int8 where the CPU has VNNI or AMX, else torch)"
)


@lru_cache(maxsize=1)
def measured() -> dict[str, Any]:
    """``data/backend_deltas.json``: ``{"exact": ..., "collections": {name: {hash, backends: {...}}}}``."""
    path = resources.files("dsr.indexes").joinpath("data", "backend_deltas.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"collections": {}}


def note(collection: Mapping[str, Any], backend: str | None, models: Iterable[str] = ()) -> str | None:
    """The line for a table of ``collection`` (its ``describe()``: name and hash) made on
    ``backend``; None on the exact backend. ``models``: the weights' sha256 of the models
    that ran on ``backend`` for the table (unknown: say nothing of them)."""
    if not backend or backend == EXACT or backend == "auto":
        return None
    entries = measured().get("collections", {})
    entry = entries.get(str(collection.get("name")), {})
    row = entry.get("backends", {}).get(backend)
    head = f"{backend}: figures differ from the exact backend ({EXACT}) by"
    if row and entry.get("hash") == collection.get("hash"):
        measured_model = entry.get("model") or {}
        others = sorted({m for m in models if m} - {measured_model.get("weights_sha256")})
        if others and measured_model:
            return (
                f"{head} an amount not measured for this table's model{'s' if len(others) > 1 else ''} (weights "
                f"{', '.join(m[:12] for m in others)}); with {measured_model.get('name')} up to "
                f"{row['max_delta']:.4f} {row['measure']} on this collection (measured {row['date']} on "
                f"{row['cpu']}); marks may differ"
            )
        # every figure the largest over the kinds of CPU measured (merge_measurement)
        kinds = row.get("by_cpu") or [row]
        flips = max(k["marks_flipped"] for k in kinds)
        every = max(k.get("marks_flipped_any_measure", k["marks_flipped"]) for k in kinds)
        if len(kinds) > 1:
            most, where = (
                "at most ",
                f"the largest of {len(kinds)} kinds of CPU measured: " + ", ".join(f"{cpu_kind(k)} {k['date']}" for k in kinds),
            )
        else:
            most, where = "", f"measured {row['date']} on {row['cpu']}"
        return (
            f"{head} up to {row['max_delta']:.4f} {row['measure']} on this collection ({most}{flips} ▲/▼ "
            f"mark{'s' if flips != 1 else ''} of the table flipped there, {every} over every measure; {where}); "
            "marks may differ"
        )
    elsewhere = [
        (r["max_delta"], r["measure"], name)
        for name, e in entries.items()
        for b, r in e.get("backends", {}).items()
        if b == backend
    ]
    what = "this build of the collection" if row else "this collection"
    if not elsewhere:
        return f"{head} an amount not measured on {what} nor on any other; marks may differ"
    worst = max(elsewhere)
    return (
        f"{head} an amount not measured on {what} (up to {worst[0]:.4f} {worst[1]} on {worst[2]}, the "
        f"largest of {len(elsewhere)} measured); marks may differ"
    )


def cpu_kind(row: Mapping[str, Any]) -> str:
    """A measured CPU as a note names it: its name and what its int8 kernels run on (int8's
    figures followed the units on the three kinds measured: AMX and VNNI gave the same, likely
    as both sum int8 products exactly; a CPU with neither takes other kernels), e.g.
    ``Intel Xeon (AMX)``, ``AMD EPYC (VNNI)``, ``Intel Xeon (no VNNI/AMX)``."""
    units = set(row.get("units") or ())
    tag = "AMX" if "amx_int8" in units else "VNNI" if units & set(INT8_UNITS) else "no VNNI/AMX"
    return f"{row.get('cpu')} ({tag})"


def merge_measurement(kept: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """One (collection, backend) row of ``data/backend_deltas.json`` after a measurement ``new``
    (one CPU's figures: ``cpu``, ``units``, ``date``, ``max_delta``, marks ...) joins the row
    ``kept`` (None: none yet). The figures of every kind of CPU measured stay in ``by_cpu``
    (a kind is its name and its units; a kind measured again is replaced), and the row itself
    is the figures of the kind with the largest difference (then the most marks flipped), which
    the note quotes: int8's kernels differ from one instruction set to another, and a note
    must not promise the smaller figure of the CPU it happened to be measured on."""

    def kind(row: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
        return str(row.get("cpu")), tuple(row.get("units") or ())

    def plain(row: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in row.items() if k != "by_cpu"}

    earlier = [] if kept is None else [plain(r) for r in kept.get("by_cpu", [kept])]
    rows = [r for r in earlier if kind(r) != kind(new)] + [plain(new)]
    rows.sort(key=kind)
    worst = max(rows, key=lambda r: (r["max_delta"], r["marks_flipped"], r.get("marks_flipped_any_measure", 0), r["date"]))
    return {**worst, "by_cpu": rows} if len(rows) > 1 else dict(worst)


def backends_in(config: Any, depth: int = 6) -> list[str]:
    """The backends a run's config (or sidecar, or a system's description in a report) names:
    every ``params.backend`` in it, also in nested parts (a reranked run's first stage, a
    tuned family's members), in the order met."""
    return [backend for backend, _ in models_in(config, depth)]


def models_in(config: Any, depth: int = 6) -> list[tuple[str, str | None]]:
    """``(backend, weights sha256)`` of every part of a run's config that names a
    ``params.backend`` (the model beside it, ``model.weights_sha256``, or None), nested parts
    too, in the order met."""
    found: list[tuple[str, str | None]] = []
    if depth and isinstance(config, Mapping):
        params = config.get("params")
        if isinstance(params, Mapping) and isinstance(params.get("backend"), str):
            model = config.get("model")
            weights = model.get("weights_sha256") if isinstance(model, Mapping) else None
            found.append((params["backend"], weights if isinstance(weights, str) else None))
        for value in config.values():
            found += models_in(value, depth - 1)
    elif depth and isinstance(config, list | tuple):
        for value in config:
            found += models_in(value, depth - 1)
    return found


def sidecar_part(collection: Mapping[str, Any], config: Any) -> dict[str, str]:
    """``{"exactness": line}`` for a run sidecar whose ``config`` names a fast backend, else {}."""
    lines = notes(collection, [config])
    return {"exactness": " / ".join(lines)} if lines else {}


def notes(collection: Mapping[str, Any], configs: Iterable[Any]) -> list[str]:
    """One :func:`note` per fast backend that ``configs`` (runs' configs, systems' descriptions)
    name, in the order first met, with the models that ran on it."""
    models: dict[str, set[str]] = {}
    for backend, weights in (found for config in configs for found in models_in(config)):
        models.setdefault(backend, set()).update([weights] if weights else [])
    return [line for line in (note(collection, b, m) for b, m in models.items()) if line]
