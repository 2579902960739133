"""Who may submit, and what a submission can learn, attacked as an adversarial participant would,
each on SQLite and PostgreSQL: per-member tokens (a removed member's
token and a rotated token's old value get 401 on the next request, browser sessions included;
who submitted what is recorded), an Idempotency-Key replayed with a changed field is refused,
duplicates are judged within a team on the parsed ranking (CRLF, added newlines, reordered lines
and gzip do not get past it; another team's runs are never compared, named or revealed), the
login form's CSRF token is bound to its browser, ``dsr submit`` prints the answer on open,
hidden and final phases, and team tokens of before migration 0005 keep working as members'."""

from __future__ import annotations

import gzip
import json
import re
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from dsr.board.models import Member, Submission
from dsr.web import csrf, signin
from tests.support.board import LiveServer, empty_database, engine_at, make_board, read, setup_phases


def post(
    client, token, data: bytes, system: str, phase: str = "public", name: str = "run.run", headers: dict | None = None, **fields
):
    return client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": phase, "system": system, **fields},
        files={"run": (name, data)},
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
    )


def csrf_of(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def rows(board) -> list[Submission]:
    with board.engine.connect() as conn:
        return list(
            conn.execute(
                select(Submission.id, Submission.team_id, Submission.member_id, Submission.system)
                .where(~Submission.baseline)
                .order_by(Submission.id)
            ).all()
        )


def crlf(data: bytes) -> bytes:
    return data.replace(b"\n", b"\r\n")


def test_a_replayed_key_with_changed_fields_is_refused(setup, runs):
    board, client, token = setup
    bm25 = read(runs / "bm25.run")
    key = {"Idempotency-Key": "k-1"}
    first = post(client, token, bm25, "bm25", headers=key, description="first try")
    assert first.status_code == 201, first.text
    again = post(client, token, bm25, "bm25", headers=key, description="first try")
    assert again.status_code == 201 and again.headers["idempotency-replayed"] == "true"
    assert again.json() == first.json()
    # the same key with any field changed: refused, nothing stored, the first row unchanged
    for changed in (
        {"system": "a better name"},
        {"description": "second try"},
        {"link": "https://x.org"},
        {"run_type": "manual"},
        {"trained_on_collection": "true"},
        {"phase": "test"},
    ):
        fields = {"system": "bm25", "description": "first try", **changed}
        answer = post(client, token, bm25, headers=key, **fields)
        assert answer.status_code == 422, (changed, answer.text)
        assert "Idempotency-Key" in answer.json()["error"] and "idempotency-replayed" not in answer.headers
    for other in (crlf(bm25), read(runs / "random0.run")):  # another run (even the same ranking)
        assert post(client, token, other, "bm25", headers=key, description="first try").status_code == 422
    assert post(client, token, bm25, "bm25", headers=key, description="first try", name="other-name.run").status_code == 422
    assert [r.system for r in rows(board)] == ["bm25"]


def test_a_removed_member_and_a_rotated_token_get_401_at_once(setup, runs):
    board, client, lead = setup
    ada, ben = board.members.add_member("alpha", "Ada"), board.members.add_member("alpha", "Ben", "ben@example.org")
    assert post(client, ada, read(runs / "bm25.run"), "by ada").status_code == 201
    # Ada logs in with the browser too
    browser = TestClient(client.app)
    login = browser.post("/login", data={"token": ada, "csrf": csrf_of(browser.get("/login").text)}, follow_redirects=False)
    assert login.status_code == 303 and browser.get("/submit", follow_redirects=False).status_code == 200
    board.members.remove_member("alpha", "Ada")
    answer = post(client, ada, read(runs / "random0.run"), "after removal")
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/api/quota/sample/public", headers={"Authorization": f"Bearer {ada}"}).status_code == 401
    assert browser.get("/submit", follow_redirects=False).headers["location"] == "/login"  # session ended
    assert browser.post("/login", data={"token": ada, "csrf": csrf_of(browser.get("/login").text)}).status_code == 401
    # a rotated token: the old value gets 401, the new one works; the team's other members go on
    new_ben = board.members.rotate_token("alpha", "Ben")
    assert new_ben != ben
    assert post(client, ben, read(runs / "random1.run"), "old token").status_code == 401
    assert post(client, new_ben, read(runs / "random1.run"), "by ben").status_code == 201
    assert post(client, lead, read(runs / "random2.run"), "by lead").status_code == 201
    # who submitted what, per member (Ada's run stays hers after she is removed)
    with board.engine.connect() as conn:
        names = dict(conn.execute(select(Member.id, Member.name)).all())
        stored = {system: names[member] for _, _, member, system in rows(board)}
        tokens = [h for h in conn.execute(text("select token_hash from team_members")).scalars()]
    assert stored == {"by ada": "Ada", "by ben": "Ben", "by lead": "lead"}
    assert len([h for h in tokens if h]) == 2  # Ada's is gone
    assert not any(t in json.dumps(tokens) for t in (ada, ben, new_ben, lead))  # hashes only
    # nobody gets a token of the organisers' team (its runs skip quotas)
    from dsr.core.errors import InputError

    with pytest.raises(InputError, match="organisers' team"):
        board.members.add_member("baselines", "mallory")
    # a removed name can be added again, with a new token; the old one stays dead
    again = board.members.add_member("alpha", "Ada")
    assert post(client, ada, read(runs / "random3.run"), "old").status_code == 401
    assert post(client, again, read(runs / "random3.run"), "new").status_code == 201
    browser.close()


def test_duplicates_are_judged_within_a_team_on_the_parsed_ranking(setup, runs):
    board, client, token = setup
    bm25 = read(runs / "bm25.run")
    first = post(client, token, bm25, "bm25")
    assert first.status_code == 201
    mine = f"/runs/{first.json()['id']}"
    lines = bm25.splitlines(keepends=True)
    spaced = b"".join(b"  ".join(line.split()) + b"\n" for line in lines)
    rescored = b"".join(
        b" ".join(f[:4] + [repr(float(f[4])).encode() + b"0", f[5]]) + b"\n" for f in (line.split() for line in lines)
    )
    variants = {
        "CRLF": crlf(bm25),
        "an added newline": bm25 + b"\n",
        "blank lines": b"\n" + bm25 + b"\n\n",
        "no final newline": bm25.rstrip(b"\n"),
        "lines reordered": b"".join(reversed(lines)),
        "tabs and spaces": spaced.replace(b"  ", b"\t", 1),
        "scores written 1.50": rescored,
        "gzip": gzip.compress(crlf(bm25)),
    }
    for what, data in variants.items():
        answer = post(client, token, data, f"bm25 {what}", name="bm25.run.gz" if what == "gzip" else "x.run")
        assert answer.status_code == 409, (what, answer.text)
        assert answer.json()["first"] == mine and mine in answer.json()["error"]
    # another team: its own copy is taken, and no answer names or hints at alpha's run
    beta = board.members.add_team("beta")
    theirs = [post(client, beta, data, f"copy {what}") for what, data in (("plain", bm25), ("CRLF", crlf(bm25)))]
    assert theirs[0].status_code == 201 and theirs[1].status_code == 409
    assert theirs[1].json()["first"] == f"/runs/{theirs[0].json()['id']}"
    for answer in theirs:
        assert mine not in answer.text and "alpha" not in answer.text
    # nor does a run page: the file's sha256 (anyone can hash a run they can make) is the team's own
    digest = first.json()["sha256"]
    own = client.get(mine.replace("/runs", "/api/runs"), headers={"Authorization": f"Bearer {token}"}).json()
    assert own["sha256"] == digest
    for who in ({}, {"Authorization": f"Bearer {beta}"}):
        assert digest[:16] not in client.get(mine.replace("/runs", "/api/runs"), headers=who).text
        assert digest[:16] not in TestClient(client.app).get(mine, headers=who).text
    # a run with another ranking is no duplicate
    assert post(client, token, read(runs / "random0.run"), "r0").status_code == 201
    assert len(rows(board)) == 3


def test_the_login_forms_csrf_token_is_bound_to_its_browser(setup):
    board, client, token = setup
    attacker, victim = TestClient(client.app), TestClient(client.app)
    theirs = csrf_of(attacker.get("/login").text)
    mine = csrf_of(victim.get("/login").text)
    # another browser's form token, with the victim's own cookie
    assert victim.post("/login", data={"token": token, "csrf": theirs}).status_code == 403
    # a cookie and field the attacker chose (the double submit that main took)
    forged = TestClient(client.app)
    forged.cookies.set("dsr_csrf", "chosen-by-attacker", domain="testserver.local")
    assert forged.post("/login", data={"token": token, "csrf": "chosen-by-attacker"}).status_code == 403
    forged.cookies.set("dsr_csrf", "another-browser", domain="testserver.local")  # with the attacker's field
    assert forged.post("/login", data={"token": token, "csrf": theirs}).status_code == 403
    # a token is good for a day, not more
    binding = "nonce:" + victim.cookies.get("dsr_csrf")
    stale = csrf.issue(board.context.login_secret(), "board", binding, issued=time.time() - signin.FORM_SECONDS - 60)
    younger = csrf.issue(board.context.login_secret(), "board", binding, issued=time.time() - signin.FORM_SECONDS + 60)
    assert csrf.valid(board.context.login_secret(), "board", binding, younger, signin.FORM_SECONDS)
    assert victim.post("/login", data={"token": token, "csrf": stale}).status_code == 403
    value, _stamp, mac = mine.split(".")  # nor with its time changed
    assert victim.post("/login", data={"token": token, "csrf": f"{value}.AAAAAA.{mac}"}).status_code == 403
    assert victim.post("/login", data={"token": token, "csrf": mine}, follow_redirects=False).status_code == 303
    for c in (attacker, victim, forged):
        c.close()


@pytest.mark.parametrize("path", ["/login", "/judge/login"])
def test_a_login_form_token_planted_in_a_victims_browser_does_not_log_them_in(setup, path):
    """Issue 40: the attacker fetches a login form (its token and nonce cookie), plants both in
    the victim's browser and makes it post the form with the attacker's own member token
    (login CSRF: the victim would then work, and submit, as the attacker). The post comes
    from the attacker's page: its Origin (or Referer) is not the board's, so it is refused
    (403) and no session is opened; the same form posted from the board's own page logs in."""
    from dsr.server import create_site

    board, client, token = setup
    app = create_site(board)
    judging_token = None
    if path.startswith("/judge"):
        from dsr.judging.campaigns import Judging

        judging_token = Judging(board.engine).assignments.add_assessor("mallory")
    mine = judging_token or token
    cookie = "dsr_judge_csrf" if path.startswith("/judge") else "dsr_csrf"
    attacker = TestClient(app)
    planted = csrf_of(attacker.get(path).text)
    nonce = attacker.cookies.get(cookie)
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Referer": "http://evil.example/page"},
        {"Origin": "http://testserver.evil.example"},
    ):
        victim = TestClient(app)
        victim.cookies.set(cookie, nonce, domain="testserver.local")
        answer = victim.post(path, data={"token": mine, "csrf": planted}, headers=headers, follow_redirects=False)
        assert answer.status_code == 403, (headers, answer.status_code)
        assert not {"dsr_session", "dsr_judge"} & set(victim.cookies), headers
        victim.close()
    # the same pair posted from the board's own page (what the attacker cannot make a victim do)
    victim = TestClient(app)
    victim.cookies.set(cookie, nonce, domain="testserver.local")
    answer = victim.post(
        path, data={"token": mine, "csrf": planted}, headers={"Origin": "http://testserver"}, follow_redirects=False
    )
    assert answer.status_code == 303
    for c in (attacker, victim):
        c.close()


@pytest.mark.slow
def test_dsr_submit_prints_the_answer_on_open_hidden_and_final_phases(db_url, tmp_path, runs, capsys):
    from dsr.board.phases import Season
    from dsr.cli import main
    from dsr.evaluation.qrels import read_qrels

    board = make_board(db_url, tmp_path)
    setup_phases(board, runs)
    board.phases.add_phase(
        "sample", "final", hidden=True, labels=read_qrels(runs / "hidden.qrels"), season=Season(final=True), allow_overlap=True
    )  # the hidden phase's labels again
    token = board.members.add_team("alpha")
    with LiveServer(board) as server:
        for phase, run in (("public", "bm25"), ("test", "random0"), ("final", "random1")):
            capsys.readouterr()
            submit = ["submit", "sample", str(runs / f"{run}.run"), "--server", server.url, "--token", token, "--phase", phase]
            code = main([*submit, "--system", run])
            out, err = capsys.readouterr()
            assert code == 0, (phase, out, err)
            assert "Traceback" not in out + err
            assert re.search(r"^accepted: run #\d+ http://127\.0\.0\.1:\d+/runs/\d+$", out, re.M), out
            if phase == "final":
                assert "scores: none published yet" in out and "RR" not in out
            else:
                assert re.search(r"(all dialogues|\w+): .*\d\.\d{4}", out), out
            assert main([*submit, "--json"]) == 2  # a duplicate: refused, said, no traceback
            out = capsys.readouterr().out
            assert json.loads(out)["status"] == 409
    board.close()


@empty_database
def test_team_tokens_of_before_0005_keep_working_as_a_members(db_url, tmp_path, capsys):
    """A board made at migration 0004 (one token per team) upgraded: the token works, is a member
    named 'team token' that rotate-token and remove-member act on; old browser sessions end."""
    from dsr.db.tokens import hash_token

    engine = engine_at(db_url, "0004")
    old = "dsr_an-old-team-token"
    with engine.begin() as conn:
        conn.execute(
            text("insert into teams (name, token_hash, organiser, created_at) values ('old', :h, false, '2026-01-01')"),
            {"h": hash_token(old)},
        )
        team_id = conn.execute(text("select id from teams where name = 'old'")).scalar()
        conn.execute(
            text("insert into web_sessions (key_hash, team_id, expires_at, csrf) values ('k', :t, '2999-01-01', 'c')"),
            {"t": team_id},
        )
        conn.execute(
            text(
                "insert into team_members (team_id, name, email, added_at) "  # 0004's people
                "values (:t, 'ada', 'ada@example.org', '2026-01-01')"
            ),
            {"t": team_id},
        )
    engine.dispose()
    board = make_board(db_url, tmp_path)  # migrates to the head
    team, member = board.members.identify(old)
    assert team.name == "old" and member.name == "team token"
    with board.engine.connect() as conn:
        assert conn.execute(text("select count(*) from web_sessions")).scalar() == 0
        assert conn.execute(text("select token_hash from teams where name = 'old'")).scalar() != hash_token(old)
    # issue 40: a member of before 0005 holds no token; board list said "active"
    from dsr.cli import main

    capsys.readouterr()
    assert main(["board", "list", "--db", db_url, "--store", str(tmp_path / "store")]) == 0
    listed = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if line.startswith("old ")}
    assert "no token" in listed["ada"] and "active" not in listed["ada"], listed
    assert listed["team"].rstrip().endswith("active")  # 'team token' holds one
    new = board.members.rotate_token("old", "team token")
    assert board.members.identify(old) is None and board.members.identify(new)[0].name == "old"
    board.members.remove_member("old", "team token")
    assert board.members.identify(new) is None
    board.close()
