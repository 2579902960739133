"""The layers of dsr/layers.toml (drawn in docs/architecture.md) hold, for every import
(top-level or inside a function), so that ``ls dsr/`` tells what may import what.

Everything is one package, ``dsr``, made of units (its sub-packages, and the files at its
top). Each unit has a layer (``LAYERS``, lowest first); a module may import its own unit
and units of lower layers, and units of one layer only where no loop forms. Inside the
core (``dsr/core/``) every file is its own unit. There is no import loop anywhere: not
between units, nor between two modules.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dsr",)

#: the units of ``dsr`` by layer, lowest first, declared once in dsr/layers.toml (which also
#: writes each package docstring's first words: tools/package_docs.py; docs/architecture.md
#: draws the same)
DECLARED = tomllib.loads((ROOT / "dsr" / "layers.toml").read_text(encoding="utf-8"))
LAYERS = tuple(tuple(names) for names in DECLARED["layers"])
LAYER = {name: level for level, names in enumerate(LAYERS) for name in names}

#: web frameworks and what serves pages: only the web applications import them
WEB = {"fastapi", "starlette", "uvicorn", "jinja2", "itsdangerous", "multipart", "slowapi"}
WEB_UNITS = {"dsr.web", "dsr.board", "dsr.judging", "dsr.server"}


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
    ``from dsr.core import jsonio`` names dsr.core.jsonio when that is a module)."""
    while target not in MODULES and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def _imported(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            submodules = [n for n in names if n in MODULES]
            found.update(submodules)
            if len(submodules) < len(names):  # an object of the package itself
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def imports(path: Path) -> set[str]:
    return {resolve(m) for m in _imported(path) if m.split(".")[0] in PACKAGES}


GRAPH = {name: imports(path) - {name} for name, path in MODULES.items()}


def is_core(module: str) -> bool:
    return module == "dsr.core" or module.startswith("dsr.core.")


def unit(module: str) -> str:
    """A core file, or ``dsr.X`` (a sub-package or a file at the top), or the facade."""
    if is_core(module):
        return module
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def layer(module: str) -> int:
    return LAYER["dsr.core" if is_core(module) else unit(module)]


def violations(rule) -> list[str]:
    return [f"{name} imports {target}" for name, targets in GRAPH.items() for target in sorted(targets) if not rule(name, target)]


def test_every_unit_has_a_layer():
    missing = sorted({unit(m) for m in MODULES if not is_core(m) and unit(m) not in LAYER})
    assert not missing, f"add these to dsr/layers.toml and docs/architecture.md: {missing}"


def test_no_unit_imports_a_higher_layer():
    assert not violations(lambda name, target: layer(target) <= layer(name))


def test_nothing_imports_the_application():
    app = DECLARED["application"]
    assert not violations(lambda name, target: unit(target) not in app or unit(name) in app)


def test_core_files_import_only_core_files():
    assert not violations(lambda name, target: not is_core(name) or is_core(target))


def test_the_board_and_judging_are_separate_units():
    """The board and judging import nothing of each other (``apart`` in dsr/layers.toml): both
    stand on the database layer ``dsr.db`` (engines, sessions, the base, tokens, the refusal
    type) and the web core; ``dsr serve`` adds judging's routers, ``dsr.migrations`` reads
    both applications' tables."""
    pairs = [set(pair) for pair in DECLARED["apart"]]
    assert {"dsr.board", "dsr.judging"} in pairs
    assert not violations(lambda name, target: {unit(name), unit(target)} not in pairs)


def test_both_applications_stand_on_the_database_layer_which_imports_neither():
    users = {unit(name) for name, targets in GRAPH.items() for t in targets if unit(t) == "dsr.db"}
    assert {"dsr.board", "dsr.judging"} <= users and "dsr.db" in DECLARED["core_only"]


def test_both_web_applications_stand_on_the_web_core_which_imports_neither():
    """Sign-in, sessions, CSRF, the layout and the security headers are written once, in
    ``dsr.web``: the board and judging import it, and it imports only core files."""
    users = {unit(name) for name, targets in GRAPH.items() for t in targets if unit(t) == "dsr.web"}
    assert {"dsr.board", "dsr.judging"} <= users and "dsr.web" in DECLARED["core_only"]
    assert not violations(
        lambda name, target: unit(name) not in DECLARED["core_only"] or unit(target) == unit(name) or is_core(target)
    )


def test_only_the_web_applications_import_a_web_framework():
    found = [
        f"{name} imports {m}"
        for name, path in MODULES.items()
        if unit(name) not in WEB_UNITS
        for m in sorted(_imported(path))
        if m.split(".")[0] in WEB
    ]
    assert not found, found


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
    assert {
        "dsr.collections",
        "dsr.rankers",
        "dsr.rerankers",
        "dsr.open_retrieval",
        "dsr.evaluation",
        "dsr.board",
        "dsr.judging",
        "dsr.indexes",
    } <= {unit(m) for m in MODULES}
    assert GRAPH["dsr.cli"], "the command line imports something"


# --- size and import rules -----------------------------------------------------------------

#: third-party libraries too heavy for ``dsr --help`` (each costs tens to hundreds of ms, or
#: more): imported on first use, in one place per module, or at the top of a module that is
#: itself only imported on first use
HEAVY = {
    "torch",
    "sentence_transformers",
    "transformers",
    "faiss",
    "pandas",
    "matplotlib",
    "pyarrow",
    "ray",
    "openvino",
    "nncf",
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "psycopg",
    "jinja2",
    "httpx",
    "scipy",
    "datasets",
    "accelerate",
    "bm25s",
    "rank_bm25",
    "ir_measures",
    "pytrec_eval",
    "ir_datasets",
    "yaml",
    "mwparserfromhell",
    "huggingface_hub",
    "safetensors",
    "tokenizers",
    "ranx",
    "numba",
}

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
    long = [
        f"{name}.{fn.name} ({fn.end_lineno - fn.lineno + 1} lines)"
        for name, path in MODULES.items()
        if not _in_flight(name)
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8")))
        if fn.end_lineno - fn.lineno + 1 > LONGEST
    ]
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

    code = (
        "import sys; from dsr.cli import build_parser; build_parser(); "
        f"print(sorted(m for m in {sorted(HEAVY)!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
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
                    targets = {resolve(node.module)} | {resolve(f"{node.module}.{a.name}") for a in node.names}
                elif isinstance(node, ast.Import):
                    targets = {resolve(a.name) for a in node.names}
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] in PACKAGES and target != name and not heavy_at_import(target):
                        inner.append(f"{name}:{node.lineno} imports {target}")
    assert not inner, inner


def test_the_standard_library_is_imported_at_the_top():
    """A standard-library module costs nothing to import (the interpreter has most of them
    loaded already), so importing one inside a function only hides what a module uses."""
    import sys

    inner = [
        f"{name}:{node.lineno} imports {m}"
        for name, path in MODULES.items()
        if not _in_flight(name)
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8")))
        for node in ast.walk(fn)
        for m in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else []
        )
        if m.split(".")[0] in sys.stdlib_module_names
    ]
    assert not inner, inner


def test_each_heavy_library_is_imported_in_one_place_per_module():
    several = []
    for name, path in MODULES.items():
        if _in_flight(name):
            continue
        places: dict[str, set[str]] = {}
        for fn in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            for node in ast.walk(fn):
                libraries = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.module
                    else []
                )
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
                    if keyword.arg == "func" and isinstance(keyword.value, ast.Name) and not keyword.value.id.startswith("cmd_"):
                        odd.append(f"{name}: {keyword.value.id}")
    assert not odd, odd
