"""docs/architecture.md's folder rules hold, for every import (top-level or inside a
function), so that ``ls`` of the packages tells what may import what:

1. ``dsr/`` is the application: it may import everything, and nothing imports it.
2. ``dsr/evaluation/`` is measurement: it never imports ``dsr``.
3. ``dsr/core/``: a FILE is the core and imports only core files; a FOLDER is the
   domain and imports the core, ``indexes`` and other folders, never ``eval`` or ``dsr``.
4. ``dsr/indexes/`` imports only ``indexes`` and retrieval's core files.

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
    """The module an import names (``from dsr.core.run import Run`` names dsr.core.run;
    ``from retrieval import jsonio`` names dsr.core.jsonio when that is a module)."""
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
    """A file directly in dsr/core/ (or the package itself)."""
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
    assert {"dsr.collections", "dsr.rankers", "dsr.rerankers", "dsr.open_retrieval"} <= {
        unit(m) for m in MODULES}
    assert GRAPH["dsr.cli"], "the command line imports something"


# --- size and import rules -----------------------------------------------------------------

#: third-party libraries too heavy for ``dsr --help`` (each costs tens to hundreds of ms, or
#: more): imported on first use, in one place per module, or at the top of a module that is
#: itself only imported on first use
HEAVY = {"torch", "sentence_transformers", "transformers", "faiss", "pandas", "matplotlib",
         "pyarrow", "ray", "openvino", "nncf", "fastapi", "starlette", "uvicorn", "sqlalchemy",
         "alembic", "psycopg", "jinja2", "httpx", "scipy", "datasets", "accelerate", "bm25s",
         "rank_bm25", "ir_measures", "pytrec_eval", "ir_datasets", "yaml", "mwparserfromhell",
         "huggingface_hub", "safetensors", "tokenizers"}

IN_FLIGHT = ()
#: the facade re-exports lazily by design (``import dsr`` loads nothing)
LAZY_BY_DESIGN = ("dsr",)

LONGEST = 100


def _in_flight(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in IN_FLIGHT)


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def test_no_function_is_over_a_hundred_lines():
    long = [f"{name}.{fn.name} ({fn.end_lineno - fn.lineno + 1} lines)"
            for name, path in MODULES.items() if not _in_flight(name)
            for fn in _functions(ast.parse(path.read_text(encoding="utf-8")))
            if fn.end_lineno - fn.lineno + 1 > LONGEST]
    assert not long, "split these (docs/architecture.md): " + ", ".join(long)


def _top_level_imports(path: Path) -> set[str]:
    """Every module a file imports at its top level (not inside a function, nor under
    ``if TYPE_CHECKING``)."""
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


TOP = {name: _top_level_imports(path) for name, path in MODULES.items()}


def heavy_at_import(module: str, seen: frozenset = frozenset()) -> set[str]:
    """The heavy libraries importing ``module`` loads (through the top-level imports of the
    project's modules it imports)."""
    out = {m.split(".")[0] for m in TOP[module] if m.split(".")[0] in HEAVY}
    for target in {resolve(m) for m in TOP[module] if m.split(".")[0] in PACKAGES}:
        if target != module and target not in seen:
            out |= heavy_at_import(target, seen | {module})
    return out


def test_the_command_line_loads_no_heavy_library():
    """``dsr --help`` stays fast: building the whole parser imports none of HEAVY."""
    import subprocess
    import sys

    code = ("import sys; from dsr.cli import build_parser; build_parser(); "
            f"print(sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert out.strip() == "[]"
    assert not heavy_at_import("dsr.cli")


def test_project_modules_are_imported_at_the_top():
    """An import of the project's own module inside a function is only for a module that
    loads a heavy library: everything else is imported at the top, where a reader sees it."""
    inner = []
    for name, path in MODULES.items():
        if _in_flight(name) or name in LAZY_BY_DESIGN:
            continue
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    targets = {resolve(node.module)} | {resolve(f"{node.module}.{a.name}")
                                                        for a in node.names}
                elif isinstance(node, ast.Import):
                    targets = {resolve(a.name) for a in node.names}
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] in PACKAGES and target != name and not heavy_at_import(target):
                        inner.append(f"{name}:{node.lineno} imports {target}")
    assert not inner, inner


def test_each_heavy_library_is_imported_in_one_place_per_module():
    several = []
    for name, path in MODULES.items():
        if _in_flight(name):
            continue
        places: dict[str, set[str]] = {}
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            for node in ast.walk(fn):
                libraries = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                             [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                for library in libraries:
                    if library.split(".")[0] in HEAVY:
                        places.setdefault(library.split(".")[0], set()).add(fn.name)
        several += [f"{name}: {lib} in {sorted(fns)}" for lib, fns in places.items() if len(fns) > 1]
    assert not several, several


def test_command_handlers_are_named_cmd():
    """Every handler a command registers (``set_defaults(func=...)``) is ``cmd_<name>``."""
    odd = []
    for name, path in MODULES.items():
        if not name.startswith("dsr.cli.") or _in_flight(name):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "set_defaults":
                for keyword in node.keywords:
                    if keyword.arg == "func" and isinstance(keyword.value, ast.Name) \
                            and not keyword.value.id.startswith("cmd_"):
                        odd.append(f"{name}: {keyword.value.id}")
    assert not odd, odd
