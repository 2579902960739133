"""docs/architecture.md's layers hold: every import (top-level or inside a function)
points down or sideways, never up, and nothing imports the command line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: layer -> module-name prefixes (the longest match wins); lower layers first
LAYERS = {
    "core": ("retrieval.errors", "retrieval.atomic", "retrieval.jsonio", "retrieval.textfiles",
             "retrieval.text", "retrieval.home", "retrieval.provenance", "retrieval.params",
             "retrieval.data", "retrieval.run", "retrieval.splits", "retrieval.ir_metadata",
             "retrieval.stage", "retrieval.models", "retrieval"),
    "indexes": ("indexes",),
    "domain": ("retrieval.collections", "retrieval.queries", "retrieval.fetch", "retrieval.rankers",
               "retrieval.rerankers", "retrieval.pool", "retrieval.search"),
    "eval": ("eval",),
    "orchestration": ("retrieval.training", "retrieval.reproduce", "retrieval.kfold"),
    "api": ("dsr",),
    "cli": ("retrieval.cli",),
}
ORDER = list(LAYERS)


def layer_of(module: str) -> str:
    best = max(((prefix, layer) for layer, prefixes in LAYERS.items() for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), key=lambda pl: len(pl[0]))
    return best[1]


def modules():
    for package in ("retrieval", "indexes", "eval", "dsr"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            yield name, path


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.split(".")[0] in ("retrieval", "indexes", "eval", "dsr")}


def test_every_module_has_a_layer():
    """A new module of retrieval/ is placed on purpose (here and in docs/architecture.md)."""
    named = {prefix for prefixes in LAYERS.values() for prefix in prefixes}
    loose = sorted({".".join(name.split(".")[:2]) for name, _ in modules()
                    if name.startswith("retrieval.")} - named)
    assert not loose, f"classify these modules in docs/architecture.md and LAYERS: {loose}"


def test_imports_point_down_or_sideways():
    upward = []
    for name, path in modules():
        here = ORDER.index(layer_of(name))
        for target in imports(path):
            if ORDER.index(layer_of(target)) > here:
                upward.append(f"{name} ({layer_of(name)}) imports {target} ({layer_of(target)})")
    assert not upward, "\n".join(upward)


def test_nothing_outside_the_cli_imports_it():
    users = [name for name, path in modules() if not name.startswith("retrieval.cli")
             and any(t == "retrieval.cli" or t.startswith("retrieval.cli.") for t in imports(path))]
    assert not users
