"""Verified downloads against a loopback HTTP server this test starts (never the internet)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import shutil
import socket
import tarfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from dsr.cli import main
from dsr.collections import fetch as fetch_mod
from dsr.collections import sigir2022, transfer
from dsr.collections.fetch import CHECKSUMS, fetch, is_available, load_manifest, plan_for, sources
from dsr.core.errors import InputError
from tests.support.tiers import slow_fixture

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sigir2022"
SIGIR = plan_for("sigir2022")


def blob(data: bytes) -> str:
    return hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
@slow_fixture
def server(tmp_path):
    """Serve tmp_path/www on 127.0.0.1 (port 0); yields (root, base_url, requested paths)."""
    root = tmp_path / "www"
    root.mkdir()
    requested: list[str] = []

    class Handler(_Handler):
        def do_GET(self):
            requested.append(self.path)
            super().do_GET()

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}", requested
    finally:
        httpd.shutdown()
        httpd.server_close()


def put(root: Path, repo: str, commit: str, path: str, data: bytes) -> None:
    target = root / repo / "raw" / commit / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def no_temp_files(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.name.endswith(".part") or p.name.endswith(".tmp")]


# --- sigir2022: git blob ids ------------------------------------------------


def serve_sigir(root: Path, shared: Path) -> dict[str, str]:
    """Fixture dialogues + the real split file, README and LICENSE; returns their blob ids."""
    ids = {}
    for rel, src in {
        "datasets/dialogues.json": FIXTURES / "current" / "datasets" / "dialogues.json",
        "datasets/wikipedia_grounded_dialogues.json": FIXTURES / "current" / "datasets" / "wikipedia_grounded_dialogues.json",
        "evaluation/val_test_splits.json": shared / "sigir2022" / "val_test_splits.json",
        "README.md": shared / "sigir2022" / "README.md",
        "LICENSE.md": shared / "sigir2022" / "LICENSE.md",
    }.items():
        data = src.read_bytes()
        put(root, SIGIR.repository, SIGIR.commit, rel, data)
        ids[rel] = blob(data)
    return ids


def fixture_manifest(ids: dict[str, str]) -> dict[str, str]:
    """The shipped manifest with the dialogue files' ids replaced by the fixtures' ones."""
    manifest = load_manifest("sigir2022")
    for rel in ("datasets/dialogues.json", "datasets/wikipedia_grounded_dialogues.json"):
        manifest[rel] = ids[rel]
    return manifest


def test_shipped_sigir_manifest_holds_the_published_ids():
    manifest = load_manifest("sigir2022")
    assert manifest["datasets/dialogues.json"] == "e46fc85a976baec61b7ad6ff2e70a8e60eecf6c6"
    assert manifest["datasets/wikipedia_grounded_dialogues.json"] == "4f69311245134f125f3844bc7e79b5a41dab6571"
    assert manifest["evaluation/val_test_splits.json"] == "b832c178d530d366884ff7258a3310457578ba12"
    assert manifest["b351828:datasets/dialogues.json"] == "96f952aac0bf57e8709ae32d09a019d1b5d52d99"
    assert manifest["b351828:datasets/wikipedia_grounded_dialogues.json"] == "23521f29eee94fef90d16fc2fe8a2a8479c3c4c4"


def test_good_download_verifies_by_git_blob_id(server, shared_data, dsr_home):
    root, base, requested = server
    ids = serve_sigir(root, shared_data)
    result = fetch("sigir2022", base_url=base, manifest=fixture_manifest(ids), progress=False)
    dest = dsr_home / "data" / "sigir2022"
    assert result.dest == dest and not result.failed
    assert result.files == {rel: "git blob id" for rel in ids}
    for rel, want in ids.items():
        assert blob((dest / rel).read_bytes()) == want
    # the real split file verified against the shipped (published) blob id
    assert ids["evaluation/val_test_splits.json"] == load_manifest("sigir2022")["evaluation/val_test_splits.json"]
    record = json.loads((dest / CHECKSUMS).read_text())
    assert record["commit"] == SIGIR.commit
    for rel in ids:
        assert record["files"][rel]["sha256"] == hashlib.sha256((dest / rel).read_bytes()).hexdigest()
    assert no_temp_files(dest) and is_available("sigir2022")
    assert f"/{SIGIR.repository}/raw/{SIGIR.commit}/datasets/dialogues.json" in requested

    # a second fetch keeps what verifies and downloads nothing
    requested.clear()
    again = fetch("sigir2022", base_url=base, manifest=fixture_manifest(ids), progress=False)
    assert set(again.files.values()) == {"already present, verified"} and requested == []


def test_tampered_file_is_rejected_and_deleted(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    ids = serve_sigir(root, shared_data)
    served = root / SIGIR.repository / "raw" / SIGIR.commit / "evaluation" / "val_test_splits.json"
    data = served.read_bytes()
    served.write_bytes(data.replace(b"t5_2qo4s.wee22.0.3", b"t5_2qo4s.wee23.0.3", 1))
    with pytest.raises(InputError) as err:
        fetch("sigir2022", base_url=base, manifest=fixture_manifest(ids), progress=False)
    dest = dsr_home / "data" / "sigir2022"
    assert "evaluation/val_test_splits.json" in str(err.value) and "deleted" in str(err.value)
    assert "FAILED for evaluation/val_test_splits.json" in capsys.readouterr().err
    assert not (dest / "evaluation" / "val_test_splits.json").exists()
    assert (dest / "datasets" / "dialogues.json").exists()  # the others verified and stay
    assert no_temp_files(dest)


def test_stale_local_copy_is_replaced(server, shared_data, dsr_home):
    root, base, requested = server
    ids = serve_sigir(root, shared_data)
    fetch("sigir2022", base_url=base, manifest=fixture_manifest(ids), progress=False)
    local = dsr_home / "data" / "sigir2022" / "README.md"
    local.write_text("edited by hand\n")
    requested.clear()
    result = fetch("sigir2022", base_url=base, manifest=fixture_manifest(ids), progress=False)
    assert result.files["README.md"] == "git blob id"
    assert blob(local.read_bytes()) == ids["README.md"]
    assert requested == [f"/{SIGIR.repository}/raw/{SIGIR.commit}/README.md"]


def test_old_revision_goes_to_its_own_folder_and_loads(server, dsr_home, monkeypatch):
    root, base, _ = server
    old = plan_for("sigir2022", "old")
    manifest = {}
    for name in ("dialogues.json", "wikipedia_grounded_dialogues.json"):
        data = (FIXTURES / "old" / name).read_bytes()
        put(root, old.repository, old.commit, f"datasets/{name}", data)
        manifest[f"{old.commit}:datasets/{name}"] = blob(data)
    split = (FIXTURES / "current" / "evaluation" / "val_test_splits.json").read_bytes()
    put(root, old.repository, SIGIR.commit, "evaluation/val_test_splits.json", split)
    manifest["evaluation/val_test_splits.json"] = blob(split)
    monkeypatch.setenv("DSR_FETCH_BASE_URL", base)  # the environment variable, no argument
    result = fetch("sigir2022", revision="old", manifest=manifest, progress=False)
    assert result.dest == dsr_home / "data" / "sigir2022-b351828"
    coll = sigir2022.load(result.dest)
    assert coll.meta["schema"] == "old" and len(coll) == 6 and len(coll.splits) == 3


# --- first-use sha256 (ccpe) ------------------------------------------------

CCPE = plan_for("ccpe")
CCPE_DATA = json.dumps(
    [
        {
            "conversationId": "CCPE-8e113",
            "utterances": [
                {"index": 0, "speaker": "ASSISTANT", "text": "What kind of movies do you like?"},
                {
                    "index": 1,
                    "speaker": "USER",
                    "text": "I really like thrillers, especially Gone Girl.",
                    "segments": [
                        {
                            "startIndex": 36,
                            "endIndex": 45,
                            "text": "Gone Girl",
                            "annotations": [{"annotationType": "ENTITY_NAME", "entityType": "MOVIE_OR_SERIES"}],
                        }
                    ],
                },
            ],
        }
    ],
    indent=2,
).encode()


def serve_ccpe(root: Path, shared: Path, data: bytes = CCPE_DATA) -> None:
    put(root, CCPE.repository, CCPE.commit, "data.json", data)
    put(root, CCPE.repository, CCPE.commit, "README.md", (shared / "ccpe" / "README.md").read_bytes())


def test_first_use_records_sha256_and_later_fetches_must_match(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    serve_ccpe(root, shared_data)
    dest = dsr_home / "data" / "ccpe"
    # through the command line, with the shipped manifest (README.md's real blob id)
    assert main(["data", "fetch", "ccpe", "--base-url", base]) == 0
    out = capsys.readouterr().out
    assert "1 git blob id" in out and "1 sha256 recorded (first use)" in out
    record = json.loads((dest / CHECKSUMS).read_text())["files"]
    assert record["data.json"]["sha256"] == hashlib.sha256(CCPE_DATA).hexdigest()
    assert record["data.json"]["verified_by"] == "first use"

    # same bytes again, forced: verified against the record
    result = fetch("ccpe", base_url=base, force=True, progress=False)
    assert result.files["data.json"] == "sha256 recorded on first use"

    # upstream changes: rejected, deleted, and the record is not overwritten
    serve_ccpe(root, shared_data, CCPE_DATA.replace(b"thrillers", b"comedies"))
    assert main(["data", "fetch", "ccpe", "--base-url", base, "--force"]) == 2
    err = capsys.readouterr().err
    assert "data.json" in err and "deleted" in err
    assert not (dest / "data.json").exists() and (dest / "README.md").exists()
    record = json.loads((dest / CHECKSUMS).read_text())["files"]
    assert record["data.json"]["sha256"] == hashlib.sha256(CCPE_DATA).hexdigest()


def test_no_first_use_record_from_a_fetch_that_failed(server, shared_data, dsr_home):
    root, base, _ = server
    serve_ccpe(root, shared_data)
    readme = root / CCPE.repository / "raw" / CCPE.commit / "README.md"
    readme.write_bytes(readme.read_bytes() + b"\ninjected\n")
    with pytest.raises(InputError):
        fetch("ccpe", base_url=base, progress=False)
    dest = dsr_home / "data" / "ccpe"
    files = json.loads((dest / CHECKSUMS).read_text())["files"] if (dest / CHECKSUMS).exists() else {}
    assert "data.json" not in files and not (dest / "README.md").exists()
    # and a failed fetch keeps nothing unverified: data.json arrived, but only the
    # first-use record this fetch does not write would vouch for it
    assert leftovers(dest) == [] and not is_available("ccpe")


# --- archives: cmu_dog (tar.gz) and redial (zip) ------------------------------


def test_cmu_dog_tarball_members_verified_by_blob_and_first_use(server, shared_data, dsr_home):
    root, base, _ = server
    plan = plan_for("cmu_dog")
    real = shared_data / "cmu_dog"
    chosen = (
        sorted((real / "Conversations" / "train").glob("*.json"))[:2]
        + sorted((real / "Conversations" / "valid").glob("*.json"))[:1]
        + sorted((real / "WikiData").glob("*.json"))[:2]
        + [real / "README.md"]
    )
    rels = [p.relative_to(real).as_posix() for p in chosen]
    test_files = {
        "Conversations/test/0a1b2c3d4e5f60718293a4b5c6d7e8f901234567.json": b'{"history": [{"text": "hi", "uid": "user1", "docIdx": 0}], "rating": 2}\n'
    }
    prefix = f"datasets-CMU_DoG-{plan.commit}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        members = {rel: p.read_bytes() for rel, p in zip(rels, chosen)}
        members.update(test_files)
        members["Code/preprocess.py"] = b"print('not kept')\n"
        for rel, data in members.items():
            info = tarfile.TarInfo(f"{prefix}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    target = root / plan.repository / "archive" / f"{plan.commit}.tar.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(buffer.getvalue())
    shipped = load_manifest("cmu_dog")
    assert len(shipped) == 3373 + 229 + 30 + 1
    manifest = {rel: shipped[rel] for rel in rels}  # the real ids of the files served
    result = fetch("cmu_dog", base_url=base, manifest=manifest, progress=False)
    dest = dsr_home / "data" / "cmu_dog"
    assert {rel: result.files[rel] for rel in rels} == {rel: "git blob id" for rel in rels}
    assert result.files[next(iter(test_files))] == "sha256 recorded (first use)"
    assert not (dest / "Code").exists() and not (dest / f"{plan.commit}.tar.gz").exists()
    assert no_temp_files(dest)
    for rel, p in zip(rels, chosen):
        assert (dest / rel).read_bytes() == p.read_bytes()

    # an archive that lacks a file the manifest lists is an incomplete download
    extra = sorted((real / "WikiData").glob("*.json"))[5].relative_to(real).as_posix()
    manifest[extra] = shipped[extra]
    with pytest.raises(InputError, match="missing from the downloaded archive"):
        fetch("cmu_dog", base_url=base, manifest=manifest, progress=False, force=True)


def test_redial_zip_verified_against_the_shipped_manifest(server, shared_data, dsr_home):
    root, base, _ = server
    plan = plan_for("redial")
    real = shared_data / "redial"
    put(root, plan.repository, plan.commit, "movies_with_mentions.csv", (real / "movies_with_mentions.csv").read_bytes())
    train = b'{"conversationId": "391", "messages": []}\n'
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("train_data.jsonl", train)
        zf.write(real / "test_data.jsonl", "test_data.jsonl")
    put(root, plan.repository, plan.commit, "redial_dataset.zip", buffer.getvalue())
    result = fetch("redial", base_url=base, progress=False)
    assert result.files == {
        "movies_with_mentions.csv": "git blob id",
        "test_data.jsonl": "git blob id",
        "train_data.jsonl": "sha256 recorded (first use)",
    }
    dest = dsr_home / "data" / "redial"
    assert not (dest / "redial_dataset.zip").exists() and is_available("redial")
    assert (dest / "train_data.jsonl").read_bytes() == train


# --- failures that are not verification ---------------------------------------


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_server_fails_fast_with_the_source_hint(capsys, dsr_home):
    base = f"http://127.0.0.1:{_closed_port()}"
    start = time.monotonic()
    assert main(["data", "fetch", "sigir2022", "--base-url", base]) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert "--source DIR" in err and "dsr stats sigir2022 --source DIR" in err
    assert not list((dsr_home / "data" / "sigir2022").glob("**/*.part"))


def test_silent_server_times_out(dsr_home):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts the connection, never answers
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match="--source DIR"):
            fetch("ccpe", base_url=f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=1, progress=False)
        assert time.monotonic() - start < 8
    finally:
        listener.close()


def test_missing_upstream_file_and_bad_names(server):
    _, base, _ = server
    with pytest.raises(InputError, match="HTTP 404"):
        fetch("ccpe", base_url=base, progress=False)
    with pytest.raises(InputError, match="cannot fetch 'sample'"):
        fetch("sample", base_url=base)
    with pytest.raises(InputError) as err:
        fetch("cmu_dog", base_url=base, revision="old")
    assert err.value.field == "revision"


def test_manifests_are_what_the_tool_computes(shared_data):
    """The shipped ids match the real copies (run tools/make_manifests.py if this fails)."""
    manifest = load_manifest("redial")
    for name in ("movies_with_mentions.csv", "test_data.jsonl"):
        assert manifest[name] == blob((shared_data / "redial" / name).read_bytes())
    assert load_manifest("ccpe")["README.md"] == blob((shared_data / "ccpe" / "README.md").read_bytes())
    cmu = load_manifest("cmu_dog")
    for path in sorted((shared_data / "cmu_dog" / "Conversations" / "valid").glob("*.json"))[::40]:
        assert cmu[f"Conversations/valid/{path.name}"] == blob(path.read_bytes())
    assert (
        transfer.git_blob_file(shared_data / "sigir2022" / "val_test_splits.json")
        == load_manifest("sigir2022")["evaluation/val_test_splits.json"]
    )


def test_the_tool_writes_the_shipped_manifests_from_each_sources_own_file_map(shared_data, tmp_path, capsys):
    """tools/make_manifests.py names no source: each fetched source lists its files itself
    (``manifest_files``), and what the tool writes from them is what the package ships."""
    from dsr.collections import source_module
    from tools import make_manifests

    shipped = make_manifests.OUT
    for path in shipped.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    assert make_manifests.main(["--shared", str(shared_data)], out=tmp_path) == 0
    for name in sources():
        assert callable(source_module(name).manifest_files)
        assert (tmp_path / f"{name}.json").read_bytes() == (shipped / f"{name}.json").read_bytes(), name


def test_offline_default_source_paths_do_not_touch_the_network(dsr_home):
    assert not is_available("sigir2022") and not is_available("cmu_dog")
    shutil.copytree(FIXTURES / "old", dsr_home / "data" / "sigir2022")  # files at the root
    assert is_available("sigir2022")


# --- hostile servers and archives ----------------------------------------------


class RawServer:
    """A loopback server that answers every request with ``respond(conn)`` (raw bytes)."""

    def __init__(self, respond):
        self.respond = respond
        self.stop = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.listener.settimeout(0.2)
        self.base = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            with conn:
                try:
                    conn.recv(65536)  # the request
                    self.respond(conn, self.stop)
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.listener.close()


@pytest.fixture
def raw_server():
    servers = []

    def start(respond):
        servers.append(RawServer(respond))
        return servers[-1].base

    yield start
    for s in servers:
        s.close()


def trickle(conn, stop, headers=b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n", body=b"x" * 40):
    """Headers at once, then a byte every 0.5 s (20 s for the whole body)."""
    conn.sendall(headers)
    for i in range(len(body)):
        if stop.wait(0.5):
            return
        conn.sendall(body[i : i + 1])


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.name != CHECKSUMS] if folder.exists() else []


def test_trickling_server_stops_at_the_deadline_with_exit_2(raw_server, dsr_home, capsys, monkeypatch):
    base = raw_server(trickle)
    monkeypatch.setenv("DSR_FETCH_DEADLINE", "1.5")
    start = time.monotonic()
    assert main(["data", "fetch", "ccpe", "--base-url", base, "--timeout", "5"]) == 2
    assert time.monotonic() - start < 6  # the whole body would take 20 s
    err = capsys.readouterr().err
    assert "did not finish within 1.5 s" in err and "data.json" in err and "Traceback" not in err
    assert leftovers(dsr_home / "data" / "ccpe") == []


def test_trickled_headers_are_bounded_too(raw_server, dsr_home):
    base = raw_server(
        lambda conn, stop: trickle(conn, stop, headers=b"", body=(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 40 + b"\r\n\r\n"))
    )
    start = time.monotonic()
    with pytest.raises(InputError, match="did not finish within 1 s"):
        fetch("ccpe", base_url=base, deadline=1, timeout=5, progress=False)
    assert time.monotonic() - start < 5


def test_download_past_the_recorded_size_is_refused(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    serve_ccpe(root, shared_data)
    readme = root / CCPE.repository / "raw" / CCPE.commit / "README.md"
    size = fetch_mod.load_sizes("ccpe")["README.md"]
    assert size == (shared_data / "ccpe" / "README.md").stat().st_size
    readme.write_bytes(b"#" * (transfer.size_cap(size) + 1))
    assert main(["data", "fetch", "ccpe", "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "README.md" in err and f"more than the {transfer.size_cap(size)} allowed" in err
    assert leftovers(dsr_home / "data" / "ccpe") == []  # data.json (first use) removed too


def test_download_without_a_length_stops_at_the_cap(raw_server, dsr_home):
    def endless(conn, stop):
        conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        for _ in range(200):  # 12.8 MB if nobody stops reading
            if stop.is_set():
                return
            conn.sendall(b"z" * 65536)

    base = raw_server(endless)
    with pytest.raises(InputError, match="sent more than the 100000 bytes allowed"):
        fetch("ccpe", base_url=base, max_bytes=100_000, progress=False)
    assert leftovers(dsr_home / "data" / "ccpe") == []


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"[" * 500,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n" + b"[" * 16 + b"\r\n100\r\n[[[",
    ],
    ids=["content-length", "chunked"],
)
def test_truncated_body_is_exit_2_naming_the_url(raw_server, dsr_home, capsys, reply):
    base = raw_server(lambda conn, stop: conn.sendall(reply))
    assert main(["data", "fetch", "ccpe", "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "cut short" in err and f"{CCPE.repository}/raw/{CCPE.commit}/data.json" in err
    assert "Traceback" not in err
    assert leftovers(dsr_home / "data" / "ccpe") == []
    assert not (dsr_home / "data" / "ccpe" / CHECKSUMS).exists()


def redial_zip(root: Path, shared: Path, members: dict[str, bytes], raw: bytes | None = None):
    plan = plan_for("redial")
    put(
        root,
        plan.repository,
        plan.commit,
        "movies_with_mentions.csv",
        (shared / "redial" / "movies_with_mentions.csv").read_bytes(),
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    put(root, plan.repository, plan.commit, "redial_dataset.zip", raw if raw is not None else buffer.getvalue())
    return buffer.getvalue()


def test_corrupt_zip_member_is_exit_2_and_nothing_stays(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    test_data = (shared_data / "redial" / "test_data.jsonl").read_bytes()
    good = redial_zip(root, shared_data, {"train_data.jsonl": b'{"a": 1}\n' * 5000, "test_data.jsonl": test_data})
    # the central directory is intact; the last member's compressed data is damaged
    middle = len(good) - len(test_data) // 20
    bad = good[:middle] + bytes(b ^ 0x5A for b in good[middle : middle + 64]) + good[middle + 64 :]
    redial_zip(root, shared_data, {}, raw=bad)
    assert main(["data", "fetch", "redial", "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "not a readable zip archive" in err and "redial_dataset.zip" in err
    assert "Traceback" not in err
    dest = dsr_home / "data" / "redial"
    # the csv verified by git blob id and stays; train_data.jsonl (first use) does not
    assert [p.name for p in leftovers(dest)] == ["movies_with_mentions.csv"]
    assert not is_available("redial")


def test_zip_bomb_is_refused_before_unpacking(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    data = redial_zip(root, shared_data, {"train_data.jsonl": b" " * (30 << 20), "test_data.jsonl": b"{}\n"})
    assert len(data) < 100_000  # 30 MB from under 100 KB
    assert main(["data", "fetch", "redial", "--base-url", base]) == 2
    err = capsys.readouterr().err
    assert "zip bomb" in err and "Traceback" not in err
    assert [p.name for p in leftovers(dsr_home / "data" / "redial")] == ["movies_with_mentions.csv"]


def cmu_tarball(root: Path, members: dict[str, bytes], cut: int | None = None) -> bytes:
    plan = plan_for("cmu_dog")
    prefix = f"datasets-CMU_DoG-{plan.commit}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, data in members.items():
            info = tarfile.TarInfo(rel if rel.startswith("..") else f"{prefix}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()[:cut]
    target = root / plan.repository / "archive" / f"{plan.commit}.tar.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return data


def cmu_members(shared: Path, n: int = 3) -> dict[str, bytes]:
    real = shared / "cmu_dog"
    files = sorted((real / "WikiData").glob("*.json"))[:n]
    return {p.relative_to(real).as_posix(): p.read_bytes() for p in files}


def test_truncated_tar_gz_is_exit_2_and_writes_nothing(server, shared_data, dsr_home, capsys):
    root, base, _ = server
    members = cmu_members(shared_data)
    members["Conversations/test/0a1b.json"] = b'{"history": []}\n'
    full = cmu_tarball(root, members)
    cmu_tarball(root, members, cut=len(full) * 2 // 3)
    manifest = {rel: load_manifest("cmu_dog")[rel] for rel in members if "test" not in rel}
    with pytest.raises(InputError, match=r"not a readable tar\.gz archive") as err:
        fetch("cmu_dog", base_url=base, manifest=manifest, progress=False)
    assert f"{plan_for('cmu_dog').commit}.tar.gz" in str(err.value)
    dest = dsr_home / "data" / "cmu_dog"
    # members are staged until the whole archive reads: none of them took its name
    assert leftovers(dest) == [] and not is_available("cmu_dog")
    assert not (dest / "WikiData").exists() and not (dest / "Conversations").exists()


def test_tar_bomb_stops_at_the_budget(server, shared_data, dsr_home):
    root, base, _ = server
    members = cmu_members(shared_data)
    manifest = {rel: load_manifest("cmu_dog")[rel] for rel in members}
    members["Code/padding.bin"] = b"\0" * (40 << 20)  # not even a kept member
    assert len(cmu_tarball(root, members)) < 200_000
    with pytest.raises(InputError, match="tar bomb"):
        fetch("cmu_dog", base_url=base, manifest=manifest, progress=False)
    assert leftovers(dsr_home / "data" / "cmu_dog") == []


def test_tar_member_larger_than_its_recorded_size_is_refused(server, shared_data, dsr_home):
    root, base, _ = server
    members = cmu_members(shared_data)
    manifest = {rel: load_manifest("cmu_dog")[rel] for rel in members}
    rel = next(iter(members))
    size = fetch_mod.load_sizes("cmu_dog")[rel]
    members[rel] = b" " * (transfer.size_cap(size) + 1)
    cmu_tarball(root, members)
    with pytest.raises(InputError, match=f"{rel} declares {transfer.size_cap(size) + 1} bytes"):
        fetch("cmu_dog", base_url=base, manifest=manifest, progress=False)
    assert leftovers(dsr_home / "data" / "cmu_dog") == []


def test_tar_path_traversal_is_refused(server, shared_data, dsr_home, tmp_path):
    root, base, _ = server
    members = cmu_members(shared_data)
    manifest = {rel: load_manifest("cmu_dog")[rel] for rel in members}
    members["../../evil.json"] = b"{}"
    cmu_tarball(root, members)
    with pytest.raises(InputError, match=r"unsafe member path '\.\./\.\./evil\.json' refused"):
        fetch("cmu_dog", base_url=base, manifest=manifest, progress=False)
    assert not list(dsr_home.rglob("evil.json")) and not list(tmp_path.rglob("evil.json"))
    assert leftovers(dsr_home / "data" / "cmu_dog") == []


def test_what_to_fetch_is_data_beside_each_manifest():
    """A fetchable source is a manifest with a fetch section that agrees with its module's
    SOURCE; the downloader names no source in its code (a new one needs no edit there)."""
    import ast

    from dsr.collections import REGISTERED, sigir2022, source_module
    from dsr.collections import fetch as fetch_module
    from dsr.collections.fetch import sources

    assert sources() == ["ccpe", "cmu_dog", "redial", "sigir2022"]
    for name in sources():
        plan, info = plan_for(name), source_module(name).SOURCE
        assert name in REGISTERED and (plan.repository, plan.commit) == (info.repository, info.commit)
        assert plan.remotes and plan.required and plan.description
    assert plan_for("sigir2022", "old").commit == sigir2022.OLD_COMMIT
    tree = ast.parse(Path(fetch_module.__file__).read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]
    assert not [s for s in strings for name in REGISTERED if name in s]
    assert "dsr.collections" not in {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
