"""What every ranker is: parameters in, a Run out.

A ranker is built from keyword parameters (``make_ranker("bm25", k1=1.2)``)
and scores each dialogue's candidates (re-ranking mode, the benchmark's task)
or, where it supports it, the whole sentence pool (open retrieval). It
declares the grid the split protocol tunes over on val (``GRID``), and a
``describe()`` dict that goes into run sidecars and reports.
"""

from __future__ import annotations

from typing import Any, ClassVar

from retrieval.data import Collection
from retrieval.errors import InputError
from retrieval.run import Run


def with_defaults(params: dict[str, Any], defaults: dict[str, Any], what: str) -> dict[str, Any]:
    """``defaults`` overridden by ``params``; a name not in ``defaults`` is an InputError."""
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise InputError(f"unknown parameter(s) {', '.join(unknown)} for {what}; "
                         f"known: {', '.join(sorted(defaults)) or 'none'}", field="--param")
    return {**defaults, **params}


class Ranker:
    """Base class: subclasses set ``name``, ``PARAMS`` (defaults) and ``GRID``."""

    name: ClassVar[str] = ""
    #: parameter name -> default value; unknown parameters are an InputError
    PARAMS: ClassVar[dict[str, Any]] = {}
    #: parameter name -> values tried on val by the split protocol
    GRID: ClassVar[dict[str, list[Any]]] = {}

    def __init__(self, **params: Any):
        self.params = with_defaults(params, self.PARAMS, f"ranker {self.name!r}")

    @property
    def tag(self) -> str:
        """Run tag: ranker name and the parameters that differ from the defaults."""
        changed = [f"{k}={v}" for k, v in sorted(self.params.items()) if v != self.PARAMS.get(k)]
        return "-".join([self.name, *changed]).replace(" ", "_")

    def describe(self) -> dict[str, Any]:
        return {"ranker": self.name, "params": dict(self.params)}

    def rank(self, collection: Collection) -> Run:  # pragma: no cover - abstract
        raise NotImplementedError


def ranker_config(ranker: Ranker, collection: Collection, **extra) -> dict:
    """What a run sidecar records: the ranker's description and the collection's identity."""
    return {**ranker.describe(), **extra, "collection": collection.describe()}


def strategy_tag(ranker: Ranker) -> str:
    """Run tag that always names the query strategy, then the parameters changed from the defaults."""
    changed = [f"{k}={v}" for k, v in sorted(ranker.params.items())
               if v != ranker.PARAMS.get(k) and k != "query"]
    return "-".join([ranker.name, f"query={ranker.params['query']}", *changed]).replace(" ", "_")
