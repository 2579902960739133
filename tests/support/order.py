"""The order a parallel run takes the modules in: the costliest first (longest processing time
first), so that the long tests start early and no worker ends the run alone on one of them.

A module's cost is its tests' total duration in the last run that measured it (kept in pytest's
cache, ``.pytest_cache``, under :data:`KEY`); a module never measured counts
:data:`SLOW_SECONDS` per slow test (or :data:`FIRST_GUESS`). Each module's tests stay together and in their order (a
module's fixtures are set up once), and the order is the same in every xdist worker (each
reads the cache as the last run left it).

**Groups.** ``--dist loadgroup`` sends the tests of one xdist group to one worker. xdist finds a
test's group by the ``xdist_group`` mark, which it appends to the test's node id, and pytest 9
no longer lets it (the id is computed; xdist 3.8 sets an attribute nobody reads): every group
was split over the workers, so each worker built CMU_DoG train and compiled ranx, and set up
the group's module fixtures again. The groups are therefore listed here by module
(:data:`GROUPS`), read by the scheduler (:func:`make_scheduler`, the conftest's
``pytest_xdist_make_scheduler``); a module's ``xdist_group`` mark must name the group this
lists it in (:func:`check_groups`), and a group is ordered by the cost of all its modules.
"""

from __future__ import annotations

import pytest

__all__ = [
    "KEY",
    "SLOW_SECONDS",
    "RANX",
    "GROUPS",
    "module_of",
    "group_of",
    "by_cost",
    "check_groups",
    "make_scheduler",
    "Timings",
]

KEY = "dsr/module_seconds"
#: the guessed cost of a slow test in a module no run has measured yet
SLOW_SECONDS = 10.0
#: where no run has measured them yet (a fresh clone, as in CI): the seconds of the modules whose
#: few slow tests take far more than SLOW_SECONDS each (CI's --durations; the four
#: below it: their --durations in a run of 2 workers), so they start first and do not end the run on one worker while the other idles
FIRST_GUESS = {
    "tests/test_readme_tables.py": 115.0,
    "tests/cli/test_quiet.py": 67.0,
    "tests/indexes/test_backends.py": 58.0,
    "tests/rankers/test_default_backend.py": 47.0,
    "tests/indexes/test_corpus.py": 46.0,
}
#: the xdist group of the modules that run ranx: its first use in a process compiles numba's
#: typed containers and its kernels (seconds, and more where numba's on-disk cache is cold, as
#: in a fresh virtual environment), so one worker pays it for all of them (``--dist loadgroup``)
RANX = pytest.mark.xdist_group("ranx")
#: every xdist group and its modules (the scheduler's; each module's mark names its group)
GROUPS: dict[str, tuple[str, ...]] = {
    # tests.support.data.REAL_CMU_DOG: one worker builds CMU_DoG train from ../shared/data
    "real-cmu-dog-train": (
        "tests/board/test_board_overlap_real.py",
        "tests/collections/test_cmu_dog_dev.py",
        "tests/collections/test_cmu_dog_dev_grades.py",
        "tests/indexes/test_exactness.py",
        "tests/rankers/test_default_backend.py",  # reuses the README tables' vectors of CMU_DoG valid
        "tests/test_readme_tables.py",
        "tests/training/test_hygiene.py",
    ),
    "biencoder-train": (
        "tests/training/test_biencoder_train.py",
    ),  # its module fixture `home` trains two models: once, on one worker
    "train": ("tests/training/test_train.py",),  # its module fixture `trained` trains a model: once, on one worker
    "recipes": ("tests/training/test_recipes.py",),  # its module fixture `full` runs the full recipe: once, on one worker
    "pipeline": ("tests/training/test_pipeline.py",),  # its module fixture trains a two-stage pipeline: once, on one worker
    "reproduce": ("tests/test_reproduce.py",),  # its module fixture `full_run` runs the full suite: once, on one worker
    "readme-tasks": ("tests/test_readme.py",),  # its tasks run in one folder and home, in order
    "wheel": ("tests/test_wheel.py",),  # its module fixture builds the wheel and a venv: once, on one worker
    "ray-cluster": (
        "tests/indexes/test_ray_cluster.py",
    ),  # its module fixture starts a two-node Ray cluster: once, on one worker
    "quality": (
        "tests/judging/test_quality.py",
    ),  # its module fixture `campaign` grades a real pool 10,000 times: once, on one worker
    "corpus": (
        "tests/indexes/test_corpus.py",
    ),  # its module fixture `indexed` builds a corpus and its indexes: once, on one worker
    # the module fixtures of these (a launcher and servers, a reproduce output, a campaign, a
    # server for a browser) are made once only when the module's tests share one worker
    "board-processes": ("tests/board/test_board_processes.py",),
    "board-kill": ("tests/board/test_board_kill.py",),
    "board-reproduce": ("tests/board/test_board_baselines_reproduce.py",),
    "judging-crash": ("tests/judging/test_judging_crash.py",),
    "judging-real-data": ("tests/judging/test_real_data.py",),
    "judging-long-dialogue": ("tests/judging/test_judging_long_dialogue.py",),
    "judging-browser": ("tests/judging/test_judging_browser.py",),
    "board-season-browser": ("tests/board/test_board_season_browser.py",),
    "ranx": (
        "tests/core/test_fusion_every_method.py",
        "tests/core/test_fusion_learnt.py",
        "tests/core/test_fusion_ranx.py",
        "tests/core/test_interop.py",
        "tests/interchange/test_interchange_runs.py",
        "tests/board/test_board_seams.py",  # tool_runs (ranx, PyTerrier), as test_interchange_runs
        "tests/test_api_doc.py",
        "tests/test_providers.py",  # the fusion kernels' check against ranx's code
    ),
}
_GROUP_OF = {module: group for group, modules in GROUPS.items() for module in modules}


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def group_of(nodeid: str) -> str | None:
    """The xdist group of a test (:data:`GROUPS`), or None."""
    return _GROUP_OF.get(module_of(nodeid))


def by_cost(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Sort ``items`` in place: modules by cost, costliest first, a group's modules together at
    the cost of the whole group and, within it, costliest first; stable otherwise (a module's
    tests stay in their order)."""
    guess: dict[str, float] = {}
    for item in items:
        module = module_of(item.nodeid)
        guess[module] = guess.get(module, 0.0) + (SLOW_SECONDS if item.get_closest_marker("slow") else 0.0)
    cost = {module: seconds.get(module, max(guess[module], FIRST_GUESS.get(module, 0.0))) for module in guess}
    unit = {module: _GROUP_OF.get(module, module) for module in cost}
    unit_cost: dict[str, float] = {}
    for module, c in cost.items():
        unit_cost[unit[module]] = unit_cost.get(unit[module], 0.0) + c

    def key(item: pytest.Item) -> tuple[float, str, float]:
        module = module_of(item.nodeid)
        return -unit_cost[unit[module]], unit[module], -cost[module]

    items.sort(key=key)


def check_groups(items: list[pytest.Item]) -> None:
    """Fail the collection when a test's ``xdist_group`` mark names another group than the one
    :data:`GROUPS` lists its module in (the scheduler reads GROUPS, not the marks)."""
    wrong = set()
    for item in items:
        marks = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        listed = group_of(item.nodeid)
        if marks != ({listed} if listed else set()):
            wrong.add(f"{module_of(item.nodeid)}: marked {sorted(marks)}, listed in {listed!r}")
    if wrong:
        raise pytest.UsageError(
            "xdist groups: list each grouped module in tests/support/order.py GROUPS:\n  " + "\n  ".join(sorted(wrong))
        )


def make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup``'s scheduler with the groups of :data:`GROUPS` (None otherwise: xdist's own)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ByModuleGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid) or super()._split_scope(nodeid)

    return ByModuleGroups(config, log)


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
