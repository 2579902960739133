"""The split protocol: per-split means and tuning equal a brute-force loop over ir_measures."""

from __future__ import annotations

import json
import os

import ir_measures
import numpy as np
import pytest

from dsr.collections.synthetic import make_collection, make_run
from dsr.core.errors import InputError
from dsr.evaluation.experiment import MIN_FORKED_PIECES, configs_from_grid, evaluate_runs, tune_and_evaluate
from dsr.evaluation.protocol import generate_splits, read_splits, resolve_splits
from dsr.evaluation.qrels import qrels_from_collection
from tests.support.tiers import slow_fixture

MEASURES = ["RR", "nDCG@5", "P@1", "R@10"]


def brute_mean(collection, run, ids, measures=MEASURES):
    """One ir_measures call on the qrels and run restricted to ``ids`` (missing topics count 0)."""
    keep = set(ids)
    qrels = {q: d for q, d in qrels_from_collection(collection).items() if q in keep}
    scores = {q: d for q, d in run.rankings.items() if q in keep}
    scores = {q: dict(r) for q, r in scores.items()}
    values = {str(m): 0.0 for m in measures}
    for metric in ir_measures.iter_calc([ir_measures.parse_measure(m) for m in measures], qrels, scores):
        values[str(metric.measure)] += metric.value
    return np.array([values[m] / len(ids) for m in measures])


@pytest.fixture(scope="module")
@slow_fixture
def official(request):
    """A SIGIR-shaped collection over the real split file's 846 ids."""
    from tests.support.data import shared_file

    path = shared_file("sigir2022/val_test_splits.json")
    first = json.loads(path.read_text().splitlines()[0])
    ids = sorted(first["val"] + first["test"])
    return make_collection(ids=ids, seed=7, grades=(0,) * 9 + (1,)), path


def test_real_split_file_aggregation_equals_brute_force(official):
    collection, path = official
    splits = read_splits(path, collection.ids)
    assert len(splits) == 50 and splits.describe()["val_size"] == [423]
    runs = {
        "weak": make_run(collection, seed=1, quality=0.3, drop_topics=10),
        "strong": make_run(collection, seed=2, quality=1.5),
    }
    results = evaluate_runs(collection, runs, MEASURES, splits=splits, target="nDCG@5", progress=False)
    assert results.splits.source == "file" and list(results.subsets) == ["all", "plain", "grounded"]
    subset_of = {d.id: d.subset for d in collection.dialogues}
    for name, run in runs.items():
        got = results.systems[name].splits
        for s in (0, 17, 49):
            test = splits.pairs[s][1]
            np.testing.assert_allclose(got["all"][s], brute_mean(collection, run, test), atol=1e-12)
            grounded = [q for q in test if subset_of[q] == "grounded"]
            np.testing.assert_allclose(got["grounded"][s], brute_mean(collection, run, grounded), atol=1e-12)
        every = np.array([brute_mean(collection, run, t) for _, t in splits.pairs])
        mean, sd = results.summary("all")[name]["nDCG@5"]
        assert mean == pytest.approx(every[:, 1].mean(), abs=1e-12)
        assert sd == pytest.approx(np.std(every[:, 1], ddof=1), abs=1e-12)


def test_tuning_equals_brute_force_loop():
    collection = make_collection(n=120, seed=4)
    splits = generate_splits(collection.ids, n=50, seed=3)
    configs = {f"q={q}": make_run(collection, seed=10 + k, quality=q) for k, q in enumerate([0.2, 0.6, 0.4, 1.0])}
    results = tune_and_evaluate(collection, {"fam": configs}, splits, target="nDCG@5", measures=MEASURES, progress=False)
    tuned = results.systems["fam"].tuned
    names = list(configs)
    for s, (val, test) in enumerate(splits.pairs):
        val_means = [brute_mean(collection, configs[c], val)[1] for c in names]
        best = names[int(np.argmax(np.round(val_means, 12)))]
        assert tuned.chosen_names[s] == best
        np.testing.assert_allclose(
            results.systems["fam"].splits["all"][s], brute_mean(collection, configs[best], test), atol=1e-12
        )
    assert len(tuned.choice_counts()) >= 1 and sum(tuned.choice_counts().values()) == 50
    # out-of-sample per-topic values: mean over the splits holding the topic in test
    from dsr.evaluation.measures import Evaluator

    ev = Evaluator(qrels_from_collection(collection), MEASURES, collection.ids)
    values = {c: ev(configs[c]).values for c in names}
    i = 7
    topic = collection.ids[i]
    expected = [values[tuned.chosen_names[s]][i] for s, (_, t) in enumerate(splits.pairs) if topic in t]
    np.testing.assert_allclose(results.systems["fam"].per_topic[i], np.mean(expected, axis=0), atol=1e-12)


def test_ties_on_val_go_to_the_first_configuration():
    collection = make_collection(n=40, seed=5)
    run = make_run(collection, seed=1, quality=1.0)
    copy = type(run)(dict(run.rankings), run.tag)
    splits = generate_splits(collection.ids, n=10, seed=0)
    for order in (["first", "second"], ["second", "first"]):
        configs = {name: (run if name == "first" else copy) for name in order}
        tuned = tune_and_evaluate(collection, {"f": configs}, splits, measures=["nDCG@5"], progress=False).systems["f"].tuned
        assert set(tuned.chosen_names) == {order[0]}


def test_untuned_and_tuned_side_by_side_with_lazy_configs():
    collection = make_collection(n=50, seed=6)
    splits = generate_splits(collection.ids, n=20, seed=1)
    calls = []

    def make(quality, seed):
        calls.append((quality, seed))
        return make_run(collection, seed=seed, quality=quality)

    grid = configs_from_grid(make, {"quality": [0.1, 2.0], "seed": [1]})
    assert list(grid) == ["quality=0.1,seed=1", "quality=2.0,seed=1"]
    results = evaluate_runs(
        collection,
        {"plain": make_run(collection, seed=9)},
        MEASURES,
        splits=splits,
        families={"grid": grid},
        target="RR",
        progress=False,
    )
    assert calls == [(0.1, 1), (2.0, 1)]  # each configuration built once
    assert list(results.systems) == ["plain", "grid"]
    assert results.systems["grid"].tuned.choice_counts() == {"quality=2.0,seed=1": 20}
    assert results.summary()["grid"]["RR"][0] > results.summary()["plain"]["RR"][0]


def test_generated_splits_are_seeded_halves():
    ids = [f"d{i}" for i in range(11)]
    a, b = generate_splits(ids, 5, seed=42), generate_splits(ids, 5, seed=42)
    assert a.pairs == b.pairs and a.pairs != generate_splits(ids, 5, seed=43).pairs
    for val, test in a.pairs:
        assert len(val) == 5 and len(test) == 6 and sorted(val + test) == sorted(ids)
    assert a.describe() == {"source": "generated", "n": 5, "seed": 42, "val_size": [5], "test_size": [6]}


def test_resolve_splits_prefers_file_then_collection_then_generator(tmp_path):
    collection = make_collection(n=10, seed=1)
    ids = collection.ids
    assert resolve_splits(collection, n=3, seed=9).source == "generated"
    own = make_collection(n=10, seed=1, splits=[(ids[:5], ids[5:])])
    assert resolve_splits(own).source == "collection"
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"val": ids[:4], "test": ids[4:]}) + "\n")
    got = resolve_splits(own, path)
    assert got.source == "file" and got.pairs == [(ids[:4], ids[4:])]


def test_split_file_problems_name_the_line(tmp_path):
    collection = make_collection(n=10, seed=1)
    ids = collection.ids
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps({"val": ids[:5], "test": ids[5:]}) + "\n" + json.dumps({"val": ids[:5], "test": ids[5:9] + ["nope"]}) + "\n"
    )
    with pytest.raises(InputError) as err:
        read_splits(path, ids)
    assert err.value.line == 2 and "nope" in str(err.value)
    path.write_text("{not json\n")
    with pytest.raises(InputError) as err:
        read_splits(path, ids)
    assert err.value.line == 1


def test_a_grid_measured_by_forked_workers_equals_one_process(tmp_path):
    """A grid of lazy configurations (runs with many ties, some shared Runs, one shared with
    the untuned runs) gives the same values, choices and tables whether its configurations
    are measured in this process or by two forked workers."""
    collection = make_collection(n=80, seed=8)
    splits = generate_splits(collection.ids, n=20, seed=2)
    shared = make_run(collection, seed=3, quality=0.7, ties=True)

    def make(quality, seed):  # each configuration notes the process that built it
        (tmp_path / f"{os.getpid()}-{quality}-{seed}").touch()
        return make_run(collection, seed=seed, quality=quality, ties=True)

    grid = configs_from_grid(make, {"quality": [0.0, 0.3, 0.6, 0.9, 1.2], "seed": [1, 2, 3, 4]})
    families = {"grid": {**grid, "shared": shared}, "other": {"a": shared, "b": make_run(collection, seed=5)}}
    runs = {"plain": make_run(collection, seed=9), "shared": shared}
    got, built_by = [], []
    for workers in (1, 2):
        got.append(
            evaluate_runs(
                collection,
                runs,
                MEASURES,
                splits=splits,
                families=families,
                target="nDCG@5",
                baseline="plain",
                progress=False,
                workers=workers,
            )
        )
        built_by.append({int(f.name.split("-")[0]) for f in tmp_path.iterdir()})
        assert len(list(tmp_path.iterdir())) == len(grid)  # each configuration built once
        for f in tmp_path.iterdir():
            f.unlink()
    assert built_by[0] == {os.getpid()} and 1 <= len(built_by[1]) <= 2 and os.getpid() not in built_by[1]
    assert len(grid) >= MIN_FORKED_PIECES  # enough pieces for the pool
    assert list(got[0].systems) == ["plain", "grid", "other"]
    for name in ("plain", "grid", "other"):
        one, two = got[0].systems[name], got[1].systems[name]
        np.testing.assert_array_equal(one.per_topic, two.per_topic)
        if one.tuned is not None:
            assert one.tuned.chosen_names == two.tuned.chosen_names
            assert {c: v.tolist() for c, v in one.config_means.items()} == {c: v.tolist() for c, v in two.config_means.items()}
    assert got[0].summary() == got[1].summary()


def test_an_error_in_a_forked_configuration_is_raised_as_it_would_be_serially():
    collection = make_collection(n=30, seed=9)
    splits = generate_splits(collection.ids, n=5, seed=0)

    def make(k):
        if k == 11:
            raise InputError("configuration 11 cannot be built", field="k")
        return make_run(collection, seed=k)

    grid = configs_from_grid(make, {"k": list(range(20))})
    for workers in (1, 2):
        with pytest.raises(InputError, match="configuration 11") as caught:
            evaluate_runs(collection, {}, MEASURES, splits=splits, families={"g": grid}, progress=False, workers=workers)
        assert caught.value.field == "k"
