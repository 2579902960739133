"""The leaderboard at its seams, on SQLite and PostgreSQL: what is stored is what was
scored and what the command line scores (gzip read by one reader), nothing private is published,
hidden labels do not leak through small subsets, ties are said, retries and duplicates are
recognised, LaTeX is escaped, and nothing the server accepted answers 500."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from dsr.board.app import create_app
from dsr.board.published import published_metadata
from dsr.cli import main
from dsr.collections import load_collection
from dsr.evaluation.qrels import read_qrels
from tests.support.board import (
    OLD_PHASE,
    OLD_SUBMISSION,
    OLD_TEAM,
    empty_database,
    engine_at,
    insert_row,
    make_board,
    migration_head,
    noisy,
    plain_rr,
    read,
    setup_phases,
)
from tests.support.order import RANX

#: ``tool_runs`` writes a run with ranx (its first use in a process compiles numba's containers, and
#: PyTerrier's import): on the worker of the ranx group, which has made them already
pytestmark = RANX


def public_labels():
    c = load_collection("sample")
    return {d.id: {x.id: x.label for x in d.candidates} for d in c.dialogues}


def post(
    client,
    token,
    data: bytes,
    system: str,
    phase: str = "public",
    name: str = "run.run",
    sidecar: bytes | None = None,
    headers: dict | None = None,
    **fields,
):
    files = {"run": (name, data)}
    if sidecar is not None:
        files["sidecar"] = ("run.run.json", sidecar)
    return client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": phase, "system": system, **fields},
        files=files,
        headers={"Authorization": f"Bearer {token}", **(headers or {})},
    )


def stored(board) -> tuple[int, list[str]]:
    """(non-baseline rows, files in the store)."""
    with board.engine.connect() as conn:
        rows = conn.scalar(text("select count(*) from submissions where not baseline"))
    return rows, sorted(p.name for p in board.store.root.glob("??/*"))


# --- 1. gzip: one reader, every member, no cut or padded stream ------------------------


def multi_member(data: bytes) -> bytes:
    """What bgzip, ``pigz -i`` and ``cat a.gz b.gz`` write: several gzip members."""
    lines = data.splitlines(keepends=True)
    cut = len(lines) * 24 // 25
    return gzip.compress(b"".join(lines[:cut])) + gzip.compress(b"".join(lines[cut:]))


def test_multi_member_gzip_is_read_whole_and_scored_as_the_command_line_scores_it(setup, runs, tmp_path, capsys):
    board, client, token = setup
    plain = read(runs / "bm25.run")
    packed = multi_member(plain)
    assert gzip.decompress(packed) == plain and len(plain.splitlines()) == 508
    answer = post(client, token, packed, "two members", name="bm25.run.gz")
    assert answer.status_code == 201, answer.text
    body = answer.json()
    rr = np.mean(list(plain_rr(runs / "bm25.run", public_labels()).values()))
    assert body["means"]["all"]["RR"] == pytest.approx(rr, abs=1e-12)
    assert round(rr, 4) == 0.7136
    # stored is exactly what was scored: the whole text
    assert body["sha256"] == hashlib.sha256(plain).hexdigest()
    assert board.store.get(body["sha256"]) == plain
    assert board.submission(body["id"]).lines == 508
    # the command line reads the same file the same way
    gz = tmp_path / "bm25.run.gz"
    gz.write_bytes(packed)
    capsys.readouterr()
    assert main(["evaluate", "sample", str(gz), "--measures", "RR", "--json", "--quiet"]) == 0
    (cli,) = json.loads(capsys.readouterr().out)["runs"].values()
    assert {s: m["RR"] for s, m in cli["all_dialogues"].items()} == {s: m["RR"] for s, m in body["means"].items()}


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda packed: packed[:-20], "cut short"),
        (lambda packed: packed + b"garbage after the end\n", "trailing garbage"),
    ],
)
def test_cut_or_padded_gzip_is_refused_by_board_and_command_line_alike(setup, runs, tmp_path, capsys, damage, says):
    board, client, token = setup
    bad = damage(gzip.compress(read(runs / "bm25.run")))
    before = stored(board)
    answer = post(client, token, bad, "damaged", name="bm25.run.gz")
    assert answer.status_code == 422 and says in answer.json()["error"], answer.text
    assert stored(board) == before
    path = tmp_path / "damaged.run.gz"
    path.write_bytes(bad)
    capsys.readouterr()
    for command in (["validate", "sample", str(path)], ["evaluate", "sample", str(path), "--quiet"]):
        assert main(command) == 2
        err = capsys.readouterr()
        assert says in err.out + err.err and "Traceback" not in err.err


def test_gzip_bomb_is_refused_without_unpacking_it_whole(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path, max_upload_mb=200_000 / 2**20)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    bomb = gzip.compress(b"x" * 100_000) * 3  # three members: 300 kB unpacked
    answer = post(client, token, bomb, "bomb")
    assert answer.status_code == 413 and "unpacked" in answer.json()["error"]
    client.close()
    board.close()


# --- 2. hidden labels do not leak through small subsets ------------------------------------


def test_a_subset_of_one_hidden_dialogue_is_not_published(db_url, tmp_path, runs, capsys):
    """--qrels leaving one grounded dialogue: its value would be the subset's mean, and the
    plain subset's mean with "all" would give it too; only "all" is published, everywhere."""
    from dsr.board.admin import export
    from dsr.evaluation.qrels import write_qrels

    collection = load_collection("sample")
    plain = [d.id for d in collection.dialogues if d.subset == "plain"]
    lone = next(d.id for d in collection.dialogues if d.subset == "grounded")
    hidden = read_qrels(runs / "hidden.qrels")
    qrels = tmp_path / "few.qrels"
    write_qrels({t: hidden[t] for t in plain + [lone]}, qrels)
    db, store = ["--db", f"sqlite:///{tmp_path / 'cli.sqlite'}"], ["--store", str(tmp_path / "cli-store")]
    hidden_phase = ["board", "add-phase", "sample", "--hidden", "--qrels", str(qrels), *db, *store]
    assert main([*hidden_phase, "--phase", "test", "--min-dialogues", "5"]) == 0
    out = capsys.readouterr().out
    assert "published means: all (11 dialogues)" in out
    assert "subset 'grounded' (1 dialogues): fewer than 5 dialogues: withheld" in out
    assert "subset 'plain' (10 dialogues): all minus it leaves 1 dialogues, fewer than 5: withheld" in out
    # the default minimum is 20 dialogues: 11 cannot make a hidden phase
    assert main([*hidden_phase, "--phase", "x"]) == 2
    assert "fewer than the 20" in capsys.readouterr().err

    board = make_board(db_url, tmp_path)
    phase = board.phases.add_phase("sample", "test", hidden=True, labels=read_qrels(qrels), min_dialogues=5)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    kept = set(plain + [lone])
    restricted = b"".join(line for line in read(runs / "bm25.run").splitlines(keepends=True) if line.split()[0].decode() in kept)
    answer = post(client, token, restricted, "bm25", phase="test")
    assert answer.status_code == 201, answer.text[:500]
    assert set(answer.json()["means"]) == {"all"}
    assert answer.json()["means"]["all"]["RR"] == noisy(  # the ladder value: noise added, on the grid
        board,
        [answer.json()["id"]],
        0,
        "all",
        "RR",
        float(np.mean(list(plain_rr(runs / "bm25.run", {t: hidden[t] for t in plain + [lone]}).values()))),
        11,
    )
    run = client.get(f"/api/runs/{answer.json()['id']}").json()
    assert set(run["means"]) == {"all"}
    board_json = client.get("/api/boards/sample/test").json()
    assert board_json["subsets"] == ["all"] and all(set(r["means"]) == {"all"} for r in board_json["rows"])
    for text_out in (
        client.get("/board/sample/test").text,
        client.get("/board/sample/test/export.csv").text,
        client.get("/board/sample/test/export.tex").text,
        export(board, phase, "json"),
        client.get(f"/runs/{answer.json()['id']}").text,
    ):
        assert "grounded" not in text_out and "plain" not in text_out
    assert client.get("/board/sample/test?subset=grounded").status_code == 400
    client.close()
    board.close()


def test_hidden_subsets_under_20_dialogues_are_not_published_by_default(setup, runs):
    """The sample's hidden phase has 20 dialogues, 10 plain and 10 grounded: only "all" is published."""
    board, client, token = setup
    answer = post(client, token, read(runs / "bm25.run"), "bm25", phase="test")
    assert answer.status_code == 201, answer.text[:500]
    assert set(answer.json()["means"]) == {"all"}
    assert client.get("/api/boards/sample/test").json()["subsets"] == ["all"]
    for url in ("/board/sample/test/export.csv", "/board/sample/test", f"/api/runs/{answer.json()['id']}"):
        body = client.get(url).text
        assert "grounded" not in body and "plain" not in body, url
    # a public phase publishes its subsets
    public = post(client, token, read(runs / "bm25.run"), "bm25", phase="public")
    assert set(public.json()["means"]) == {"all", "plain", "grounded"}


def partition(sizes: list[int]) -> dict[str, np.ndarray]:
    """Subsets s0, s1, ... of the given sizes, dialogues shuffled among them."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    np.random.default_rng(sum(sizes)).shuffle(labels)
    return {"all": np.arange(len(labels)), **{f"s{k}": np.flatnonzero(labels == k) for k in range(len(sizes))}}


def test_published_subsets_and_what_they_let_one_derive_all_cover_the_minimum():
    """Means are sums over disjoint groups, so what can be derived from the published means
    (and the public subset sizes) is any union of the groups and "all" minus them: every
    published group and the unpublished rest must cover the minimum (or nothing)."""
    from dsr.board.scoring import publishable_subsets

    rng = np.random.default_rng(19)
    cases = [[10, 10], [40, 45, 10, 5], [25, 5], [1, 99], [30, 30, 10, 15], [100], [20, 20, 20]]
    cases += [list(rng.integers(1, 40, size=rng.integers(1, 6))) for _ in range(300)]
    checked = 0
    for sizes in cases:
        subsets = partition(sizes)
        if sum(sizes) < 20:
            with pytest.raises(Exception, match="fewer than the 20"):
                publishable_subsets(subsets, 20)
            continue
        published, notes = publishable_subsets(subsets, 20)
        groups = [set(v.tolist()) for k, v in published.items() if k != "all"]
        covered = set().union(*groups) if groups else set()
        assert all(len(g) >= 20 for g in groups)
        assert sum(len(g) for g in groups) == len(covered)  # disjoint
        rest = sum(sizes) - len(covered)
        assert rest == 0 or rest >= 20, (sizes, {k: len(v) for k, v in published.items()})
        # each group is whole subsets, and every subset not published alone has a note
        for name, members in published.items():
            if name != "all":
                assert set(members.tolist()) == set().union(*(set(subsets[p].tolist()) for p in name.split("+")))
        alone = {k for k in published if k != "all" and "+" not in k}
        assert len(notes) == len(sizes) - len(alone)
        checked += 1
    assert checked > 250
    merged, notes = publishable_subsets(partition([40, 45, 10, 5]), 20)
    assert {k: len(v) for k, v in merged.items()} == {"all": 100, "s1": 45, "s0+s2+s3": 55}
    assert notes[0] == "subset 's2' (10 dialogues): fewer than 20 dialogues: merged into 's0+s2+s3' (55 dialogues)"


# --- 3. a board publishes no path, host or user name -----------------------------------------


def private_sidecar(tmp_path, host: str, user: str, extra: dict | None = None) -> dict:
    """A sidecar as dsr run writes one on a participant's machine, plus what other tools add."""
    home = f"/home/{user}"
    return {
        "ranker": "bm25",
        "params": {"k1": 1.2, "b": 0.75, "query": "all", "index": f"{home}/secret-indexes/bm25", "model": f"{home}/secret-model"},
        "command": "run",
        "command_line": f"dsr run sample --ranker bm25 --out {tmp_path}/secret-out.run # on {host} as {user}",
        "collection": {
            "name": "sample",
            "hash": load_collection("sample").content_hash,
            "meta": {"path": f"{home}/secret-data/sample.jsonl"},
        },
        "models": [
            {
                "spec": f"{home}/secret-model",
                "name": "secret-model",
                "source": "folder",
                "weights_sha256": "ab" * 32,
                "revision": None,
            }
        ],
        "inputs": [{"path": f"{tmp_path}/secret-first.run", "sha256": "cd" * 32}],
        "qrels": f"{home}/secret-hidden.qrels",
        "machine": {"node": host, "user": user},
        "created_by": f"{user}@{host}",
        "versions": {"python": "3.11.7", "numpy": "2.4.6"},
        "description": "BM25 over the whole context",
        "paper": "https://example.org/paper",
        **(extra or {}),
    }


def test_no_route_or_export_publishes_a_path_host_or_user_name(db_url, tmp_path, runs, capsys):
    import getpass
    import re
    import shutil
    import socket

    from dsr.board.admin import add_baselines, export
    from tests.support.board import walk_every_route

    host, user = socket.gethostname(), getpass.getuser()
    board = make_board(db_url, tmp_path)
    public = board.phases.add_phase("sample", "public")
    hidden = board.phases.add_phase("sample", "test", hidden=True, labels=read_qrels(runs / "hidden.qrels"))
    folder = tmp_path / "reproduce" / "runs"  # an organiser's baseline, with the label file's path
    folder.mkdir(parents=True)
    shutil.copy(runs / "initial.run", folder / "initial.run")
    (folder / "initial.run.json").write_text(json.dumps(private_sidecar(tmp_path, host, user)))
    for phase in (public, hidden):
        add_baselines(board, phase, [str(folder)])
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    answers = []
    for name in ("bm25", "random0"):
        for phase in ("public", "test"):
            side = json.dumps(private_sidecar(tmp_path, host, user)).encode()
            answer = post(
                client, token, read(runs / f"{name}.run"), name, phase=phase, name=f"{tmp_path}/{name}.run", sidecar=side
            )
            assert answer.status_code == 201, answer.text[:500]
            answers.append(answer.text)
    published = json.loads(answers[0])["published"]
    assert published["ranker"] == "bm25" and published["params"] == {"k1": 1.2, "b": 0.75, "query": "all"}
    assert published["models"] == [{"name": "secret-model", "source": "folder", "weights_sha256": "ab" * 32}]
    assert published["collection"]["hash"] == load_collection("sample").content_hash
    assert set(published) == {"ranker", "params", "query", "models", "versions", "collection", "description", "paper"}
    ids = [s.id for p in board.phases.all() for s in board.submissions(p)]
    bodies, seen = walk_every_route(
        client,
        token,
        {"collection": ["sample"], "phase": ["public", "test"], "submission_id": ids, "name": ["nope"], "seq": [1]},
        {},
    )
    assert {"/runs/{submission_id}", "/api/runs/{submission_id}", "/board/{collection}/{phase}/export.tex"} <= seen
    bodies = {k: v for k, v in bodies.items() if not k.startswith("/static/")}  # shipped assets
    for i, text_out in enumerate(answers):
        bodies[f"answer {i}"] = text_out
    for phase in (public, hidden):
        for fmt in ("csv", "latex", "json"):
            bodies[f"export {phase.name} {fmt}"] = export(board, phase, fmt)
    with board.engine.connect() as conn:  # nothing else is kept in the database either
        bodies["database"] = json.dumps(
            [
                list(map(str, r))
                for r in conn.execute(
                    text("select system, description, filename, sidecar_json, answer_json from submissions")
                ).all()
            ]
        )
    private = [re.escape(str(tmp_path)), "/home/", "secret-(?!model)", re.escape(str(runs))]
    names = [rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])" for n in (host, user)]
    csrf = re.compile(r'name="csrf" value="[^"]*"')
    leaks = {
        where: found
        for where, body in bodies.items()
        if (found := [p for p in private + names if re.search(p, csrf.sub("", body))])
    }
    assert not leaks
    assert len(bodies) > 60
    # the check would see them: the sidecars sent held every one
    sent = json.dumps(private_sidecar(tmp_path, host, user))
    assert all(re.search(p, sent) for p in private[:3] + names)
    client.close()
    board.close()


# --- 4 and 5. runs other tools write; ties said, refused by --strict phases ------------------


@pytest.mark.slow
def test_runs_written_by_other_tools_are_accepted_and_scored_as_dsr_evaluate_scores_them(setup, tool_runs, capsys):
    board, client, token = setup
    for tool, path in tool_runs.items():
        answer = post(client, token, path.read_bytes(), tool, name=path.name)
        assert answer.status_code == 201, (tool, answer.text[:500])
        capsys.readouterr()
        assert main(["evaluate", "sample", str(path), "--json", "--quiet"]) == 0
        (cli,) = json.loads(capsys.readouterr().out)["runs"].values()
        assert answer.json()["means"] == cli["all_dialogues"], tool
        assert answer.json()["tied_topics"] == cli["tied_topics"]
    assert board.submission(answer.json()["id"]).lines == 508


def all_tied(data: bytes) -> bytes:
    """Every score of every topic 1.0, in the written (BM25) order."""
    return b"".join(b" ".join(line.split()[:4] + [b"1.0", b"tied"]) + b"\n" for line in data.splitlines())


@pytest.mark.slow
def test_ties_are_counted_and_said_and_refused_by_strict_phases(db_url, tmp_path, runs, capsys):
    from tests.support.board import LiveServer

    board = make_board(db_url, tmp_path)
    board.phases.add_phase("sample", "public")
    token = board.members.add_team("alpha")
    tied = tmp_path / "tied.run"
    tied.write_bytes(all_tied(read(runs / "bm25.run")))
    capsys.readouterr()
    assert main(["evaluate", "sample", str(tied), "--json", "--quiet"]) == 0
    (cli,) = json.loads(capsys.readouterr().out)["runs"].values()
    assert cli["tied_topics"] == 20
    with LiveServer(board) as server:
        assert main(["submit", "sample", str(tied), "--server", server.url, "--token", token, "--phase", "public"]) == 0
        out = capsys.readouterr().out
        assert "ties: 20 topic(s) hold scores that tie as 32-bit floats" in out
        board.phases.add_phase("sample", "strict", strict=True)
        before = stored(board)
        again = ["--server", server.url, "--token", token, "--phase", "strict", "--system", "tied again"]
        assert main(["submit", "sample", str(tied), *again]) == 2
        err = capsys.readouterr().err
        assert "refused (422)" in err and "refuses runs whose scores tie as 32-bit floats (20 topic(s))" in err
        assert stored(board) == before
    client = TestClient(create_app(board))
    (sub,) = [s for s in board.submissions(board.phases.get_phase("sample", "public"))]
    assert sub.tied_topics == 20
    run = client.get(f"/api/runs/{sub.id}").json()
    assert run["tied_topics"] == 20 and run["ties"].startswith("20 topic(s) hold scores that tie")
    assert run["means"] == cli["all_dialogues"]  # scored as trec_eval orders ties: doc id descending
    assert "20 topic(s) hold scores that tie as 32-bit floats" in client.get(f"/runs/{sub.id}").text
    client.close()
    board.close()


# --- 6. retries and duplicates ----------------------------------------------------------------


def quota_used(client, token, phase="test") -> int:
    answer = client.get(f"/api/quota/sample/{phase}", headers={"Authorization": f"Bearer {token}"})
    return answer.json()["quota"]["total_used"]


def test_a_retry_with_the_same_key_gets_the_first_answer_and_a_duplicate_is_refused(setup, runs):
    board, client, token = setup
    bm25 = read(runs / "bm25.run")
    key = {"Idempotency-Key": "a2f1c0de-retry-1"}
    first = post(client, token, bm25, "bm25", phase="test", headers=key)
    again = post(client, token, bm25, "bm25", phase="test", headers=key)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again.headers["idempotency-replayed"] == "true"
    assert stored(board)[0] == 1 and quota_used(client, token) == 1
    # the same run file again, without the key (or with another): a duplicate, named
    dup = post(client, token, gzip.compress(bm25), "bm25 again", phase="test", name="bm25.run.gz")
    assert dup.status_code == 409 and dup.json()["first"] == f"/runs/{first.json()['id']}"
    assert f"/runs/{first.json()['id']}" in dup.json()["error"]
    # another team's runs are never compared (a 409 would tell whether alpha submitted it)
    other_team = board.members.add_team("beta")
    copy = post(client, other_team, bm25, "copy", phase="test")
    assert copy.status_code == 201 and copy.json()["id"] != first.json()["id"]
    assert stored(board)[0] == 2 and quota_used(client, token) == 1
    # the same key for another run is refused, the other phase takes the same run
    assert post(client, token, read(runs / "random0.run"), "r0", phase="test", headers=key).status_code == 422
    assert post(client, token, bm25, "bm25", phase="public").status_code == 201


@pytest.mark.slow
def test_dsr_submit_retries_after_a_timeout_and_stores_the_run_once(db_url, tmp_path, runs, monkeypatch):
    """The answer is lost after the commit (the client times out): the retry, with the same
    Idempotency-Key, gets the first answer; one row, one quota unit."""
    import time

    from dsr.board.client import submit
    from tests.support.board import LiveServer

    board = make_board(db_url, tmp_path)
    setup_phases(board, runs, daily_quota=5)
    token = board.members.add_team("alpha")
    submit_once, calls = board.submit_named, []  # what the API's route calls

    def slow_after_commit(*args, **kwargs):
        accepted = submit_once(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            time.sleep(2.0)  # the row is committed; the client gives up meanwhile (after 1.5 s)
        return accepted

    monkeypatch.setattr(board, "submit_named", slow_after_commit)
    with LiveServer(board) as server:
        answer = submit(server.url, token, "sample", runs / "bm25.run", phase="test", system="bm25", timeout=1.5, retries=3)
    assert answer.status == 201 and answer.replayed
    with board.engine.connect() as conn:
        rows = conn.execute(text("select id, idempotency_key from submissions where not baseline")).all()
    assert len(rows) == 1 and rows[0][0] == answer.body["id"] and rows[0][1]
    client = TestClient(create_app(board))
    assert quota_used(client, token) == 1
    client.close()
    board.close()


# --- 7. LaTeX exports escape every special character ----------------------------------------

#: TeX's specials as text: seven behind a backslash, three (a backslash itself among them) as text commands
LATEX = {ch: "\\" + ch for ch in "&%$#_{}"} | {"\\": r"\textbackslash{}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def test_latex_export_escapes_every_special_character(setup, runs, tmp_path, capsys):
    board, client, token = setup
    evil = r"^^5cinput^^7b/etc/hostname^^7d \input{x} 100% $a$ #1 a_b ~ & } {"
    assert post(client, token, read(runs / "bm25.run"), evil).status_code == 201
    tex = client.get("/board/sample/public/export.tex").text
    row = next(line for line in tex.splitlines() if "input" in line and line.startswith("alpha /"))
    cell = row.split(" & ")[0].strip()
    expected = "".join(LATEX.get(ch, ch) for ch in f"alpha / {evil} #")
    assert cell.startswith(expected), (cell, expected)
    board_row = next(line for line in tex.splitlines() if "input" in line and not line.startswith("alpha /"))
    assert board_row.split(" & ")[2] == "".join(LATEX.get(ch, ch) for ch in evil)  # the board's table
    assert "^^" not in tex and r"\input" not in tex.replace(r"\textbackslash{}input", "")
    # the same helper for dsr evaluate's LaTeX: a run named with specials
    named = tmp_path / "a_b^c~d.run"
    named.write_bytes(read(runs / "bm25.run"))
    capsys.readouterr()
    assert main(["evaluate", "sample", str(named), "--format", "latex", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert r"a\_b\textasciicircum{}c\textasciitilde{}d" in out and "b^c" not in out


# --- 8. nothing the server accepted answers 500; refused text leaves nothing behind -----------


def test_bad_text_is_refused_at_intake_naming_the_field_and_leaves_nothing(db_url, tmp_path, runs):
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs)
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board), raise_server_exceptions=False)
    bm25 = read(runs / "bm25.run")
    before = stored(board)
    cases = [
        ({"sidecar": b'{"ranker": "bm25", "params": {"model": "m\\ud800"}}'}, "sidecar params.model", "lone surrogate"),
        ({"sidecar": b'{"ranker": "bm\\u0000"}'}, "sidecar ranker", "U+0000"),
        ({"system": "nul\x00name"}, "system", "U+0000"),
        ({"description": "bell\x07"}, "description", "U+0007"),
        ({"sidecar": b"[" * 100_000 + b"]" * 100_000}, None, "nested too deeply"),
        ({"sidecar": b'{"a":' * 40_000 + b"1" + b"}" * 40_000}, None, "nested too deeply"),
    ]
    for fields, field, says in cases:
        sidecar = fields.pop("sidecar", None)
        answer = post(client, token, bm25, fields.pop("system", "fine"), sidecar=sidecar, **fields)
        assert answer.status_code == 422, (field, answer.status_code, answer.text[:300])
        assert says in answer.json()["error"] and (field is None or f"'{field}'" in answer.json()["error"])
        assert stored(board) == before
        assert not list(board.store.tmp.iterdir())
    for url in (
        "/runs/99999999999999999999",
        "/api/runs/99999999999999999999",
        "/api/runs/99999999999999999999/file",
        "/runs/2147483648",
        "/runs/0",
        "/board/sample/public?baseline=99999999999999999999",
    ):
        answer = client.get(url, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code in (404, 200), (url, answer.status_code)
        assert answer.status_code == 404 or "baseline" in url
    # accepted text is served: every later page of the run answers
    ok = post(client, token, bm25, "Ünïcode ✓ system", sidecar=b'{"ranker": "bm25", "description": "multi\\nline"}')
    assert ok.status_code == 201
    for url in (
        f"/runs/{ok.json()['id']}",
        f"/api/runs/{ok.json()['id']}",
        "/board/sample/public",
        "/board/sample/public/export.tex",
        "/api/boards/sample/public",
    ):
        assert client.get(url).status_code == 200, url
    client.close()
    board.close()


# --- 9. dsr serve: a read-only DSR_HOME, the board extra missing ------------------------------


def run_serve(env: dict, prefix: list[str] = (), timeout: float = 60) -> subprocess.CompletedProcess:
    root = Path(__file__).resolve().parents[2]
    command = [*prefix, sys.executable, "-m", "dsr.cli", "serve", "--port", "0"]
    return subprocess.run(
        command, cwd=root, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(root), **env}
    )


def test_serve_with_a_read_only_dsr_home_is_exit_2_naming_the_folder(tmp_path):
    import shutil

    home = tmp_path / "ro-home"
    home.mkdir()
    if os.geteuid() != 0:
        home.chmod(0o555)
        done = run_serve({"DSR_HOME": str(home)})
    elif shutil.which("unshare") and shutil.which("mount"):
        # root writes through permissions: a read-only tmpfs in a private mount namespace
        done = run_serve(
            {"DSR_HOME": str(home)},
            ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o ro,size=64k tmpfs "{home}" && exec "$0" "$@"'],
        )
        if "mount:" in done.stderr:
            pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.strip()[:200]}")
    else:
        pytest.skip("running as root without unshare/mount: no way to make a read-only folder")
    assert done.returncode == 2, done.stderr[-1500:]
    assert f"{home / 'board'}" in done.stderr and "Traceback" not in done.stderr
    assert "writable" in done.stderr or "Read-only" in done.stderr


@pytest.mark.parametrize(
    "command, missing",
    [
        (["serve"], "fastapi"),
        (["serve"], "uvicorn"),
        (["board", "list"], "sqlalchemy"),
        (["submit", "sample", "RUN", "--server", "http://127.0.0.1:9", "--token", "t"], "httpx"),
    ],
)
def test_a_missing_board_extra_says_what_to_install(command, missing, runs, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, missing, None)  # as if the board extra were not installed
    command = [str(runs / "bm25.run") if part == "RUN" else part for part in command]
    assert main(command + (["--db", f"sqlite:///{tmp_path / 'b.sqlite'}"] if command[0] == "board" else [])) == 2
    err = capsys.readouterr().err
    assert f"{missing} is not installed" in err
    assert "install it with: pip install 'dialogue-sentence-retrieval[board]'" in err
    assert "internal error" not in err


# --- 10. CSRF bound to the session; temporaries removed on failure and at the next start -----


def csrf_of(page: str) -> str:
    import re

    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def test_a_csrf_token_of_one_session_does_not_work_in_another(setup, runs):
    board, client, token = setup
    sessions = []
    for _ in range(2):
        browser = TestClient(client.app)
        login = browser.get("/login").text
        assert browser.post("/login", data={"token": token, "csrf": csrf_of(login)}, follow_redirects=False).status_code == 303
        sessions.append(browser)
    mine, theirs = (csrf_of(b.get("/submit").text) for b in sessions)
    assert mine != theirs
    form = {"phase": str(board.phases.get_phase("sample", "public").id), "system": "web", "run_type": "automatic"}
    files = {"run": ("bm25.run", read(runs / "bm25.run"))}
    victim = sessions[1]
    victim.cookies.set("dsr_csrf", mine, domain="testserver.local")  # even with the cookie set to it
    assert victim.post("/submit", data={**form, "csrf": mine}, files=files).status_code == 403
    assert victim.post("/logout", data={"csrf": mine}).status_code == 403
    assert stored(board)[0] == 0
    done = victim.post("/submit", data={**form, "csrf": theirs}, files=files, follow_redirects=False)
    assert done.status_code == 303
    for browser in sessions:
        browser.close()


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporaries_are_removed_on_failure_and_at_the_next_start(db_url, tmp_path, runs, monkeypatch):
    from dsr.board.service import Metadata

    board = make_board(db_url, tmp_path)
    public, _ = setup_phases(board, runs)
    team = board.members.organisers()

    def fail(*args, **kwargs):
        raise OSError("the disk is full")

    before = stored(board)
    monkeypatch.setattr(board, "_record", fail, raising=False)  # a failure after the file was staged
    with pytest.raises(OSError, match="disk is full"):
        board.submit(team, public, read(runs / "bm25.run"), "bm25.run", Metadata("x"))
    assert stored(board) == before and not list(board.store.tmp.iterdir())
    monkeypatch.undo()
    board.close()

    # what a killed server leaves: a scratch copy, a staged file whose row never came (linked
    # into the store), and one whose row was committed but whose file is not in place yet
    pid = dead_pid()
    tmp = board.store.tmp
    (tmp / f"check-{pid}-abc.run").write_bytes(b"half")
    orphan = b"x Q0 y 1 1.0 orphan\n"
    orphan_digest = hashlib.sha256(orphan).hexdigest()
    (tmp / f"stage-{pid}-{orphan_digest}-q1").write_bytes(orphan)
    board.store.path(orphan_digest).parent.mkdir(exist_ok=True)
    os.link(tmp / f"stage-{pid}-{orphan_digest}-q1", board.store.path(orphan_digest))
    kept = stored(board)[1][0]  # a stored run a row names
    data = board.store.get(kept)
    board.store.path(kept).unlink()
    (tmp / f"stage-{pid}-{kept}-q2").write_bytes(data)
    live = tmp / f"check-{os.getpid()}-mine.run"  # a live process's scratch file stays
    live.write_bytes(b"in use")

    again = make_board(db_url, tmp_path)  # the next start
    assert sorted(p.name for p in again.store.tmp.iterdir()) == [live.name]
    assert not again.store.has(orphan_digest) and again.store.verify(kept)
    assert stored(again) == before
    again.close()


@empty_database
def test_upgrading_a_board_keeps_only_the_published_metadata_of_stored_sidecars(db_url, tmp_path, runs):
    """A board made before migration 0002 served whole sidecars: the upgrade rewrites them."""
    engine = engine_at(db_url, "0001")
    side = json.dumps(private_sidecar(tmp_path, "somehost", "someone"), sort_keys=True)
    with engine.begin() as conn:
        insert_row(conn, "teams", **OLD_TEAM)
        insert_row(conn, "phases", **OLD_PHASE, collection_hash=load_collection("sample").content_hash, topics_json="[]")
        insert_row(conn, "submissions", **OLD_SUBMISSION, sidecar_json=side, per_topic=b"\0" * 8)
    engine.dispose()
    board = make_board(db_url, tmp_path)  # migrates to the newest schema
    with board.engine.connect() as conn:
        kept = json.loads(conn.scalar(text("select sidecar_json from submissions")))
        assert conn.scalar(text("select version_num from alembic_version")) == migration_head()
    assert kept == published_metadata(json.loads(side)) and kept["ranker"] == "bm25"
    assert "somehost" not in json.dumps(kept) and "/home/" not in json.dumps(kept)
    board.close()
