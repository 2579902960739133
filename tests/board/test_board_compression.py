"""One layer of compression: a run upload is plain text or gzip, unpacked once within the phase's
cap; a compressed stream inside the gzip (the bombs below: 4 GiB of newlines behind a few
kilobytes) or an upload in another compressed format is refused before anything reads it
further. A run that takes a scoring worker past the board's time bound is refused and the
worker replaced, and other teams' runs are scored meanwhile as usual (the slow tests, against
``dsr serve`` with two workers)."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import threading
import time
import zipfile

import httpx
import pytest
from fastapi.testclient import TestClient

from dsr.board.app import create_app
from dsr.board.intake import unpack_run
from dsr.db.refused import Refused
from tests.support.board import ServerProcess, make_board, read, retag

GiB = 2**30
MiB = 2**20
LIMIT = 20 * MiB


def members(pack, block: bytes, count: int) -> bytes:
    """``count`` streams of ``pack(block)`` end to end: what each format's reader takes for one
    file of ``count`` blocks (gzip members, bz2 and xz streams), built without compressing it."""
    return pack(block) * count


def xz(data: bytes) -> bytes:
    return lzma.compress(data, preset=0)


def zipped(size: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("run.txt", b"\n" * size)
    return buffer.getvalue()


def bombs() -> dict[str, bytes]:
    """Uploads small on the wire that unpack to far more than any cap, by what is inside."""
    newlines = b"\n" * MiB
    archive = zipped(32 * MiB)
    return {
        "gzip in gzip": gzip.compress(members(gzip.compress, newlines, 4096)),  # 4 GiB inside
        "zip in gzip": gzip.compress(archive),
        "bz2 in gzip": gzip.compress(members(bz2.compress, newlines, 4096)),
        "xz in gzip": gzip.compress(members(xz, newlines, 4096)),
        "gzip in gzip in gzip": gzip.compress(gzip.compress(gzip.compress(newlines))),
        "zip": archive,
        "bz2": members(bz2.compress, newlines, 64),
        "xz": members(xz, newlines, 64),
    }


@pytest.fixture(scope="module")
def packed() -> dict[str, bytes]:
    return bombs()


def test_one_layer_of_gzip_is_unpacked_and_anything_inside_refused(packed, runs):
    plain = read(runs / "bm25.run")
    assert unpack_run(plain, LIMIT) == plain
    assert unpack_run(gzip.compress(plain[:1000]) + gzip.compress(plain[1000:]), LIMIT) == plain  # members
    for what, data in packed.items():
        assert len(data) < MiB, what  # small on the wire
        started = time.process_time()
        with pytest.raises(Refused) as refused:
            unpack_run(data, LIMIT)
        assert refused.value.status == 422, what
        inner = what.split(" in ")[0]
        assert inner in refused.value.message and ("one layer" in refused.value.message), (what, refused.value.message)
        assert time.process_time() - started < 5, what  # nothing of the inside was read


def test_the_board_refuses_the_bombs_and_stores_nothing(tmp_path, runs, packed):
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    board.phases.add_phase("sample", "public")
    token = board.members.add_team("alpha")
    client = TestClient(create_app(board))
    for what, data in packed.items():
        answer = client.post(
            "/api/submissions",
            data={"collection": "sample", "phase": "public", "system": what},
            files={"run": ("run.gz", data)},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 422, (what, answer.text[:300])
        assert "one layer" in answer.json()["error"], answer.text[:300]
    assert board.submissions(board.phases.get_phase("sample", "public")) == []
    ok = client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": "public", "system": "bm25"},
        files={"run": ("bm25.run.gz", gzip.compress(read(runs / "bm25.run")))},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert ok.status_code == 201, ok.text
    client.close()
    board.close()


def submit(url: str, token: str, data: bytes, system: str) -> tuple[int, str, float]:
    started = time.monotonic()
    answer = httpx.post(
        f"{url}/api/submissions",
        data={"collection": "sample", "phase": "public", "system": system},
        files={"run": ("run.gz", data)},
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )
    return answer.status_code, answer.text, time.monotonic() - started


@pytest.mark.slow
def test_bombs_and_a_run_past_the_time_bound_leave_other_teams_runs_their_usual_time(tmp_path, runs, packed):
    """``dsr serve --workers 2 --score-timeout 1``: every bomb, sent at once, is refused while
    another team's valid run is scored; a gzipped run of a million bad lines (a worker needs
    seconds to list its problems) is refused once it passes the bound and its worker is
    replaced. Each valid run takes at most three times its time on the idle server, plus a
    second (measured on this server first: a bound on the load, not a speed target)."""
    db = f"sqlite:///{tmp_path / 'b.sqlite'}"
    board = make_board(db, tmp_path)
    board.phases.add_phase("sample", "public")
    attacker, honest = board.members.add_team("attacker"), board.members.add_team("honest")
    board.close()
    bm25 = read(runs / "bm25.run")
    junk = gzip.compress(b"x\n" * 1_000_000)
    with ServerProcess(db, tmp_path / "store", "--rate-limit", "0", "--workers", "2", "--score-timeout", "1") as server:
        alone = [submit(server.url, honest, gzip.compress(retag(bm25, f"solo{k}")), f"solo{k}")[2] for k in range(3)]
        usual = 3 * max(alone) + 1.0
        results: dict[str, tuple[int, str, float]] = {}

        def send(name: str, data: bytes, token: str) -> None:
            results[name] = submit(server.url, token, data, name)

        threads = [threading.Thread(target=send, args=(w, d, attacker)) for w, d in packed.items()]
        threads.append(threading.Thread(target=send, args=("junk", junk, attacker)))
        threads.append(threading.Thread(target=send, args=("valid", gzip.compress(retag(bm25, "during")), honest)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(180)
        after = submit(server.url, honest, gzip.compress(retag(bm25, "after")), "after")
    for what in packed:
        status, body, took = results[what]
        assert status == 422 and "one layer" in body, (what, body[:300])
    status, body, took = results["junk"]
    assert status == 422 and "longer than 1 s" in body, body[:300]
    for name, (status, body, took) in {"valid": results["valid"], "after": after}.items():
        assert status == 201, (name, body[:300])
        assert took <= usual, (name, took, alone)
