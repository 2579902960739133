"""Issue 40: an assessor's token can be revoked and rotated, as a team member's can
(``dsr judge remove-assessor``, ``dsr judge rotate-token``), on SQLite and PostgreSQL: the old
token gets 401 from the API and the login form refuses it, the browser sessions it opened
end, from the next request of a server that was running all along (the command runs in
another process's place: another ``Judging`` on the same database); grades stay."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from dsr.cli import main
from dsr.judging.campaigns import Judging
from tests.support.board import make_board
from tests.support.judging import sample_campaign

pytestmark = pytest.mark.slow


def login(app, token: str, expect: int = 303) -> TestClient:
    browser = TestClient(app, follow_redirects=False)
    page = browser.get("/judge/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    answer = browser.post("/judge/login", data={"csrf": csrf, "token": token})
    assert answer.status_code == expect, answer.text[:300]
    return browser


def test_remove_and_rotate_an_assessors_token(db_url, tmp_path, capsys):
    from dsr.server import create_site

    board = make_board(db_url, tmp_path)
    judging = Judging(board.engine)
    _, tokens = sample_campaign(judging)
    app = create_site(board)
    api = TestClient(app, follow_redirects=False)
    tasks = "/judge/api/campaigns/s1/tasks"

    def status(token: str) -> int:
        return api.get(tasks, headers={"Authorization": f"Bearer {token}"}).status_code

    assert status(tokens["alice"]) == 200
    browser = login(app, tokens["alice"])
    assert browser.get("/judge").status_code == 200
    first = api.get(tasks, headers={"Authorization": f"Bearer {tokens['alice']}"}).json()["tasks"][0]["items"][0]
    assert (
        api.post(
            "/judge/api/grades", json={"item": first, "grade": 2}, headers={"Authorization": f"Bearer {tokens['alice']}"}
        ).status_code
        == 200
    )
    db = ["--db", db_url]
    capsys.readouterr()
    # rotate: a new token works, the old one and the browser session do not
    assert main(["judge", "rotate-token", "alice", *db]) == 0
    new = capsys.readouterr().out.strip()
    assert new.startswith("dsr_") and new != tokens["alice"]
    assert status(tokens["alice"]) == 401 and status(new) == 200
    assert browser.get("/judge").headers.get("location") == "/judge/login"
    login(app, tokens["alice"], expect=401)  # the login form refuses the old token
    # remove: the token stops, grades stay, list says so
    again = login(app, new)
    assert again.get("/judge").status_code == 200
    assert main(["judge", "remove-assessor", "alice", *db]) == 0
    assert "1 grade(s) stay" in capsys.readouterr().err
    assert status(new) == 401 and again.get("/judge").headers.get("location") == "/judge/login"
    assert len(judging.grades_frame(judging.campaign("s1"))) == 1
    assert main(["judge", "list", *db]) == 0
    out = capsys.readouterr().out
    assert "assessor alice (web, removed: no token)" in out and "assessor bob (web, token active)" in out
    # a removed assessor has no token to rotate or remove; add-assessor gives them a new one
    assert main(["judge", "rotate-token", "alice", *db]) == 2
    assert "removed: dsr judge add-assessor" in capsys.readouterr().err
    assert main(["judge", "remove-assessor", "nobody", *db]) == 2
    assert "no assessor 'nobody'" in capsys.readouterr().err
    assert main(["judge", "add-assessor", "alice", *db]) == 0
    back = capsys.readouterr().out.strip()
    assert status(back) == 200 and status(new) == 401
    assert main(["judge", "add-assessor", "bob", *db]) == 2  # holds a token: rotate it instead
    assert "rotate-token" in capsys.readouterr().err
    api.close()
    board.close()
