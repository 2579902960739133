"""A report's figures drawn by worker processes while the rest of the report is written.

Drawing is most of a report's writing time (more than the run files and tables): the figures' bootstrap
intervals, matplotlib's layout and the 300 dpi PNGs. :class:`Drawing` starts them at once
in up to ``workers`` processes, each drawing a share of the figures (balanced by their
measured cost), and hands back the same captions and files as drawing them here would.

The workers are forked copies of this process (the results they draw are sent pickled);
:func:`start_workers` forks them early and has them import matplotlib while other work
runs, so the import is off the critical path (``dsr reproduce`` starts them before it
builds the runs). With one worker, one figure, or where ``fork`` does not exist, the
figures are drawn in this process: the same files either way.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

from dsr.core.forked import can_fork, default_workers, die_with_parent
from dsr.evaluation import figure_cache, figures, significance
from dsr.evaluation.figure_files import figure_files

if TYPE_CHECKING:
    from dsr.evaluation.results import Results

#: relative drawing time of each figure (measured on a SIGIR-sized report); others: 1
COST = {"diff_vs_baseline": 3.0, "measures": 2.5}
#: the most figures a report has (:func:`dsr.evaluation.figures.figure_makers`): more workers idle
MAX_FIGURES = 5

Drawn = list[tuple[str, str, dict[str, bytes]]]  # (stem, caption, {file name: bytes})


class Workers(NamedTuple):
    pool: ProcessPoolExecutor
    n: int

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def start_workers(workers: int | None = None) -> Workers | None:
    """Forked workers for :class:`Drawing`, importing matplotlib from now on; None where
    the figures will be drawn in this process."""
    workers = min(default_workers() if workers is None else workers, MAX_FIGURES)
    if workers <= 1 or not can_fork():
        return None
    # scipy.stats (the intervals the figures draw, and this process's significance tests) is
    # imported here, once, so that the workers inherit it instead of each importing it again
    significance._stats()
    # a worker ends with this process, however it ends (an orphan would wait on its queue forever)
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"), initializer=die_with_parent, initargs=(os.getpid(),)
    )
    for _ in range(workers):  # the first submit forks them all
        pool.submit(_import_matplotlib)
    return Workers(pool, workers)


@contextlib.contextmanager
def workers(n: int | None = None) -> Iterator[Workers | None]:
    """:func:`start_workers`, closed at the end of the block."""
    started = start_workers(n)
    try:
        yield started
    finally:
        if started is not None:
            started.close()


class Drawing:
    """Every figure of ``results``, reused from :mod:`dsr.evaluation.figure_cache` when the same
    figures were drawn before, else started now (by ``pool``'s workers, else by workers forked
    now): :meth:`result` gives ``(captions, files)`` and lets the workers go. ``label`` (the
    collection's name) is recorded with a new entry of the cache."""

    def __init__(self, results: Results, pool: Workers | None = None, workers: int | None = None, label: str = "") -> None:
        self.stems = list(figures.figure_makers(results))
        self.results = results
        self.label = label
        self.futures: list[Future] | None = None
        self.key = figure_cache.content_key(results, self.stems) if figure_cache.enabled() else None
        self.cached = figure_cache.lookup(self.key, self.stems, label)
        if self.cached is not None:  # nothing to draw: matplotlib is never imported
            if pool is not None:
                pool.close()
            self.pool = None
            return
        self.pool = pool if pool is not None else start_workers(workers)
        if self.pool is None:
            return
        groups = _balanced(self.stems, min(self.pool.n, len(self.stems)))
        # pickled here, once: the executor's feeder thread would pickle ``results`` later, while
        # this thread goes on filling its caches (the tables' intervals), and fail on a dict
        # that changed size during the pickling
        snapshot = pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)
        self.futures = [self.pool.pool.submit(_draw_in_worker, snapshot, group) for group in groups]

    def result(self) -> tuple[dict[str, str], dict[str, bytes]]:
        """``({stem: caption}, {file name: bytes})`` in the figures' order."""
        if self.cached is not None:
            captions, files, intervals = self.cached
            for key, value in intervals.items():  # the tables read the intervals the figures drew
                self.results._intervals.setdefault(key, value)
            return captions, files
        try:
            if self.futures is None:
                drawn = _draw(self.results, self.stems)
            else:
                drawn = []
                for future in self.futures:
                    items, intervals = future.result()
                    drawn += items
                    # the bootstrap intervals the figures needed: the tables need them too
                    for key, value in intervals.items():
                        self.results._intervals.setdefault(key, value)
        finally:
            if self.pool is not None:
                self.pool.close()
        place = {stem: i for i, stem in enumerate(self.stems)}
        drawn.sort(key=lambda item: place[item[0]])
        captions = {stem: caption for stem, caption, _ in drawn}
        files = {name: data for _, _, files in drawn for name, data in files.items()}
        figure_cache.store(self.key, self.stems, (captions, files, dict(self.results._intervals)), self.label)
        return captions, files


def _import_matplotlib() -> None:
    figures._mpl()
    import matplotlib.backends.backend_pdf  # noqa: F401  (what savefig(format="pdf") loads)


def _balanced(stems: list[str], workers: int) -> list[list[str]]:
    """The stems in ``workers`` groups of about equal cost (costliest first, each to the
    least loaded group)."""
    groups: list[list[str]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for stem in sorted(stems, key=lambda s: -COST.get(s, 1.0)):
        k = load.index(min(load))
        groups[k].append(stem)
        load[k] += COST.get(stem, 1.0)
    return [g for g in groups if g]


def _draw(results: Any, stems: list[str]) -> Drawn:
    makers = figures.figure_makers(results)
    out = []
    for stem in stems:
        fig = makers[stem]()
        if fig is not None:
            out.append((stem, figures.caption(fig), figure_files(fig, stem)))
    return out


def _draw_in_worker(snapshot: bytes, stems: list[str]) -> tuple[Drawn, dict]:
    """:func:`_draw` in a worker on the pickled results, with the intervals of the means it
    computed."""
    results = pickle.loads(snapshot)
    return _draw(results, stems), results._intervals
