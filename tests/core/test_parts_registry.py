"""The registry of dsr's parts: one ``register(kind, name, obj)``, keys that are the parts' own
names, entry points of installed distributions, and names two owners claim refused naming both.
Distributions are made in the test (a package and its dist-info on ``sys.path``)."""

from __future__ import annotations

import sys

import pytest

import dsr
from dsr.core import registry
from dsr.core.errors import InputError
from dsr.rankers.random import RandomRanker
from tests.support.plugins import make_distribution

RANKER = """
from dsr.rankers.random import RandomRanker


class Theirs(RandomRanker):
    name = "theirs"


class Misnamed(RandomRanker):
    name = "something-else"
"""


@pytest.fixture()
def clean(monkeypatch):
    """The registry as it was before the test: parts registered by a call are dropped, and the
    installed distributions are read again."""
    before = {kind: dict(table) for kind, table in registry._STATE.called.items()}
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    registry._STATE.called.clear()
    registry._STATE.called.update(before)
    for module in [m for m in sys.modules if m.startswith(("theirs_pkg", "broken_pkg"))]:
        del sys.modules[module]
    registry.refresh()


@pytest.fixture()
def site(tmp_path, clean):
    sys.path.insert(0, str(tmp_path))
    return tmp_path


def installed(site, name, points, files=None):
    make_distribution(site, name, "1.0", points, files or {"theirs_pkg/__init__.py": RANKER})
    registry.refresh()


def test_a_part_registered_by_a_call_is_listed_and_built_like_dsrs_own(clean):
    class Mine(RandomRanker):
        name = "mine"

    held = registry.Names("ranker")  # a view held from before: it sees later parts
    dsr.register("ranker", "mine", Mine)
    assert "mine" in held and held[-1] == "mine" and registry.names("ranker")[0] == "initial"
    assert dsr.ranker("mine").name == "mine" and registry.owner("ranker", "mine") == __name__
    dsr.register("ranker", "mine", Mine)  # the same part again: nothing
    with pytest.raises(registry.RegistryError, match=r"'mine' is claimed twice: by \S+ \(\S+Mine\) and by \S+ \(\S+:Other\)"):
        dsr.register("ranker", "mine", type("Other", (RandomRanker,), {"name": "mine"}))


def test_the_key_is_the_parts_own_name(clean):
    with pytest.raises(registry.RegistryError, match="own name is 'random'") as err:
        dsr.register("ranker", "fast", RandomRanker)
    assert err.value.field == "name"
    with pytest.raises(InputError, match="unknown kind of part 'rankers'; choose from ranker, reranker"):
        dsr.register("rankers", "random", RandomRanker)
    with pytest.raises(InputError) as unknown:
        registry.get("ranker", "nope")
    assert unknown.value.field == "ranker" and "choose from initial, bm25" in str(unknown.value)


def test_a_distributions_entry_points_are_read_and_loaded_on_first_use(site):
    installed(site, "theirs-dist", {"dsr.rankers": {"theirs": "theirs_pkg:Theirs"}})
    assert registry.names("ranker")[-1] == "theirs" and "theirs_pkg" not in sys.modules
    assert registry.owner("ranker", "theirs") == "theirs-dist 1.0"
    assert dsr.ranker("theirs", seed=3).params["seed"] == 3
    assert "theirs_pkg" in sys.modules


def test_an_entry_point_whose_part_has_another_name_is_refused_when_used(site):
    installed(site, "theirs-dist", {"dsr.rankers": {"theirs": "theirs_pkg:Misnamed"}})
    assert "theirs" in registry.names("ranker")  # listing imports nothing, so it cannot know yet
    with pytest.raises(registry.RegistryError, match=r"theirs-dist 1\.0 registers ranker 'theirs'.*own name is 'something-else'"):
        registry.get("ranker", "theirs")


def test_an_entry_point_that_does_not_load_names_its_distribution(site):
    installed(
        site,
        "broken-dist",
        {"dsr.rankers": {"broken": "broken_pkg:Nothing"}},
        {"broken_pkg/__init__.py": "raise OSError('disk')\n"},
    )
    with pytest.raises(
        registry.RegistryError, match=r"ranker 'broken' of broken-dist 1.0 \(broken_pkg:Nothing\) does not load: OSError"
    ):
        registry.get("ranker", "broken")


def test_a_name_two_distributions_claim_is_an_error_naming_both(site):
    installed(site, "theirs-dist", {"dsr.rankers": {"theirs": "theirs_pkg:Theirs"}})
    installed(site, "their-rival", {"dsr.rankers": {"theirs": "theirs_pkg:Misnamed"}})
    with pytest.raises(registry.RegistryError) as err:
        registry.names("ranker")
    assert "their-rival 1.0" in str(err.value) and "theirs-dist 1.0" in str(err.value)
    assert registry.names("collection")  # another kind is not concerned


def test_a_distribution_claiming_one_of_dsrs_names_is_refused_naming_both(site):
    installed(site, "theirs-dist", {"dsr.rankers": {"bm25": "theirs_pkg:Theirs"}})
    with pytest.raises(
        registry.RegistryError, match=r"'bm25' is claimed twice: by dsr \(dsr\.rankers\.bm25:BM25Ranker\) and by theirs-dist 1\.0"
    ):
        registry.get("ranker", "bm25")


def test_every_kind_reads_its_own_group(site):
    installed(site, "theirs-dist", {f"dsr.{kind}s": {"x": "theirs_pkg:Theirs"} for kind in ("ranker", "format")})
    groups = {kind.group for kind in registry.KINDS.values()}
    assert groups == {
        "dsr.rankers",
        "dsr.rerankers",
        "dsr.collections",
        "dsr.measures",
        "dsr.fusion",
        "dsr.queries",
        "dsr.recipes",
        "dsr.formats",
    }
    assert "x" in registry.names("ranker") and "x" in registry.names("format") and "x" not in registry.names("query")
