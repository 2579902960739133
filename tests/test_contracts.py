"""Contracts every registered part keeps, checked over the registries themselves, so that a
new ranker, reranker, fusion method or collection is covered the day it is registered,
without a test of its own for these rules.

* a ranker or reranker declares its settings as ``Param``s whose defaults pass their own
  checks and whose tuning grid values are allowed; built with its defaults it returns a
  ``Run`` over every dialogue, ranking exactly that dialogue's candidates, with strictly
  decreasing float32 scores (the tie rule), the same on a second call;
* a fusion method fuses two runs into one over the union of their documents, keeps a run
  fused with itself in its order, and refuses a parameter it does not take;
* a collection module has a ``SOURCE`` named after it, ``PARAMS``, ``load`` (and
  ``build`` when it converts raw files), a manifest when it downloads its own files (a
  module that reads another source's files names that source in ``DATA``), and data to
  load for the tests (a fixture in tests/fixtures/NAME in the source's schema, or bundled).
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from dsr.collections import REGISTERED, SourceInfo, load_collection, source_module
from dsr.core.errors import InputError
from dsr.core.fusion import FUSERS, fuse, method_params
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.rankers import RANKERS
from dsr.rerankers import RERANKERS
from tests.support.tiny_bert import collection_texts, make_tiny_bert

ROOT = Path(__file__).resolve().parents[1]

#: what a stage needs beyond its defaults to run offline on the bundled sample: the one
#: ranker that searches a whole corpus is given none here (its own tests build a corpus)
NEEDS_A_CORPUS = {"open"}


@pytest.fixture(scope="module")
def sample():
    return load_collection("sample")


def _check_params(cls) -> None:
    params = cls.PARAMS
    assert isinstance(params, tuple) and all(isinstance(p, Param) for p in params), (
        f"{cls.__name__}: PARAMS, a tuple of Param (empty when it takes none)"
    )
    assert len({p.name for p in params}) == len(params), f"{cls.__name__}: a Param declared twice"
    for p in params:
        if p.default is not None or not p.optional:
            p.check(p.default)
        for value in p.grid:
            p.check(value)


def _check_run(run: Run, collection, *, exact_candidates: bool = True) -> None:
    assert isinstance(run, Run)
    by_id = {d.id: d for d in collection.dialogues}
    assert set(run.rankings) == set(by_id), "a ranking for every dialogue"
    for topic, ranking in run.rankings.items():
        docs = [doc for doc, _ in ranking]
        assert len(docs) == len(set(docs)), f"{topic}: a document ranked twice"
        if exact_candidates:
            assert set(docs) == {c.id for c in by_id[topic].candidates}, f"{topic}: not its candidates"
        scores = np.asarray([score for _, score in ranking], dtype=np.float32)
        assert np.all(np.diff(scores) < 0), f"{topic}: scores not strictly decreasing as float32"


@pytest.mark.parametrize("name", sorted(RANKERS))
def test_every_ranker_declares_its_params(name):
    _check_params(RANKERS.lookup(name))


@pytest.mark.parametrize("name", sorted(set(RANKERS) - NEEDS_A_CORPUS))
def test_every_ranker_ranks_each_dialogues_candidates_deterministically(name, sample):
    stage = RANKERS.make(name)
    first, second = stage(sample), RANKERS.make(name)(sample)
    _check_run(first, sample)
    assert _orders(first) == _orders(second)


def test_a_ranker_refuses_an_unknown_setting():
    for name in RANKERS:
        with pytest.raises(InputError):
            RANKERS.make(name, no_such_setting=1)


@pytest.fixture(scope="module")
def reranker_models(tmp_path_factory, sample):
    """A model for each reranker that runs offline: the bundled all-MiniLM-L6-v2 for the
    bi-encoder, a tiny BERT cross-encoder built from a config for the cross-encoder."""
    tiny = make_tiny_bert(tmp_path_factory.mktemp("contract-ce"), collection_texts(sample))
    return {"bi-encoder": "all-MiniLM-L6-v2", "cross-encoder": str(tiny)}


@pytest.mark.parametrize("name", sorted(RERANKERS))
def test_every_reranker_declares_its_params(name):
    _check_params(RERANKERS.lookup(name))


@pytest.mark.parametrize("name", sorted(RERANKERS))
def test_every_reranker_reorders_the_top_k_and_keeps_the_tail(name, sample, reranker_models):
    assert name in reranker_models, f"give the contract test an offline model for {name}"
    initial = RANKERS.make("initial")(sample)
    reranked = RERANKERS.make(name, model=reranker_models[name], top_k=5)(sample, initial)
    _check_run(reranked, sample)
    before, after = _orders(initial), _orders(reranked)
    for topic, order in before.items():
        assert set(after[topic][:5]) == set(order[:5]), f"{topic}: the top 5 is a reordering"
        assert after[topic][5:] == order[5:], f"{topic}: the tail is kept in its order"


def _orders(run: Run) -> dict[str, list[str]]:
    return {topic: [doc for doc, _ in ranking] for topic, ranking in run.rankings.items()}


def _two_runs(sample) -> tuple[Run, Run]:
    return RANKERS.make("bm25")(sample), RANKERS.make("random")(sample)


@pytest.mark.parametrize("method", sorted(FUSERS))
def test_every_fusion_method_covers_the_union_and_keeps_a_run_fused_with_itself(method, sample):
    a, b = _two_runs(sample)
    fused = fuse([a, b], method, initial_order=sample.initial_order())
    _check_run(fused, sample)
    same = fuse([a, a], method, initial_order=sample.initial_order())
    assert _orders(same) == _orders(a)


@pytest.mark.parametrize("method", sorted(FUSERS))
def test_every_fusion_method_refuses_a_parameter_it_does_not_take(method, sample):
    a, b = _two_runs(sample)
    assert isinstance(method_params(method), dict)
    with pytest.raises(InputError):
        fuse([a, b], method, no_such_parameter=1)


def _fixture_for(name: str) -> Path | None:
    """The fixture folder a collection's tests read: its own, or that of the source whose files
    it reads (a module's ``DATA``, e.g. the judged sets read CMU_DoG's or the judged files)."""
    folder = ROOT / "tests" / "fixtures" / getattr(source_module(name), "DATA", name)
    return folder if folder.is_dir() and any(folder.iterdir()) else None


@pytest.mark.parametrize("name", REGISTERED)
def test_every_collection_module_keeps_the_contract(name):
    module = source_module(name)
    assert isinstance(module.SOURCE, SourceInfo) and module.SOURCE.name == name
    assert isinstance(module.PARAMS, tuple) and all(isinstance(p, Param) for p in module.PARAMS)
    assert "source" in inspect.signature(module.load).parameters
    assert "split" in inspect.signature(module.load).parameters
    if hasattr(module, "build"):
        assert {"source", "split"} <= set(inspect.signature(module.build).parameters)
    if module.SOURCE.repository and not hasattr(module, "DATA"):
        manifest = ROOT / "dsr" / "collections" / "manifests" / f"{name}.json"
        assert manifest.is_file(), f"{name} downloads: it needs {manifest.relative_to(ROOT)}"
        assert json.loads(manifest.read_text())["commit"] == module.SOURCE.commit
    if module.SOURCE.default_split:
        assert module.SOURCE.default_split in module.SOURCE.splits


@pytest.mark.parametrize("name", REGISTERED)
def test_every_collection_has_data_the_tests_load(name):
    """A collection is tested on a fixture in its source's exact schema, tests/fixtures/NAME (or
    its DATA's), or on data bundled in the package: on every clone, not only where the real
    files are (../shared/data is optional: its tests are in the slow tier and skip without it)."""
    module = source_module(name)
    bundled = getattr(module, "data_file", None) if not hasattr(module, "DATA") else None
    assert bundled or _fixture_for(name), f"add tests/fixtures/{name}/ in the source's exact schema"
