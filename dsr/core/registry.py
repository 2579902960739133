"""One registry of dsr's named parts, open to other packages.

Rankers, rerankers, collections, measures, fusion methods, query strategies, training
recipes and export formats are each a *kind* (:data:`KINDS`); a part of a kind is
registered under its own name, from three places:

* **dsr's own**: each kind's ``home`` module registers dsr's parts when it is imported
  (``register("ranker", "bm25", "dsr.rankers.bm25:BM25Ranker")``); a ``"module:attr"`` (or
  ``"module"``) reference is imported on first use, so listing names loads no model library;
* **installed distributions**: the entry points of the kind's group (``dsr.rankers``,
  ``dsr.collections``, ...; :attr:`Kind.group`), read once per process with
  :mod:`importlib.metadata` when a kind is first listed or looked up, each loaded on first
  use (docs/plugins.md);
* **a call**: ``dsr.register("ranker", "mine", MyRanker)`` from a script or a notebook.

The key is the part's own name (:func:`own_name`: a stage's ``name``, a collection's
``SOURCE.name``, a format's ``NAME``, a fusion kernel's function name): it is checked when
the part is loaded, so a registry key and a class's ``name`` cannot drift apart. A name two
owners claim (two distributions, or a distribution and dsr) is an error naming both.

What reads it: the command line's ``choices`` and ``--help``, ``dsr collections``, the
docs' lists (``tools/docs_lists.py``), :mod:`dsr.testing` and dsr's contract tests.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, overload

from dsr.core.errors import InputError

#: the owner of dsr's own parts
DSR = "dsr"


@dataclass(frozen=True)
class Kind:
    """A kind of part: its entry-point group, the module that registers dsr's own, what a part is."""

    name: str
    #: the entry-point group other distributions register it in
    group: str
    #: the module whose import registers dsr's own parts of the kind
    home: str
    #: what a part of the kind is (for the plug-in guide and messages)
    what: str


KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("ranker", "dsr.rankers", "dsr.rankers", "a Ranker subclass (name, PARAMS, rank(collection) -> Run)"),
        Kind("reranker", "dsr.rerankers", "dsr.rerankers", "a Reranker subclass (name, PARAMS, rerank(collection, run, top_k))"),
        Kind("collection", "dsr.collections", "dsr.collections", "a source: SOURCE (a SourceInfo), PARAMS, load(source, split)"),
        Kind("measure", "dsr.measures", "dsr.evaluation.registry", "a Family: an ir_measures family as dsr reports it"),
        Kind("fusion", "dsr.fusion", "dsr.core.fusion", "a function (runs, **params) -> {topic: {doc: score}}"),
        Kind("query", "dsr.queries", "dsr.core.queries", "a Strategy: the pieces of a dialogue a query holds"),
        Kind("recipe", "dsr.recipes", "dsr.training.settings", "a Recipe: named dsr train settings"),
        Kind("format", "dsr.formats", "dsr.interchange", "a module with NAME and write(view, folder) -> files"),
    )
}


class RegistryError(InputError):
    """A name claimed twice, a part whose own name differs from its key, a plug-in that does not load."""


_UNSET: Any = object()


@dataclass
class Entry:
    """One registered part: the object, or where to import it from, and who registered it."""

    kind: str
    name: str
    #: the object, a ``"module:attr"`` / ``"module"`` reference, or an entry point
    target: Any
    #: ``dsr``, a distribution (``NAME VERSION``), or the module that called :func:`register`
    owner: str
    _loaded: Any = field(default=_UNSET, repr=False, compare=False)

    @property
    def reference(self) -> str:
        """Where the part comes from, ``module:attr``."""
        target = self.target
        if isinstance(target, str):
            return target
        if isinstance(target, metadata.EntryPoint):
            return str(target.value)
        module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
        if inspect.ismodule(target):
            return target.__name__
        return f"{module}:{qualname}" if module and qualname else f"{type(target).__name__} object {id(target):#x}"

    def load(self) -> Any:
        """The part, imported on first use and checked to carry its key as its own name."""
        if self._loaded is _UNSET:
            obj = self._import()
            check_name(self.kind, self.name, obj, self.owner)
            self._loaded = obj
        return self._loaded

    def _import(self) -> Any:
        target = self.target
        try:
            if isinstance(target, metadata.EntryPoint):
                return target.load()
            if isinstance(target, str):
                module, _, attr = target.partition(":")
                obj: Any = importlib.import_module(module)
                for part in filter(None, attr.split(".")):
                    obj = getattr(obj, part)
                return obj
            return target
        except Exception as err:
            if self.owner == DSR:
                raise  # dsr's own: a bug or a missing optional dependency, reported as it is
            raise RegistryError(
                f"{self.kind} {self.name!r} of {self.owner} ({self.reference}) does not load: {type(err).__name__}: {err}",
                field=self.kind,
            ) from None


def own_name(obj: Any) -> str | None:
    """The name a part carries: a collection's ``SOURCE.name``, else its ``name`` (a stage, a
    measure family, a strategy, a recipe, a ranx method), its ``NAME`` (a format module), or a
    function's own name (a fusion kernel)."""
    source_name = getattr(getattr(obj, "SOURCE", None), "name", None)
    if isinstance(source_name, str):
        return source_name
    for attribute in ("name", "NAME"):
        value = getattr(obj, attribute, None)
        if isinstance(value, str):
            return value
    if inspect.isfunction(obj):
        return obj.__name__
    return None


def check_name(kind: str, name: str, obj: Any, owner: str = DSR) -> None:
    """RegistryError unless ``obj`` carries ``name`` as its own name (:func:`own_name`)."""
    own = own_name(obj)
    if own != name:
        raise RegistryError(
            f"{owner} registers {kind} {name!r}, but the part's own name is {own!r} "
            "(its name, SOURCE.name or NAME): the key must be the part's own name",
            field="name",
        )


class _State:
    """What is registered: by calls (dsr's own and users'), and by installed distributions."""

    def __init__(self) -> None:
        self.called: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self.plugins: dict[str, dict[str, Entry]] | None = None
        self.conflicts: dict[str, list[str]] = {kind: [] for kind in KINDS}
        self.homes: set[str] = set()


_STATE = _State()


def _kind(kind: str) -> Kind:
    if kind not in KINDS:
        raise InputError(f"unknown kind of part {kind!r}; choose from {', '.join(KINDS)}", field="kind")
    return KINDS[kind]


def _owner_of(obj: Any) -> str:
    module = obj.partition(":")[0] if isinstance(obj, str) else getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    top = str(module).split(".")[0]
    return DSR if top == DSR else str(module) or "the caller"


def _claimed_twice(kind: str, held: Entry, new: Entry) -> str:
    return (
        f"{kind} {new.name!r} is claimed twice: by {held.owner} ({held.reference}) and by {new.owner} "
        f"({new.reference}); uninstall one of them or rename one part"
    )


def register(kind: str, name: str, obj: Any, *, owner: str | None = None) -> None:
    """Register ``obj`` as the part ``name`` of ``kind`` (one of :data:`KINDS`).

    ``obj`` is the part itself (checked now to carry ``name`` as its own name) or a
    ``"module:attr"`` / ``"module"`` reference imported on first use (checked then).
    Registering the same part again is nothing; another part under a name already taken is
    a :class:`RegistryError` naming both owners."""
    _kind(kind)
    if not isinstance(name, str) or not name or name != name.strip():
        raise InputError(f"a part's name is a non-empty word, got {name!r}", field="name")
    entry = Entry(kind, name, obj, owner or _owner_of(obj))
    if not isinstance(obj, str):
        check_name(kind, name, obj, entry.owner)
    held = _STATE.called[kind].get(name) or (_STATE.plugins or {}).get(kind, {}).get(name)
    if held is not None:
        if held.reference == entry.reference:
            return
        raise RegistryError(_claimed_twice(kind, held, entry), field="name")
    _STATE.called[kind][name] = entry


def refresh() -> None:
    """Read the installed distributions' entry points again on next use (after installing one
    in a running process, or putting one on ``sys.path``)."""
    _STATE.plugins = None
    _STATE.conflicts = {kind: [] for kind in KINDS}


def _distribution(point: metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else f"the distribution of {point.value}"


def _read_plugins() -> dict[str, dict[str, Entry]]:
    """Every kind's entry points, read once: one pass over the installed distributions."""
    if _STATE.plugins is not None:
        return _STATE.plugins
    found: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
    points = metadata.entry_points()
    for kind, spec in KINDS.items():
        for point in sorted(points.select(group=spec.group), key=lambda p: (p.name, p.value)):
            entry = Entry(kind, point.name, point, _distribution(point))
            held = found[kind].get(point.name)
            if held is not None and held.reference != entry.reference:
                _STATE.conflicts[kind].append(_claimed_twice(kind, held, entry))
            found[kind].setdefault(point.name, entry)
    _STATE.plugins = found
    return found


def _home(kind: str) -> None:
    home = _kind(kind).home
    if home not in _STATE.homes:
        _STATE.homes.add(home)
        try:
            importlib.import_module(home)
        except BaseException:
            _STATE.homes.discard(home)
            raise


def entries(kind: str) -> dict[str, Entry]:
    """Every part of ``kind`` by name, unloaded: dsr's own in the order registered, then the
    others by name. A name claimed twice is a :class:`RegistryError` naming both."""
    _home(kind)
    plugins = _read_plugins()[kind]
    called = _STATE.called[kind]
    problems = list(_STATE.conflicts[kind])
    problems += [
        _claimed_twice(kind, called[n], e) for n, e in plugins.items() if n in called and called[n].reference != e.reference
    ]
    if problems:
        raise RegistryError("; ".join(problems), field=kind)
    own = {n: e for n, e in called.items() if e.owner == DSR}
    others = {**{n: e for n, e in called.items() if e.owner != DSR}, **{n: e for n, e in plugins.items() if n not in called}}
    return {**own, **dict(sorted(others.items()))}


def names(kind: str) -> tuple[str, ...]:
    """The names of ``kind``'s parts (nothing is imported but dsr's own declarations)."""
    return tuple(entries(kind))


def owner(kind: str, name: str) -> str:
    """Who registered the part: ``dsr``, a distribution ``NAME VERSION``, or a module."""
    return _entry(kind, name).owner


def _entry(kind: str, name: str) -> Entry:
    found = entries(kind)
    if name not in found:
        raise InputError(f"unknown {kind} {name!r}; choose from {', '.join(found)}", field=kind)
    return found[name]


def get(kind: str, name: str) -> Any:
    """The part ``name`` of ``kind``, loaded (InputError naming ``kind`` and the names for an
    unknown one)."""
    return _entry(kind, name).load()


def find(kind: str, name: str) -> Any | None:
    """The part, or None when ``kind`` has no part of that name."""
    entry = entries(kind).get(name) if isinstance(name, str) else None
    return None if entry is None else entry.load()


def items(kind: str) -> list[tuple[str, Any]]:
    """Every part of ``kind``, loaded, with its name."""
    return [(name, entry.load()) for name, entry in entries(kind).items()]


class Names(Sequence[str]):
    """The names of a kind, read each time it is used, so that a module can hold one from its
    import on (``choices=Names("query")``) and still see the parts registered later. ``extra``:
    names accepted beside the parts' (``recommended`` of the recipes)."""

    def __init__(self, kind: str, extra: Sequence[str] = ()) -> None:
        self.kind = _kind(kind).name
        self.extra = tuple(extra)

    def _all(self) -> tuple[str, ...]:
        return (*names(self.kind), *self.extra)

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._all()[index]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self.extra or name in entries(self.kind))

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:
        return (*self._all(), *other)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash((self.kind, self.extra))

    def __repr__(self) -> str:
        return f"Names({self.kind!r})"


class Parts(Mapping[str, Any]):
    """A kind's parts as a mapping, name -> part, each loaded when looked up."""

    def __init__(self, kind: str) -> None:
        self.kind = _kind(kind).name

    def __getitem__(self, name: str) -> Any:
        found = find(self.kind, name)
        if found is None:
            raise KeyError(name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(names(self.kind))

    def __len__(self) -> int:
        return len(names(self.kind))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in entries(self.kind)

    def lookup(self, name: str) -> Any:
        """The part ``name`` (InputError naming the kind and the names for an unknown one)."""
        return get(self.kind, name)

    def __repr__(self) -> str:
        return f"Parts({self.kind!r})"
