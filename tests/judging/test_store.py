"""The campaign store on SQLite and PostgreSQL: one row per (item, assessor) whatever is sent
again, grades refused outside one's tasks or the scale, releasing and re-assigning, imports
that change nothing the second time, and an export that refuses unfinished dialogues."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from dsr.core.errors import InputError
from dsr.db.engine import read_session
from dsr.judging.campaigns import Judging, Refused
from dsr.judging.models import Grade
from tests.support.judging import assignments, sample_campaign, simulate


def count_grades(judging) -> int:
    with read_session(judging.engine) as s:
        return int(s.scalar(select(func.count()).select_from(Grade)))


def test_a_grade_is_one_row_whatever_is_sent_again(db_url):
    judging = Judging.open(db_url)
    sample_campaign(judging)
    pairs = assignments(judging, "s1")
    alice = next(a for a in judging.assignments.assessors() if a.name == "alice")
    mine = [p for p in pairs if p["assessor"] == "alice"]
    assert judging.grade(alice, mine[0]["key"], 2, seconds=4.5) is True
    assert judging.grade(alice, mine[0]["key"], 1) is False  # changed her mind
    assert judging.grade(alice, mine[0]["key"], 1) is False  # sent twice
    assert judging.grade(alice, mine[1]["key"], None, unsure=True) is True
    frame = judging.grades_frame(judging.campaign("s1"))
    assert count_grades(judging) == 2 and len(frame) == 2
    first = frame.set_index("assessor").iloc[0]
    assert frame["grade"].tolist()[:1] == [1.0] and first["seconds"] == 4.5
    assert frame["unsure"].tolist() == [False, True] and frame["grade"].isna().tolist() == [False, True]
    others = [p for p in pairs if p["assessor"] != "alice" and p["key"] not in {m["key"] for m in mine}]
    with pytest.raises(Refused) as err:
        judging.grade(alice, others[0]["key"], 2)
    assert err.value.status == 403
    with pytest.raises(Refused) as err:
        judging.grade(alice, mine[2]["key"], 7)
    assert err.value.status == 422
    with pytest.raises(Refused) as err:
        judging.grade(alice, "no-such-key", 1)
    assert err.value.status == 404
    assert count_grades(judging) == 2


def test_release_and_reassign_keep_started_tasks_and_k_distinct(db_url):
    judging = Judging.open(db_url)
    sample_campaign(judging)
    dave = next(a for a in judging.assignments.assessors() if a.name == "dave")
    before = assignments(judging, "s1")
    started = next(p for p in before if p["assessor"] == "dave")
    judging.grade(dave, started["key"], 0)
    load = judging.assignments.assign("s1", ["alice", "bob", "carol"], release=["dave"])
    after = assignments(judging, "s1")
    daves = {p["seq"] for p in after if p["assessor"] == "dave"}
    assert daves == {started["seq"]}  # the started task stays his
    holders: dict[int, set[str]] = {}
    for p in after:
        holders.setdefault(p["seq"], set()).add(p["assessor"])
    assert all(len(h) == 3 for h in holders.values())  # k distinct on every task
    assert sum(load.values()) + sum(1 for p in after if p["assessor"] == "dave") == len(after)
    assert judging.assignments.assign("s1", ["alice", "bob", "carol"]) == load  # resuming changes nothing


def test_imports_are_idempotent_and_checked(db_url, tmp_path):
    judging = Judging.open(db_url)
    truth, _ = sample_campaign(judging, assign=False)
    items = judging.items_frame(judging.campaign("s1"))
    rows = [{"item": k, "assessor": "W1", "grade": 1, "seconds": 2.0} for k in items["key"][:30]]
    assert judging.import_grades("s1", rows, "crowd") == 30
    assert judging.import_grades("s1", rows, "crowd") == 30
    assert count_grades(judging) == 30
    assert "crowd:W1" in {a.name for a in judging.assignments.assessors()}
    bad = [{"item": "nope", "assessor": "W1", "grade": 1, "where": {"path": "r.csv", "line": 7}}]
    with pytest.raises(InputError) as err:
        judging.import_grades("s1", bad, "crowd")
    assert err.value.path == "r.csv" and err.value.line == 7
    with pytest.raises(InputError, match="does not hold"):
        judging.import_grades("s1", [{"item": items["key"][0], "assessor": "alice", "grade": 1}], None)
    assert count_grades(judging) == 30


def test_guidelines_scale_is_fixed_once_graded_and_names_are_unique(db_url):
    from dsr.judging import guidelines

    judging = Judging.open(db_url)
    sample_campaign(judging)
    with pytest.raises(InputError, match="exists already"):
        sample_campaign(judging)
    rules = guidelines.load()
    wider = guidelines.from_json(
        {**rules.to_json(), "scale": [*rules.to_json()["scale"], {"grade": 3, "key": "3", "name": "key"}]}
    )
    judging.set_guidelines("s1", wider)  # no grade yet: allowed
    judging.set_guidelines("s1", rules)
    alice = next(a for a in judging.assignments.assessors() if a.name == "alice")
    judging.grade(alice, next(p for p in assignments(judging, "s1") if p["assessor"] == "alice")["key"], 1)
    with pytest.raises(InputError, match="cannot change"):
        judging.set_guidelines("s1", wider)
    judging.set_guidelines("s1", guidelines.from_json({**rules.to_json(), "guidelines": "Be brief."}))
    assert judging.guidelines(judging.campaign("s1")).guidelines == "Be brief."


def test_export_refuses_unfinished_dialogues_unless_partial(tmp_path):
    from dsr.judging.campaign_report import judged_collection, outcome

    judging = Judging.open(f"sqlite:///{tmp_path / 'b.sqlite'}")
    truth, _ = sample_campaign(judging, min_honeypots=0)
    pairs = assignments(judging, "s1")
    first = pairs[0]["dialogue"]
    rows = simulate([p for p in pairs if p["dialogue"] == first], truth, {"alice": 0.0, "bob": 0.0, "carol": 0.0, "dave": 0.0})
    judging.import_grades("s1", rows, None)
    result = outcome(judging, "s1")
    with pytest.raises(InputError, match="19 of 20 dialogues"):
        judged_collection(judging, result)
    partial = judged_collection(judging, result, partial=True)
    assert partial.ids == [first]
    assert [c.label for c in partial.dialogues[0].candidates] == [truth[first, c.id] for c in partial.dialogues[0].candidates]


def test_grades_sent_at_once_share_commits_and_each_gets_its_own_answer(db_url):
    """16 threads send 320 grades at once through the group commit: each allowed grade is stored
    once and told whether it was new (a grade sent twice is new once), each refused one is
    refused alone."""
    from concurrent.futures import ThreadPoolExecutor

    judging = Judging.open(db_url)
    sample_campaign(judging)
    people = {a.name: a for a in judging.assignments.assessors()}
    pairs = assignments(judging, "s1")
    mine = [p for p in pairs if p["assessor"] == "alice"][:80]
    hers = {p["key"] for p in pairs if p["assessor"] == "alice"}
    foreign = [p for p in pairs if p["assessor"] == "bob" and p["key"] not in hers][:40]
    jobs = (
        [(people["alice"], p["key"], 1) for p in mine] * 2
        + [(people["alice"], p["key"], 2) for p in foreign]
        + [(people[p["assessor"]], p["key"], 0) for p in pairs if p["assessor"] in ("carol", "dave")][:120]
    )

    def one(job):
        try:
            return judging.grade(*job)
        except Refused as refused:
            return refused.status

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(one, jobs))
    firsts = answers[:80]
    seconds = answers[80:160]
    assert all(a is True or b is True for a, b in zip(firsts, seconds))  # new exactly once...
    assert not any(a is True and b is True for a, b in zip(firsts, seconds))
    assert answers[160:200] == [403] * 40  # refused alone
    assert all(a is True for a in answers[200:])
    assert count_grades(judging) == 80 + len(jobs[200:])


def test_overlap_gives_a_seeded_share_of_dialogues_one_more_assessor(db_url):
    judging = Judging.open(db_url)
    sample_campaign(judging, k=1, assign=False)
    with pytest.raises(InputError) as err:
        judging.assignments.assign("s1", overlap=1.5)
    assert err.value.field == "overlap"
    load = judging.assignments.assign("s1", overlap=0.2)
    pairs = assignments(judging, "s1")
    per_task: dict[int, set[str]] = {}
    for p in pairs:
        per_task.setdefault(p["seq"], set()).add(p["assessor"])
    places: dict[str, set[int]] = {}  # a dialogue -> its tasks' numbers of assessors
    for p in pairs:
        places.setdefault(p["dialogue"], set()).add(len(per_task[p["seq"]]))
    assert len(places) == 20 and set(map(len, places.values())) == {1}  # all tasks of a dialogue alike
    assert sorted(n for (n,) in places.values()) == [1] * 16 + [2] * 4  # a fifth of 20 dialogues twice
    assert judging.assignments.assign("s1", overlap=0.2) == load  # the same share on every call
    assert len(assignments(judging, "s1")) == len(pairs)
