"""The order a parallel run takes the modules in: the costliest first (longest processing time
first), so that the long tests start early and no worker ends the run alone on one of them.

A module's cost is its tests' total duration in the last run that measured it (kept in pytest's
cache, ``.pytest_cache``, under :data:`KEY`); a module never measured counts
:data:`SLOW_SECONDS` per slow test. Each module's tests stay together and in their order (a
module's fixtures are set up once), and the order is the same in every xdist worker (each
reads the cache as the last run left it).
"""

from __future__ import annotations

import pytest

__all__ = ["KEY", "SLOW_SECONDS", "RANX", "module_of", "by_cost", "Timings"]

KEY = "dsr/module_seconds"
#: the guessed cost of a slow test in a module no run has measured yet
SLOW_SECONDS = 10.0
#: the xdist group of the modules that run ranx: its first use in a process compiles numba's
#: typed containers and its kernels (10-20 s, and more where numba's on-disk cache is cold, as
#: in a fresh virtual environment), so one worker pays it for all of them (``--dist loadgroup``)
RANX = pytest.mark.xdist_group("ranx")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def by_cost(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Sort ``items`` in place: modules by cost, costliest first; stable otherwise."""
    guess: dict[str, float] = {}
    for item in items:
        module = module_of(item.nodeid)
        guess[module] = guess.get(module, 0.0) + (SLOW_SECONDS if item.get_closest_marker("slow") else 0.0)
    cost = {module: seconds.get(module, guess[module]) for module in guess}
    items.sort(key=lambda item: -cost[module_of(item.nodeid)])


class Timings:
    """Sums each module's durations as the reports come in (in the process that writes the
    terminal report: the xdist controller, or the only process) and keeps them at the end."""

    def __init__(self, config: pytest.Config):
        self.config, self.seconds = config, {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        module = module_of(report.nodeid)
        self.seconds[module] = self.seconds.get(module, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.seconds:
            cache.set(KEY, {**cache.get(KEY, {}), **{k: round(v, 2) for k, v in self.seconds.items()}})
