"""The contracts a part of dsr keeps, as checks a plug-in's author runs on their own classes.

dsr's own contract tests (``tests/test_contracts.py``) run these same checks over every
registered part; a package that registers a ranker, a reranker, a collection, a measure or
a fusion method runs them on its own (docs/plugins.md)::

    from dsr.testing import CollectionTestCase, RankerTestCase

    class TestTheirRanker(RankerTestCase):
        ranker = TheirRanker                 # the class; params = {...} if it needs any

    class TestTheirCollection(CollectionTestCase):
        collection = their_collection        # a module or object with SOURCE, PARAMS, load
        source = "tests/fixtures/theirs"     # its raw files, if it reads any

The test cases are :class:`unittest.TestCase` classes (pytest runs them too); each check is
also a plain function (:func:`check_ranker`, :func:`check_reranker`, :func:`check_collection`,
:func:`check_measure`, :func:`check_fusion`) that raises ``AssertionError`` saying what is
wrong. What they hold:

* a ranker or reranker declares its settings as ``Param``\\ s whose defaults pass their own
  checks and whose tuning grid values are allowed, refuses a setting it does not declare, and
  returns a run of every dialogue of the collection, ranking exactly that dialogue's
  candidates with strictly decreasing float32 scores (the tie rule), the same on a second
  call; a reranker reorders the top k and keeps the tail in its order;
* a collection has a ``SOURCE`` named as registered, ``PARAMS``, ``load(source, split)`` (and
  ``build`` with the same two), builds, loads, hashes the same twice and through its
  benchmark file, and exports as TREC topics and qrels;
* a measure family parses and prints back as the same measure (its name round-trips), or
  is refused with its reason;
* a fusion method fuses two runs into one over the union of their documents, keeps a run
  fused with itself in its order, and refuses a parameter it does not take.

It sits on the layer of :mod:`dsr.baselines` (dsr/layers.toml), above every unit whose parts
it checks; nothing in dsr imports it.
"""

from __future__ import annotations

import inspect
import tempfile
import unittest
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dsr.collections import SourceInfo, load_collection
from dsr.core import registry
from dsr.core.data import Collection, read_benchmark, write_benchmark
from dsr.core.errors import InputError
from dsr.core.fusion import fuse, method_params
from dsr.core.params import Param
from dsr.core.run import Run
from dsr.core.stage import Stage
from dsr.evaluation import registry as measures_registry
from dsr.evaluation.measures import parse_measures
from dsr.evaluation.qrels import qrels_from_collection
from dsr.interchange import trec
from dsr.interchange.corpus import TestCollection
from dsr.rankers import make_ranker

#: what a part is checked on when its author names no collection: the bundled sample
SAMPLE = "sample"


def _collection(collection: Collection | str | Path | None) -> Collection:
    return collection if isinstance(collection, Collection) else load_collection(collection or SAMPLE)


def orders(run: Run) -> dict[str, list[str]]:
    """Each topic's documents in the run's order."""
    return {topic: [doc for doc, _ in ranking] for topic, ranking in run.rankings.items()}


def check_params(cls: Any) -> None:
    """``PARAMS`` is a tuple of distinct :class:`Param`; each default and grid value passes its checks."""
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


def check_run(run: Run, collection: Collection, *, exact_candidates: bool = True) -> None:
    """A run of every dialogue of ``collection``, each ranking its own candidates once, with
    scores strictly decreasing as float32."""
    assert isinstance(run, Run), f"a Run, not {type(run).__name__}"
    by_id = {d.id: d for d in collection.dialogues}
    assert set(run.rankings) == set(by_id), "a ranking for every dialogue, and for nothing else"
    for topic, ranking in run.rankings.items():
        docs = [doc for doc, _ in ranking]
        assert len(docs) == len(set(docs)), f"{topic}: a document ranked twice"
        if exact_candidates:
            assert set(docs) == {c.id for c in by_id[topic].candidates}, f"{topic}: not its candidates"
        scores = np.asarray([score for _, score in ranking], dtype=np.float32)
        assert np.all(np.diff(scores) < 0), f"{topic}: scores not strictly decreasing as float32"


def _check_stage(cls: Any, kind: str) -> None:
    assert inspect.isclass(cls) and issubclass(cls, Stage), f"{cls!r}: a {kind} is a class (dsr.rankers.base.Ranker...)"
    assert cls.kind == kind, f"{cls.__name__}: kind {cls.kind!r}, not {kind!r} (subclass dsr's {kind.title()})"
    assert isinstance(cls.name, str) and cls.name, f"{cls.__name__}: a name (its registry key)"
    check_params(cls)
    try:
        cls(no_such_setting=1)
    except InputError:
        pass
    else:
        raise AssertionError(f"{cls.__name__}: a setting it does not declare must be an InputError")


def check_ranker(cls: Any, collection: Collection | str | Path | None = None, **params: Any) -> Run | None:
    """The ranker contract on ``collection`` (default: the bundled sample), built with
    ``params``; the run it made (None for a ranker that searches a corpus instead)."""
    _check_stage(cls, "ranker")
    if getattr(cls, "needs_corpus", False):
        return None
    sample = _collection(collection)
    first, second = cls(**params)(sample), cls(**params)(sample)
    check_run(first, sample)
    assert orders(first) == orders(second), f"{cls.name}: two runs with the same settings differ"
    return first


def check_reranker(
    cls: Any, collection: Collection | str | Path | None = None, *, top_k: int = 5, first: Run | None = None, **params: Any
) -> Run:
    """The reranker contract: built with ``params`` and ``top_k``, it reorders each topic's top
    ``top_k`` of ``first`` (default: the ``initial`` ranker's run) and keeps the tail below."""
    _check_stage(cls, "reranker")
    sample = _collection(collection)
    initial = first if first is not None else make_ranker("initial")(sample)
    reranked = cls(top_k=top_k, **params)(sample, initial)
    check_run(reranked, sample)
    before, after = orders(initial), orders(reranked)
    for topic, order in before.items():
        assert set(after[topic][:top_k]) == set(order[:top_k]), f"{topic}: the top {top_k} is a reordering"
        assert after[topic][top_k:] == order[top_k:], f"{topic}: the tail is kept in its order"
    return reranked


def check_fusion(method: str, collection: Collection | str | Path | None = None) -> None:
    """The fusion contract of the registered method ``method`` on two runs of ``collection``."""
    sample = _collection(collection)
    a, b = make_ranker("bm25")(sample), make_ranker("random")(sample)
    check_run(fuse([a, b], method, initial_order=sample.initial_order()), sample)
    assert orders(fuse([a, a], method, initial_order=sample.initial_order())) == orders(a), (
        f"{method}: a run fused with itself keeps its order"
    )
    assert isinstance(method_params(method), dict)
    try:
        fuse([a, b], method, no_such_parameter=1)
    except InputError:
        pass
    else:
        raise AssertionError(f"{method}: a parameter it does not take must be an InputError")


def check_source(part: Any, name: str | None = None) -> SourceInfo:
    """A collection's declarations: ``SOURCE`` (named ``name``), ``PARAMS``, ``load`` and ``build``."""
    info = part.SOURCE
    assert isinstance(info, SourceInfo), "SOURCE, a dsr.collections.SourceInfo"
    assert name is None or info.name == name, f"SOURCE.name {info.name!r}, registered as {name!r}"
    assert isinstance(part.PARAMS, tuple) and all(isinstance(p, Param) for p in part.PARAMS), "PARAMS, a tuple of Param"
    assert {"source", "split"} <= set(inspect.signature(part.load).parameters), "load(source, split)"
    if hasattr(part, "build"):
        assert {"source", "split"} <= set(inspect.signature(part.build).parameters), "build(source, split, **params)"
    if info.default_split:
        assert info.default_split in info.splits, f"default split {info.default_split!r} is one of its splits"
    return info


def check_collection(
    part: Any, source: str | Path | None = None, split: str | None = None, name: str | None = None
) -> Collection:
    """The collection contract: declarations (:func:`check_source`), then it builds, loads,
    hashes the same twice and through its benchmark file, and exports; the loaded collection."""
    info = check_source(part, name)
    folder = Path(source) if source is not None else None
    loaded = part.load(folder, split)
    assert isinstance(loaded, Collection) and len(loaded) > 0, "load gives a Collection with dialogues"
    again = part.load(folder, split)
    assert again.content_hash == loaded.content_hash, "two loads of the same files hash the same"
    if hasattr(part, "build") and (folder is not None or not info.repository):
        built = part.build(folder, split)
        assert built.content_hash == loaded.content_hash, "build and load give the same collection"
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "collection.jsonl"
        write_benchmark(loaded, path)
        assert read_benchmark(path).content_hash == loaded.content_hash, "the benchmark file keeps the content hash"
        if info.has_candidates:
            _check_export(loaded, Path(work) / "trec")
        else:
            assert not any(d.candidates for d in loaded), f"{info.name}: has_candidates=False, yet candidates"
    return loaded


def _check_export(collection: Collection, folder: Path) -> None:
    folder.mkdir()
    files = trec.write(TestCollection.build(collection), folder)
    assert all((folder / f).is_file() for f in files), "the TREC export writes its files"
    judged = sum(len(docs) for docs in qrels_from_collection(collection).values())
    lines = (folder / "qrels.txt").read_text(encoding="utf-8").splitlines()
    assert len(lines) == judged, "the exported qrels hold every judged candidate once"


def check_measure(family: Any, example: str | None = None) -> None:
    """A measure family as dsr reports it: its declaration, and its name round-trips (a measure
    of the family parses and prints back as itself), or it is refused with its reason."""
    assert isinstance(family, measures_registry.Family), "a dsr.evaluation.registry.Family"
    assert family.direction in (-1, 0, 1) and isinstance(family.bounded, bool) and family.about, f"{family.name}: declared"
    assert all(isinstance(k, int) and k >= 1 for k in family.cutoffs), f"{family.name}: cutoffs are whole numbers >= 1"
    text = example or family.example or family.name + (f"@{family.cutoffs[0]}" if family.cutoffs else "")
    if family.refused:
        try:
            parse_measures([text])
        except InputError as err:
            assert family.refused in str(err), f"{family.name}: refused with its reason"
            return
        raise AssertionError(f"{family.name}: refused, yet parsed")
    measure = parse_measures([text])[0]
    assert measure.NAME == family.name, f"{text!r} parses as {measure.NAME}, not {family.name}"
    assert str(parse_measures([str(measure)])[0]) == str(measure), f"{text!r} does not print back as itself"
    assert measures_registry.lookup(measure) == family, f"{family.name}: the registry finds it by its measures"
    assert measures_registry.display_name(measure).startswith(family.display), f"{family.name}: shown as {family.display}"


def check_registered(kind: str, name: str) -> Any:
    """The part registered as ``name`` loads and carries ``name`` as its own name."""
    part = registry.get(kind, name)
    assert registry.own_name(part) == name, f"{kind} {name!r}: its own name is {registry.own_name(part)!r}"
    return part


class _Contract(unittest.TestCase):
    """A contract's test case: run only in a subclass that names the part under test."""

    __test__ = False
    #: the attribute a subclass sets to the part under test
    part_attribute: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__test__ = cls.__dict__.get(cls.part_attribute) is not None

    def setUp(self) -> None:
        if getattr(self, self.part_attribute, None) is None:
            self.skipTest(f"set `{self.part_attribute}` to the part under test")


class RankerTestCase(_Contract):
    """:func:`check_ranker` as a test case: set ``ranker`` (and ``params``, ``collection``)."""

    part_attribute = "ranker"
    ranker: Any = None
    params: ClassVar[Mapping[str, Any]] = {}
    collection: Any = None

    def test_keeps_the_ranker_contract(self) -> None:
        check_ranker(self.ranker, self.collection, **self.params)


class RerankerTestCase(_Contract):
    """:func:`check_reranker` as a test case: set ``reranker`` (and ``params``, e.g. a model)."""

    part_attribute = "reranker"
    reranker: Any = None
    params: ClassVar[Mapping[str, Any]] = {}
    collection: Any = None
    top_k = 5

    def test_keeps_the_reranker_contract(self) -> None:
        check_reranker(self.reranker, self.collection, top_k=self.top_k, **self.params)


class CollectionTestCase(_Contract):
    """:func:`check_collection` as a test case: set ``collection`` (and ``source``, ``split``)."""

    part_attribute = "collection"
    collection: Any = None
    source: str | Path | None = None
    split: str | None = None

    def test_keeps_the_collection_contract(self) -> None:
        check_collection(self.collection, self.source, self.split)


class MeasureTestCase(_Contract):
    """:func:`check_measure` as a test case: set ``family`` (and an ``example`` string)."""

    part_attribute = "family"
    family: Any = None
    example: str | None = None

    def test_keeps_the_measure_contract(self) -> None:
        check_measure(self.family, self.example)
