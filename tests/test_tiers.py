"""The suite's tiers (tests/support/tiers.py, docs/contributing.md): what makes a test slow is
marked, and a test that starts a server, a database, a browser, a process, an export, a training
or Ray without the mark fails, so the fast tier (``make test-fast``) cannot start one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import tiers

ROOT = Path(__file__).resolve().parents[1]


class _Item:
    def __init__(self, nodeid: str, slow: bool):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return pytest.mark.slow.mark if name == "slow" and self.slow else None


@pytest.fixture
def as_test(request):
    """Run a block as if inside another (fake) test; the real one is restored after."""

    def enter(nodeid: str, slow: bool):
        tiers.running(_Item(nodeid, slow))

    yield enter
    tiers.running(request.node)


def test_starting_something_slow_fails_an_unmarked_test_and_names_the_mark(as_test):
    as_test("tests/test_x.py::test_quick", slow=False)
    with pytest.raises(pytest.fail.Exception, match=r"test_quick starts PostgreSQL: mark it @pytest.mark.slow"):
        tiers.require_slow("PostgreSQL")
    as_test("tests/test_x.py::test_db", slow=True)
    tiers.require_slow("PostgreSQL")  # marked: allowed
    tiers.running(None)
    tiers.require_slow("PostgreSQL")  # outside a test (a benchmark, a tool): allowed


def test_dsr_exports_trainings_and_ray_are_guarded():
    """The guards wrap dsr's own functions, and fire before any work: here, in a fast test,
    an export, a training and a Ray start-up each fail at once; the training recipes call the
    guarded function."""
    from dsr.indexes import backends
    from dsr.indexes.corpus.distributed import Executor
    from dsr.training import biencoder, crossencoder, steps

    for function, what in ((backends._build, "an OpenVINO export"), (steps.start_work, "a training")):
        assert function.__dsr_guarded__
        with pytest.raises(pytest.fail.Exception, match=f"starts {what}"):
            function(None, None, None)
    assert biencoder.start_work is steps.start_work is crossencoder.start_work
    with pytest.raises(pytest.fail.Exception, match="starts Ray"):
        Executor(workers=2).__enter__()
    with Executor(workers=0):  # no Ray asked: nothing started, nothing to mark
        pass


def test_the_support_helpers_that_start_servers_are_guarded(tmp_path):
    from tests.support.board import ForkedServers, LiveServer, ServerProcess
    from tests.support.kill import Forker

    with pytest.raises(pytest.fail.Exception, match="starts a dsr serve process"):
        ServerProcess("sqlite:///x", tmp_path).start()
    with pytest.raises(pytest.fail.Exception, match="starts a uvicorn server"):
        LiveServer.__enter__(object.__new__(LiveServer))
    with pytest.raises(pytest.fail.Exception, match="starts dsr serve processes"):
        ForkedServers(tmp_path / "log")
    with pytest.raises(pytest.fail.Exception, match="starts a helper process"):
        Forker([])


def test_every_collected_test_taking_a_slow_fixture_is_marked_slow(request):
    items = request.session.items
    taking = [item for item in items if tiers.is_slow_by_rule(item)]
    assert all(item.get_closest_marker("slow") for item in taking)
    if any("postgres" in item.fixturenames for item in items):
        assert taking  # the rule sees them (it is not a rule over nothing)


def test_the_makefile_runs_the_tiers_in_parallel_with_durations():
    makefile = (ROOT / "Makefile").read_text()
    pytest_line = re.search(r"^PYTEST := (.*)$", makefile, re.M).group(1)
    assert "-n auto" in pytest_line and "--durations" in pytest_line
    assert re.search(r"^test: venv\n\t\$\(PYTEST\)\n", makefile, re.M)
    # the tier that auto_workers knows as the fast one is the one make test-fast selects
    assert re.search(r"^test-fast: venv\n\t\$\(PYTEST\) -m " + re.escape(f'"{tiers.FAST_TIER}"') + r"\n", makefile, re.M)
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"slow: ' in pyproject and "--strict-markers" in pyproject and '"pytest-xdist"' in pyproject


class _MarkConfig:
    def __init__(self, markexpr: str):
        self.markexpr = markexpr

    def getoption(self, name, default=None):
        return self.markexpr if name == "markexpr" else default


@pytest.mark.parametrize(
    ("markexpr", "workers"),
    [("not slow", 2), ("  not   slow ", 2), ("", 3), ("slow", 3), ("not slow and not x", 3)],
)
def test_the_fast_tier_runs_a_worker_per_core_and_the_whole_suite_one_more(markexpr, workers):
    """The fast tier waits on no server or process, so a third worker on 2 cores only adds its own
    collection; the whole suite's waits are filled by one (tests/conftest.py has the figures)."""
    assert tiers.auto_workers(_MarkConfig(markexpr), 2) == workers


class _Ordered:
    def __init__(self, nodeid: str, slow: bool = False):
        self.nodeid, self.slow = nodeid, slow

    def get_closest_marker(self, name):
        return pytest.mark.slow.mark if name == "slow" and self.slow else None


def test_the_costliest_modules_run_first_and_each_module_stays_together_in_its_order():
    from tests.support import order

    items = [
        _Ordered("a.py::t1"),
        _Ordered("a.py::t2", slow=True),
        _Ordered("b.py::t1"),
        _Ordered("b.py::t2"),
        _Ordered("c.py::t1", slow=True),
        _Ordered("c.py::t2", slow=True),
        _Ordered("d.py::t1"),
    ]
    measured = {"b.py": 40.0, "a.py": 3.0}  # c.py and d.py never measured: 10 s per slow test
    order.by_cost(items, measured)
    assert [i.nodeid for i in items] == ["b.py::t1", "b.py::t2", "c.py::t1", "c.py::t2", "a.py::t1", "a.py::t2", "d.py::t1"]


class _Config:
    """What xdist's scheduler reads of a run's config: ``-n 2 --dist loadgroup``."""

    def getvalue(self, name):
        return {"dist": "loadgroup", "tx": ["2*popen"]}[name]


def test_a_group_goes_to_one_worker_and_is_ordered_at_the_cost_of_all_its_modules(monkeypatch):
    """pytest 9 ignores xdist's own grouping (the ``xdist_group`` mark), so the scheduler reads
    tests/support/order.py's GROUPS: a grouped module's tests are one work unit with the other
    modules of its group; any other test is a unit of its own, as ``--dist loadgroup`` does.
    The group's modules run costliest first (the README's tables before the int8 test that
    reuses their vectors)."""
    from tests.support import order

    monkeypatch.setattr(order, "_GROUP_OF", {"g1.py": "g", "g2.py": "g"})
    items = [_Ordered("a.py::t1"), _Ordered("g1.py::t1"), _Ordered("b.py::t1"), _Ordered("g2.py::t1"), _Ordered("g2.py::t2")]
    order.by_cost(items, {"a.py": 30.0, "b.py": 25.0, "g1.py": 20.0, "g2.py": 15.0})  # the group: 35 s
    assert [i.nodeid for i in items] == ["g1.py::t1", "g2.py::t1", "g2.py::t2", "a.py::t1", "b.py::t1"]
    # within the group, its costliest module first (whatever the collection's order)
    order.by_cost(items, {"a.py": 30.0, "b.py": 25.0, "g1.py": 15.0, "g2.py": 20.0})
    assert [i.nodeid for i in items] == ["g2.py::t1", "g2.py::t2", "g1.py::t1", "a.py::t1", "b.py::t1"]
    scheduler = order.make_scheduler(_Config(), None)
    assert scheduler is not None
    assert {n: scheduler._split_scope(n) for n in ("g1.py::t1", "g2.py::t2[x]", "a.py::t1")} == {
        "g1.py::t1": "g",
        "g2.py::t2[x]": "g",
        "a.py::t1": "a.py::t1",
    }


def test_every_grouped_module_exists_and_its_mark_names_its_group(pytestconfig):
    """Each module GROUPS lists exists, and :func:`check_groups` (run at every collection) fails
    a run whose marks and GROUPS disagree."""
    from tests.support import order

    listed = [m for modules in order.GROUPS.values() for m in modules]
    assert listed and all((ROOT / m).is_file() for m in listed) and len(listed) == len(set(listed))

    class Marked(_Ordered):
        def __init__(self, nodeid, group):
            super().__init__(nodeid)
            self.group = group

        def iter_markers(self, name):
            return [pytest.mark.xdist_group(self.group).mark] if name == "xdist_group" and self.group else []

    grouped = order.GROUPS["ranx"][0]
    order.check_groups([Marked(f"{grouped}::t", "ranx"), Marked("tests/x.py::t", None)])
    with pytest.raises(pytest.UsageError, match=re.escape("tests/x.py: marked ['ranx'], listed in None")):
        order.check_groups([Marked("tests/x.py::t", "ranx")])
    with pytest.raises(pytest.UsageError, match=re.escape("marked [], listed in 'ranx'")):
        order.check_groups([Marked(f"{grouped}::t", None)])


def test_every_import_in_the_tests_resolves_without_sys_path_tricks():
    """A slow test's import inside a function runs only in the full tier: a helper imported by a
    bare name (``from tiny_bert import ...``, the layout before tests.support) passes the fast
    tier and fails ``make test``. Every module any test file imports, at the top or inside a
    function, is found from the checkout's root (pyproject's ``pythonpath = ["."]``)."""
    import ast
    import importlib.util

    missing = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                if importlib.util.find_spec(top) is None:
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    assert not missing, missing
