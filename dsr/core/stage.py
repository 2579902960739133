"""One shape for everything that produces a ranking: a stage takes a collection (and
runs) and returns a :class:`~dsr.core.run.Run`.

Rankers (``stage(collection)``), rerankers (``stage(collection, run)``) and fusion
(``stage(collection, run, run, ...)``) are all stages, so a pipeline reads as a
sequence of stages, PyTerrier's transformers and ranx's Run-in/Run-out in one::

    from dsr.rankers import make_ranker
    from dsr.rerankers import make_reranker
    pipeline = make_ranker("bm25", query="all") >> make_reranker("bi-encoder", top_k=20)
    run = pipeline(collection)

Each stage declares its parameters once, as data (:mod:`dsr.core.params`):
``PARAMS`` is a tuple of :class:`~dsr.core.params.Param`; ``DEFAULTS`` and
``GRID`` (what the split protocol tunes on val) are derived from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from dsr.core.data import Collection
from dsr.core.params import Param, defaults, grid, help_text, inferred, resolve
from dsr.core.registry import Parts, get
from dsr.core.run import Run


class Stage:
    """Base of rankers, rerankers and fusion: declared parameters in, a Run out."""

    #: the stage's registered name (``bm25``, ``cross-encoder``, ``rrf``...)
    name: ClassVar[str] = ""
    #: what it is, for messages (``ranker``, ``reranker``, ``fusion``)
    kind: ClassVar[str] = "stage"
    #: the declared parameters (a plain {name: default} dict is read as Params of its
    #: defaults' kinds)
    PARAMS: ClassVar[Sequence[Param]] = ()
    #: name -> default, derived from PARAMS
    DEFAULTS: ClassVar[dict[str, Any]] = {}
    #: name -> values tuned on val, derived from PARAMS unless a class sets it (or an
    #: instance: a fusion's grid depends on its method)
    GRID: dict[str, list[Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("PARAMS", cls.PARAMS)
        if isinstance(declared, dict):  # {name: default}: each of its default's kind
            declared = inferred(declared)
        cls.PARAMS = tuple(declared)
        cls.DEFAULTS = defaults(cls.PARAMS)
        if "GRID" not in cls.__dict__:
            cls.GRID = grid(cls.PARAMS)

    def __init__(self, **params: Any) -> None:
        self.params = resolve(params, self.PARAMS, f"{self.kind} {self.name!r}")

    @classmethod
    def help(cls) -> str:
        """The parameters' help, one line each (``dsr run --ranker NAME --help``)."""
        return help_text(cls.PARAMS)

    @property
    def tag(self) -> str:
        """Run tag: the stage's name and the parameters that differ from the defaults."""
        changed = [f"{k}={v}" for k, v in sorted(self.params.items()) if v != self.DEFAULTS.get(k)]
        return "-".join([self.name, *changed]).replace(" ", "_")

    def describe(self) -> dict[str, Any]:
        return {self.kind: self.name, "params": dict(self.params)}

    def __call__(self, collection: Collection, *runs: Run) -> Run:  # pragma: no cover - abstract
        raise NotImplementedError

    def __rshift__(self, other: Stage) -> Pipeline:
        """``a >> b``: run ``a``, then ``b`` on its output (a reranker, a fusion of one)."""
        return Pipeline([self, other])


class Pipeline(Stage):
    """Stages in sequence: the first makes a run from the collection, each next one
    takes the collection and the run before it."""

    name = "pipeline"
    kind = "pipeline"
    stages: list[Stage]

    def __init__(self, stages: Sequence[Stage]) -> None:
        super().__init__()
        flat: list[Stage] = []
        for stage in stages:
            flat.extend(stage.stages if isinstance(stage, Pipeline) else [stage])
        self.stages = flat

    @property
    def tag(self) -> str:
        return ">>".join(stage.tag for stage in self.stages)

    def describe(self) -> dict[str, Any]:
        return {"pipeline": [stage.describe() for stage in self.stages]}

    def __call__(self, collection: Collection, *runs: Run) -> Run:
        run = self.stages[0](collection, *runs)
        for stage in self.stages[1:]:
            run = stage(collection, run)
        return run

    def __rshift__(self, other: Stage) -> Pipeline:
        return Pipeline([*self.stages, other])


#: the kind of stage a registry holds (rankers, rerankers)
S = TypeVar("S", bound=Stage)


class Registry(Parts, Generic[S]):
    """The stages of one kind of :mod:`dsr.core.registry` (``ranker``, ``reranker``) by name:
    dsr's own and other packages', each class imported on first use, so listing them costs
    nothing (``dsr --help`` loads no model library). An unknown name is an InputError naming
    the kind and the registered names."""

    def lookup(self, name: str) -> type[S]:
        """The class registered as ``name``."""
        found: type[S] = get(self.kind, name)
        return found

    def make(self, name: str, **params: Any) -> S:
        """The stage registered as ``name``, built with ``params`` (checked by its PARAMS)."""
        return self.lookup(name)(**params)
