"""OpenVINO exports built once per test run and shared by the tests that use them.

An export is slow (all-MiniLM-L6-v2, int8 most), and every test has its own
``DSR_HOME``, so each test used to build its own copy of the same export. The session fixture
``exports`` builds each (model, kind, backend) once per run, in a folder every xdist worker
shares (under a file lock: the first worker to need it builds it, the others wait and reuse
it), and :meth:`Exports.seed` copies it into a test's ``DSR_HOME/models/fast``: dsr then finds
an export whose manifest matches and reuses it, exactly as when the test had built it. They are
the product's own exports (its calibration set), so a test of what a user's ``backend=`` gets
seeds the same one. Each export and each model has a lock of its own: a worker building one
does not hold up another that needs a different one.

Tests of the export itself (its cache, manifest, rebuilds, staging folders) build their own.
The shared models (a tiny BERT cross-encoder, MiniLM-L6 with a seeded cross-encoder head) live
in that folder too, so every test names them by the same path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from dsr.indexes.backends import CALIBRATION_SIZE

__all__ = ["Exports", "exports", "tiny_bi"]


class Exports:
    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"  # the DSR_HOME the shared exports are built in

    def _lock(self, *what: str):
        """The lock of one shared thing (a model by name; an export by model, kind and backend)."""
        from filelock import FileLock

        self.root.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256("\0".join(what).encode("utf-8")).hexdigest()[:16]
        return FileLock(str(self.root / f".{name}.lock"))

    def model(self, name: str) -> Path:
        """A shared model folder: ``tiny-ce`` (a tiny BERT cross-encoder over the sample's
        texts), ``tiny-bi`` (the same as a bi-encoder: mean pooling) or ``minilm-ce``
        (all-MiniLM-L6-v2's weights with a seeded one-logit head)."""
        folder = self.root / "models" / name
        with self._lock("model", name):
            if not folder.exists():
                staging = folder.with_name(f".{name}.building")
                shutil.rmtree(staging, ignore_errors=True)
                {"tiny-ce": _tiny_ce, "tiny-bi": _tiny_bi, "minilm-ce": _minilm_ce}[name](staging)
                staging.rename(folder)
        return folder

    def seed(self, dsr_home: Path, spec: str | Path, kind: str, backend: str) -> Path:
        """Copy the export of model ``spec`` for ``kind`` and ``backend`` (built now if it is
        the run's first) into ``dsr_home``; returns the copy's folder."""
        from dsr.core.models import resolve_model
        from dsr.indexes import backends

        with self._lock("export", str(spec), kind, backend), pytest.MonkeyPatch.context() as patch:
            patch.setenv("DSR_HOME", str(self.home))
            patch.setattr(backends, "CALIBRATION_SIZE", CALIBRATION_SIZE)  # the product's, whatever a test set
            built = backends.export(resolve_model(str(spec), kind), kind, backend).folder
        copy = Path(dsr_home) / built.relative_to(self.home)
        if not copy.exists():
            shutil.copytree(built, copy)  # copies: a test may edit its own (a stale manifest)
        return copy


def _tiny_ce(folder: Path) -> None:
    from dsr.collections import load_collection
    from tests.support.tiny_bert import collection_texts, make_tiny_bert

    make_tiny_bert(folder, collection_texts(load_collection("sample")))


def _tiny_bi(folder: Path) -> None:
    from dsr.collections import load_collection
    from tests.support.tiny_bert import collection_texts, make_tiny_bert

    make_tiny_bert(folder, collection_texts(load_collection("sample")), num_labels=None)


def _minilm_ce(folder: Path) -> None:
    import torch
    from sentence_transformers import CrossEncoder

    from dsr.core.models import resolve_model

    torch.manual_seed(0)
    model = CrossEncoder(resolve_model("all-MiniLM-L6-v2").path, num_labels=1, local_files_only=True, device="cpu")
    with torch.no_grad():  # a head wide enough that the logits spread (the default init is 0.02)
        model.model.classifier.weight.normal_(0, 1.0)
    model.save_pretrained(str(folder))


@pytest.fixture(scope="session")
def exports(tmp_path_factory) -> Exports:
    """The run's shared exports (one folder for all xdist workers)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder above every worker's own
    return Exports(base / "dsr-shared-exports")


@pytest.fixture(scope="session")
def tiny_bi(exports):
    """The run's tiny BERT bi-encoder (``tiny-bi``), resolved."""
    from dsr.core.models import resolve_model

    return resolve_model(str(exports.model("tiny-bi")), "bi-encoder")
