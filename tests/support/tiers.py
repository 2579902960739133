"""The suite's two tiers, and the guard that keeps the fast one fast.

``make test-fast`` runs ``-m "not slow"``; ``make test`` runs everything. A test is ``slow``
when it starts a server, a database, a browser, a Ray cluster or a helper process, exports an
OpenVINO model, trains a model, reads the real data in ../shared/data, or is slow by the durations
report (docs/contributing.md).

Most slow tests are marked by the fixtures they take: a fixture that starts one of those things
is declared with :func:`slow_fixture` (under ``@pytest.fixture``), and ``tests/conftest.py``
marks every test that takes it, directly or through another fixture (and ``db_url``'s
PostgreSQL value, :data:`SLOW_PARAMS`); the rest carry ``@pytest.mark.slow`` (or a module's
``pytestmark``). So
that a forgotten mark cannot slip into the fast tier, whatever starts one of those things calls
:func:`require_slow` at the moment it starts it (the support helpers do; :func:`install_guards`
wraps dsr's OpenVINO export, the loading of a model to train and Ray's start-up): in a test that is not marked slow, the
test fails and says what to mark. The duration rule is checked by the durations report.
"""

from __future__ import annotations

import functools

import pytest

__all__ = [
    "SLOW_PARAMS",
    "FAST_TIER",
    "slow_fixture",
    "is_slow_by_rule",
    "is_fast_tier",
    "auto_workers",
    "running",
    "require_slow",
    "install_guards",
]

#: parametrised tests whose parameter starts one: (argument, value)
SLOW_PARAMS = frozenset({("db_url", "postgresql")})
#: the mark expression of ``make test-fast`` (the Makefile's ``-m``)
FAST_TIER = "not slow"


def slow_fixture(function):
    """Declare a fixture that starts a server, a database, a browser, a Ray cluster or a helper
    process, exports or trains (put it under ``@pytest.fixture``): every test taking it is slow."""
    function.__dsr_slow__ = True
    return function


def slow_fixtures(item: pytest.Item) -> list[str]:
    """The names of the slow fixtures ``item`` takes, directly or through other fixtures."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return sorted(name for name, chain in defs.items() if any(getattr(d.func, "__dsr_slow__", False) for d in chain))


_current: list[pytest.Item] = []


def is_slow_by_rule(item: pytest.Item) -> bool:
    """The conftest's rule: the test takes a slow fixture, or a slow parameter value."""
    if slow_fixtures(item):
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(
        name == slow_name and value == slow_value for name, value in params.items() for slow_name, slow_value in SLOW_PARAMS
    )


def is_fast_tier(config: pytest.Config) -> bool:
    """Whether this run is the fast tier: its mark expression is :data:`FAST_TIER`."""
    return " ".join(str(config.getoption("markexpr", "") or "").split()) == FAST_TIER


def auto_workers(config: pytest.Config, cores: int) -> int:
    """``-n auto``'s workers (the conftest's ``pytest_xdist_auto_num_workers``): one per core in
    the fast tier, one more than the cores for the whole suite (its docstring has the figures)."""
    return cores if is_fast_tier(config) else cores + 1


def running(item: pytest.Item | None) -> None:
    """Set (or clear, with None) the test now being set up, run or torn down."""
    _current[:] = [item] if item is not None else []


def require_slow(what: str) -> None:
    """Called by whatever starts ``what`` (a server, an export, ...): fails the test now running
    unless it is marked slow. Outside a test (a benchmark, a tool) it does nothing."""
    if _current and _current[0].get_closest_marker("slow") is None:
        pytest.fail(
            f"{_current[0].nodeid} starts {what}: mark it @pytest.mark.slow (the fast tier, "
            "make test-fast, starts no server, database, browser, process, export or training; "
            "docs/contributing.md)",
            pytrace=False,
        )


def _guarded(function, what: str, when=lambda *args, **kwargs: True):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if when(*args, **kwargs):
            require_slow(what)
        return function(*args, **kwargs)

    wrapper.__dsr_guarded__ = True
    return wrapper


def install_guards() -> None:
    """Wrap the places in dsr that export, train or start Ray, where the work begins (after the
    cheap checks that refuse bad input); their modules import little (the heavy libraries are
    imported inside them). Installed before the test modules are imported, so that the training
    recipes' ``from dsr.training.steps import start_work`` takes the wrapped one."""
    from dsr.indexes import backends
    from dsr.indexes.corpus import distributed
    from dsr.training import steps

    for module, name, what in ((backends, "_build", "an OpenVINO export"), (steps, "start_work", "a training")):
        if not getattr(getattr(module, name), "__dsr_guarded__", False):
            setattr(module, name, _guarded(getattr(module, name), what))
    enter = distributed.Executor.__enter__
    if not getattr(enter, "__dsr_guarded__", False):
        distributed.Executor.__enter__ = _guarded(enter, "Ray", lambda self: self.uses_ray and self._depth == 0)
