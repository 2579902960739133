"""Registered collections, one module per source, and ``load_collection``.

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.rankers``, ``dsr.rerankers`` and ``dsr.open_retrieval`` of its own layer where no loop
forms.

A source is a part of the registry (:mod:`dsr.core.registry`, kind ``collection``): one
of dsr's modules here, or another package's module or object registered through the entry
points ``dsr.collections`` (docs/plugins.md). It defines ``SOURCE`` (a ``SourceInfo``,
whose ``name`` is its key), ``PARAMS`` and
``load(source: Path | None, split: str | None) -> Collection``; a source whose raw files
need converting also defines ``build(source: Path, split: str | None, **params) ->
Collection``. What else it offers, it carries itself: ``DOCUMENTS`` (the documents its
sentences come from: :class:`dsr.collections.documents.Documents`), ``manifest_copies``
(its manifest's file map, for ``tools/make_manifests.py``), ``is_available`` and
``default_folder`` (a source read from a folder rather than fetched), ``DATA`` (the source
whose files it reads). Every command that takes a COLLECTION accepts a registered name or a
path to a benchmark file (JSON Lines in the SIGIR 2022 schema).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsr.core import registry
from dsr.core.data import Collection, read_benchmark
from dsr.core.errors import InputError

#: the reference collection, listed first wherever collections are listed
REFERENCE = "sigir2022"

# dsr's own sources, the reference first, each module imported on first use
for _name in (REFERENCE, "ccpe", "cmu_dog", "cmu_dog_dev", "cmu_dog_judged", "redial", "sample"):
    registry.register("collection", _name, f"dsr.collections.{_name}")

#: the registered names: dsr's own, then other packages' (read when used)
REGISTERED = registry.Names("collection")


@dataclass(frozen=True)
class SourceInfo:
    """What a user needs to know about a source: where it comes from and on what terms."""

    name: str
    description: str
    licence: str
    repository: str = ""
    commit: str = ""
    splits: tuple[str, ...] = ()
    default_split: str | None = None
    has_candidates: bool = True
    notes: tuple[str, ...] = field(default_factory=tuple)

    def split_or_default(self, split: str | None) -> str:
        """``split``, else the source's default split (an InputError when it has none)."""
        chosen = split or self.default_split
        if chosen is None:
            raise InputError(f"{self.name} has no default split; give one of {', '.join(self.splits)}", field="split")
        return chosen


def source_module(name: str) -> Any:
    """The source registered as ``name``: a module of this folder, or another package's part."""
    if name not in REGISTERED:
        raise InputError(
            f"unknown collection {name!r}; registered: {', '.join(REGISTERED)} (or pass a path to a benchmark .jsonl file)"
        )
    return registry.get("collection", name)


def load_collection(spec: str | Path, source: str | Path | None = None, split: str | None = None) -> Collection:
    """A registered name (``sigir2022``, ``cmu_dog``...) or a path to a benchmark file."""
    spec_str = str(spec)
    if spec_str in REGISTERED:
        module = source_module(spec_str)
        loaded: Collection = module.load(Path(source) if source else None, split)
        return loaded
    path = Path(spec_str)
    if path.exists() or path.suffix in (".jsonl", ".json"):
        return read_benchmark(path)
    raise InputError(f"unknown collection {spec_str!r}: not a registered name ({', '.join(REGISTERED)}) and no such file")
