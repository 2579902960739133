"""Which runs are compared, under which names, and which form tuned families.

``dsr evaluate`` and ``dsr.evaluate`` both go through here:

* :func:`run_names` — a short unique name per run file (the file name without
  ``.run``/``.trec``/``.txt``/``.tsv`` and ``.gz``; the parent folder when two
  files share a name; ``#2``, ``#3`` after that);
* :func:`parse_tune` — ``--tune GROUP=RUN,RUN,...`` and ``--tune auto``;
* :func:`auto_families` — ``--tune auto``: runs whose sidecars share ``family``
  (else ``ranker``, ``reranker`` or ``fusion``) form a family tuned per split;
  a group of one stays an untuned run;
* :func:`select_runs` — all of it for paths: every file read once (positional
  runs, then ``--tune`` members, then the baseline), checked against the
  collection, and the baseline resolved to a run or a family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsr.core.errors import InputError
from dsr.core.provenance import sha256_file
from dsr.core.run import Run, load_run
from dsr.core.run_checks import check_collection_hash

if TYPE_CHECKING:
    from dsr.core.data import Collection

#: sidecar keys that name a run's family, in order of precedence (``--tune auto``)
FAMILY_KEYS = ("family", "ranker", "reranker", "fusion")
RUN_SUFFIXES = (".run", ".trec", ".txt", ".tsv")


def run_names(paths: Sequence[str]) -> dict[str, str]:
    """path -> a short unique name, in the order given."""

    def stem(path: Path) -> str:
        if path.suffix == ".gz":
            path = path.with_suffix("")
        return path.stem if path.suffix in RUN_SUFFIXES else path.name

    names: dict[str, str] = {}
    used: set[str] = set()
    for raw in map(str, paths):
        if raw in names:
            continue
        path = Path(raw)
        name = stem(path)
        if name in used:
            name = f"{path.parent.name}/{name}" if path.parent.name else name
        base, k = name, 2
        while name in used:
            name, k = f"{base}#{k}", k + 1
        used.add(name)
        names[raw] = name
    return names


def parse_tune(items: Sequence[str]) -> tuple[bool, dict[str, list[str]]]:
    """``(auto, {group: [run, ...]})`` from ``--tune`` values (``GROUP=RUN,RUN,...`` or ``auto``)."""
    auto, groups = False, {}
    for item in items:
        if item.strip() == "auto":
            auto = True
            continue
        group, sep, members = item.partition("=")
        paths = [m.strip() for m in members.split(",") if m.strip()]
        if not sep or not group.strip() or not paths:
            raise InputError(f"expected GROUP=RUN,RUN,... or auto, got {item!r}", field="tune")
        if group.strip() in groups:
            raise InputError(f"group {group.strip()!r} given twice", field="tune")
        groups[group.strip()] = paths
    return auto, groups


def family_key(run: Run) -> str | None:
    """The family a run's sidecar names (``family``, else ``ranker``, ``reranker``, ``fusion``)."""
    config = run.config or {}
    return next((str(config[k]) for k in FAMILY_KEYS if isinstance(config.get(k), str) and config[k]), None)


def auto_families(runs: Mapping[str, Run], taken: Sequence[str] = ()) -> dict[str, dict[str, Run]]:
    """``--tune auto``: ``{family: {run name: Run}}`` for every family of two or more runs.

    A family named like a run or an entry of ``taken`` is called ``NAME (tuned)``."""
    keyed: dict[str, list[str]] = {}
    for name, run in runs.items():
        key = family_key(run)
        if key:
            keyed.setdefault(key, []).append(name)
    families: dict[str, dict[str, Run]] = {}
    for key, names in keyed.items():
        if len(names) < 2:
            continue
        family = key if key not in runs and key not in taken and key not in families else f"{key} (tuned)"
        families[family] = {n: runs[n] for n in names}
    return families


@dataclass
class Selection:
    """The runs and families to evaluate, their names and what the report records."""

    runs: dict[str, Run]
    families: dict[str, dict[str, Run]]
    info: dict[str, dict[str, Any]]
    baseline: str | None = None
    warnings: list[str] = field(default_factory=list)


def select_runs(
    paths: Sequence[str],
    tune: Sequence[str] = (),
    baseline: str | None = None,
    collection: Collection | None = None,
    allow_mismatch: bool = False,
    fmt: str = "auto",
    reader: Callable[[str], Run | None] | None = None,
) -> Selection:
    """Read the run files once each and group them (see the module docstring). ``fmt``: the
    run files' format (:func:`dsr.core.run.read_trec_run`: TREC, MS MARCO or detected);
    ``reader``: tried first on each path (None from it: the file is read by ``load_run``).

    ``baseline`` is a run (name or path) or a ``--tune`` group; a run that is a
    configuration of a tuned family cannot be the baseline (name the family).
    """
    auto, groups = parse_tune(tune)
    member_paths = [p for members in groups.values() for p in members]
    positional = list(dict.fromkeys(map(str, paths)))
    names = run_names(positional + member_paths)
    by_name = {n: p for p, n in names.items()}

    def resolve(ref: str) -> str:
        return ref if ref in names else by_name.get(ref, ref)

    baseline_path = None
    if baseline and baseline not in groups:
        baseline_path = resolve(baseline)
        if baseline_path not in names:
            names.update(run_names(list(names) + [baseline_path]))
            positional.append(baseline_path)
    if not positional and not groups:
        raise InputError("give at least one run (or a `tune` group GROUP=RUN,...)", field="paths")
    loaded, info, warnings = _load(names, collection, allow_mismatch, fmt, reader)
    families = {group: {names[resolve(p)]: loaded[resolve(p)] for p in members} for group, members in groups.items()}
    for group, members in groups.items():
        info[group] = {"members": [str(resolve(p)) for p in members]}
    runs = {names[p]: loaded[p] for p in positional}
    if auto:
        for family, grouped in auto_families(runs, [*families, *names.values()]).items():
            families[family] = grouped
            info[family] = {"members": [by_name[n] for n in grouped], "grouped_by": "sidecar family/ranker"}
    chosen = None
    if baseline:
        # baseline_path is None only for a --tune group, which is one of the families
        chosen = baseline if baseline in families or baseline_path is None else names[baseline_path]
        if (
            baseline_path is not None
            and chosen not in families
            and any(loaded[baseline_path] is r for f in families.values() for r in f.values())
        ):
            raise InputError(
                f"the baseline {baseline!r} is a configuration of a tuned family; name the family instead", field="baseline"
            )
    return Selection(runs, families, info, chosen, warnings)


def _load(
    names: Mapping[str, str],
    collection: Collection | None,
    allow_mismatch: bool,
    fmt: str = "auto",
    reader: Callable[[str], Run | None] | None = None,
) -> tuple[dict[str, Run], dict[str, dict[str, Any]], list[str]]:
    """Each path read once: ``{path: Run}``, ``{name: report info}`` and tie warnings."""
    loaded: dict[str, Run] = {}
    info: dict[str, dict[str, Any]] = {}
    warnings = []
    for path in names:
        run = reader(path) if reader is not None else None
        loaded[path] = run = run if run is not None else load_run(path, fmt)
        if collection is not None:
            check_collection_hash(run, path, collection, allow=allow_mismatch)
        tied = run.tied_topics()
        info[names[path]] = {
            "path": str(path),
            "sha256": getattr(run, "sha256", None) or sha256_file(path),  # a ColumnRun hashed it as it read
            "tag": run.tag,
            "config": run.config,
            "tied_topics": len(tied),
        }
        if tied:
            warnings.append(
                f"dsr: warning: {path}: {len(tied)} topic(s) hold scores that tie as 32-bit "
                f"floats (e.g. {tied[0]!r}); they are scored as trec_eval orders them, by "
                "doc id descending (dsr validate --fix-ties rewrites the run)"
            )
    return loaded, info, warnings
