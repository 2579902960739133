"""Login CSRF in a real browser (Debian's chromium, headless), issue 40: an attacker fetches the
board's login form (its CSRF token and the nonce cookie it is bound to), and from a page of
their own, on another port of the same host (the same site, so the planted cookie goes along),
plants the cookie in the victim's browser and posts the form with the attacker's own member
token. Logged in so, the victim would work, and submit, as the attacker. The post comes from
the attacker's origin: refused (403), and the victim's browser holds no session."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from tests.support.board import LiveServer, free_port, make_board

pytestmark = pytest.mark.slow


class AttackerSite:
    """A page on 127.0.0.1:PORT that plants a cookie and posts a form to the board."""

    def __init__(self, html: str):
        body = html.encode()

        class Page(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.mark.parametrize(
    "login, cookie, session", [("/login", "dsr_csrf", "dsr_session"), ("/judge/login", "dsr_judge_csrf", "dsr_judge")]
)
def test_a_planted_login_form_does_not_log_the_victim_in(browser, tmp_path, login, cookie, session):
    from dsr.judging.campaigns import Judging

    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    token = (
        Judging(board.engine).assignments.add_assessor("mallory")
        if login.startswith("/judge")
        else board.members.add_team("mallory")
    )
    with LiveServer(board) as server:
        form = httpx.get(server.url + login)  # the attacker's own fetch
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text).group(1)
        nonce = form.cookies[cookie]
        site = AttackerSite(f"""<!doctype html><body>
<form id="f" method="post" action="{server.url}{login}">
<input name="token" value="{token}"><input name="csrf" value="{csrf}"></form>
<script>document.cookie = "{cookie}={nonce}; path=/"; document.getElementById("f").submit();</script>
</body>""")
        try:
            context = browser.new_context()
            page = context.new_page()
            with page.expect_response(lambda r: r.request.method == "POST" and r.url == server.url + login) as posted:
                page.goto(site.url)
            answer = posted.value
            page.wait_for_load_state()
            planted = {c["name"]: c["value"] for c in context.cookies(server.url)}
            assert planted.get(cookie) == nonce  # the plant took: the same site
            assert answer.status == 403, answer.status
            assert session not in planted  # no session opened
            home = page.goto(server.url + ("/judge" if login.startswith("/judge") else "/submit"))
            assert "/login" in home.url  # not logged in as mallory
            # the same form filled on the board's own page logs in (the origin is the board's)
            page.goto(server.url + login)
            page.fill("input[name=token]", token)
            page.click("button[type=submit]")
            page.wait_for_load_state()
            assert session in {c["name"] for c in context.cookies(server.url)}
            context.close()
        finally:
            site.close()
    board.close()
