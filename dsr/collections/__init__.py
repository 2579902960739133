"""Registered collections, one module per source, and ``load_collection``.

Layer 3 of 15 (dsr/layers.toml): it may import the ``dsr.core`` files and ``dsr.indexes``, and
``dsr.rankers``, ``dsr.rerankers`` and ``dsr.open_retrieval`` of its own layer where no loop
forms.

Each source module defines ``SOURCE`` (a ``SourceInfo``) and
``load(source: Path | None, split: str | None) -> Collection``; a module
whose raw files need converting also defines
``build(source: Path, split: str | None, **params) -> Collection``.
Every command that takes a COLLECTION accepts a registered name or a path to
a benchmark file (JSON Lines in the SIGIR 2022 schema).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from dsr.core.data import Collection, read_benchmark
from dsr.core.errors import InputError

#: the reference collection, listed first wherever collections are listed
REFERENCE = "sigir2022"


def _discover() -> tuple[str, ...]:
    """Every module of this folder that declares ``SOURCE = SourceInfo(...)`` at its top.

    Read, not imported, so that listing the names (``dsr --help``) loads no source module:
    adding a collection is one module here (and its test), with no list to edit."""
    found = [
        path.stem
        for path in Path(__file__).parent.glob("*.py")
        if re.search(r"^SOURCE = SourceInfo\(", path.read_text(encoding="utf-8"), re.M)
    ]
    return tuple(sorted(found, key=lambda name: (name != REFERENCE, name)))


REGISTERED = _discover()


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


def source_module(name: str) -> ModuleType:
    if name not in REGISTERED:
        raise InputError(
            f"unknown collection {name!r}; registered: {', '.join(REGISTERED)} (or pass a path to a benchmark .jsonl file)"
        )
    return importlib.import_module(f"dsr.collections.{name}")


def load_collection(spec: str | Path, source: str | Path | None = None, split: str | None = None) -> Collection:
    """A registered name (``sigir2022``, ``cmu_dog``...) or a path to a benchmark file."""
    spec_str = str(spec)
    if spec_str in REGISTERED:
        module = source_module(spec_str)
        return module.load(Path(source) if source else None, split)
    path = Path(spec_str)
    if path.exists() or path.suffix in (".jsonl", ".json"):
        return read_benchmark(path)
    raise InputError(f"unknown collection {spec_str!r}: not a registered name ({', '.join(REGISTERED)}) and no such file")
