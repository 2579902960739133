"""The first words of every package's docstring, written from the layer list, never by hand.

``dsr/layers.toml`` declares the units of dsr by layer (lowest first) and what each package is.
Every ``dsr/**/__init__.py`` docstring opens with two paragraphs made from it: what the package
is, then which layer it stands on and what it may import. What follows them is the package's
own text, left as it is.

    python tools/package_docs.py           # exit 1 and the packages whose first words differ
    python tools/package_docs.py --write   # rewrite them

tests/test_package_docs.py fails when one differs (and tests/test_architecture.py checks every
import against the same list).
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools, a package, when run as a script

from tools.docs_lists import check_or_write  # noqa: E402

#: where the layers are declared
LAYERS_FILE = Path("dsr") / "layers.toml"
#: the width of the layer paragraph (docstrings in dsr wrap near 95 characters)
WIDTH = 95
QUOTES = '"""'


def declared(root: Path = ROOT) -> dict[str, Any]:
    """``dsr/layers.toml``: ``layers`` (lists of units, lowest first), ``core_only``, ``apart``
    (pairs of units that import nothing of each other), ``application`` and ``packages``
    (package -> what it is)."""
    return tomllib.loads((root / LAYERS_FILE).read_text(encoding="utf-8"))


def packages(root: Path = ROOT) -> dict[str, Path]:
    """Every package of dsr (dotted name -> its ``__init__.py``)."""
    return {".".join(path.relative_to(root).parent.parts): path for path in sorted((root / "dsr").rglob("__init__.py"))}


def unit_of(package: str) -> str:
    """The unit a package belongs to: the facade, or ``dsr.X`` (the core is one unit here)."""
    return ".".join(package.split(".")[:2])


def _listed(names: list[str]) -> str:
    quoted = [f"``{name}``" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def layer_paragraph(package: str, data: dict[str, Any]) -> str:
    """Which layer ``package`` stands on and what it may import, in words."""
    layers: list[list[str]] = data["layers"]
    unit = unit_of(package)
    level = next(i for i, names in enumerate(layers) if unit in names)
    where = f"layer {level + 1} of {len(layers)} ({LAYERS_FILE.as_posix()})"
    where = where[0].upper() + where[1:] if package == unit else f"Part of ``{unit}``, {where}"
    if level == 0:
        return (
            f"{where}, the lowest: every other unit may import it. Each file here is a unit of "
            "its own and imports only core files."
        )
    if level == len(layers) - 1:
        return f"{where}, the top: it may import every unit, and nothing imports it."
    if unit in data["core_only"]:
        return f"{where}: it imports only the core files, though its layer would allow more."
    apart = {name for pair in data.get("apart", []) if unit in pair for name in pair if name != unit}
    below = ["dsr.core files", *[name for names in layers[1:level] for name in names if name not in apart]]
    text = f"{where}: it may import {_listed(below)}".replace("``dsr.core files``", "the ``dsr.core`` files")
    peers = [name for name in layers[level] if name != unit]
    if peers:
        text += f", and {_listed(peers)} of its own layer where no loop forms"
    text += "."
    if apart:
        text += f" It imports nothing of {_listed(sorted(apart))}, though its layer would allow it."
    if unit in data["application"]:
        text += f" Only the application ({_listed(data['application'])}) imports it."
    return text


def _filled(text: str, indent: int = 0) -> str:
    """``text`` wrapped at :data:`WIDTH`, never inside a ``literal`` (its spaces are kept)."""
    kept = re.sub(r"``[^`]*``", lambda m: m.group(0).replace(" ", "\0"), text)
    return textwrap.fill(" " * indent + kept, WIDTH)[indent:].replace("\0", " ")


def head(package: str, data: dict[str, Any]) -> str:
    """The two paragraphs a package's docstring opens with."""
    what = data["packages"].get(package)
    if what is None:
        raise KeyError(f"{package} is not described in {LAYERS_FILE.as_posix()} [packages]")
    # the first line follows the opening quotes
    return _filled(what, indent=len(QUOTES)) + "\n\n" + _filled(layer_paragraph(package, data))


def _docstring_span(text: str) -> tuple[int, int] | None:
    """Offsets of the module docstring's text (inside its quotes), or None without one."""
    body = ast.parse(text).body
    if (
        not body
        or not isinstance(body[0], ast.Expr)
        or not isinstance(body[0].value, ast.Constant)
        or not isinstance(body[0].value.value, str)
    ):
        return None
    start = text.index(QUOTES) + len(QUOTES)
    return start, text.index(QUOTES, start)


def _split(docstring: str) -> tuple[str, str]:
    """(the opening paragraphs this tool writes, the package's own text after them)."""
    paragraphs = docstring.strip("\n").split("\n\n")
    opening = 2 if len(paragraphs) > 1 and paragraphs[1].startswith(("Layer ", "Part of ``")) else 1
    return "\n\n".join(paragraphs[:opening]), "\n\n".join(paragraphs[opening:])


def rewritten(text: str, package: str, data: dict[str, Any]) -> str:
    """``text`` (an ``__init__.py``) with its docstring opening with :func:`head`."""
    span = _docstring_span(text)
    if span is None:
        return f"{QUOTES}{head(package, data)}\n{QUOTES}\n" + ("\n" + text if text.strip() else "")
    start, end = span
    _, own = _split(text[start:end])
    docstring = head(package, data) + ("\n\n" + own.rstrip() if own.strip() else "") + "\n"
    return text[:start] + docstring + text[end:]


def stale(root: Path = ROOT) -> list[str]:
    """The packages whose docstring does not open with what the layer list gives."""
    data = declared(root)
    return [
        name
        for name, path in packages(root).items()
        if rewritten(path.read_text(encoding="utf-8"), name, data) != path.read_text(encoding="utf-8")
    ]


def main(argv: list[str] | None = None) -> int:
    data = declared()
    return check_or_write(
        argv,
        __doc__,
        stale,
        "every package docstring opens with what dsr/layers.toml gives",
        lambda: [(path, functools.partial(rewritten, package=name, data=data)) for name, path in packages().items()],
    )


if __name__ == "__main__":
    sys.exit(main())
