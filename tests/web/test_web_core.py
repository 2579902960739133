"""The web core (dsr/web) that the board and judging share, tested on the real site
(``dsr serve``'s app under uvicorn on 127.0.0.1) through both applications: CSRF tokens
bound to the browser and to its session, sign-out and revocation ending a session, the
security headers, and the shared layout, sign-in form and error page."""

from __future__ import annotations

import re
import time

import httpx
import pytest

from dsr.judging.campaigns import Judging
from dsr.web import csrf
from tests.support.board import LiveServer, make_board
from tests.support.tiers import slow_fixture

#: what differs between the two applications: their pages, and one page only a signed-in
#: person sees (others are sent to the login page)
APPS = {
    "board": {
        "login": "/login",
        "logout": "/logout",
        "private": "/submit",
        "cookie": "dsr_session",
        "nonce": "dsr_csrf",
        "name": "dsr leaderboard",
        "back": "Back to the boards",
    },
    "judging": {
        "login": "/judge/login",
        "logout": "/judge/logout",
        "private": "/judge",
        "cookie": "dsr_judge",
        "nonce": "dsr_judge_csrf",
        "name": "dsr judging",
        "back": "Your campaigns",
    },
}


@pytest.fixture(scope="module")
@slow_fixture
def site(tmp_path_factory):
    """The whole site with team ``alpha`` (member token) and assessor ``alice``."""
    tmp = tmp_path_factory.mktemp("web")
    board = make_board(f"sqlite:///{tmp / 'board.sqlite'}", tmp)
    tokens = {"board": board.members.add_team("alpha"), "judging": Judging(board.engine).assignments.add_assessor("alice")}
    with LiveServer(board) as server:
        yield server, board, tokens
    board.close()


def form_csrf(text: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', text).group(1)


def browser(server) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=30, follow_redirects=False)


def sign_in(server, app: str, token: str) -> httpx.Client:
    client = browser(server)
    paths = APPS[app]
    answer = client.post(paths["login"], data={"csrf": form_csrf(client.get(paths["login"]).text), "token": token})
    assert answer.status_code == 303, answer.text
    assert client.get(paths["private"]).status_code == 200
    return client


def signed_in(client: httpx.Client, app: str) -> bool:
    answer = client.get(APPS[app]["private"])
    assert answer.status_code in (200, 303)
    return answer.status_code == 200


@pytest.mark.parametrize("app", APPS)
def test_a_forged_or_foreign_csrf_token_is_refused(site, app):
    server, _board, tokens = site
    paths = APPS[app]
    # an attacker's own cookie and field (the plain double submit) is no token
    forged = browser(server)
    forged.cookies.set(paths["nonce"], "chosen-by-attacker")
    assert forged.post(paths["login"], data={"csrf": "chosen-by-attacker", "token": tokens[app]}).status_code == 403
    # a token of another browser, with the victim's own nonce cookie
    attacker, victim = browser(server), browser(server)
    theirs = form_csrf(attacker.get(paths["login"]).text)
    mine = form_csrf(victim.get(paths["login"]).text)
    assert theirs != mine
    assert victim.post(paths["login"], data={"csrf": theirs, "token": tokens[app]}).status_code == 403
    # the other application's token, made for the same browser
    other = next(a for a in APPS if a != app)
    foreign = form_csrf(victim.get(APPS[other]["login"]).text)
    assert victim.post(paths["login"], data={"csrf": foreign, "token": tokens[app]}).status_code == 403
    # a tampered one; then the browser's own passes
    value, _stamp, mac = mine.split(".")
    assert victim.post(paths["login"], data={"csrf": f"{value}.AAAAAA.{mac}", "token": tokens[app]}).status_code == 403
    assert victim.post(paths["login"], data={"csrf": mine, "token": tokens[app]}).status_code == 303
    assert signed_in(victim, app) and not signed_in(attacker, app) and not signed_in(forged, app)
    for client in (forged, attacker, victim):
        client.close()


@pytest.mark.parametrize("app", APPS)
def test_a_token_of_one_session_is_refused_in_another(site, app):
    server, _board, tokens = site
    first, second = sign_in(server, app, tokens[app]), sign_in(server, app, tokens[app])
    mine = form_csrf(first.get(APPS[app]["private"]).text)
    # replayed in the other session (even with the first one's nonce copied over)
    second.cookies.set(APPS[app]["nonce"], first.cookies.get(APPS[app]["nonce"]) or "x")
    assert second.post(APPS[app]["logout"], data={"csrf": mine}).status_code == 403
    assert signed_in(second, app)
    # the signed-out form's token is no longer good once signed in
    login_token = form_csrf(browser(server).get(APPS[app]["login"]).text)
    assert second.post(APPS[app]["logout"], data={"csrf": login_token}).status_code == 403
    assert first.post(APPS[app]["logout"], data={"csrf": mine}).status_code == 303
    for client in (first, second):
        client.close()


@pytest.mark.parametrize("app", APPS)
def test_a_session_cookie_is_of_no_use_after_signing_out(site, app):
    server, _board, tokens = site
    paths = APPS[app]
    client = sign_in(server, app, tokens[app])
    cookie = client.cookies.get(paths["cookie"])
    token = form_csrf(client.get(paths["private"]).text)
    assert client.post(paths["logout"], data={"csrf": token}).status_code == 303
    assert not signed_in(client, app)
    copy = browser(server)  # the copied cookie, and the session's token
    copy.cookies.set(paths["cookie"], cookie)
    assert not signed_in(copy, app)
    assert copy.post(paths["logout"], data={"csrf": token}).status_code in (303, 403)
    assert not signed_in(copy, app)
    for c in (client, copy):
        c.close()


def test_revoking_a_members_token_ends_their_browser_sessions(site):
    server, board, _tokens = site
    token = board.members.add_member("alpha", "bea")
    client = sign_in(server, "board", token)
    board.members.remove_member("alpha", "bea")
    assert not signed_in(client, "board")
    assert client.post("/submit", data={"csrf": "x"}).status_code == 401
    client.close()


@pytest.mark.parametrize("app", APPS)
def test_both_apps_share_the_layout_the_error_page_and_the_headers(site, app):
    server, _board, _tokens = site
    paths = APPS[app]
    with browser(server) as client:
        login = client.get(paths["login"])
        refused = client.post(paths["login"], data={"token": "x"})
    assert refused.status_code == 403 and "CSRF token is missing or wrong" in refused.text
    for answer in (login, refused):
        assert '<link rel="stylesheet" href="/static/site.css">' in answer.text
        assert '<a class="brand" href="' in answer.text and paths["name"] in answer.text
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert paths["back"] in refused.text and f'action="{paths["login"]}"' in login.text
    assert ("script-src 'self'" in login.headers["content-security-policy"]) == (app == "judging")
    assert httpx.get(f"{server.url}/static/site.css").status_code == 200


def test_a_token_is_bound_to_its_app_binding_secret_and_age():
    secret, other = b"s" * 32, b"t" * 32
    token = csrf.issue(secret, "board", "nonce:a")
    assert csrf.valid(secret, "board", "nonce:a", token, 60)
    refused = [
        (other, "board", "nonce:a", token),
        (secret, "judging", "nonce:a", token),
        (secret, "board", "nonce:b", token),
        (secret, "board", None, token),
        (secret, "board", "nonce:a", token + "x"),
        (secret, "board", "nonce:a", None),
        (secret, "board", "nonce:a", "é" + token),
    ]
    assert not any(csrf.valid(*case, 60) for case in refused)
    old = csrf.issue(secret, "board", "nonce:a", issued=time.time() - 120)
    future = csrf.issue(secret, "board", "nonce:a", issued=time.time() + 3600)
    assert csrf.valid(secret, "board", "nonce:a", old, 180)
    assert not csrf.valid(secret, "board", "nonce:a", old, 60)
    assert not csrf.valid(secret, "board", "nonce:a", future, 86400)
