"""The board's pages on a phone (390 px) and a desktop (1280 px), in Debian's chromium (headless,
Playwright's Python API, against uvicorn on 127.0.0.1): the "all measures" table scrolls inside
its box with a cue that names the measures beside the screen and its system column in place; the
submit form's board menu shows each board's whole name; a phase whose collection has one subset
shows each column once. Screenshots go to ``out/screenshots/`` (or ``$DSR_SCREENSHOTS``)."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from dsr.board.admin import add_baselines
from dsr.collections import load_collection
from dsr.core.data import Collection, write_benchmark
from tests.support.board import LiveServer, make_board, setup_phases

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("DSR_SCREENSHOTS") or ROOT / "out" / "screenshots")
VIEWPORTS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def site(tmp_path_factory, runs):
    """sample/public and sample/test (tests/support/board.py), and single/one: the sample's
    dialogues all in one subset, ``plain``; team alpha's token."""
    tmp_path = tmp_path_factory.mktemp("narrow")
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    setup_phases(board, runs, daily_quota=3, total_quota=10)
    single = tmp_path / "single.jsonl"
    write_benchmark(Collection("single", [replace(d, subset="plain") for d in load_collection("sample").dialogues]), single)
    shutil.copy(runs / "initial.run", tmp_path / "initial.run")  # without its sidecar: another collection's hash
    add_baselines(board, board.phases.add_phase(str(single), "one"), [str(tmp_path / "initial.run")])
    token = board.members.add_team("alpha")
    with LiveServer(board) as server:
        yield board, server, token
    board.close()


def page_at(browser, server, token, size: str):
    page = browser.new_context(viewport=VIEWPORTS[size]).new_page()
    page.goto(f"{server.url}/login")
    page.fill("#token", token)
    page.click("form.card button[type=submit]")
    page.wait_for_url(f"{server.url}/submit")
    return page


def visible(page, selector: str) -> bool:
    return page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }")


@pytest.mark.parametrize("size", VIEWPORTS)
def test_all_measures_scroll_in_their_box_with_a_cue_and_the_system_column_in_place(browser, site, size):
    _, server, token = site
    page = page_at(browser, server, token, size)
    page.goto(f"{server.url}/board/sample/public?columns=all")
    heads = page.locator("#board thead th").all_inner_texts()
    measures = [h.split()[0] for h in heads[3:]]  # after Rank, Group, System: the sorted one, then the rest
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"all-measures-{size}.png"), full_page=True)
    box = "#board-scroll"
    overflows = page.eval_on_selector(box, "b => b.scrollWidth > b.clientWidth")
    if size == "1280":
        assert not overflows and not visible(page, "#scroll-cue")  # it fits: no cue
        return
    assert overflows, "the phone's table should not fit: the case the cue is for"
    assert visible(page, "#scroll-cue")
    cue = page.inner_text("#scroll-cue")
    assert f"the {len(measures) - 1} other measures ({', '.join(measures[1:])})" in cue, cue
    assert page.get_attribute(box, "tabindex") == "0"  # a keyboard scrolls it too
    hidden = page.eval_on_selector_all(
        "#board thead th",
        "(cells, b) => cells.filter(c => c.getBoundingClientRect().left >= b).length",
        page.eval_on_selector(box, "b => b.getBoundingClientRect().right"),
    )
    assert hidden > 0  # some columns are beyond the box's edge before scrolling
    page.eval_on_selector(box, "b => { b.scrollLeft = b.scrollWidth; }")
    edges = page.eval_on_selector(
        box,
        """b => { const box = b.getBoundingClientRect(); const last = b.querySelector('thead th:last-child').getBoundingClientRect();
                  const system = b.querySelector('tbody td.system').getBoundingClientRect();
                  return [box.left, box.right, last.right, system.left, system.right]; }""",
    )
    left, right, last_right, system_left, system_right = edges
    assert last_right <= right + 1  # the last measure is in view once scrolled...
    assert abs(system_left - left) <= 1 and system_right > left + 40  # ...and the system column still at the left
    page.screenshot(path=str(SHOTS / f"all-measures-{size}-scrolled.png"), full_page=True)
    page.context.close()


@pytest.mark.parametrize("size", VIEWPORTS)
def test_the_board_menu_shows_each_board_whole(browser, site, size):
    """Each option's text fits the menu's box (measured in the menu's own font), and what left the
    option (the quota) is in the table below, beside each board."""
    _, server, token = site
    page = page_at(browser, server, token, size)
    fits = page.eval_on_selector(
        "#phase",
        """s => { const c = document.createElement('canvas').getContext('2d'); c.font = getComputedStyle(s).font;
                  const room = s.clientWidth - 32;  // the arrow and the padding
                  return [...s.options].map(o => [o.text.trim(), c.measureText(o.text.trim()).width <= room]); }""",
    )
    assert fits and all(ok for _, ok in fits), fits
    assert any("hidden labels" in text for text, _ in fits)
    row = page.locator("#quotas tr", has_text="sample / test")
    assert "3 of 3 left today, 10 of 10 left in all" in row.inner_text()
    page.screenshot(path=str(SHOTS / f"submit-{size}.png"), full_page=True)
    page.context.close()


@pytest.mark.parametrize("size", VIEWPORTS)
def test_a_one_subset_phase_shows_each_column_once(browser, site, size):
    _, server, token = site
    page = page_at(browser, server, token, size)
    page.goto(f"{server.url}/board/single/one")
    heads = [" ".join(h.split()) for h in page.locator("#board thead th").all_inner_texts()]
    assert len(heads) == len(set(heads)) and page.locator("#board th.subset").count() == 0, heads
    assert "Subset" not in page.inner_text("nav[aria-label='subset and baseline']")
    page.goto(f"{server.url}/board/single/one?subset=plain")  # the one subset by name: the same table
    assert page.locator("#board th.subset").count() == 0
    page.goto(f"{server.url}/board/sample/public")  # two real subsets keep their columns
    assert page.locator("#board th.subset").count() == 2 and "Subset" in page.inner_text("nav[aria-label='subset and baseline']")
    page.context.close()
