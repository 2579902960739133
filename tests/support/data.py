"""Where the tests' data lives: small fixtures in each source's exact schema (always there) and
the real files in ``../shared/data`` (beside the checkout on the development machines and in CI;
absent on a fresh clone, where the tests that need them skip and say so). The tests on the real
files are in the slow tier (``shared_data``, ``shared_data_home`` and the ``shared`` value of
:func:`data_sources` mark them), so ``make test-fast`` runs the same tests on every clone."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.support.tiers import require_slow, slow_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SHARED_DATA = ROOT.parent / "shared" / "data"

__all__ = [
    "ROOT",
    "FIXTURES",
    "SHARED_DATA",
    "shared_file",
    "DataSource",
    "data_sources",
    "needs_shared",
    "no_shared_data_reason",
    "shared_data",
    "shared_data_home",
    "REAL_CMU_DOG",
]


def no_shared_data_reason(name: str = "") -> str | None:
    """Why a test of ../shared/data[/NAME] cannot run here, or None when it can."""
    folder = SHARED_DATA / name if name else SHARED_DATA
    if folder.exists():
        return None
    return f"../shared/data{'/' + name if name else ''} is not beside the checkout (real data; CI has it)"


class DataSource(NamedTuple):
    """A source folder a test reads: ``kind`` "fixture" (tests/fixtures/NAME) or "shared"."""

    kind: str
    path: Path

    @property
    def real(self) -> bool:
        return self.kind == "shared"


def data_sources(name: str) -> list:
    """``pytest.param``s for ``params=``/``parametrize``: the fixture tests/fixtures/NAME, and the
    real files ../shared/data/NAME (slow: the real files are 10-1000 times the fixture's; skipped,
    with the reason, when absent)."""
    reason = no_shared_data_reason(name)
    return [
        pytest.param(DataSource("fixture", FIXTURES / name), id="fixture"),
        pytest.param(
            DataSource("shared", SHARED_DATA / name),
            id="shared",
            marks=[pytest.mark.slow, pytest.mark.skipif(reason is not None, reason=reason or "")],
        ),
    ]


def needs_shared(name: str = ""):
    """Decorator for a test that reads ../shared/data[/NAME]: slow, and skipped (saying so)
    where the folder is absent."""
    reason = no_shared_data_reason(name)

    def mark(test):
        return pytest.mark.slow(pytest.mark.skipif(reason is not None, reason=reason or "")(test))

    return mark


@pytest.fixture
@slow_fixture
def shared_data() -> Path:
    """../shared/data (real copies of the sources); skips when absent."""
    reason = no_shared_data_reason()
    if reason:
        pytest.skip(reason)
    return SHARED_DATA


def shared_file(relative: str) -> Path:
    """The file ../shared/data/RELATIVE; skips, naming it, when it is not beside the checkout."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"../shared/data/{relative} is not beside the checkout")
    return path


@contextlib.contextmanager
def shared_data_home(tmp_path_factory) -> Iterator[Path]:
    """For a module-scoped fixture built from ../shared/data (skipped when it is absent): a
    DSR_HOME set inside the block (the per-test home is function-scoped); yields it. It is one
    home for the whole run (per xdist worker), so the collections built from the real files
    (CMU_DoG train: 3,373 conversations) are built once and reused by every module;
    the modules that build CMU_DoG train share one xdist group (``REAL_CMU_DOG``), so one worker
    builds it."""
    reason = no_shared_data_reason()
    if reason:
        pytest.skip(reason)
    require_slow("a build from the real data in ../shared/data (declare the fixture @slow_fixture)")
    home = tmp_path_factory.getbasetemp() / "shared-data-home"
    home.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DSR_HOME", str(home))
        yield home


@pytest.fixture(scope="module")
@slow_fixture
def real_home(tmp_path_factory) -> Iterator[Path]:
    """The run's DSR_HOME of the collections built from ../shared/data (:func:`shared_data_home`),
    set for a module's tests; skipped when ../shared/data is absent."""
    with shared_data_home(tmp_path_factory) as home:
        yield home


#: the xdist group of the modules that build CMU_DoG train from ../shared/data (one worker builds it)
REAL_CMU_DOG = pytest.mark.xdist_group("real-cmu-dog-train")
