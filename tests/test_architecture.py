"""docs/architecture.md's folder rules hold, for every import (top-level or inside a
function), so that ``ls`` of the packages tells what may import what:

1. ``dsr/`` is the application: it may import everything, and nothing imports it.
2. ``eval/`` is measurement: it never imports ``dsr``.
3. ``retrieval/``: a FILE is the core and imports only core files; a FOLDER is the
   domain and imports the core, ``indexes`` and other folders, never ``eval`` or ``dsr``.
4. ``indexes/`` imports only ``indexes`` and retrieval's core files.

and there is no import loop between units (a core file, a domain folder, ``indexes``,
``eval``, ``dsr``), nor between the modules of one unit.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("retrieval", "indexes", "eval", "dsr")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            found[name] = path
    return found


MODULES = modules()


def resolve(target: str) -> str:
    """The module an import names (``from retrieval.run import Run`` names retrieval.run;
    ``from retrieval import jsonio`` names retrieval.jsonio when that is a module)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names
                         if f"{node.module}.{alias.name}" in MODULES)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {resolve(m) for m in found if m.split(".")[0] in PACKAGES}


GRAPH = {name: imports(path) - {name} for name, path in MODULES.items()}


def is_core(module: str) -> bool:
    """A file directly in retrieval/ (or the package itself)."""
    parts = module.split(".")
    return parts[0] == "retrieval" and (len(parts) == 1 or (
        len(parts) == 2 and not (ROOT / "retrieval" / parts[1]).is_dir()))


def unit(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "retrieval" and not is_core(module):
        return ".".join(parts[:2])        # a domain folder
    if is_core(module):
        return module
    return parts[0]


def violations(rule) -> list[str]:
    return [f"{name} imports {target}" for name, targets in GRAPH.items()
            for target in sorted(targets) if not rule(name, target)]


def test_nothing_imports_the_application():
    assert not violations(lambda name, target: name.startswith("dsr") or not target.startswith("dsr"))


def test_eval_never_imports_the_application():
    assert not violations(lambda name, target: not (name.startswith("eval") and target.startswith("dsr")))


def test_core_files_import_only_core_files():
    assert not violations(lambda name, target: not is_core(name) or is_core(target))


def test_domain_folders_never_import_eval_or_the_application():
    def rule(name, target):
        if not name.startswith("retrieval") or is_core(name):
            return True
        return target.split(".")[0] in ("retrieval", "indexes")
    assert not violations(rule)


def test_indexes_import_only_the_core():
    assert not violations(lambda name, target: not name.startswith("indexes")
                          or target.startswith("indexes") or is_core(target))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_loop_between_units():
    units: dict[str, set[str]] = {}
    for name, targets in GRAPH.items():
        units.setdefault(unit(name), set()).update(unit(t) for t in targets if unit(t) != unit(name))
    assert not _cycles(units)


def test_no_loop_between_modules():
    assert not _cycles(GRAPH)


def test_the_rules_see_every_package():
    assert {"retrieval.collections", "retrieval.rankers", "retrieval.rerankers", "retrieval.open"} <= {
        unit(m) for m in MODULES}
    assert GRAPH["dsr.cli"], "the command line imports something"
