"""Move the project's modules under the one import name ``dsr`` (issue 33), or rewrite a
user's scripts from the old import names (``eval``, ``retrieval``, ``indexes``) to the new ones.

    python tools/relayout.py --tree .            # the repository itself (git mv + rewrite)
    python tools/relayout.py my_script.py ...    # a user's files: imports and dotted names only

The map below is the whole move: a module keeps its name unless a line says otherwise, so
``retrieval.run`` is ``dsr.core.run`` and ``eval.board.service`` is ``dsr.board.service``.
Only dotted names whose first part is an old package and whose path exists in the map are
rewritten, so prose such as "sentence retrieval" is left alone.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# old dotted prefix -> new dotted prefix; the longest matching prefix wins
PACKAGES = {
    "retrieval": "dsr.core",
    "retrieval.collections": "dsr.collections",
    "retrieval.rankers": "dsr.rankers",
    "retrieval.rerankers": "dsr.rerankers",
    "retrieval.open": "dsr.open_retrieval",
    "indexes": "dsr.indexes",
    "indexes.corpus.store": "dsr.indexes.corpus.layout",
    "eval": "dsr.evaluation",
    "eval.agreement": "dsr.evaluation.ordering_agreement",
    "eval.interchange": "dsr.interchange",
    "eval.board": "dsr.board",
    "eval.board.store": "dsr.board.archive",
    "eval.board.judging_routes": "dsr.judging.routes",
    "eval.board.judging_models": "dsr.judging.models",
    "eval.judging": "dsr.judging",
    "eval.judging.store": "dsr.judging.campaigns",
    "eval.judging.agreement": "dsr.judging.assessor_agreement",
    "eval.judging.report": "dsr.judging.campaign_report",
}

# test folders follow the packages they test
TEST_DIRS = {
    "tests/retrieval/collections": "tests/collections",
    "tests/retrieval/rankers": "tests/rankers",
    "tests/retrieval/rerankers": "tests/rerankers",
    "tests/retrieval": "tests/core",
    "tests/eval/board": "tests/board",
    "tests/eval/judging": "tests/judging",
    "tests/eval/interchange": "tests/interchange",
    "tests/eval": "tests/evaluation",
    "tests/dsr/cli": "tests/cli",
    "tests/dsr/training": "tests/training",
    "tests/dsr": "tests",
    "tests/indexes": "tests/indexes",
}

# files that leave their package's folder: judging's pages and assets go with judging
EXTRA_MOVES = {
    "dsr/board/templates/judge_*.html": "dsr/judging/templates",
    "dsr/board/static/judge.*": "dsr/judging/static",
}
# after the move, in every text file: judging's assets are served under /judge/static/
REPLACE = {
    'dsr_home.glob("dsr/indexes/': 'dsr_home.glob("indexes/',  # the cache's folder, not the package
    '__import__("retrieval").__version__': '__import__("dsr").__version__',
    "/static/judge.": "/judge/static/judge.",
    "(``/judge/static/judge.js``, the only": "(``/judge/static/judge.js``, the only",
}

TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".cfg",
    ".ini",
    ".sh",
    ".yaml",
    ".yml",
    ".html",
    ".mako",
    ".txt",
    ".json",
    ".js",
    ".css",
    "",
}
SKIP_PARTS = {".git", ".venv", "__pycache__", "node_modules", "out", ".pytest_cache", ".ruff_cache"}

DOTTED = re.compile(r"(?<![\w.])(eval|retrieval|indexes)\b((?:\.[A-Za-z_]\w*)*)")
SLASHED = re.compile(r"(?<![\w./-])(eval|retrieval|indexes)\b((?:/[A-Za-z_][\w]*)*)(/|\.py\b)?")
# a path built from quoted parts: ROOT / "retrieval" / "collections" / "data"
QUOTED_PATH = re.compile(r'(?<=ROOT / )"(eval|retrieval|indexes)"((?:\s*/\s*"[\w.-]+")*)')
FROM_IMPORT = re.compile(r"^(\s*)from (eval|retrieval|indexes)((?:\.\w+)*) import ([^()\n#]+?)(\s*#.*)?$", re.M)


def new_module(old: str) -> str:
    """The new dotted name of an old module or object path."""
    parts = old.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in PACKAGES:
            return ".".join([PACKAGES[head], *parts[cut:]])
    return old


def known(old: str, modules: set[str]) -> bool:
    """Whether ``old`` names a real old module (or an object inside one)."""
    parts = old.split(".")
    return any(".".join(parts[:cut]) in modules for cut in range(len(parts), 0, -1))


def _rewrite_from(match: re.Match, modules: set[str]) -> str:
    indent, top, rest, names, comment = match.groups()
    package = top + rest
    groups: dict[str, list[str]] = {}
    for item in (n.strip() for n in names.split(",") if n.strip()):
        name, _, alias = item.partition(" as ")
        target = new_module(f"{package}.{name.strip()}")
        parent, _, leaf = target.rpartition(".")
        if leaf != name.strip() and not alias:
            alias = name.strip()
        groups.setdefault(parent, []).append(leaf + (f" as {alias.strip()}" if alias else ""))
    lines = [f"{indent}from {parent} import {', '.join(items)}" for parent, items in groups.items()]
    lines[-1] += comment or ""
    return "\n".join(lines)


def rewrite_text(text: str, modules: set[str], *, paths: bool = True) -> str:
    """Imports, dotted names and (for the repository) file paths, old to new."""
    text = FROM_IMPORT.sub(lambda m: _rewrite_from(m, modules), text)

    def dotted(m: re.Match) -> str:
        old = m.group(1) + m.group(2)
        if not m.group(2) and not _is_import_context(m):
            return old
        return new_module(old) if known(old, modules) else old

    def _is_import_context(m: re.Match) -> bool:
        line_start = text.rfind("\n", 0, m.start()) + 1
        before = text[line_start : m.start()]
        return bool(re.fullmatch(r"\s*(import|from)\s+", before)) or before.rstrip().endswith("import")

    text = DOTTED.sub(dotted, text)
    if paths:
        text = QUOTED_PATH.sub(lambda m: _quoted_path(m, modules), text)
        text = SLASHED.sub(lambda m: _path(m, modules), text)
        for old_dir, new_dir in TEST_DIRS.items():
            if old_dir != new_dir:
                text = re.sub(rf"(?<![\w/]){re.escape(old_dir)}(?=/)", new_dir, text)
                old_mod, new_mod = old_dir.replace("/", "."), new_dir.replace("/", ".")
                text = re.sub(rf"(?<![\w.]){re.escape(old_mod)}(?=\.)", new_mod, text)
    return text


def _quoted_path(m: re.Match, modules: set[str]) -> str:
    parts = [m.group(1), *re.findall(r'"([\w.-]+)"', m.group(2) or "")]
    if len(parts) < 2:
        return m.group(0)
    folders = [p for p in parts if "." not in p]
    old = ".".join(folders)
    if not known(old, modules) and old not in PACKAGES:
        return m.group(0)
    new = new_module(old).split(".") + parts[len(folders) :]
    return " / ".join(f'"{p}"' for p in new)


def _path(m: re.Match, modules: set[str]) -> str:
    top, rest, tail = m.group(1), m.group(2) or "", m.group(3) or ""
    if not rest and tail != "/":
        return m.group(0)
    old = (top + rest).replace("/", ".")
    if not known(old, modules) and old not in PACKAGES:
        return m.group(0)
    new = new_module(old).replace(".", "/")
    return new + tail


def moves(root: Path) -> list[tuple[Path, Path]]:
    """(old, new) file paths, relative to root, for every tracked file that moves."""
    out = []
    for path in tracked(root):
        rel = path.as_posix()
        if rel.split("/")[0] in {"eval", "retrieval", "indexes"}:
            parts = rel.split("/")
            if parts[-1].endswith(".py"):
                module = ".".join(parts)[:-3]
                if module.endswith(".__init__"):
                    new = new_module(module[: -len(".__init__")]).replace(".", "/") + "/__init__.py"
                else:
                    new = new_module(module).replace(".", "/") + ".py"
            else:
                folder = ".".join(parts[:-1])
                new = new_module(folder).replace(".", "/") + "/" + parts[-1]
            out.append((path, Path(new)))
        elif rel.startswith("tests/"):
            for old_dir, new_dir in TEST_DIRS.items():
                if rel.startswith(old_dir + "/"):
                    if old_dir != new_dir:
                        out.append((path, Path(new_dir + rel[len(old_dir) :])))
                    break
    return out


def tracked(root: Path) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    return [Path(p) for p in listed if p and (root / p).is_file()]


def old_modules(root: Path) -> set[str]:
    found = set()
    for path in tracked(root):
        parts = path.as_posix().split("/")
        if parts[0] in {"eval", "retrieval", "indexes"} and parts[-1].endswith(".py"):
            module = ".".join(parts)[:-3]
            found.add(module[: -len(".__init__")] if module.endswith(".__init__") else module)
    return found


def adjust_parents(text: str, delta: int) -> str:
    """``Path(__file__).resolve().parents[k]`` of a test that moved up or down."""

    def fix(m: re.Match) -> str:
        k = int(m.group(2)) + delta
        return f"{m.group(1)}parents[{k}]" if k >= 0 else m.group(0)

    return re.sub(r"(__file__\)(?:\.resolve\(\))?\.)parents\[(\d)\]", fix, text)


def relayout(root: Path) -> None:
    modules = old_modules(root)
    planned = moves(root)
    for old, new in planned:
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", "-k", str(old), str(new)], cwd=root, check=True)
        if (root / old).exists():  # untracked: a plain move
            (root / old).rename(root / new)
        if old.suffix == ".py":
            delta = len(new.parts) - len(old.parts)
            if delta:
                (root / new).write_text(adjust_parents((root / new).read_text(), delta))
    for pattern, dest in EXTRA_MOVES.items():
        for old in sorted(root.glob(pattern)):
            (root / dest).mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "mv", "-k", str(old), str(root / dest / old.name)], cwd=root, check=True)
            if old.exists():
                old.rename(root / dest / old.name)
    for path in tracked(root):
        if path.suffix not in TEXT_SUFFIXES or any(p in SKIP_PARTS for p in path.parts):
            continue
        if path.as_posix() == "tools/relayout.py":
            continue
        full = root / path
        try:
            text = full.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite_text(text, modules)
        for before, after in REPLACE.items():
            new = new.replace(before, after)
        if new != text:
            full.write_text(new)
    for top in ("eval", "retrieval", "indexes", "tests/retrieval", "tests/eval", "tests/dsr"):
        for folder in sorted((root / top).rglob("*"), reverse=True) if (root / top).exists() else []:
            if folder.is_dir() and folder.name == "__pycache__":
                subprocess.run(["rm", "-rf", str(folder)], check=True)
        for folder in sorted((root / top).rglob("*"), reverse=True) if (root / top).exists() else []:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        if (root / top).exists() and not any((root / top).iterdir()):
            (root / top).rmdir()


def fix_pyproject(root: Path) -> None:
    """One top-level name in the wheel."""
    path = root / "pyproject.toml"
    text = re.sub(r"include = \[[^\]]*\]", 'include = ["dsr*"]', path.read_text(), count=1)
    text = text.replace(
        '"dsr.judging" = ["guidelines.yaml"]',
        '"dsr.judging" = ["guidelines.yaml", "templates/*.html", "static/*.css", "static/*.js"]',
    )
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, help="a user's files to rewrite in place")
    parser.add_argument("--tree", type=Path, help="move a checkout of the repository itself")
    args = parser.parse_args(argv)
    if args.tree:
        relayout(args.tree.resolve())
        fix_pyproject(args.tree.resolve())
        return 0
    modules = {m for m in _all_old_modules()}
    for path in args.files:
        text = path.read_text()
        new = rewrite_text(text, modules, paths=False)
        if new != text:
            path.write_text(new)
            print(f"rewrote {path}")
    return 0


def _all_old_modules() -> set[str]:
    """Every old module the map knows (for users' files, where no old tree is at hand)."""
    return set(PACKAGES) | {p.rsplit(".", 1)[0] for p in PACKAGES}


if __name__ == "__main__":
    sys.exit(main())
