"""The judged development set's grades: ``tools/cmu_dog_dev_grades.py`` writes a finished
campaign's aggregated grades into the points file (only fully labelled points, never over a
grade already given), keeps every grade of a pooled sentence and the campaign's agreement;
and the shipped grades are what Dawid-Skene makes of the shipped assessments."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from dsr.collections import cmu_dog_dev, cmu_dog_judged
from dsr.core.data import Collection, Dialogue, write_benchmark
from dsr.judging import guidelines
from dsr.judging.assessor_agreement import twice_graded_kappa
from dsr.judging.campaigns import Judging, Settings
from dsr.judging.honeypots import judged_golds
from tests.support.data import REAL_CMU_DOG, SHARED_DATA, shared_data_home
from tests.support.judging import assignments, true_grade
from tests.support.tiers import slow_fixture
from tools import cmu_dog_dev_grades

pytestmark = REAL_CMU_DOG

DATA = cmu_dog_dev.POINTS_FILE.parent


def test_twice_graded_kappa_is_cohens_on_the_items_graded_twice():
    rng = random.Random(3)
    rows = []
    for item in range(60):
        first = rng.choice([0, 0, 0, 1, 2])
        second = first if rng.random() < 0.7 else rng.choice([0, 1, 2])
        people = rng.sample(["a1", "a2", "a3"], 2)
        rows += [
            {"item": item, "assessor": people[0], "grade": first, "planted": False},
            {"item": item, "assessor": people[1], "grade": second, "planted": False},
        ]
    rows += [{"item": 100 + i, "assessor": "a1", "grade": 2, "planted": False} for i in range(5)]  # once only
    rows += [{"item": 200, "assessor": a, "grade": 0, "planted": True} for a in ("a1", "a2")]  # a check
    frame = pd.DataFrame(rows)
    got = twice_graded_kappa(frame)
    two = frame[(frame["item"] < 100)].sort_values(["item", "assessor"])
    first = two.groupby("item")["grade"].first().to_numpy()
    second = two.groupby("item")["grade"].last().to_numpy()
    assert got["items"] == 60
    assert got["kappa_binary"] == pytest.approx(cohen_kappa_score(first >= 1, second >= 1))
    assert got["kappa_weighted"] == pytest.approx(cohen_kappa_score(first, second, weights="linear"))
    assert got["kappa"] == pytest.approx(cohen_kappa_score(first, second))
    assert got["exact_agreement"] == pytest.approx((first == second).mean())


@pytest.fixture(scope="module")
@slow_fixture
def judged_points(tmp_path_factory):
    with shared_data_home(tmp_path_factory):
        full = cmu_dog_dev.build(SHARED_DATA / "cmu_dog", points="judged")
    records = {r["id"]: r for r in cmu_dog_dev.points() if r.get("origin") == "judged-115"}
    chosen = [d for d in full if d.id in records][:8]
    pool = [
        Dialogue(
            d.id,
            d.title,
            d.context,
            d.target,
            [type(c)(c.id, c.title, c.body, c.score, 0) for c in d.candidates if c.id in set(records[d.id]["pool"])],
            subset=d.subset,
            source=d.source,
            meta={**d.meta, "judged": False},
        )
        for d in chosen
    ]
    return Collection("dev-pool", pool), {d.id: records[d.id] for d in chosen}


def test_the_tool_writes_fully_labelled_points_only_and_keeps_every_grade(judged_points, tmp_path):
    pool, records = judged_points
    judging = Judging.open(f"sqlite:///{tmp_path / 'judge.sqlite'}")
    pool_file = tmp_path / "pool.jsonl"
    write_benchmark(pool, pool_file)
    golds = judged_golds(pool, cmu_dog_judged.load(SHARED_DATA / "judged"))
    judging.create("dev", pool, guidelines.load(), Settings(k=1, chunk=10, seed=5), golds)
    for who in ("alice", "bob"):
        judging.assignments.add_assessor(who)
    judging.assignments.assign("dev", overlap=0.5)
    truth = {(d, c): g for d, r in records.items() for c, g in r["grades"].items()}
    pairs = assignments(judging, "dev")
    unfinished = pairs[-1]["seq"]  # one task left ungraded: its point stays ungraded
    rows = [
        {"item": p["key"], "assessor": p["assessor"], "seconds": 5.0, "grade": true_grade(p, truth)}
        for p in pairs
        if p["seq"] != unfinished
    ]
    judging.import_grades("dev", rows, None)
    left_open = {p["dialogue"] for p in pairs if p["seq"] == unfinished}
    points = tmp_path / "points.jsonl"
    shipped = [dict(r) for r in cmu_dog_dev.points()]
    kept = next(r for r in shipped if r["grades"] and r["id"] not in records)
    for r in shipped:
        if r["id"] in records:
            r["grades"] = {}
    points.write_text("".join(json.dumps(r) + "\n" for r in shipped), encoding="utf-8")
    assert (
        cmu_dog_dev_grades.main(["--db", f"sqlite:///{tmp_path / 'judge.sqlite'}", "--campaign", "dev", "--points", str(points)])
        == 0
    )
    after = {r["id"]: r for r in map(json.loads, points.read_text().splitlines())}
    assert after[kept["id"]]["grades"] == kept["grades"]  # a grade given stays
    for point, record in records.items():
        if point in left_open:
            assert after[point]["grades"] == {}
        else:
            assert after[point]["grades"] == {c: truth[point, c] for c in record["pool"]}
    lines = [json.loads(x) for x in (tmp_path / "cmu_dog_dev.assessments.jsonl").read_text().splitlines()]
    pooled = {
        (p["dialogue"], p["candidate"], p["assessor"])
        for p in pairs
        if p["seq"] != unfinished and isinstance(p["candidate"], str)
    }
    assert {(r["point"], r["sentence"], r["assessor"]) for r in lines} == pooled  # no planted check
    assert all(set(r) == {"point", "sentence", "assessor", "grade", "seconds", "counted"} for r in lines)
    summary = json.loads((tmp_path / "cmu_dog_dev.judging.json").read_text())
    assert summary["twice_graded"]["items"] > 0 and summary["twice_graded"]["kappa_weighted"] == pytest.approx(1.0)
    assert str(tmp_path) not in json.dumps(summary) and "token" not in json.dumps(summary)
    # a recheck campaign over the graded points: a careful assessor agrees fully, a lenient one less
    judging.create("re", pool, guidelines.load(), Settings(k=1, chunk=10, seed=6), golds)
    judging.assignments.assign("re", ["alice", "bob"])
    again = assignments(judging, "re")
    lenient = {"alice": 0, "bob": 1}
    judging.import_grades(
        "re",
        [
            {
                "item": p["key"],
                "assessor": p["assessor"],
                "seconds": 5.0,
                "grade": max(true_grade(p, truth), lenient[p["assessor"]]),
            }
            for p in again
        ],
        None,
    )
    assert (
        cmu_dog_dev_grades.main(
            ["--db", f"sqlite:///{tmp_path / 'judge.sqlite'}", "--campaign", "dev", "--points", str(points), "--recheck", "re"]
        )
        == 0
    )
    checked = json.loads((tmp_path / "cmu_dog_dev.judging.json").read_text())["recheck"]
    graded_here = {
        (p["dialogue"], p["candidate"]) for p in again if isinstance(p["candidate"], str) and p["dialogue"] not in left_open
    }
    assert checked["per_assessor"]["alice"]["kappa_weighted"] == pytest.approx(1.0)
    assert checked["per_assessor"]["bob"]["kappa_binary"] < 1.0
    assert sum(map(sum, checked["confusion_known_by_given"])) == checked["grades"]["sentences"] == len(graded_here)


def test_shipped_grades_are_dawid_skene_over_the_shipped_assessments():
    from dsr.judging.aggregate import aggregate

    lines = [json.loads(x) for x in (DATA / "cmu_dog_dev.assessments.jsonl").read_text().splitlines()]
    summary = json.loads((DATA / "cmu_dog_dev.judging.json").read_text())
    frame = pd.DataFrame(
        [
            {"item": f"{r['point']}|{r['sentence']}", "assessor": r["assessor"], "grade": r["grade"]}
            for r in lines
            if r["counted"] and r["grade"] != "u"
        ]
    )
    frame["grade"] = frame["grade"].astype(int)
    labels = aggregate(frame, summary["method"], summary["seed"]).to_dict()
    points = {r["id"]: r for r in cmu_dog_dev.points()}
    campaign_points = {r["point"] for r in lines}
    graded = [p for p in campaign_points if points[p]["grades"]]
    assert len(graded) == summary["points_graded_by_this_campaign"] > 0
    for point in graded:
        assert set(points[point]["grades"]) == set(points[point]["pool"])
        assert points[point]["grades"] == {c: labels[f"{point}|{c}"] for c in points[point]["pool"]}
    assert sum(1 for p in points.values() if p["grades"]) == summary["points_graded_now"] >= 400 * 0.9
    assert all(set(r) == {"point", "sentence", "assessor", "grade", "seconds", "counted"} for r in lines)
