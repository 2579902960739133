"""Plug-in distributions made in a test: a package and its ``NAME-VERSION.dist-info`` (METADATA
and entry_points.txt, as pip writes them) in a folder that goes on ``sys.path`` or a
subprocess's ``PYTHONPATH``; and the files docs/plugins.md shows, as written there."""

from __future__ import annotations

import configparser
import io
import re
import shutil
import tomllib
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugins.md"
#: a fenced block that names its file: ```python title="dsr-team-chats/team_chats/ranker.py"
TITLED = re.compile(r'```[a-z]+ title="([^"]+)"\n(.*?)```', re.S)


def make_distribution(
    site: Path, name: str, version: str, entry_points: Mapping[str, Mapping[str, str]], files: Mapping[str, str] = {}
) -> Path:
    """Write ``files`` (path under ``site`` -> text) and the distribution's metadata into
    ``site``; the dist-info folder."""
    for relative, text in files.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # entry-point names keep their case
    for group, points in entry_points.items():
        parser[group] = dict(points)
    text = io.StringIO()
    parser.write(text)
    (info / "entry_points.txt").write_text(text.getvalue(), encoding="utf-8")
    return info


def guide_files(into: Path) -> dict[str, Path]:
    """Every file docs/plugins.md shows (a block with a ``title``), written under ``into``."""
    written = {}
    for relative, text in TITLED.findall(GUIDE.read_text(encoding="utf-8")):
        path = into / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written[relative] = path
    return written


def install_guide_distribution(source: Path, site: Path) -> str:
    """The guide's project folder ``source`` installed into ``site`` as pip would: its packages
    copied, its entry points (``[project.entry-points]`` of its pyproject.toml) in its dist-info.
    Returns ``NAME VERSION``."""
    project = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for package in (p for p in source.iterdir() if (p / "__init__.py").is_file()):
        shutil.copytree(package, site / package.name)
    make_distribution(site, project["name"], project["version"], project["entry-points"])
    return f"{project['name']} {project['version']}"
