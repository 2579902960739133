"""The review queue on the bundled sample made a pool: four assessors (one exact, three with
30 % noise) grade every sentence; ``dsr judge review`` lists the items whose Dawid-Skene
posterior or agreement is low (checked here against the grades and crowd-kit's own
probabilities), an adjudicator's grade is recorded with who gave it and wins in the export,
an item sent back goes to an assessor who did not hold its task, and bad decisions exit 2
with nothing recorded."""

from __future__ import annotations

import json

import pytest

from dsr.cli import main
from dsr.judging.campaigns import Judging
from tests.support.judging import assignments, sample_campaign, simulate


@pytest.fixture
def campaign(db_url):
    db = db_url
    judging = Judging.open(db)
    truth, _ = sample_campaign(judging)
    pairs = assignments(judging, "s1")
    judging.import_grades("s1", simulate(pairs, truth, {"alice": 0.0, "bob": 0.3, "carol": 0.3, "dave": 0.3}, seed=2), None)
    judging.assignments.add_assessor("erin")  # holds no task yet
    return judging, db, truth, pairs


def listed(capsys, db, *extra) -> dict:
    capsys.readouterr()
    assert main(["judge", "review", "s1", "--db", db, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_queue_lists_uncertain_and_disputed_items(campaign, capsys):
    from crowdkit.aggregation import DawidSkene

    from dsr.judging.aggregate import counted, honeypot_checks

    judging, db, _, _ = campaign
    out = listed(capsys, db)
    queue = {r["key"]: r for r in out["items"]}
    assert out["thresholds"] == {"min_posterior": 0.8, "min_agreement": 0.67} and 0 < len(queue) < 300
    c = judging.campaign("s1")
    grades = judging.grades_frame(c)
    rows = counted(grades, honeypot_checks(grades, judging.guidelines(c), c.threshold, c.min_checks))
    import pandas as pd

    probas = (
        DawidSkene(n_iter=100)
        .fit(pd.DataFrame({"task": rows["item"], "worker": rows["assessor"], "label": rows["grade"]}))
        .probas_
    )
    keys = judging.items_frame(c).set_index("item")["key"]
    for item, group in rows.groupby("item"):
        p = probas.loc[item].sort_index()
        label = int(p.idxmax())
        agree = float((group["grade"] == label).mean())
        expected = p.max() < 0.8 or agree < 0.67
        assert (keys[item] in queue) == expected, (item, p.max(), agree)
        if expected:
            r = queue[keys[item]]
            assert r["aggregate"] == label and r["posterior"] == pytest.approx(p.max())
            assert r["grades"] == dict(zip(group["assessor"], group["grade"].astype(int)))
    assert [r["posterior"] for r in out["items"]] == sorted(r["posterior"] for r in out["items"])


def test_an_adjudicated_grade_wins_in_the_export_and_names_who_decided(campaign, capsys, tmp_path):
    from dsr.core.data import read_benchmark

    judging, db, _, _ = campaign
    first = listed(capsys, db)["items"][0]
    grade = next(g for g in (0, 1, 2) if g != first["aggregate"])
    assert main(["judge", "review", "s1", "--db", db, "--adjudicate", f"{first['key']}={grade}", "--by", "eve"]) == 0
    assert first["key"] not in {r["key"] for r in listed(capsys, db)["items"]}  # decided
    decided = judging.reviews.of(judging.campaign("s1"))
    assert [(r["key"], r["action"], r["grade"], r["by"]) for r in decided] == [(first["key"], "adjudicate", grade, "eve")]
    out = tmp_path / "judged.jsonl"
    assert main(["judge", "export", "s1", "--db", db, "--method", "ds", "--out", str(out)]) == 0
    judged = read_benchmark(out)
    label = {(d.id, c.id): c.label for d in judged for c in d.candidates}
    assert label[first["dialogue"], first["candidate"]] == grade
    report = json.loads(_report(capsys, db))
    assert report["adjudicated"] == 1


def _report(capsys, db) -> str:
    capsys.readouterr()
    assert main(["judge", "report", "s1", "--db", db, "--json"]) == 0
    return capsys.readouterr().out


def test_sending_back_adds_an_assessor_who_then_grades(campaign, capsys):
    judging, db, truth, _ = campaign
    first = listed(capsys, db)["items"][0]
    assert main(["judge", "review", "s1", "--db", db, "--send-back", first["key"], "--by", "eve"]) == 0
    assert f"{first['key']}: sent back to erin (by eve)" in capsys.readouterr().err
    pairs = assignments(judging, "s1")
    mine = [p for p in pairs if p["assessor"] == "erin"]
    assert first["key"] in {p["key"] for p in mine}
    assert len({p["seq"] for p in mine}) == 1  # the item's task, whole
    again = {r["key"]: r for r in listed(capsys, db)["items"]}
    assert again[first["key"]]["sent_back"] is True
    erin = next(a for a in judging.assignments.assessors() if a.name == "erin")
    judging.grade(erin, first["key"], truth[first["dialogue"], first["candidate"]], seconds=5.0)
    review = judging.reviews.of(judging.campaign("s1"))
    assert review[-1]["action"] == "more" and review[-1]["by"] == "eve" and "erin" in review[-1]["note"]


def test_bad_decisions_exit_2_and_record_nothing(campaign, capsys):
    judging, db, _, pairs = campaign
    key = listed(capsys, db)["items"][0]["key"]
    planted = next(p["key"] for p in pairs if p["candidate"] is None)
    for argv in (
        ["--adjudicate", f"{key}=2"],  # no --by
        ["--adjudicate", f"{key}=7", "--by", "eve"],  # off the scale
        ["--adjudicate", f"{key}=x", "--by", "eve"],
        ["--adjudicate", "0000000000000000=1", "--by", "eve"],  # no such item
        ["--adjudicate", f"{key}=1", f"{planted}=0", "--by", "eve"],  # a planted check
        ["--send-back", key, "--by", "eve", "--extra", "3"],  # two are free: erin, one more
        ["--min-posterior", "1.5"],
    ):
        capsys.readouterr()
        assert main(["judge", "review", "s1", "--db", db, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert "Traceback" not in err and err.count("\n") <= 2, err
    assert judging.reviews.of(judging.campaign("s1")) == []
    assert not [p for p in assignments(judging, "s1") if p["assessor"] == "erin"]
