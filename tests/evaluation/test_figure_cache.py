"""Figures kept by what they show: the same results reuse the files drawn before (the same
bytes, the same captions and intervals, no drawing); any change of what a figure shows, or
a damaged file in the cache, draws them again."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from dsr.collections.synthetic import make_collection, make_run
from dsr.evaluation import drawing, figure_cache
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import generate_splits

pytestmark = pytest.mark.slow  # draws a report's figures several times


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DSR_WORKERS", "1")
    collection = make_collection(n=40, seed=1)
    runs = {f"bm25 {k}": make_run(collection, seed=k, quality=0.3 * k) for k in range(3)}
    return evaluate_runs(collection, runs, splits=generate_splits(collection.ids, 5, 0), baseline="bm25 0", progress=False)


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


def test_the_same_results_reuse_the_figures_and_a_change_draws_them_again(results):
    calls: list = []
    (captions, files), intervals = drawn(results, calls)
    assert calls and files and figure_cache.likely_hit("test")
    again = copy.deepcopy(results)
    again._intervals = {}
    calls.clear()
    (captions2, files2), intervals2 = drawn(again, calls)
    assert not calls, "drawn again though nothing changed"
    assert captions2 == captions and files2 == files
    assert intervals2.keys() == intervals.keys()
    assert all(np.array_equal(a, b, equal_nan=True) for k in intervals for a, b in zip(intervals[k], intervals2[k]))

    changed = copy.deepcopy(results)
    changed._intervals = {}
    name = next(iter(changed.systems))
    changed.systems[name].per_topic[0, 0] += 0.25  # one value of one dialogue
    calls.clear()
    drawn(changed, calls)
    assert calls, "a figure showing other numbers was taken from the cache"


def test_a_damaged_cached_file_is_drawn_again(results):
    calls: list = []
    (_, files), _ = drawn(results, calls)
    key = figure_cache.content_key(results, list(drawing.figures.figure_makers(results)))
    folder = figure_cache.index_folder(figure_cache.KIND, key)
    victim = folder / next(iter(files))
    victim.write_bytes(victim.read_bytes()[:100])
    again = copy.deepcopy(results)
    again._intervals = {}
    calls.clear()
    (_, files2), _ = drawn(again, calls)
    assert calls and files2 == files


def test_the_cache_can_be_turned_off(results, monkeypatch):
    calls: list = []
    drawn(results, calls)
    monkeypatch.setenv(figure_cache.CACHE_ENV, "0")
    again = copy.deepcopy(results)
    again._intervals = {}
    calls.clear()
    drawn(again, calls)
    assert calls and not figure_cache.likely_hit("test")
