"""The documentation site: mkdocs with mkdocs-material, built offline with ``--strict`` (a broken
link, a missing anchor, a page outside the nav or an API entry that names nothing fails it),
pages by concept, the command reference written from the parsers and the API reference from the
docstrings (mkdocstrings). ``make docs`` builds it, ``make docs-serve`` serves it on loopback."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools import docs_commands

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "mkdocs.yml"


def config() -> dict:
    return yaml.safe_load(CONFIG.read_text(encoding="utf-8"))


def nav_pages(nav) -> list[str]:
    found = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        found += nav_pages(value) if isinstance(value, list) else [value]
    return found


def test_the_command_reference_is_what_the_parsers_print():
    assert not docs_commands.stale(), "run: python tools/docs_commands.py --write"
    page = docs_commands.PAGE.read_text(encoding="utf-8")
    assert "### `dsr board add-phase`" in page and "### `dsr trec_eval`" in page


def test_the_api_reference_names_every_name_of_the_facade():
    from dsr import _EXPORTS

    page = (ROOT / "docs" / "reference" / "api.md").read_text(encoding="utf-8")
    for name in [*_EXPORTS, "evaluate", "fuse"]:
        assert f"`dsr.{name}`" in page or f"::: dsr.{name}\n" in page, name


def test_the_nav_is_by_concept_and_holds_every_page():
    cfg = config()
    sections = [next(iter(item)) for item in cfg["nav"]]
    for concept in (
        "Getting started",
        "Collections and formats",
        "Evaluation and the split protocol",
        "Rankers",
        "Fusion and training",
        "The leaderboard",
        "Judging",
        "Open retrieval and scale",
        "Benchmarks",
        "Reference",
    ):
        assert concept in sections, concept
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert set(nav_pages(cfg["nav"])) == pages


def test_the_build_fetches_nothing():
    """mkdocs-material's social and privacy plugins download at build time, its Google fonts at
    view time: neither is on."""
    cfg = config()
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in cfg["plugins"]]
    assert not {"social", "privacy", "material/social", "material/privacy"} & set(plugins)
    assert cfg["theme"]["font"] is False and cfg["strict"] is True
    assert cfg["site_url"].startswith("https://")


def test_read_the_docs_builds_this_site_with_the_docs_extra_only():
    """The address the hints name (DOCS_URL) is the site Read the Docs builds from this file: the
    same mkdocs.yml, and the docs extra's pins installed by the same words that name them."""
    import tomllib

    from dsr.core import DOCS_URL

    rtd = yaml.safe_load((ROOT / ".readthedocs.yaml").read_text(encoding="utf-8"))
    assert rtd["version"] == 2 and rtd["mkdocs"]["configuration"] == "mkdocs.yml"
    assert rtd["build"]["tools"]["python"] == "3.11"
    (install,) = rtd["build"]["jobs"]["install"]
    command = re.search(r"\$\(python -c \"(.*)\"\)", install).group(1)
    printed = subprocess.run([sys.executable, "-c", command], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    docs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]["docs"]
    assert printed == docs and all("==" in pin for pin in docs)
    assert config()["site_url"] == DOCS_URL and DOCS_URL.endswith(".readthedocs.io/en/latest/")


def test_make_builds_and_serves_it_on_loopback():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: venv\n\t.*mkdocs build --strict", makefile, re.M)
    assert re.search(r"^docs-serve: venv\n\t.*mkdocs serve .*-a 127\.0\.0\.1:", makefile, re.M)


@pytest.mark.slow
def test_the_site_builds_strict_and_offline(tmp_path):
    """``mkdocs build --strict`` in a network namespace of its own (no network at all) where
    ``unshare`` may make one, else with every proxy pointed at a closed port."""
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(tmp_path)}
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-n", "true"], capture_output=True).returncode == 0:
        command = [unshare, "-n", *command]
    else:
        env.update({k: "http://127.0.0.1:9" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")})
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (site / "index.html").is_file() and (site / "reference" / "api" / "index.html").is_file()
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "load_collection" in api and "Results" in api
    assert not any("fonts.googleapis" in p.read_text(encoding="utf-8", errors="replace") for p in site.rglob("*.html"))
