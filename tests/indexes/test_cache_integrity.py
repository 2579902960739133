"""Caches are checked before use: a damaged index file, embedding shard or built
collection is rebuilt (one notice on stderr), never used, and the results equal a
clean build's. A DSR_HOME that cannot be written stops with exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.indexes import embeddings
from dsr.indexes.manifest import index_folder
from dsr.rankers import make_ranker


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _edit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01  # one bit of the last value
    path.write_bytes(bytes(data))


def _nan_fill(path: Path) -> None:
    """Same shape and size, every float NaN: still a loadable .npy/.npz."""
    if path.suffix == ".npz":
        arrays = dict(np.load(path))
        np.savez(path.with_suffix(""), **{k: np.full_like(v, np.nan, dtype=np.float64) for k, v in arrays.items()})
    else:
        array = np.load(path)
        # integer arrays (the shard's digest rows) get their largest value instead
        fill = np.nan if np.issubdtype(array.dtype, np.floating) else np.iinfo(array.dtype).max
        np.save(path, np.full_like(array, fill))


DAMAGE = {"empty": _empty, "truncated": _truncate, "edited": _edit, "nan": _nan_fill}


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


def scores(run) -> dict:
    return {q: dict(r) for q, r in run.rankings.items()}


# --- index folders (dsr.indexes.manifest.cached_build) ----------------------------


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_bm25_index_file_is_rebuilt(capsys, sample, damage):
    clean = scores(make_ranker("bm25").rank(sample))
    folder = index_folder("bm25", "sample-okapi-sw0-st0")
    DAMAGE[damage](folder / "stats.npz")
    capsys.readouterr()
    again = scores(make_ranker("bm25").rank(sample))
    err = capsys.readouterr().err
    assert "rebuilding bm25 index" in err and "stats.npz fails its checksum" in err
    assert again == clean
    # rebuilt and recorded: the next use loads it without a notice
    assert scores(make_ranker("bm25").rank(sample)) == clean
    assert "rebuilding" not in capsys.readouterr().err


def test_index_of_an_older_version_without_checksums_is_rebuilt(capsys, sample):
    make_ranker("bm25").rank(sample)
    manifest_path = index_folder("bm25", "sample-okapi-sw0-st0") / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert set(manifest["checksums"]) == set(manifest["files"])
    del manifest["checksums"]
    manifest_path.write_text(json.dumps(manifest))
    capsys.readouterr()
    make_ranker("bm25").rank(sample)
    assert "fails its checksum" in capsys.readouterr().err


def test_damaged_bm25_index_through_the_cli(capsys, tmp_path):
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(tmp_path / "a.run")]) == 0
    _truncate(index_folder("bm25", "sample-okapi-sw0-st0") / "tf.npz")
    capsys.readouterr()
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(tmp_path / "b.run")]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "tf.npz fails its checksum" in err
    assert (tmp_path / "a.run").read_text() == (tmp_path / "b.run").read_text()


# --- embedding shards ---------------------------------------------------------

TEXTS = [
    "The cat sat on the mat.",
    "Volcanic ash reacted with seawater.",
    "Rayleigh scattering",
    "A quick brown fox.",
    "Concrete is a composite material.",
]


@pytest.mark.parametrize("part", ["vectors", "keys"])
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_embedding_shard_is_encoded_again(capsys, part, damage):
    embeddings._caches.clear()
    clean = embeddings.encode(TEXTS, "all-MiniLM-L6-v2")
    folder = next(index_folder("embeddings", "x").parent.iterdir())
    (shard,) = folder.glob(f"*.{part}.npy")
    DAMAGE[damage](shard)
    embeddings._caches.clear()  # a new process
    embeddings.stats.reset()
    capsys.readouterr()
    again = embeddings.encode(TEXTS, "all-MiniLM-L6-v2")
    err = capsys.readouterr().err
    assert "damaged" in err and "Traceback" not in err
    assert embeddings.stats.encoded == len(TEXTS)  # nothing taken from the bad shard
    np.testing.assert_allclose(again, clean, atol=1e-6)
    assert not shard.exists()  # removed, not kept to fail again


def test_shard_manifest_records_sha256(capsys):
    from dsr.core.provenance import sha256_file

    embeddings._caches.clear()
    embeddings.encode(TEXTS[:2], "all-MiniLM-L6-v2")
    folder = next(index_folder("embeddings", "x").parent.iterdir())
    (info_path,) = folder.glob("*.shard.json")
    info = json.loads(info_path.read_text())
    name = info_path.name[: -len(".shard.json")]
    assert info["rows"] == 2
    assert info["sha256"] == {part: sha256_file(folder / f"{name}.{part}.npy") for part in ("keys", "vectors")}


# --- built collections (dsr.collections.common.cached_build) ------------


def test_damaged_built_collection_is_rebuilt(capsys, shared_data, dsr_home):
    from dsr.collections import cmu_dog

    clean = cmu_dog.load(shared_data / "cmu_dog", "valid")
    bench = dsr_home / "collections" / "cmu_dog" / "valid.jsonl"
    lines = bench.read_text(encoding="utf-8").split("\n")
    # an edit that keeps every line valid JSON and valid input: only the checksum sees it
    record = json.loads(lines[0])
    record["candidates"][0]["body"] += " (edited)"
    lines[0] = json.dumps(record, ensure_ascii=False)
    bench.write_text("\n".join(lines), encoding="utf-8")
    capsys.readouterr()
    again = cmu_dog.load(shared_data / "cmu_dog", "valid")
    assert "damaged" in capsys.readouterr().err
    assert again.content_hash == clean.content_hash
    _empty(bench)
    assert cmu_dog.load(shared_data / "cmu_dog", "valid").content_hash == clean.content_hash
    assert "damaged" in capsys.readouterr().err
    # bytes edited without changing the content (the old content-hash check let this through)
    lines = bench.read_text(encoding="utf-8").split("\n")
    lines[0] = json.dumps(json.loads(lines[0]), ensure_ascii=False, indent=None, separators=(", ", ":  "))
    bench.write_text("\n".join(lines), encoding="utf-8")
    assert cmu_dog.load(shared_data / "cmu_dog", "valid").content_hash == clean.content_hash
    assert "fails its checksum" in capsys.readouterr().err


# --- a DSR_HOME that cannot be written ----------------------------------------


def _check_refusal(capsys, code: int, folder_hint: str) -> None:
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert "set DSR_HOME to a writable folder" in err and folder_hint in err


def test_dsr_home_that_is_a_file(capsys, tmp_path, monkeypatch):
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("DSR_HOME", str(home))
    code = main(["run", "sample", "--ranker", "bm25", "--out", str(tmp_path / "x.run")])
    _check_refusal(capsys, code, str(home))
    assert not (tmp_path / "x.run").exists()


def test_dsr_home_under_a_file(capsys, tmp_path, monkeypatch, shared_data):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    monkeypatch.setenv("DSR_HOME", str(blocker / "home"))
    code = main(["stats", "cmu_dog", "--source", str(shared_data / "cmu_dog"), "--split", "valid"])
    _check_refusal(capsys, code, str(blocker / "home"))


def test_read_only_dsr_home(capsys, tmp_path, monkeypatch):
    home = tmp_path / "ro-home"
    home.mkdir()
    os.chmod(home, 0o555)
    monkeypatch.setenv("DSR_HOME", str(home))
    real_access = os.access

    # tests run as root, for whom chmod does not deny writes: answer as the kernel would for a user
    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and str(path).startswith(str(home)):
            return False
        return real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    try:
        code = main(["run", "sample", "--ranker", "dense", "--out", str(tmp_path / "x.run")])
        _check_refusal(capsys, code, str(home))
        with pytest.raises(InputError, match="writable"):
            embeddings._caches.clear()
            embeddings.encode(["some text"], "all-MiniLM-L6-v2")
    finally:
        os.chmod(home, 0o755)
        embeddings._caches.clear()
