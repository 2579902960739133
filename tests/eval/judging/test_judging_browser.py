"""Judging in a real browser: Debian's chromium driven by Playwright against the real uvicorn on
127.0.0.1. An assessor's whole flow with the keyboard alone (grade, back, unsure, guidelines,
next task, resume after a reload); two assessors on the same tasks who never see each other's
grades, one of whom fails the honeypots and is left out of the labels."""

from __future__ import annotations

from collections import Counter

import sys
from pathlib import Path

from board_support import LiveServer, make_board
from eval.judging.store import Judging
from judging_support import assignments, sample_campaign, true_grade

sys.path.insert(0, str(Path(__file__).parents[1] / "board"))
from test_board_browser import browser  # noqa: E402,F401  (Debian's chromium under Playwright)


def log_in(page, url: str, token: str) -> None:
    page.goto(f"{url}/judge/login")
    page.fill("#token", token)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/judge")


def saved(page, index: int, grade: str) -> None:
    """Wait until sentence ``index`` (1-based) shows the grade as committed by the server."""
    try:
        page.wait_for_selector(f"#i{index}[data-grade='{grade}'] .status:text-is('saved')", timeout=10_000)
    except Exception:
        raise AssertionError(f"sentence {index}: {page.inner_text(f'#i{index} .status')!r}") from None


def grades_of(judging, assessor: str) -> dict[str, tuple]:
    frame = judging.grades_frame(judging.campaign("s1"))
    keys = judging.items_frame(judging.campaign("s1")).set_index("item")["key"]
    mine = frame[frame["assessor"] == assessor]
    return {keys[i]: (None if g != g else int(g), u, s) for i, g, u, s in
            zip(mine["item"], mine["grade"], mine["unsure"], mine["seconds"])}


def test_an_assessors_whole_keyboard_flow(browser, tmp_path):  # noqa: F811
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    _, tokens = sample_campaign(judging, chunk=6)
    with LiveServer(board) as server:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        log_in(page, server.url, tokens["alice"])
        page.click("#campaigns a:text-is('Start')")
        page.wait_for_selector("#items li.current")
        first_url = page.url
        keys = page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)")
        n = len(keys)
        assert page.inner_text("#next-speaker") and page.locator(".turns li").count() >= 3
        page.keyboard.press("2")
        saved(page, 1, "2")
        page.keyboard.press("0")
        saved(page, 2, "0")
        page.keyboard.press("k")                               # back to sentence 2
        assert page.get_attribute("#i2", "class").endswith("current")
        page.keyboard.press("1")                               # regrade it
        saved(page, 2, "1")
        page.keyboard.press("u")                               # sentence 3: unsure
        saved(page, 3, "u")
        page.keyboard.press("g")
        assert page.is_visible("#guidelines") and "Examples" in page.inner_text("#guidelines")
        page.keyboard.press("Escape")
        assert not page.is_visible("#guidelines")
        page.keyboard.press("j")                               # skip to 5, then back to 4
        page.keyboard.press("k")
        for i in range(4, n + 1):
            page.keyboard.press("0")
            saved(page, i, "0")
        assert page.inner_text("#done") == str(n)
        page.screenshot(path=str(tmp_path / "task.png"), full_page=True)
        page.reload()                                          # resume: the grades are there
        assert page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade)") == \
            ["2", "1", "u"] + ["0"] * (n - 3)
        page.keyboard.press("Enter")                           # all graded: on to the next task
        page.wait_for_url(lambda url: url != first_url and "/task/" in url)
        assert page.locator("#items li.current").get_attribute("id") == "i1"
    mine = grades_of(judging, "alice")
    assert {k: v[:2] for k, v in mine.items()} == {keys[0]: (2, False), keys[1]: (1, False), keys[2]: (None, True),
                                                   **{k: (0, False) for k in keys[3:]}}
    assert all(0 < v[2] < 120 for v in mine.values())                      # seconds per grade recorded
    board.close()
    assert (tmp_path / "task.png").stat().st_size > 10_000


def test_two_assessors_are_blind_to_each_other_and_a_honeypot_failure_is_excluded(browser, tmp_path):  # noqa: F811
    from eval.judging.report import outcome

    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    truth, tokens = sample_campaign(judging, k=2, chunk=5, rate=0.3, assessors=("alice", "bob"))
    answer = {p["key"]: true_grade(p, truth) for p in assignments(judging, "s1")}
    checks = Counter(p["seq"] for p in assignments(judging, "s1") if p["assessor"] == "alice" and p["gold"] is not None)
    tasks = sorted(sorted(checks, key=lambda seq: (-checks[seq], seq))[:2])     # the two with the most checks
    assert sum(checks[t] for t in tasks) >= 3
    with LiveServer(board) as server:
        bob = browser.new_context().new_page()
        alice = browser.new_context().new_page()
        log_in(bob, server.url, tokens["bob"])
        log_in(alice, server.url, tokens["alice"])
        done = 0
        for task in tasks:
            bob.goto(f"{server.url}/judge/s1/task/{task}")
            keys = bob.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)")
            for i in range(1, len(keys) + 1):                  # bob calls everything useful
                bob.keyboard.press("2")
                saved(bob, i, "2")
            alice.goto(f"{server.url}/judge/s1/task/{task}")   # the same task: none of bob's grades
            assert alice.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade || '')") \
                == [""] * len(keys)
            assert alice.locator("#items .chosen").count() == 0 and alice.inner_text("#done") == str(done)
            done += len(keys)
            for i, key in enumerate(alice.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)"),
                                    start=1):
                alice.keyboard.press(str(answer[key]))
                saved(alice, i, str(answer[key]))
            bob.reload()                                       # and bob sees only his own
            assert bob.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade)") == \
                ["2"] * len(keys)
    result = outcome(judging, "s1")
    assert result.checks["alice"].counted and result.checks["alice"].accuracy == 1.0
    assert not result.checks["bob"].counted and result.checks["bob"].accuracy < 0.7
    assert set(result.counted["assessor"]) == {"alice"}
    board.close()
