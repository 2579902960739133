"""The judging pages over HTTP (real uvicorn on loopback): log in with an assessor token, grade
through the JSON API (CSRF from the browser, bearer from clients) and the no-JavaScript form,
and pages that show an assessor nothing of the others' grades nor which sentences are checks."""

from __future__ import annotations

import json
import re

import httpx

from tests.support.judging import assignments


def login(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30, follow_redirects=False)
    page = client.get("/judge/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    answer = client.post("/judge/login", data={"csrf": csrf, "token": token})
    assert answer.status_code == 303 and answer.headers["location"] == "/judge"
    return client


def test_login_progress_and_grading_paths(served_campaign):
    server, judging, tokens = served_campaign
    anonymous = httpx.get(f"{server.url}/judge", follow_redirects=False)
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/judge/login"
    fresh = httpx.Client(base_url=server.url)
    assert fresh.post("/judge/login", data={"token": tokens["alice"]}).status_code == 403  # no CSRF
    page = fresh.get("/judge/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert fresh.post("/judge/login", data={"csrf": csrf, "token": "dsr_wrong"}).status_code == 401

    alice = login(server.url, tokens["alice"])
    index = alice.get("/judge")
    held = sum(p["assessor"] == "alice" for p in assignments(judging, "s1"))  # 413 sentences
    assert "s1" in index.text and f"0 / {held}" in index.text
    first = alice.get("/judge/s1")
    assert first.status_code == 303 and re.fullmatch(r"/judge/s1/task/\d+", first.headers["location"])
    task = alice.get(first.headers["location"])
    assert "script-src 'self'" in task.headers["content-security-policy"]
    assert "script-src" not in httpx.get(f"{server.url}/").headers["content-security-policy"]
    keys = re.findall(r'data-key="([0-9a-f]{16})"', task.text)
    csrf = re.search(r'<meta name="csrf" content="([^"]+)"', task.text).group(1)  # what judge.js sends
    answer = alice.post("/judge/api/grades", json={"item": keys[0], "grade": 2})
    assert answer.status_code == 403  # no X-CSRF-Token
    answer = alice.post("/judge/api/grades", json={"item": keys[0], "grade": 2, "seconds": 3.2}, headers={"X-CSRF-Token": csrf})
    assert answer.status_code == 200 and answer.json() == {"item": keys[0], "grade": 2, "unsure": False, "new": True}
    assert (
        alice.post("/judge/api/grades", json={"item": keys[0], "grade": 1}, headers={"X-CSRF-Token": csrf}).json()["new"] is False
    )
    form = alice.post(first.headers["location"], data={"csrf": csrf, "item": keys[1], "unsure": "1"})
    assert form.status_code == 303
    bearer = {"Authorization": f"Bearer {tokens['alice']}"}
    assert httpx.post(f"{server.url}/judge/api/grades", json={"item": keys[2], "grade": 0}, headers=bearer).json()["new"] is True
    assert httpx.post(f"{server.url}/judge/api/grades", content=b"{", headers=bearer).status_code == 400
    assert httpx.post(f"{server.url}/judge/api/grades", json={"item": keys[2], "grade": True}, headers=bearer).status_code == 400
    assert httpx.post(f"{server.url}/judge/api/grades", json={"item": keys[2], "grade": 0}).status_code == 401
    grades = judging.grades_frame(judging.campaign("s1"))
    assert len(grades) == 3 and set(grades["assessor"]) == {"alice"}
    mine = grades.set_index("item").sort_index()
    assert sorted(zip(mine["grade"].fillna(-1), mine["unsure"])) == sorted([(1.0, False), (-1, True), (0.0, False)])
    page = alice.get(first.headers["location"]).text
    assert page.count('class="item graded"') == 3 and 'data-grade="u"' in page
    listing = httpx.get(f"{server.url}/judge/api/campaigns/s1/tasks", headers=bearer).json()
    assert listing["tasks"][0]["items"] == keys and listing["tasks"][0]["done"] == 3


def test_pages_are_blind(served_campaign):
    server, judging, tokens = served_campaign
    pairs = assignments(judging, "s1")
    by_task: dict[int, set[str]] = {}
    for p in pairs:
        by_task.setdefault(p["seq"], set()).add(p["assessor"])
    seq = next(s for s, who in by_task.items() if {"alice", "bob"} <= who)
    shared = [p for p in pairs if p["seq"] == seq and p["assessor"] == "bob"]
    bearer = {"Authorization": f"Bearer {tokens['bob']}"}
    for p in shared:
        assert (
            httpx.post(f"{server.url}/judge/api/grades", json={"item": p["key"], "grade": 2}, headers=bearer).status_code == 200
        )
    alice = login(server.url, tokens["alice"])
    page = alice.get(f"/judge/s1/task/{seq}").text
    items = page.split('id="items"')[1].split("</ol>")[0]
    assert "data-grade" not in page and "graded" not in items and "chosen" not in items
    assert "gold" not in page.lower() and "honeypot" not in page.lower() and "bob" not in page
    for marker in ("quote", "unrelated", "same-document", "related-document", "check", "pool"):
        assert marker not in items.lower()
    assert len(set(re.findall(r'<li class="item" id="i\d+" data-key="[0-9a-f]{16}"\s*>', items))) == items.count(
        "<li "
    )  # every sentence's markup alike
    candidates = {p["candidate"] for p in pairs if p["candidate"]}
    assert not any(c in page for c in candidates)  # no candidate ids either
    not_mine = next(s for s, who in by_task.items() if "alice" not in who)
    assert alice.get(f"/judge/s1/task/{not_mine}").status_code == 403
    alice_api = {"Authorization": f"Bearer {tokens['alice']}"}
    task = httpx.get(f"{server.url}/judge/api/campaigns/s1/tasks/{seq}", headers=alice_api).json()
    assert [s["key"] for s in task["sentences"]] == re.findall(r'data-key="([0-9a-f]{16})"', items)
    assert all(s["body"] and s["grade"] is None for s in task["sentences"])  # bob's grades unseen
    assert set(task) == {"campaign", "seq", "title", "turns", "next_speaker", "sentences", "scale"}
    assert set().union(*map(set, task["sentences"])) == {"key", "title", "body", "grade"}
    assert not any(c in json.dumps(task) for c in candidates) and "bob" not in json.dumps(task)
    assert httpx.get(f"{server.url}/judge/api/campaigns/s1/tasks/{not_mine}", headers=alice_api).status_code == 403
    assert httpx.get(f"{server.url}/judge/api/campaigns/s1/tasks/{seq}").status_code == 401
    assert httpx.get(f"{server.url}/judge/api/campaigns/nope/tasks/1", headers=alice_api).status_code == 404
    assert alice.get("/judge/nope/task/1").status_code == 404
