"""What every reranker is: (collection, run) in, a Run out.

A reranker rescores the top ``top_k`` sentences of each topic of a run (all
when ``top_k`` is None) and keeps the rest below them in their original order,
so its output is still a full ranking of every candidate.
"""

from __future__ import annotations

from typing import Any, ClassVar

from retrieval.data import Collection
from retrieval.errors import InputError
from retrieval.run import Run


class Reranker:
    name: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, Any]] = {}
    GRID: ClassVar[dict[str, list[Any]]] = {}

    def __init__(self, **params: Any):
        unknown = sorted(set(params) - set(self.PARAMS))
        if unknown:
            raise InputError(f"unknown parameter(s) {', '.join(unknown)} for reranker {self.name!r}; "
                             f"known: {', '.join(sorted(self.PARAMS)) or 'none'}", field="--param")
        self.params = {**self.PARAMS, **params}

    def describe(self) -> dict[str, Any]:
        return {"reranker": self.name, "params": dict(self.params)}

    def rerank(self, collection: Collection, run: Run, top_k: int | None = None) -> Run:
        raise NotImplementedError  # pragma: no cover - abstract
