"""Judging in a real browser: Debian's chromium driven by Playwright against the real uvicorn on
127.0.0.1. An assessor's whole flow with the keyboard alone (grade, back, unsure, guidelines,
next task, resume after a reload); two assessors on the same tasks who never see each other's
grades, one of whom fails the honeypots and is left out of the labels. Then the page itself: grade
keys that stop at the end of a dialogue, a mouse-only assessor grading a whole dialogue at 390 px,
touch taps (``has_touch``), 44 px targets, and every visible text at WCAG AA contrast (4.5:1) in
the light, dark and no-preference schemes, from Chromium's computed colours; screenshots of each
scheme at 1280 and 390 px are written to the test's folder (``shots/``). Those four page tests
share one campaign and server (the module's), each grading as an assessor of its own."""

from __future__ import annotations

from collections import Counter

import pytest

from dsr.judging.campaigns import Judging
from tests.support.board import LiveServer, make_board
from tests.support.judging import assignments, sample_campaign, true_grade

#: the module's browser and its page tests' server, started once: its tests on one worker (tests/support/order.py)
pytestmark = pytest.mark.xdist_group("judging-browser")


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
    return {
        keys[i]: (None if g != g else int(g), u, s)
        for i, g, u, s in zip(mine["item"], mine["grade"], mine["unsure"], mine["seconds"])
    }


def test_an_assessors_whole_keyboard_flow(browser, tmp_path):
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
        mine = sorted({(p["seq"], p["dialogue"]) for p in assignments(judging, "s1") if p["assessor"] == "alice"})
        seq = int(first_url.rsplit("/", 1)[1])
        at = [s for s, _ in mine].index(seq)
        same = mine[at + 1][1] == mine[at][1]  # chunks of 6: the next task may go on
        assert page.inner_text("#next-dialogue") == ("More of this dialogue →" if same else "Next dialogue →")
        page.keyboard.press("2")
        saved(page, 1, "2")
        page.keyboard.press("0")
        saved(page, 2, "0")
        page.keyboard.press("k")  # back to sentence 2
        assert page.get_attribute("#i2", "class").endswith("current")
        page.keyboard.press("1")  # regrade it
        saved(page, 2, "1")
        page.keyboard.press("u")  # sentence 3: unsure
        saved(page, 3, "u")
        page.keyboard.press("g")
        assert page.is_visible("#guidelines") and "Examples" in page.inner_text("#guidelines")
        page.keyboard.press("Escape")
        assert not page.is_visible("#guidelines")
        page.keyboard.press("j")  # skip to 5, then back to 4
        page.keyboard.press("k")
        for i in range(4, n + 1):
            page.keyboard.press("0")
            saved(page, i, "0")
        assert page.inner_text("#done") == str(n)
        page.screenshot(path=str(tmp_path / "task.png"), full_page=True)
        page.reload()  # resume: the grades are there
        assert page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade)") == ["2", "1", "u"] + ["0"] * (
            n - 3
        )
        page.keyboard.press("Enter")  # all graded: on to the next task
        page.wait_for_url(lambda url: url != first_url and "/task/" in url)
        assert page.locator("#items li.current").get_attribute("id") == "i1"
    mine = grades_of(judging, "alice")
    assert {k: v[:2] for k, v in mine.items()} == {
        keys[0]: (2, False),
        keys[1]: (1, False),
        keys[2]: (None, True),
        **{k: (0, False) for k in keys[3:]},
    }
    assert all(0 < v[2] < 120 for v in mine.values())  # seconds per grade recorded
    board.close()
    assert (tmp_path / "task.png").stat().st_size > 10_000


def test_two_assessors_are_blind_to_each_other_and_a_honeypot_failure_is_excluded(browser, tmp_path):
    from dsr.judging.campaign_report import outcome

    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    truth, tokens = sample_campaign(judging, k=2, chunk=5, honeypot_rate=0.3, assessors=("alice", "bob"))
    answer = {p["key"]: true_grade(p, truth) for p in assignments(judging, "s1")}
    checks = Counter(p["seq"] for p in assignments(judging, "s1") if p["assessor"] == "alice" and p["gold"] is not None)
    tasks = sorted(sorted(checks, key=lambda seq: (-checks[seq], seq))[:2])  # the two with the most checks
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
            for i in range(1, len(keys) + 1):  # bob calls everything useful
                bob.keyboard.press("2")
                saved(bob, i, "2")
            alice.goto(f"{server.url}/judge/s1/task/{task}")  # the same task: none of bob's grades
            assert alice.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade || '')") == [""] * len(keys)
            assert alice.locator("#items .chosen").count() == 0 and alice.inner_text("#done") == str(done)
            done += len(keys)
            for i, key in enumerate(alice.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)"), start=1):
                alice.keyboard.press(str(answer[key]))
                saved(alice, i, str(answer[key]))
            bob.reload()  # and bob sees only his own
            assert bob.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade)") == ["2"] * len(keys)
    result = outcome(judging, "s1")
    assert result.checks["alice"].counted and result.checks["alice"].accuracy == 1.0
    assert not result.checks["bob"].counted and result.checks["bob"].accuracy < 0.7
    assert set(result.counted["assessor"]) == {"alice"}
    board.close()


# --- keyboard, mouse and touch; the end of a dialogue; contrast ------------------------------

PHONE = {"width": 390, "height": 844}
SCHEMES = ("light", "dark", "no-preference")
#: every visible element with its own text: its colour and the colour under it (alpha-blended
#: down the ancestors to the page's canvas), as [r, g, b, a] read from getComputedStyle
COLOURS_JS = """() => {
  const rgba = s => { const m = s.match(/rgba?\\(([^)]*)\\)/); if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
  const canvas = rgba(getComputedStyle(document.documentElement).backgroundColor);
  const under = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let colour = canvas && canvas[3] > 0 ? canvas : [255, 255, 255, 1];
    for (const c of layers.reverse()) colour = over(c, colour);
    return colour; };
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(el);
    if (!own || !el.getClientRects().length || style.visibility === "hidden" || el.closest("[hidden]")) continue;
    const bg = under(el);
    out.push({what: el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).replace(/ /g, ".") : "")
                    + " " + JSON.stringify(el.textContent.trim().slice(0, 30)),
              fg: over(rgba(style.color), bg), bg: bg});
  }
  return out;
}"""


def contrast(a: list[float], b: list[float]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours."""

    def luminance(c):
        r, g, b = (v / 255 for v in c[:3])
        lin = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def low_contrast(page) -> list[str]:
    return [
        f"{c['what']}: {contrast(c['fg'], c['bg']):.2f}" for c in page.evaluate(COLOURS_JS) if contrast(c["fg"], c["bg"]) < 4.5
    ]


@pytest.fixture(scope="module")
def one_each(tmp_path_factory):
    """A campaign of one dialogue per task (50 sentences at most) for assessors alice, bob, carol
    and dave under a real uvicorn, one for the module's four tests of the page: each grades as an
    assessor of its own (keys: alice, mouse: bob, touch: carol, contrast: dave) and reads only
    that assessor's grades; (board, judging, truth, tokens, server)."""
    tmp_path = tmp_path_factory.mktemp("one_each")
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    truth, tokens = sample_campaign(judging, chunk=60, assessors=("alice", "bob", "carol", "dave"))
    with LiveServer(board) as server:
        yield board, judging, truth, tokens, server
    board.close()


def test_grade_keys_stop_at_the_end_of_a_dialogue(browser, one_each, tmp_path):
    _, judging, _, tokens, server = one_each
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    log_in(page, server.url, tokens["alice"])
    page.click("#campaigns a:text-is('Start')")
    page.wait_for_selector("#items li.current")
    first_url, title = page.url, page.inner_text("h1")
    n = page.locator("#items li.item").count()
    assert page.inner_text("#next-dialogue") == "Next dialogue →"
    for i in range(1, n + 1):
        page.keyboard.press("1")
        saved(page, i, "1")
    assert page.get_attribute("#end", "class") == "end current"
    assert page.evaluate("document.activeElement.id") == "next-dialogue"  # the control, ready for Enter
    for _ in range(12):  # the twelve presses: nothing more
        page.keyboard.press("0")
    page.wait_for_timeout(500)
    assert page.url == first_url and "do nothing here" in page.inner_text("#end-message")
    assert page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.grade)") == ["1"] * n
    assert len(grades_of(judging, "alice")) == n
    page.keyboard.press("k")  # back into the dialogue: keys grade again
    page.keyboard.press("2")
    saved(page, n, "2")
    assert page.url == first_url and page.evaluate("document.activeElement.id") == "next-dialogue"
    page.keyboard.press("Enter")  # the deliberate step
    page.wait_for_url(lambda url: url != first_url and "/task/" in url)
    page.wait_for_selector("#items li.current")
    assert page.inner_text("h1") != title and page.locator("#items li.current").get_attribute("id") == "i1"
    assert page.locator("#items li.graded").count() == 0
    assert sorted(v[0] for v in grades_of(judging, "alice").values()) == [1] * (n - 1) + [2]


def test_a_mouse_only_assessor_grades_a_whole_dialogue_on_a_phone(browser, one_each, tmp_path):
    _, judging, truth, tokens, server = one_each
    answer = {p["key"]: true_grade(p, truth) for p in assignments(judging, "s1")}
    page = browser.new_page(viewport=PHONE)
    log_in(page, server.url, tokens["bob"])
    start = page.locator("#campaigns a:text-is('Start')").bounding_box()
    assert start["width"] >= 44 and start["height"] >= 44
    page.click("#campaigns a:text-is('Start')")
    page.wait_for_selector("#items li.current")
    first_url = page.url
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # no sideways scroll
    legend = page.inner_text("#legend")
    assert all(name in legend for name in ("not useful", "somewhat useful", "useful", "unsure"))
    names = page.eval_on_selector_all("#i1 button.g", "els => els.map(e => e.innerText.replace(/\\s+/g, ' '))")
    assert names == ["0 not useful", "1 somewhat useful", "2 useful", "u unsure"]
    boxes = page.eval_on_selector_all(
        "button.g, #next-dialogue", "els => els.map(e => e.getBoundingClientRect()).map(r => [r.width, r.height])"
    )
    assert min(min(w, h) for w, h in boxes) >= 44, boxes  # touch-sized targets
    keys = page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)")
    for i, key in enumerate(keys, start=1):
        page.locator(f"#i{i} button[name='grade'][value='{answer[key]}']").click()  # a real mouse click
        saved(page, i, str(answer[key]))
    page.screenshot(path=str(tmp_path / "phone-end.png"))
    assert page.url == first_url and page.locator("#end.current").count() == 1
    assert "not graded" not in page.inner_text("#end-message")
    page.locator("#next-dialogue").click()
    page.wait_for_url(lambda url: url != first_url and "/task/" in url)
    mine = grades_of(judging, "bob")
    assert {k: v[0] for k, v in mine.items()} == {k: answer[k] for k in keys}


def test_touch_taps_grade_a_dialogue_and_go_on(browser, one_each, tmp_path):
    _, judging, truth, tokens, server = one_each
    answer = {p["key"]: true_grade(p, truth) for p in assignments(judging, "s1")}
    context = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True, device_scale_factor=2)
    page = context.new_page()
    log_in(page, server.url, tokens["carol"])
    page.tap("#campaigns a:text-is('Start')")
    page.wait_for_selector("#items li.current")
    first_url = page.url
    keys = page.eval_on_selector_all("#items li.item", "els => els.map(e => e.dataset.key)")
    for i, key in enumerate(keys, start=1):
        if i == 2:
            page.tap(f"#i{i} button.unsure")
            saved(page, i, "u")
            continue
        page.tap(f"#i{i} button[name='grade'][value='{answer[key]}']")
        saved(page, i, str(answer[key]))
    page.tap("#i1 button[name='grade'][value='0']")  # a second tap changes a grade, stays put
    saved(page, 1, "0")
    assert page.url == first_url
    page.tap("#next-dialogue")
    page.wait_for_url(lambda url: url != first_url and "/task/" in url)
    context.close()
    mine = grades_of(judging, "carol")
    expected = {k: (answer[k], False) for k in keys} | {keys[0]: (0, False), keys[1]: (None, True)}
    assert {k: v[:2] for k, v in mine.items()} == expected


def test_every_text_has_wcag_aa_contrast_in_light_and_dark(browser, one_each, tmp_path):
    """Every visible text of the task page (grade buttons chosen and not, keys, names, the
    sentence states, the end of the dialogue, the guidelines) and of the campaigns and login
    pages is at least 4.5:1 on what lies under it, in each colour scheme, at 1280 and 390 px."""
    _, judging, _, tokens, server = one_each
    shots = tmp_path / "shots"
    shots.mkdir()
    for scheme in SCHEMES:
        for width, viewport in (("1280", {"width": 1280, "height": 900}), ("390", PHONE)):
            context = browser.new_context(viewport=viewport, color_scheme=scheme)
            page = context.new_page()
            page.goto(f"{server.url}/judge/login")
            assert low_contrast(page) == [], (scheme, width, "login")
            log_in(page, server.url, tokens["dave"])
            page.screenshot(path=str(shots / f"campaigns-{scheme}-{width}.png"))
            assert low_contrast(page) == [], (scheme, width, "campaigns")
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
            page.goto(f"{server.url}/judge/s1/guidelines")
            assert low_contrast(page) == [], (scheme, width, "guidelines page")
            page.go_back()
            page.click("#campaigns a.button")  # Start, then Continue
            page.wait_for_selector("#items li.current")
            if page.locator("#items li.graded").count() == 0:
                for key in ("2", "0", "u", "1"):
                    page.keyboard.press(key)
                saved(page, 4, "1")
            page.keyboard.press("k")
            page.screenshot(path=str(shots / f"task-{scheme}-{width}.png"), full_page=width == "390")
            assert low_contrast(page) == [], (scheme, width, "task")
            colours = page.eval_on_selector_all(
                "#i1 button.g, #i5 button.g",
                """els => els.map(e => {
                const s = getComputedStyle(e); return [s.color, s.backgroundColor]; })""",
            )
            assert all(fg != bg for fg, bg in colours) and len(set(map(tuple, colours))) == 2  # chosen differs
            page.focus("#next-dialogue")  # Tab's way to the end
            page.keyboard.press("0")  # the end's message shows, nothing graded
            assert "do nothing here" in page.inner_text("#end-message")
            assert page.get_attribute("#i4", "data-grade") == "1"
            assert low_contrast(page) == [], (scheme, width, "end")
            page.keyboard.press("g")
            page.screenshot(path=str(shots / f"guidelines-{scheme}-{width}.png"))
            assert low_contrast(page) == [], (scheme, width, "guidelines")
            context.close()
