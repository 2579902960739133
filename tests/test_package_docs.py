"""Every package's docstring opens with what it is, which layer it stands on and what it may
import, written from dsr/layers.toml by ``tools/package_docs.py --write``: this test fails when
one differs (a new package, a moved layer, a description edited by hand), when a docstring names
a module that does not exist, and when docs/architecture.md draws the layers in another order."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from tools import package_docs

ROOT = Path(__file__).resolve().parents[1]

DATA = package_docs.declared()
PACKAGES = package_docs.packages()


def test_every_package_docstring_opens_with_what_the_layer_list_gives():
    assert not package_docs.stale(), "run: python tools/package_docs.py --write"


def test_every_package_is_described_and_every_description_is_of_a_package():
    assert set(DATA["packages"]) == set(PACKAGES)


def test_the_layer_paragraph_says_what_the_architecture_test_enforces():
    judging = package_docs.layer_paragraph("dsr.judging", DATA)
    assert judging.startswith("Layer 9 of 15") and "``dsr.db``" in judging and "``dsr.server``" not in judging
    assert "imports nothing of ``dsr.board``" in judging and "may import ``dsr.board``" not in judging
    assert "``dsr.board``" not in judging.split(" It imports nothing")[0]
    assert "imports only the core files" in package_docs.layer_paragraph("dsr.web", DATA)
    assert "imports only the core files" in package_docs.layer_paragraph("dsr.db", DATA)
    rankers = package_docs.layer_paragraph("dsr.rankers", DATA)
    assert "``dsr.collections``, ``dsr.rerankers`` and ``dsr.open_retrieval`` of its own layer" in rankers
    assert package_docs.layer_paragraph("dsr.board.routes", DATA).startswith("Part of ``dsr.board``, layer 8")
    assert "Only the application" in package_docs.layer_paragraph("dsr.cli", DATA)
    assert "nothing imports it" in package_docs.layer_paragraph("dsr", DATA)


def test_a_docstring_written_by_hand_is_caught_and_rewritten(tmp_path):
    (tmp_path / "dsr" / "web").mkdir(parents=True)
    shutil.copy(ROOT / "dsr" / "layers.toml", tmp_path / "dsr" / "layers.toml")
    stale_text = (
        '"""``import dsr``: the API.\n\nThe code lives in three packages, ``retrieval``, ``indexes``'
        ' and ``eval``.\n"""\n\nfrom __future__ import annotations\n'
    )
    (tmp_path / "dsr" / "__init__.py").write_text(stale_text)
    (tmp_path / "dsr" / "web" / "__init__.py").write_text("")
    assert package_docs.stale(tmp_path) == ["dsr", "dsr.web"]
    data = package_docs.declared(tmp_path)
    fixed = package_docs.rewritten(stale_text, "dsr", data)
    docstring = ast.get_docstring(ast.parse(fixed))
    assert docstring.startswith("``import dsr``: the Python API in one place")
    assert "Layer 15 of 15" in docstring and docstring.endswith("``indexes`` and ``eval``.")  # its own text kept
    assert fixed.endswith('"""\n\nfrom __future__ import annotations\n')
    assert package_docs.rewritten(fixed, "dsr", data) == fixed
    (tmp_path / "dsr" / "__init__.py").write_text(fixed)
    (tmp_path / "dsr" / "web" / "__init__.py").write_text(package_docs.rewritten("", "dsr.web", data))
    assert package_docs.stale(tmp_path) == []
    with pytest.raises(KeyError):
        package_docs.head("dsr.nowhere", data)


def _module(dotted: str) -> Path | None:
    path = ROOT.joinpath(*dotted.split("."))
    return (
        path / "__init__.py"
        if (path / "__init__.py").exists()
        else path.with_suffix(".py")
        if path.with_suffix(".py").exists()
        else None
    )


def _top_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            names.update(e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets)
        ):
            names.update(k.value for k in node.value.keys if isinstance(k, ast.Constant))  # the facade's
    return names


def _missing(package: str, docstring: str) -> list[str]:
    missing = []
    for dotted in re.findall(r"\bdsr(?:\.[A-Za-z_]\w*)+", docstring):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            found = _module(".".join(parts[:cut]))
            if found is not None:
                rest = parts[cut:]
                if rest and rest[0] not in _top_names(found):
                    missing.append(dotted)
                break
    # a module list: "* ``name`` — ..." or a table row "``name``   ...": a module of this package
    for name in re.findall(r"^(?:\* )?``([a-z_]+)``(?: —|\s{2,})", docstring, re.M):
        if _module(f"{package}.{name}") is None:
            missing.append(f"{package}.{name}")
    missing += [p for p in re.findall(r"``(dsr/[\w/]+\.py)``", docstring) if not (ROOT / p).exists()]
    return missing


def test_package_docstrings_name_only_modules_that_exist():
    missing = {
        name: _missing(name, ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "")
        for name, path in PACKAGES.items()
    }
    assert not {name: found for name, found in missing.items() if found}


def test_a_module_that_does_not_exist_is_caught():
    assert _missing("dsr.board", "* ``store`` — run files\n* ``archive`` — run files") == ["dsr.board.store"]
    assert _missing("dsr", "see :mod:`dsr.evaluation.nowhere` and :func:`dsr.core.run.load_run`") == ["dsr.evaluation.nowhere"]
    assert _missing("dsr", "``dsr/cli/nowhere.py``") == ["dsr/cli/nowhere.py"]


def test_docs_architecture_draws_the_layers_in_order():
    """The drawing lists the units top-down: the highest layer first, the core last."""
    drawing = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("```")[1]
    drawn = []
    for line in drawing.splitlines():
        names = re.findall(
            r"(?:^|[─\s])([a-z_]+)(?:/|\.py)(?=\s)",
            line.split("  ")[0] if "─" not in line else line.split("─", 1)[1].split("   ")[0] + " ",
        )
        if line.startswith("dsr/"):
            drawn.append({"dsr"})
        elif names:
            drawn.append({f"dsr.{n}" for n in names})
    assert drawn == [set(names) for names in reversed(DATA["layers"])]
