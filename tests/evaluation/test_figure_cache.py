"""Figures kept by what they show: the same results reuse the files drawn before (the same
bytes, the same captions and intervals, no drawing); any change of what a figure shows, or
a damaged file in the cache, draws them again."""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest

from dsr.collections.synthetic import make_collection, make_run
from dsr.evaluation import drawing, figure_cache
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import generate_splits

pytestmark = pytest.mark.slow  # draws a report's figures several times (once per test, and once for them all)


def _home(monkeypatch, home) -> None:
    monkeypatch.setenv("DSR_HOME", str(home))
    monkeypatch.setenv("DSR_WORKERS", "1")


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """The results, drawn once into the figure cache of a home of their own (each test copies
    that home and the results, so the first drawing is shared and nothing of it is changed):
    (home, results after the drawing, drawings counted, (captions, files), intervals)."""
    home = tmp_path_factory.mktemp("figures-drawn") / "home"
    with pytest.MonkeyPatch.context() as patch:
        _home(patch, home)
        collection = make_collection(n=40, seed=1)
        runs = {f"bm25 {k}": make_run(collection, seed=k, quality=0.3 * k) for k in range(3)}
        results = evaluate_runs(collection, runs, splits=generate_splits(collection.ids, 5, 0), baseline="bm25 0", progress=False)
        calls: list = []
        out, intervals = drawn(results, calls)
    return home, results, len(calls), out, intervals


@pytest.fixture
def results(first, tmp_path, monkeypatch):
    """A copy of the drawn results (their interval cache emptied, as a new evaluation's), in a
    copy of the home that holds their figures."""
    home, results, _, _, _ = first
    shutil.copytree(home, tmp_path / "home")
    _home(monkeypatch, tmp_path / "home")
    return fresh(results)


def fresh(results):
    again = copy.deepcopy(results)
    again._intervals = {}
    return again


def drawn(results, calls: list) -> tuple:
    original = drawing._draw

    def counting(*args):
        calls.append(1)
        return original(*args)

    drawing._draw = counting
    try:
        out = drawing.Drawing(results, label="test").result()
    finally:
        drawing._draw = original
    return out, dict(results._intervals)


def test_the_same_results_reuse_the_figures_and_a_change_draws_them_again(first, results):
    _, _, first_calls, (captions, files), intervals = first
    assert first_calls and files and figure_cache.likely_hit("test")
    calls: list = []
    (captions2, files2), intervals2 = drawn(results, calls)
    assert not calls, "drawn again though nothing changed"
    assert captions2 == captions and files2 == files
    assert intervals2.keys() == intervals.keys()
    assert all(np.array_equal(a, b, equal_nan=True) for k in intervals for a, b in zip(intervals[k], intervals2[k]))

    changed = fresh(results)
    name = next(iter(changed.systems))
    changed.systems[name].per_topic[0, 0] += 0.25  # one value of one dialogue
    calls.clear()
    drawn(changed, calls)
    assert calls, "a figure showing other numbers was taken from the cache"


def test_a_damaged_cached_file_is_drawn_again(first, results):
    _, _, _, (_, files), _ = first
    key = figure_cache.content_key(results, list(drawing.figures.figure_makers(results)))
    folder = figure_cache.index_folder(figure_cache.KIND, key)
    victim = folder / next(iter(files))
    victim.write_bytes(victim.read_bytes()[:100])
    calls: list = []
    (_, files2), _ = drawn(results, calls)
    assert calls and files2 == files


def test_the_cache_can_be_turned_off(results, monkeypatch):
    assert figure_cache.likely_hit("test")  # drawn before, with the cache on
    monkeypatch.setenv(figure_cache.CACHE_ENV, "0")
    calls: list = []
    drawn(results, calls)
    assert calls and not figure_cache.likely_hit("test")
