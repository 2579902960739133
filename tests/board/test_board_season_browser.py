"""A season's board in a real browser (Debian's chromium, headless, through Playwright's Python
API, against uvicorn on 127.0.0.1), at 1280x900 and on a phone (390x844): every page renders
without horizontal overflow; rank ranges, letter groups and marks are what an independent
computation gives; quotas read as what is left; submissions outside a phase's dates are refused
with the dates; a duplicate is refused with a link to the first; a final phase shows scores only
once frozen. Screenshots go to ``out/screenshots/`` (or ``$DSR_SCREENSHOTS``)."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dsr.board.admin import add_baselines
from dsr.board.phases import Season
from dsr.board.service import Metadata
from dsr.collections import load_collection
from dsr.db.base import utcnow
from dsr.evaluation.qrels import read_qrels
from tests.support.board import LiveServer, make_board, plain_rr, read, retag

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("DSR_SCREENSHOTS") or ROOT / "out" / "screenshots")
#: the module's browser and read-only season, made once: its tests on one worker (tests/support/order.py)
pytestmark = pytest.mark.xdist_group("board-season-browser")
VIEWPORTS = {"1280": {"width": 1280, "height": 900}, "390": {"width": 390, "height": 844}}
FITS = "selector => { const e = document.querySelector(selector); return e.scrollWidth <= e.clientWidth; }"
TEAM_RUNS = {"alpha": ["bm25", "random1"], "beta": ["random0"], "gamma": ["random2"]}


SIDECAR = json.dumps(
    {
        "ranker": "random",
        "params": {"seed": 0},
        "versions": {"numpy": "2.1.0"},
        "description": "Random order, a floor",
        "paper": "https://example.org/paper",
        "code": "https://example.org/code",
        "command_line": "dsr rank /home/someone/secret",
    }
).encode()


def holm(p: list[float]) -> list[float]:
    """Holm-Bonferroni, written out (step-down, running maximum)."""
    order = np.argsort(p)
    out, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (len(p) - k)))
        out[i] = running
    return out


def expected_ranks(rr: dict[str, dict[str, float]]) -> tuple[dict[str, str], dict]:
    """Rank ranges by hand: every pair by a paired t-test, Holm over the pairs; a row's
    rank runs from 1 + the rows significantly above to N - the rows significantly below."""
    names, topics = list(rr), sorted(next(iter(rr.values())))
    pairs = list(combinations(names, 2))
    p = holm([stats.ttest_rel([rr[a][t] for t in topics], [rr[b][t] for t in topics]).pvalue for a, b in pairs])
    mean = {n: np.mean([rr[n][t] for t in topics]) for n in names}
    above = {n: 0 for n in names}
    below = {n: 0 for n in names}
    for (a, b), q in zip(pairs, p):
        if q < 0.05:
            hi, lo = (a, b) if mean[a] > mean[b] else (b, a)
            above[lo] += 1
            below[hi] += 1
    ranks = {n: (1 + above[n], len(names) - below[n]) for n in names}
    return {n: str(lo) if lo == hi else f"{lo}–{hi}" for n, (lo, hi) in ranks.items()}, dict(zip(pairs, p))


def season(tmp_path, runs):
    """sample/public (primary RR, baselines initial and bm25), sample/test (hidden, quotas,
    open until next week), sample/early (closed yesterday), sample/late (opens tomorrow),
    sample/final (final phase); teams alpha, beta, gamma with runs on public."""
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    now = utcnow()
    public = board.phases.add_phase("sample", "public", season=Season(primary="RR", closes=now + timedelta(days=7)))
    hidden = board.phases.add_phase(
        "sample", "test", hidden=True, labels=read_qrels(runs / "hidden.qrels"), daily_quota=3, total_quota=5
    )
    board.phases.add_phase("sample", "early", season=Season(closes=now - timedelta(days=1)))
    board.phases.add_phase("sample", "late", season=Season(opens=now + timedelta(days=1)))
    final = board.phases.add_phase("sample", "final", season=Season(final=True))
    for phase in (public, hidden, final):
        add_baselines(board, phase, [str(runs / "initial.run")])
    add_baselines(board, public, [str(runs / "bm25.run")])
    tokens = {team: board.members.add_team(team) for team in TEAM_RUNS}
    for team, names in TEAM_RUNS.items():
        who = board.members.team_for_token(tokens[team])
        for name in names:
            data = retag(read(runs / f"{name}.run"), f"{team}-{name}") if name == "bm25" else read(runs / f"{name}.run")
            board.submit(
                who,
                public,
                data,
                f"{name}.run",
                Metadata(f"{team}-{name}", "", "", "automatic", False),
                SIDECAR if team == "beta" else None,
            )
    alpha = board.members.team_for_token(tokens["alpha"])
    board.submit(alpha, hidden, read(runs / "random3.run"), "random3.run", Metadata("r3", "", "", "automatic", False))
    board.submit(alpha, final, read(runs / "random4.run"), "random4.run", Metadata("r4", "", "", "manual", True))
    return board, tokens


@pytest.fixture(scope="module")
def read_only_season(tmp_path_factory, runs):
    """A :func:`season` under a real uvicorn, one for the module's two tests that only read it
    (pages, ranks and marks); the test that submits and freezes makes its own. (board, tokens,
    server)"""
    tmp_path = tmp_path_factory.mktemp("season")
    board, tokens = season(tmp_path, runs)
    with LiveServer(board) as server:
        yield board, tokens, server
    board.close()


def no_overflow(page) -> None:
    """The page never scrolls sideways (a wide table scrolls inside its own box)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url}: {width} px wide at {page.viewport_size}"


def log_in(page, url: str, token: str) -> None:
    page.goto(f"{url}/login")
    page.fill("#token", token)
    page.click("form.card button[type=submit]")
    page.wait_for_url(f"{url}/submit")


def test_season_pages_in_a_real_browser(browser, read_only_season, runs):
    board, tokens, server = read_only_season
    SHOTS.mkdir(parents=True, exist_ok=True)
    run_id = next(s.id for s in board.submissions(board.phases.get_phase("sample", "public")) if s.system == "beta-random0")
    collection = load_collection("sample")
    labels = {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
    mine, base = plain_rr(runs / "random0.run", labels), plain_rr(runs / "initial.run", labels)
    diff = [mine[t] - base[t] for t in labels]
    wtl = f"{sum(d > 0 for d in diff)} wins, {sum(d == 0 for d in diff)} ties, {sum(d < 0 for d in diff)} losses"
    pages = [
        "/",
        "/login",
        "/board/sample/public",
        "/board/sample/public?columns=all&baselines=all&select=all",
        "/board/sample/test",
        "/board/sample/final",
        f"/runs/{run_id}",
        "/submit",
        "/runs/999",
    ]
    for size, viewport in VIEWPORTS.items():
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        log_in(page, server.url, tokens["gamma"])
        for path in pages:
            page.goto(server.url + path)
            no_overflow(page)
        page.goto(f"{server.url}/board/sample/public")
        page.screenshot(path=str(SHOTS / f"board-{size}.png"), full_page=True)
        page.goto(f"{server.url}/runs/{run_id}")
        page.screenshot(path=str(SHOTS / f"run-{size}.png"), full_page=True)
        meta = page.inner_text("dl.meta")
        for said in (
            "Random order, a floor",
            "https://example.org/paper",
            "https://example.org/code",
            "random",
            "seed=0",
            "numpy 2.1.0",
            "not on this collection",
        ):
            assert said in meta, said
        assert "/home/someone" not in page.content()
        assert page.inner_text("#wtl").startswith(wtl)
        if size == "1280":  # nothing cut off: the board's table fits without scrolling
            for path in pages[2:4]:
                page.goto(server.url + path)
                assert page.evaluate(FITS, "#board-scroll"), path
        context.close()
    for name in ("board-1280", "board-390", "run-1280", "run-390"):
        assert (SHOTS / f"{name}.png").stat().st_size > 10_000


def test_rank_groups_and_marks_match_an_independent_computation(browser, read_only_season, runs):
    board, tokens, server = read_only_season
    collection = load_collection("sample")
    labels = {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
    rr = {
        "initial": plain_rr(runs / "initial.run", labels),
        "bm25": plain_rr(runs / "bm25.run", labels),
        **{f"{t}-{n}": plain_rr(runs / f"{n}.run", labels) for t, names in TEAM_RUNS.items() for n in names},
    }
    page = browser.new_page(viewport=VIEWPORTS["1280"])
    # default view: the chosen baseline (initial) and each team's best by RR
    page.goto(f"{server.url}/board/sample/public")
    shown = ["initial", "alpha-bm25", "beta-random0", "gamma-random2"]
    expected, pvalues = expected_ranks({n: rr[n if n != "alpha-bm25" else "bm25"] for n in shown})
    rows = page.locator("#board tbody tr")
    assert rows.count() == 4 and page.locator("#more-baselines").inner_text() == "1 more"
    got = {}
    for i in range(rows.count()):
        system = rows.nth(i).locator("td.system a").first.inner_text()
        got[system] = (rows.nth(i).locator("td.rank").inner_text(), rows.nth(i).locator("td.group").inner_text())
    assert {n: r for n, (r, _) in got.items()} == expected
    assert any("–" in r for r, _ in got.values()), "some rows should share a rank range"
    for (a, b), p in pvalues.items():  # a shared letter only where the pair is not different
        shares = set(got[a][1]) & set(got[b][1])
        assert not (shares and p < 0.05), (a, b, p)
    # marks: only where Holm over the rows shown against the baseline gives p < 0.05; never ≈
    others = shown[1:]
    p = holm(
        [
            stats.ttest_rel(*[[rr[n if n != "alpha-bm25" else "bm25"][t] for t in labels] for n in (name, "initial")]).pvalue
            for name in others
        ]
    )
    body = page.inner_text("#board")
    assert "≈" not in body
    for name, q in zip(others, p):
        cell = page.locator("#board tbody tr", has_text=name).locator("td.primary").inner_text()
        assert ("▼" in cell or "▲" in cell) == (q < 0.05), (name, q, cell)
    assert "▼" in body  # the random runs are below the initial ranking
    # a team's history is a click away; baselines expand
    page.click("a.history")
    page.wait_for_url("**team=alpha**")
    history = sorted(page.locator("#board td.system a").all_inner_texts())
    assert history == ["alpha-bm25", "alpha-random1", "initial"]
    page.goto(f"{server.url}/board/sample/public")
    page.click("#more-baselines")
    assert page.locator("#board tr.baseline").count() == 2


def test_quota_dates_duplicates_and_freeze_in_a_real_browser(browser, tmp_path, runs):
    board, tokens = season(tmp_path, runs)
    with LiveServer(board) as server:
        page = browser.new_page(viewport=VIEWPORTS["390"])
        log_in(page, server.url, tokens["alpha"])
        # alpha has one run on the hidden phase: 2 of 3 left today, 4 of 5 left in all
        page.goto(f"{server.url}/board/sample/test")
        assert re.search(
            r"Your team: 2 of 3 left today, 4 of 5 left in all \(the day resets at 00:00 UTC\)", page.inner_text("#quota")
        )
        page.goto(f"{server.url}/submit")
        row = page.locator("#quotas tr", has_text="sample / test")
        assert "2 of 3 left today, 4 of 5 left in all" in row.inner_text()

        def submit(phase: str, run: str, system: str) -> None:
            page.goto(f"{server.url}/submit")
            option = page.locator("#phase option", has_text=f"sample / {phase}").first
            page.select_option("#phase", value=option.get_attribute("value"))
            page.set_input_files("#run", str(runs / run))
            page.fill("#system", system)
            page.click("form.card button[type=submit]")
            page.wait_for_load_state()

        submit("test", "random0.run", "again")  # accepted: the quota is now 1 and 3 left
        assert "1 of 3 left today, 3 of 5 left in all" in page.inner_text("#quota")
        no_overflow(page)
        page.screenshot(path=str(SHOTS / "accepted-390.png"), full_page=True)
        submit("test", "random0.run", "twice")  # the same bytes: refused, with a link to the first
        first = board.submissions(board.phases.get_phase("sample", "test"))[-1].id
        assert "on the board already" in page.inner_text(".refused")
        assert page.get_attribute("#duplicate a", "href") == f"/runs/{first}"
        no_overflow(page)
        page.screenshot(path=str(SHOTS / "duplicate-390.png"), full_page=True)
        page.click("#duplicate a")
        page.wait_for_url(f"**/runs/{first}")
        for phase, said in (("early", "this phase closed on"), ("late", "this phase opens on")):
            submit(phase, "random1.run", phase)
            refusal = page.inner_text(".refused")
            assert said in refusal and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", refusal), refusal
        page.goto(f"{server.url}/board/sample/early")
        assert "This phase closed on" in page.inner_text("#season")
        assert len(board.submissions(board.phases.get_phase("sample", "early"))) == 0

        page.goto(f"{server.url}/board/sample/final")  # final phase: no score before the freeze
        assert "not yet published" in page.inner_text("#board") and page.locator("#final-notice").count() == 1
        assert page.request.get(f"{server.url}/board/sample/final/export.csv").status == 403
        run = board.submissions(board.phases.get_phase("sample", "final"))[-1]
        assert page.request.get(f"{server.url}/api/runs/{run.id}").json()["means"] is None
        board.phases.freeze(board.phases.get_phase("sample", "final"))
        page.goto(f"{server.url}/board/sample/final")
        assert "not yet published" not in page.inner_text("#board")
        assert "Frozen on" in page.inner_text("#season")
        export = page.request.get(f"{server.url}/board/sample/final/export.csv").text()
        assert f",{board.phases.get_phase('sample', 'final').collection_hash}," in export
        submit("final", "random2.run", "late entry")
        assert "frozen on" in page.inner_text(".refused")
    board.close()
