"""Issue 19 at the leaderboard's seams, on SQLite and PostgreSQL: what is stored is what was
scored and what the command line scores (gzip read by one reader), nothing private is published,
hidden labels do not leak through small subsets, ties are said, retries and duplicates are
recognised, LaTeX is escaped, and nothing the server accepted answers 500."""

from __future__ import annotations

import gzip
import hashlib
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from board_support import db_url, make_board, plain_rr, postgres, read, runs, setup_phases  # noqa: F401
from eval.board.app import create_app
from dsr.cli import main
from retrieval.collections import load_collection


def public_labels():
    c = load_collection("sample")
    return {d.id: {x.id: x.label for x in d.candidates} for d in c.dialogues}


def post(client, token, data: bytes, system: str, phase: str = "public", name: str = "run.run",
         sidecar: bytes | None = None, headers: dict | None = None, **fields):
    files = {"run": (name, data)}
    if sidecar is not None:
        files["sidecar"] = ("run.run.json", sidecar)
    return client.post("/api/submissions", data={"collection": "sample", "phase": phase, "system": system,
                                                 **fields},
                       files=files, headers={"Authorization": f"Bearer {token}", **(headers or {})})


def stored(board) -> tuple[int, list[str]]:
    """(non-baseline rows, files in the store)."""
    with board.engine.connect() as conn:
        rows = conn.scalar(text("select count(*) from submissions where not baseline"))
    return rows, sorted(p.name for p in board.store.root.glob("??/*"))


@pytest.fixture
def setup(db_url, tmp_path, runs):  # noqa: F811
    board = make_board(db_url, tmp_path)
    setup_phases(board, runs)
    token = board.add_team("alpha")
    client = TestClient(create_app(board))
    yield board, client, token
    client.close()
    board.close()


# --- 1. gzip: one reader, every member, no cut or padded stream ------------------------

def multi_member(data: bytes) -> bytes:
    """What bgzip, ``pigz -i`` and ``cat a.gz b.gz`` write: several gzip members."""
    lines = data.splitlines(keepends=True)
    cut = len(lines) * 24 // 25
    return gzip.compress(b"".join(lines[:cut])) + gzip.compress(b"".join(lines[cut:]))


def test_multi_member_gzip_is_read_whole_and_scored_as_the_command_line_scores_it(
        setup, runs, tmp_path, capsys):  # noqa: F811
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
    assert {s: m["RR"] for s, m in cli["all_dialogues"].items()} == {
        s: m["RR"] for s, m in body["means"].items()}


@pytest.mark.parametrize("damage, says", [
    (lambda packed: packed[:-20], "cut short"),
    (lambda packed: packed + b"garbage after the end\n", "trailing garbage"),
])
def test_cut_or_padded_gzip_is_refused_by_board_and_command_line_alike(
        setup, runs, tmp_path, capsys, damage, says):  # noqa: F811
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


def test_gzip_bomb_is_refused_without_unpacking_it_whole(db_url, tmp_path, runs):  # noqa: F811
    board = make_board(db_url, tmp_path, max_upload=200_000)
    setup_phases(board, runs)
    token = board.add_team("alpha")
    client = TestClient(create_app(board))
    bomb = gzip.compress(b"x" * 100_000) * 3          # three members: 300 kB unpacked
    answer = post(client, token, bomb, "bomb")
    assert answer.status_code == 413 and "unpacked" in answer.json()["error"]
    client.close()
    board.close()
