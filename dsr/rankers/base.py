"""What every ranker is: a :class:`~dsr.core.stage.Stage` with parameters in and a Run out,
and the helpers every ranker shares (its sidecar config, its run tag).

A ranker is built from keyword parameters (``make_ranker("bm25", k1=1.2)``)
and scores each dialogue's candidates (re-ranking mode, the benchmark's task)
or, where it supports it, the whole sentence pool (open retrieval). It
declares its parameters with the grid the split protocol tunes over on val,
and a ``describe()`` dict that goes into run sidecars and reports.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.run import Run
from dsr.core.stage import Stage
from dsr.indexes.exactness import sidecar_part


class Ranker(Stage):
    """A first-stage ranker: ``ranker(collection)`` (or ``ranker.rank(collection)``) -> Run.

    Subclasses set ``name``, ``PARAMS`` (declared :class:`~dsr.core.params.Param`,
    each with its tuning ``grid``) and ``rank``.
    """

    kind = "ranker"
    #: it searches a corpus given as a parameter instead of ranking the collection's candidates,
    #: so it runs on no collection alone (its contract check builds no run)
    needs_corpus: ClassVar[bool] = False

    def __call__(self, collection: Collection, *runs: Run) -> Run:
        if runs:
            raise InputError(
                f"ranker {self.name!r} makes a run from the collection; it takes no input run (rerank or fuse runs instead)"
            )
        return self.rank(collection)

    def rank(self, collection: Collection) -> Run:  # pragma: no cover - abstract
        raise NotImplementedError


def ranker_config(ranker: Ranker, collection: Collection, **extra: Any) -> dict[str, Any]:
    """What a run sidecar records: the ranker's description and the collection's identity."""
    described = ranker.describe()
    return {**described, **extra, "collection": collection.describe(), **sidecar_part(collection.describe(), described)}


def strategy_tag(ranker: Ranker) -> str:
    """Run tag that always names the query strategy, then the parameters changed from the defaults."""
    changed = [
        f"{k}={v}" for k, v in sorted(ranker.params.items()) if v != ranker.DEFAULTS.get(k) and k not in ("query", "documents")
    ]  # no paths in tags
    return "-".join([ranker.name, f"query={ranker.params['query']}", *changed]).replace(" ", "_")
