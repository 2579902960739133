"""Issue 42: the judging page opens on the latest turn of a long dialogue. Debian's chromium
(Playwright, against the real uvicorn on 127.0.0.1) at 1280 and 390 px on a 30-turn dialogue:
without any scrolling, the last turn before "Next to speak" and "Next to speak" itself are in
the viewport; the whole dialogue is one scroll up inside the conversation's box; and the same
holds with the script off (the box starts at its end by CSS alone). The page shows that earlier
turns lie above: a line says how many (the script), a shade marks the box's top edge (CSS, read
from the pixels); a wrapped turn's lines start where its first line does, right of the name."""

from __future__ import annotations

import pytest

from dsr.collections import load_collection
from dsr.core.data import Collection, Dialogue, Turn
from dsr.judging import guidelines
from dsr.judging.campaigns import Judging, Settings
from tests.support.board import LiveServer, make_board
from tests.support.judging import as_pool

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("judging-long-dialogue")]  # one server: one worker
TURNS = 30


def long_pool() -> Collection:
    """The sample's dialogues, each with a 30-turn conversation: two speakers taking turns, each
    turn a real sentence of the sample (one or two), the last one marked so the test finds it."""
    sample = as_pool(load_collection("sample"))
    sentences = [c.body for d in sample for c in d.candidates]
    dialogues = []
    for n, d in enumerate(sample):
        turns = [
            Turn(
                f"u{i % 2}",
                ["ada", "bob"][i % 2],
                " ".join(sentences[(n * 31 + i * 7 + k) % len(sentences)] for k in range(1 + i % 2)),
            )
            for i in range(TURNS)
        ]
        turns[-1] = Turn(turns[-1].author_id, turns[-1].author_name, "THE LAST TURN " + turns[-1].body)
        dialogues.append(Dialogue(d.id, d.title, turns, d.target, d.candidates, subset=d.subset, meta=d.meta))
    return Collection("long-pool", dialogues)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The campaign's board under a real uvicorn, one for the module's tests: each only reads
    (logs in, in its own browser context, and opens the first task; nothing is graded)."""
    tmp_path = tmp_path_factory.mktemp("long")
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    judging.create("long", long_pool(), guidelines.load(), Settings(k=1, chunk=10, honeypot_rate=0, seed=0), {})
    token = judging.assignments.add_assessor("ada")
    judging.assignments.assign("long", ["ada"])
    with LiveServer(board) as live:
        yield live, token
    board.close()


def in_view(page, selector: str) -> bool:
    """Whether the element is inside the viewport and inside every scroll box around it."""
    return page.eval_on_selector(
        selector,
        """el => {
        const r = el.getBoundingClientRect();
        if (r.top < 0 || r.bottom > window.innerHeight || r.height === 0) return false;
        for (let p = el.parentElement; p; p = p.parentElement) {
            const s = getComputedStyle(p);
            if (s.overflowY === 'auto' || s.overflowY === 'scroll') {
                const b = p.getBoundingClientRect();
                if (r.top < b.top - 1 || r.bottom > b.bottom + 1) return false;
            }
        }
        return true; }""",
    )


@pytest.mark.parametrize("scripts", [True, False])
@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_the_latest_turn_is_in_view_on_opening(server, browser, tmp_path, width, height, scripts):
    page = open_task(browser, server, width, height, scripts)
    if scripts:
        page.wait_for_selector("#items li.current")
    assert page.locator(".turns li").count() == TURNS
    assert page.evaluate("window.scrollY") == 0  # nothing scrolled the page
    last = ".turns li:last-child"
    assert "THE LAST TURN" in page.inner_text(last)
    assert in_view(page, last), f"the last turn is out of view at {width} px"
    assert in_view(page, "p.next"), f"'Next to speak' is out of view at {width} px"
    assert not in_view(page, ".turns li:first-child")  # the box opened at its end...
    box = page.locator("#turns")
    assert box.evaluate("b => b.scrollHeight > b.clientHeight")
    box.hover()
    for _ in range(40):  # ...the whole dialogue one scroll up
        page.mouse.wheel(0, -400)
    page.wait_for_function(
        "() => { const b = document.querySelector('#turns'); "
        "const f = b.querySelector('li').getBoundingClientRect(); "
        "return f.top >= b.getBoundingClientRect().top - 1; }"
    )
    assert in_view(page, ".turns li:first-child")
    page.screenshot(path=str(tmp_path / f"long-{width}-{'js' if scripts else 'nojs'}.png"))
    page.context.close()


def open_task(browser, server, width: int, height: int, scripts: bool = True):
    live, token = server
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts)
    page = context.new_page()
    page.goto(f"{live.url}/judge/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live.url}/judge")
    page.goto(f"{live.url}/judge/long/task/1")
    page.wait_for_selector(".turns li")
    return page


#: turns wholly or partly above the conversation box's top edge (out of sight there)
ABOVE = """() => { const top = document.querySelector('#turns').getBoundingClientRect().top;
    return [...document.querySelectorAll('.turns li')].filter(li => li.getBoundingClientRect().top < top - 1).length; }"""


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_a_line_above_the_conversation_says_how_many_turns_are_out_of_sight(server, browser, width, height):
    page = open_task(browser, server, width, height)
    page.wait_for_selector("#earlier:not([hidden])")
    above = page.evaluate(ABOVE)
    assert 0 < above < TURNS
    assert page.inner_text("#earlier") == f"↑ {above} earlier turns above: scroll up in the conversation"
    assert in_view(page, "#earlier")
    page.locator("#turns").hover()
    for _ in range(40):
        page.mouse.wheel(0, -400)
    page.wait_for_selector("#earlier", state="hidden")  # the first turn in view: nothing above
    assert page.evaluate(ABOVE) == 0
    page.context.close()


def strip_luminance(png: bytes) -> float:
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    return sum(image.get_flattened_data()) / (image.width * image.height)


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_without_the_script_a_shade_at_the_box_top_marks_earlier_turns(server, browser, tmp_path, width, height):
    """The box's top edge is shaded while turns lie above it, its bottom edge not (the latest turn
    is the conversation's last); read from the page's pixels, in the gap left of the turns' text."""
    page = open_task(browser, server, width, height, scripts=False)
    assert not visible_cue(page)
    box = page.locator("#turns").bounding_box()
    left = page.locator(".turns li b").first.bounding_box()["x"]
    strip = {"x": box["x"] + 4, "width": max(2, left - box["x"] - 6), "height": 5}
    top = strip_luminance(page.screenshot(clip={**strip, "y": box["y"] + 1}))
    bottom = strip_luminance(page.screenshot(clip={**strip, "y": box["y"] + box["height"] - 6}))
    assert top < bottom - 10, (top, bottom)
    page.locator("#turns").hover()
    for _ in range(40):
        page.mouse.wheel(0, -400)
    page.wait_for_function(
        "() => document.querySelector('.turns li').getBoundingClientRect().top >= document.querySelector('#turns').getBoundingClientRect().top - 1"
    )
    box = page.locator("#turns").bounding_box()
    scrolled_top = strip_luminance(page.screenshot(clip={**strip, "y": box["y"] + 1}))
    scrolled_bottom = strip_luminance(page.screenshot(clip={**strip, "y": box["y"] + box["height"] - 6}))
    assert scrolled_top > scrolled_bottom + 10, (scrolled_top, scrolled_bottom)  # now the later turns lie below
    page.screenshot(path=str(tmp_path / f"shade-{width}.png"))
    page.context.close()


def visible_cue(page) -> bool:
    return page.eval_on_selector("#earlier", "e => e.getBoundingClientRect().height > 0")


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)])
def test_a_wrapped_turn_s_lines_start_where_its_first_line_does(server, browser, width, height):
    """Every line of a turn's text starts at the same x, right of the speaker's name (not under it),
    and the names of all turns take one column."""
    page = open_task(browser, server, width, height)
    turns = page.eval_on_selector_all(
        ".turns li",
        """items => items.map(li => { const name = li.querySelector('b').getBoundingClientRect();
            const text = document.createRange(); text.selectNodeContents(li.querySelector('span'));
            const lines = [...text.getClientRects()].map(r => r.left);  // one rectangle per line
            return [name.left, name.right, lines]; })""",
    )
    wrapped = [t for t in turns if len(t[2]) > 1]
    assert wrapped, "no turn wraps at this width: the case is not tested"
    for _, name_right, lines in turns:
        assert max(lines) - min(lines) <= 1 and min(lines) >= name_right, (name_right, lines)
    assert len({round(t[2][0]) for t in turns}) == 1 and len({round(t[0]) for t in turns}) == 1  # one column each
    page.context.close()
