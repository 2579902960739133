"""Shared test set-up: an isolated DSR_HOME, no network for models, and ../shared/data."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"

# Tests mirror the packages (tests/retrieval, tests/eval, tests/indexes, tests/dsr); the
# helpers beside this file (board_support), tools/plain_eval.py (the independent reference
# evaluator) and tools/board_harness.py are imported by name from any of them.
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

# Never let a test reach the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def dsr_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own empty DSR_HOME, and ``backend=auto`` means torch (the exact path:
    an int8 export per test's fresh home would cost 30-90 s; tests of auto unset DSR_BACKEND)."""
    home = tmp_path_factory.mktemp("dsr_home")
    monkeypatch.setenv("DSR_HOME", str(home))
    monkeypatch.setenv("DSR_BACKEND", "torch")
    return home


@pytest.fixture
def shared_data() -> Path:
    """../shared/data (real copies of the sources); skips when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    return SHARED_DATA


@contextlib.contextmanager
def shared_data_home(tmp_path_factory) -> Iterator[Path]:
    """For a module-scoped fixture built from ../shared/data (skipped when it is absent): a
    fresh DSR_HOME set inside the block (the per-test home is function-scoped); yields it."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSR_HOME", str(home))
        yield home


@pytest.fixture(autouse=True)
def library_log_handlers_write_to_this_tests_stderr():
    """Libraries (transformers, huggingface_hub, ...) keep StreamHandlers bound to the
    sys.stderr of the test that first configured them; pytest closes that stream after the
    test, and a later log line would print a "Logging error" traceback into another test's
    captured output. Rebind every handler whose stream is closed."""
    import logging

    loggers = [logging.getLogger()] + [lg for lg in logging.Logger.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            stream = getattr(handler, "stream", None)
            if isinstance(handler, logging.StreamHandler) and getattr(stream, "closed", False):
                handler.stream = sys.stderr   # not setStream: it flushes the closed stream
    yield
