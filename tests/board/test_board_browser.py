"""The leaderboard in a real browser: Debian's chromium, headless, driven by Playwright's Python
API against the real uvicorn server on 127.0.0.1 (Playwright's own browser download is never
used). Log in with a token, upload a run through the form, see it ranked on the board, see an
invalid run's line-numbered errors; screenshots go to tmp_path."""

from __future__ import annotations

from tests.support.board import LiveServer, make_board, setup_phases


def test_login_upload_rank_and_errors_in_a_real_browser(browser, tmp_path, runs):
    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    setup_phases(board, runs, daily_quota=3)
    token = board.members.add_team("alpha")
    lines = (runs / "bm25.run").read_text().splitlines(keepends=True)
    lines[4] = lines[4].replace(" Q0 ", " Q0 not_a_candidate_", 1)
    bad = tmp_path / "broken.run"
    cut = " ".join(lines[-1].split()[:4])  # and a last line cut short
    bad.write_text("".join(lines[:-1]) + cut)
    with LiveServer(board) as server:
        page = browser.new_page(viewport={"width": 1366, "height": 800})
        page.goto(f"{server.url}/login")
        page.fill("#token", token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{server.url}/submit")
        assert "team alpha" in page.inner_text("header")

        page.select_option("#phase", label=page.locator("#phase option", has_text="sample / public").inner_text().strip())
        page.set_input_files("#run", str(runs / "bm25.run"))
        page.fill("#system", "BM25 <script>alert(1)</script>")
        page.fill("#description", "Okapi BM25 over the whole context")
        page.click("form.card button[type=submit]")
        page.wait_for_url("**/runs/*?submitted=1")
        assert "Accepted" in page.inner_text("p.ok")
        page.screenshot(path=str(tmp_path / "run.png"), full_page=True)

        page.click("p.ok a")  # to the board
        page.wait_for_selector("#board")
        rows = page.locator("#board tbody tr")
        systems = [rows.nth(i).locator("td.system").inner_text() for i in range(rows.count())]
        # by nDCG@5 (the primary measure) BM25's 0.5119 is above the initial ranking's 0.4781
        assert systems[0].startswith("BM25 <script>alert(1)</script>")  # shown as text
        assert systems[1].startswith("initial") and "baseline" in systems[1]
        assert rows.first.locator("td.primary").inner_text().startswith("0.5119")
        page.click("nav.controls a:text-is('RR')")  # sort by RR
        page.wait_for_url("**sort=RR**")
        first = page.locator("#board tbody tr").first
        assert first.locator("td.system").inner_text().startswith("initial")  # 0.7208 > 0.7136
        assert first.locator("td.primary").inner_text().startswith("0.7208")
        page.screenshot(path=str(tmp_path / "board.png"), full_page=True)

        page.goto(f"{server.url}/submit")
        page.set_input_files("#run", str(bad))
        page.fill("#system", "broken")
        page.click("form.card button[type=submit]")
        page.wait_for_selector(".refused")
        problems = page.locator(".problems li").all_inner_texts()
        assert problems[0].startswith("line 5") and "not a candidate" in problems[0]
        assert any(p.startswith(f"line {len(lines)}") and "truncated" in p for p in problems)
        page.screenshot(path=str(tmp_path / "refused.png"), full_page=True)

        page.goto(f"{server.url}/board/sample/public")
        assert page.locator("#board tbody tr").count() == 2  # the refused run is not there
    board.close()
    for name in ("run.png", "board.png", "refused.png"):
        assert (tmp_path / name).stat().st_size > 10_000
