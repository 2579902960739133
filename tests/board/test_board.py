"""The leaderboard server's core paths on SQLite and PostgreSQL: submit -> validate -> score ->
board -> pages/API, quotas, baselines and significance, rebuild and export.

Numbers are checked against plain computations written here (reciprocal rank
from the run file's order, scipy's paired t-test, Holm by hand), not against
the code under test.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scipy import stats
from sqlalchemy import select, text

from dsr.board.app import create_app
from dsr.board.models import Member, Submission, Team
from dsr.board.routes.deps import submission_threads
from dsr.collections import load_collection
from dsr.evaluation.qrels import read_qrels
from tests.support.board import make_board, migration_head, noisy, plain_rr, read, retag, setup_phases


def public_labels():
    c = load_collection("sample")
    return c, {d.id: {x.id: x.label for x in d.candidates} for d in c.dialogues}


def post_run(client, token, path, system, phase="public", **fields):
    files = {"run": (path.name, read(path)) if isinstance(path, Path) else ("upload.run", path)}
    data = {"collection": "sample", "phase": phase, "system": system, **fields}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post("/api/submissions", data=data, files=files, headers=headers)


@pytest.fixture
def setup(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs, daily_quota=2, total_quota=3)
    tokens = {name: board.members.add_team(name) for name in ("alpha", "beta")}
    client = TestClient(create_app(board))
    yield board, client, tokens
    client.close()
    board.close()


def test_submission_is_scored_like_a_plain_computation(setup, runs):
    board, client, tokens = setup
    answer = post_run(client, tokens["alpha"], runs / "bm25.run", "BM25 default")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    collection, labels = public_labels()
    rr = plain_rr(runs / "bm25.run", labels)
    for subset in ("all", "plain", "grounded"):
        ids = [d.id for d in collection.dialogues if subset == "all" or d.subset == subset]
        assert body["means"][subset]["RR"] == pytest.approx(np.mean([rr[t] for t in ids]), abs=1e-12)
    # the run page's per-topic values (public phase) are the same numbers
    run = client.get(f"/api/runs/{body['id']}").json()
    assert {t: v["RR"] for t, v in run["per_topic"].items()} == pytest.approx(rr)
    # stored content-addressed, exactly the bytes sent
    assert board.store.get(body["sha256"]) == read(runs / "bm25.run")
    assert body["sha256"] == hashlib.sha256(read(runs / "bm25.run")).hexdigest()


def test_hidden_phase_scores_with_the_hidden_labels_and_serves_no_per_topic(setup, runs):
    board, client, tokens = setup
    answer = post_run(client, tokens["alpha"], runs / "bm25.run", "bm25", phase="test")
    assert answer.status_code == 201, answer.text
    hidden = read_qrels(runs / "hidden.qrels")
    rr = plain_rr(runs / "bm25.run", hidden)
    # a hidden phase publishes the team's ladder value: its first run's mean plus the team's noise,
    # on the group's grid
    assert answer.json()["means"]["all"]["RR"] == noisy(
        board, [answer.json()["id"]], 0, "all", "RR", float(np.mean(list(rr.values()))), 20
    )
    assert answer.json()["released"] is True
    public = plain_rr(runs / "bm25.run", public_labels()[1])
    assert not math.isclose(np.mean(list(rr.values())), np.mean(list(public.values())))
    run = client.get(f"/api/runs/{answer.json()['id']}").json()
    assert "per_topic" not in run and run["hidden"] is True
    page = client.get(f"/runs/{answer.json()['id']}").text
    assert "not published" in page and "<svg" not in page


def test_board_ranks_rows_and_marks_significance_with_holm(setup, runs):
    board, client, tokens = setup
    for name, token in (("bm25", "alpha"), ("random0", "beta"), ("random1", "alpha")):
        assert post_run(client, tokens[token], runs / f"{name}.run", name).status_code == 201
    lb = client.get("/api/boards/sample/public", params={"sort": "RR", "select": "all"}).json()
    systems = [r["system"] for r in lb["rows"]]
    _, labels = public_labels()
    rr = {n: plain_rr(runs / f"{n}.run", labels) for n in ("initial", "bm25", "random0", "random1")}
    means = {n: np.mean(list(v.values())) for n, v in rr.items()}
    assert systems == sorted(means, key=lambda n: -means[n])
    assert lb["baseline"] == next(r["id"] for r in lb["rows"] if r["system"] == "initial")
    # paired t-test per row against the baseline, Holm over the three compared rows
    topics = list(labels)
    others = ["bm25", "random0", "random1"]
    p = [stats.ttest_rel([rr[n][t] for t in topics], [rr["initial"][t] for t in topics]).pvalue for n in others]
    order = np.argsort(p)
    holm, running = {}, 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (len(p) - k)))
        holm[others[i]] = running
    for row in lb["rows"]:
        if row["system"] == "initial":
            assert row["vs_baseline"]["all"]["RR"] == ""
            continue
        assert row["p_holm"]["all"]["RR"] == pytest.approx(holm[row["system"]], rel=1e-9)
        expected = "tie" if holm[row["system"]] >= 0.05 else "better" if means[row["system"]] > means["initial"] else "worse"
        assert row["vs_baseline"]["all"]["RR"] == expected
    assert {r["vs_baseline"]["all"]["RR"] for r in lb["rows"]} >= {"worse"}  # random is below initial
    # per-team selection: alpha's best by RR is bm25, its latest random1
    best = client.get("/api/boards/sample/public", params={"select": "best", "sort": "RR"}).json()
    assert sorted(r["system"] for r in best["rows"]) == ["bm25", "initial", "random0"]
    latest = client.get("/api/boards/sample/public", params={"select": "latest"}).json()
    assert sorted(r["system"] for r in latest["rows"]) == ["initial", "random0", "random1"]
    html = client.get("/board/sample/public").text
    assert "▼" in html and "baseline" in html and "grounded" in html


def test_invalid_run_is_refused_with_line_numbers_and_stores_nothing(setup, runs, tmp_path):
    board, client, tokens = setup
    lines = read(runs / "bm25.run").decode().splitlines(keepends=True)
    lines[2] = lines[2].replace("Q0 ", "Q0 nosuchdoc_", 1)
    lines[6] = "only three columns\n"
    bad = tmp_path / "bad.run"
    bad.write_text("".join(lines))
    stored = sorted(p.name for p in board.store.root.glob("??/*"))
    answer = post_run(client, tokens["alpha"], bad, "broken", phase="test")
    assert answer.status_code == 422
    problems = answer.json()["problems"]
    assert [p["line"] for p in problems] == [3, 7]
    assert "is not a candidate" in problems[0]["message"] and problems[0]["text"].startswith("bad.run:3: ")
    assert "expected 6 columns" in problems[1]["message"]
    assert sorted(p.name for p in board.store.root.glob("??/*")) == stored
    with board.engine.connect() as conn:
        assert conn.scalar(text("select count(*) from submissions where system = 'broken'")) == 0
    quota = client.get("/api/quota/sample/test", headers={"Authorization": f"Bearer {tokens['alpha']}"}).json()
    assert quota["quota"]["daily_used"] == 0


def test_quotas_per_day_and_in_total(setup, runs):
    board, client, tokens = setup
    alpha = tokens["alpha"]
    answers = [post_run(client, alpha, runs / f"random{i}.run", f"r{i}", phase="test") for i in range(3)]
    assert [a.status_code for a in answers] == [201, 201, 429]
    first = answers[0].json()  # shown before and after the submission
    assert (first["quota_before"]["daily_left"], first["quota"]["daily_left"]) == (2, 1)
    assert (first["quota_before"]["total_used"], first["quota"]["total_used"]) == (0, 1)
    refused = post_run(client, alpha, runs / "random3.run", "r3", phase="test").json()
    assert refused["quota"]["daily_left"] == 0 and refused["quota"]["resets_at"].endswith("T00:00:00Z")
    # a new day: move alpha's runs back a day; the total quota (3) then stops the 4th
    with board.engine.begin() as conn:
        conn.execute(
            text(
                "update submissions set created_at = created_at - interval '1 day'"
                if board.engine.dialect.name == "postgresql"
                else "update submissions set created_at = datetime(created_at, '-1 day')"
            )
        )
    assert post_run(client, alpha, runs / "random3.run", "r3", phase="test").status_code == 201
    last = post_run(client, alpha, runs / "random4.run", "r4", phase="test")
    assert last.status_code == 429 and last.json()["quota"]["total_left"] == 0
    # another team has its own quota; the public phase has none
    assert post_run(client, tokens["beta"], retag(read(runs / "random0.run"), "beta"), "b", phase="test").status_code == 201
    assert post_run(client, alpha, runs / "random0.run", "p", phase="public").status_code == 201
    with board.engine.connect() as conn:
        counts = dict(
            conn.execute(
                text(
                    "select t.name, count(*) from submissions s join teams t on t.id = s.team_id "
                    "join phases p on p.id = s.phase_id where p.name = 'test' and not s.baseline group by t.name"
                )
            ).all()
        )
    assert counts == {"alpha": 3, "beta": 1}


def test_tokens_are_stored_hashed_and_auth_rules(setup, runs):
    board, client, tokens = setup
    with board.engine.connect() as conn:
        hashes = dict(conn.execute(select(Team.name, Member.token_hash).join(Member, Member.team_id == Team.id)).all())
        retired = set(conn.execute(select(Team.token_hash)).scalars())
    assert hashes["alpha"] == hashlib.sha256(tokens["alpha"].encode()).hexdigest()  # the member's token
    assert tokens["alpha"] not in json.dumps(hashes)
    assert not retired & set(hashes.values())  # the team's old column matches no token
    assert post_run(client, None, runs / "bm25.run", "x").status_code == 401
    assert post_run(client, "dsr_wrong", runs / "bm25.run", "x").status_code == 401
    sub = post_run(client, tokens["alpha"], runs / "bm25.run", "mine").json()
    file_url = f"/api/runs/{sub['id']}/file"
    assert client.get(file_url).status_code == 401
    assert client.get(file_url, headers={"Authorization": f"Bearer {tokens['beta']}"}).status_code == 403
    own = client.get(file_url, headers={"Authorization": f"Bearer {tokens['alpha']}"})
    assert own.status_code == 200 and own.content == read(runs / "bm25.run")


def test_gzip_runs_sidecars_and_size_limits(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path, max_upload_mb=200_000 / 2**20)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    packed = gzip.compress(read(runs / "bm25.run"))
    files = {"run": ("bm25.run.gz", packed), "sidecar": ("bm25.run.json", read(runs / "bm25.run.json"))}
    answer = client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": "public", "system": "gz"},
        files=files,
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["sha256"] == hashlib.sha256(read(runs / "bm25.run")).hexdigest()
    assert client.get(f"/api/runs/{answer.json()['id']}").json()["published"]["ranker"] == "bm25"
    bomb = gzip.compress(b"x" * 5_000_000)  # small on the wire, too large unpacked
    assert post_run(client, token, bomb, "bomb").status_code == 413
    big = post_run(client, token, b"y" * 900_000, "big")  # over the body limit
    assert big.status_code == 413
    client.close()
    board.close()


def test_rate_limit_per_token(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path, rate_limit=2)
    setup_phases(board, runs)
    alpha, beta = board.members.add_team("alpha"), board.members.add_team("beta")
    client = TestClient(create_app(board))
    bm25 = read(runs / "bm25.run")
    codes = [post_run(client, alpha, retag(bm25, f"s{i}"), f"s{i}").status_code for i in range(3)]
    assert codes == [201, 201, 429]
    assert post_run(client, beta, retag(bm25, "b"), "b").status_code == 201  # per token
    client.close()
    board.close()


def test_submissions_run_on_the_app_s_few_threads_and_all_land(db_url, tmp_path, runs):
    """A submission's work runs in the app's own pool: one thread a scoring worker and two
    more (here no worker: two), however many requests arrive at once (40 threads under 20
    clients passed the GIL round and overflowed PostgreSQL's connection pool); 8 at once all
    land, each stored once."""
    board = make_board(db_url, tmp_path, workers=0)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    ran_in, real = [], board.submit_named
    board.submit_named = lambda *a, **k: ran_in.append(threading.current_thread().name) or real(*a, **k)
    app = create_app(board)
    bm25 = read(runs / "bm25.run")
    with TestClient(app) as client, ThreadPoolExecutor(8) as senders:
        codes = list(senders.map(lambda i: post_run(client, token, retag(bm25, f"s{i}"), f"s{i}").status_code, range(8)))
    assert codes == [201] * 8
    assert submission_threads(board) == 2 == app.state.threads._max_workers
    assert len(ran_in) == 8 and {name.rsplit("_", 1)[0] for name in ran_in} == {"dsr-request"}
    assert len(set(ran_in)) <= 2
    with board.engine.connect() as conn:
        assert conn.scalar(text("select count(*) from submissions where not baseline")) == 8
    board.close()


def test_rebuild_restores_scores_from_runs_and_labels(setup, runs):
    from dsr.board.admin import rebuild

    board, client, tokens = setup
    sub = post_run(client, tokens["alpha"], runs / "bm25.run", "bm25", phase="test").json()
    good = client.get("/api/boards/sample/test").json()
    with board.engine.begin() as conn:
        conn.execute(
            text("update submissions set means_json = :m, per_topic = :p"), {"m": json.dumps({"all": {}}), "p": b"\0" * 8}
        )
    board.cache.forget_rows()
    report = rebuild(board)
    assert report.rescored == 3 and report.changed == 3 and not report.missing
    assert client.get("/api/boards/sample/test").json()["rows"] == good["rows"]
    assert board.store.delete(sub["sha256"]) and not board.store.delete(sub["sha256"])
    assert rebuild(board).missing == [sub["id"]]


def test_the_run_store_by_digest(tmp_path):
    """The run store's interface (:class:`dsr.board.archive.RunFiles`): put, get, read (None
    when missing or altered), delete, the digests listed (staging and scratch files are not)."""
    from dsr.board.archive import RunFiles, RunStore

    store: RunFiles = RunStore(tmp_path / "runs")
    first, second = store.put(b"q1 Q0 d1 1 1.0 x\n"), store.put(b"q1 Q0 d2 1 1.0 x\n")
    assert first == hashlib.sha256(b"q1 Q0 d1 1 1.0 x\n").hexdigest() and store.put(b"q1 Q0 d1 1 1.0 x\n") == first
    assert store.get(first) == b"q1 Q0 d1 1 1.0 x\n" and store.read(second) == b"q1 Q0 d2 1 1.0 x\n"
    with store.scratch(b"checked") as path:
        assert path.read_bytes() == b"checked" and store.digests() == sorted([first, second])
    (tmp_path / "runs" / second[:2] / second).write_bytes(b"altered")
    assert store.read(second) is None and store.get(second) == b"altered"  # read checks, get does not
    assert store.delete(first) and not store.delete(first) and store.read(first) is None
    assert store.digests() == [second]
    with pytest.raises(ValueError, match="not a sha256"):
        store.get("../../etc/passwd")


def test_migrations_are_idempotent(db_url, tmp_path):
    first = make_board(db_url, tmp_path)
    first.members.add_team("alpha")
    first.close()
    again = make_board(db_url, tmp_path)  # upgrade on an up-to-date schema: a no-op
    with again.engine.connect() as conn:
        assert conn.scalar(text("select version_num from alembic_version")) == migration_head()
        assert conn.scalar(select(Team.name)) == "alpha"
    again.close()


def test_escaped_output_and_security_headers(setup, runs):
    board, client, tokens = setup
    evil = "<script>alert(1)</script>"
    sub = post_run(client, tokens["alpha"], runs / "bm25.run", evil, description=evil, link="https://example.org/?a=<b>").json()
    for url in ("/board/sample/public", f"/runs/{sub['id']}"):
        page = client.get(url)
        assert evil not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none'
        assert page.headers["x-frame-options"] == "DENY"
    assert post_run(client, tokens["alpha"], runs / "bm25.run", "x", link="javascript:alert(1)").status_code == 422


def test_web_forms_need_csrf_and_login(setup, runs):
    board, client, tokens = setup
    assert client.get("/submit", follow_redirects=False).headers["location"] == "/login"
    assert client.post("/login", data={"token": tokens["alpha"]}).status_code == 403  # no CSRF
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/login").text).group(1)
    assert client.post("/login", data={"token": "wrong", "csrf": csrf}).status_code == 401
    ok = client.post("/login", data={"token": tokens["alpha"], "csrf": csrf}, follow_redirects=False)
    assert ok.status_code == 303
    # logged in, forms carry the session's own token (the page's hidden field)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/submit").text).group(1)
    form = {"csrf": csrf, "phase": str(board.phases.get_phase("sample", "public").id), "system": "web", "run_type": "automatic"}
    files = {"run": ("bm25.run", read(runs / "bm25.run"))}
    assert client.post("/submit", data={**form, "csrf": "forged"}, files=files).status_code == 403
    done = client.post("/submit", data=form, files=files, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith("/runs/")
    with board.engine.connect() as conn:
        assert conn.scalar(select(Submission.system).where(Submission.system == "web")) == "web"


def test_baselines_from_a_reproduce_folder(db_url, tmp_path, runs):
    """``dsr board add-baseline`` takes dsr reproduce's output folder (its runs/ of *.run + sidecars)."""
    import shutil

    from dsr.board.admin import add_baselines
    from dsr.core.errors import InputError

    board = make_board(db_url, tmp_path)
    phase = board.phases.add_phase("sample", "public")
    out = tmp_path / "out" / "sample"
    (out / "runs").mkdir(parents=True)
    for name in ("initial", "bm25"):
        for suffix in (".run", ".run.json"):
            shutil.copy(runs / f"{name}{suffix}", out / "runs" / f"{name}{suffix}")
    added = add_baselines(board, phase, [str(out)])
    assert [s.system for s in added] == ["bm25", "initial"]
    assert board.phases.get_phase("sample", "public").baseline_id == added[0].id
    assert json.loads(board.submission(added[0].id).sidecar_json)["ranker"] == "bm25"
    client = TestClient(create_app(board))
    rows = client.get("/api/boards/sample/public", params={"baselines": "all"}).json()["rows"]
    assert all(r["baseline"] and r["team"] == "baselines" for r in rows) and len(rows) == 2
    client.close()
    (out / "runs" / "bm25.run").write_text("broken\n")
    with pytest.raises(InputError, match=r"bm25\.run"):
        add_baselines(board, phase, [str(out / "runs" / "bm25.run")])
    board.close()


def test_uploaded_file_names_never_become_paths(setup, runs, tmp_path):
    board, client, tokens = setup
    answer = client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": "public", "system": "p"},
        files={"run": ("../../../escape.run", read(runs / "bm25.run"))},
        headers={"Authorization": f"Bearer {tokens['alpha']}"},
    )
    assert answer.status_code == 201
    assert client.get(f"/api/runs/{answer.json()['id']}").json()["filename"] == "escape.run"
    assert not list(tmp_path.parent.rglob("escape.run"))
    files = [p for p in board.store.root.rglob("*") if p.is_file()]
    assert files and all(p.parent.parent == board.store.root and len(p.name) == 64 for p in files)
