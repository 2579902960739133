"""Contracts every registered part keeps, checked over the registry itself with the checks a
plug-in's author runs on their own parts (:mod:`dsr.testing`), so that a new ranker,
reranker, fusion method, measure or collection is covered the day it is registered, without
a test of its own for these rules (what they hold: the docstring of :mod:`dsr.testing`).

On top of them, what dsr's own collection modules keep in this repository: a manifest when
a module downloads its own files (a module that reads another source's files names that
source in ``DATA``), and data to load for the tests (a fixture in tests/fixtures/NAME in the
source's schema, or bundled).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsr import testing
from dsr.collections import load_collection, source_module
from dsr.core import registry
from dsr.core.fusion import FUSERS
from tests.support.tiny_bert import collection_texts, make_tiny_bert

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


@pytest.mark.parametrize(("kind", "name"), [(k, n) for k in registry.KINDS for n in registry.names(k)])
def test_every_registered_part_loads_and_carries_its_key_as_its_own_name(kind, name):
    testing.check_registered(kind, name)
    assert registry.owner(kind, name) == registry.DSR


@pytest.mark.parametrize("name", registry.names("ranker"))
def test_every_ranker_keeps_the_ranker_contract(name, sample):
    testing.check_ranker(registry.get("ranker", name), sample)


def test_a_ranker_that_searches_a_corpus_says_so_and_makes_no_run_here(sample):
    searching = [n for n in registry.names("ranker") if registry.get("ranker", n).needs_corpus]
    assert searching == ["open"]
    assert testing.check_ranker(registry.get("ranker", "open"), sample) is None


@pytest.fixture(scope="module")
def reranker_models(tmp_path_factory, sample):
    """A model for each reranker that runs offline: the bundled all-MiniLM-L6-v2 for the
    bi-encoder, a tiny BERT cross-encoder built from a config for the cross-encoder."""
    tiny = make_tiny_bert(tmp_path_factory.mktemp("contract-ce"), collection_texts(sample))
    return {"bi-encoder": "all-MiniLM-L6-v2", "cross-encoder": str(tiny)}


@pytest.mark.parametrize("name", registry.names("reranker"))
def test_every_reranker_keeps_the_reranker_contract(name, sample, reranker_models):
    assert name in reranker_models, f"give the contract test an offline model for {name}"
    testing.check_reranker(registry.get("reranker", name), sample, model=reranker_models[name])


@pytest.mark.parametrize("method", sorted(FUSERS))
def test_every_fusion_kernel_keeps_the_fusion_contract(method, sample):
    testing.check_fusion(method, sample)


@pytest.mark.parametrize("name", registry.names("measure"))
def test_every_measure_family_round_trips_its_name(name):
    testing.check_measure(registry.get("measure", name))


def _fixture_for(name: str) -> Path | None:
    """The fixture folder a collection's tests read: its own, or that of the source whose files
    it reads (a module's ``DATA``, e.g. the judged sets read CMU_DoG's or the judged files)."""
    folder = ROOT / "tests" / "fixtures" / getattr(source_module(name), "DATA", name)
    return folder if folder.is_dir() and any(folder.iterdir()) else None


@pytest.mark.parametrize("name", registry.names("collection"))
def test_every_collection_module_keeps_the_contract(name):
    module = source_module(name)
    info = testing.check_source(module, name)
    if info.repository and not hasattr(module, "DATA"):
        manifest = ROOT / "dsr" / "collections" / "manifests" / f"{name}.json"
        assert manifest.is_file(), f"{name} downloads: it needs {manifest.relative_to(ROOT)}"
        assert json.loads(manifest.read_text())["commit"] == info.commit


@pytest.mark.parametrize("name", registry.names("collection"))
def test_every_collection_has_data_the_tests_load(name):
    """A collection is tested on a fixture in its source's exact schema, tests/fixtures/NAME (or
    its DATA's), or on data bundled in the package: on every clone, not only where the real
    files are (../shared/data is optional: its tests are in the slow tier and skip without it)."""
    module = source_module(name)
    bundled = getattr(module, "data_file", None) if not hasattr(module, "DATA") else None
    assert bundled or _fixture_for(name), f"add tests/fixtures/{name}/ in the source's exact schema"


#: the collections whose data ships in the package: checked whole here (each other source's own
#: tests check it whole on its fixture, tests/collections/test_NAME.py)
BUNDLED = [
    n for n in registry.names("collection") if hasattr(source_module(n), "data_file") and not hasattr(source_module(n), "DATA")
]


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_collection_builds_loads_hashes_and_exports(name):
    testing.check_collection(source_module(name), name=name)


class TestABundledCollectionThroughTheTestCase(testing.CollectionTestCase):
    """The test case a plug-in's author subclasses, on one of dsr's own collections."""

    collection = source_module(BUNDLED[0])


class TestARankerThroughTheTestCase(testing.RankerTestCase):
    ranker = registry.get("ranker", registry.names("ranker")[0])
