"""Lists of rankers, rerankers, query strategies, fusion methods, collections and measure
families in README.md and docs/*.md come from the registries: each is a
``<!-- registry:NAME -->`` block that ``tools/docs_lists.py --write`` fills, and this test
fails when one differs from what the registries give (a new ranker, a renamed strategy)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import docs_lists

ROOT = Path(__file__).resolve().parents[1]

#: where each list is expected (so a block removed by mistake fails too)
EXPECTED = {
    ("README.md", "rankers"),
    ("README.md", "rerankers"),
    ("README.md", "fusion"),
    ("docs/api.md", "collections"),
    ("docs/interchange.md", "queries"),
    ("docs/models.md", "queries"),
    ("docs/protocol.md", "measures"),
}


def blocks() -> set[tuple[str, str]]:
    return {
        (path.relative_to(ROOT).as_posix(), match.group(2))
        for path in docs_lists.docs()
        for match in docs_lists.BLOCK.finditer(path.read_text(encoding="utf-8"))
    }


def test_every_registry_list_in_the_docs_is_what_the_registries_give():
    assert EXPECTED <= blocks()
    assert not docs_lists.stale(), "run: python tools/docs_lists.py --write"


def test_a_list_typed_by_hand_is_caught_and_rewritten(tmp_path):
    (tmp_path / "docs").mkdir()
    typed = "Rankers: <!-- registry:rankers -->`initial`, `bm25`, `dense`<!-- /registry -->.\n"
    (tmp_path / "README.md").write_text(typed)
    assert docs_lists.stale(tmp_path) == ["README.md: registry rankers"]
    fixed = docs_lists.filled(typed)
    assert "`open`" in fixed and "`fusion`" in fixed
    (tmp_path / "README.md").write_text(fixed)
    assert docs_lists.stale(tmp_path) == []
    with pytest.raises(KeyError):
        docs_lists.filled("<!-- registry:nope -->x<!-- /registry -->")


def test_the_lists_name_what_the_help_and_the_library_accept():
    from dsr.core.queries import STRATEGIES
    from dsr.rankers import RANKERS

    assert docs_lists.rendered("rankers") == ", ".join(f"`{name}`" for name in RANKERS)
    assert "`title+recent`" in docs_lists.rendered("queries") and len(STRATEGIES) >= 6
