"""Quality control that needs reading, tried by cheating scripts on a real pool.

The pool is the judged CMU_DoG valid set's first 30 dialogues with the labels hidden
(cross-document BM25 lists: a third of the candidates carry the dialogue's own film as
title, and nearly every relevant sentence is among them, so grading by the shown title
is a real shortcut). Scripts grade what the page shows them (``task_view``: the
dialogue, each sentence's title and text, the task's size and order), through the campaign
store's ``grade`` (the path of the page's API): a careful assessor (the true labels with 10 %
noise), a title-matcher (2 when the sentence's title shares a word with the dialogue, else
0), the issue's word-overlap script (2 when the sentence shares a word with the last three
turns), a position script (2 for a task's first two sentences), a task-size script (0 to
every sentence of a task larger than its dialogue's smallest, where planted checks sat
before issue 40; else the word-overlap answer), a random one, and one that answers 0 to
everything. The default settings exclude every script, with automatic honeypots and with
gold items alike (honeypot accuracy is balanced over relevant and not-relevant checks), and
keep the careful one; the report flags them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support.judging import SCRIPTS, shortcut_campaign, title_and_overlap, title_matcher, word_overlap
from tests.support.tiers import slow_fixture

DIALOGUES = 30

# one worker grades the module's campaign (10,000 grades, one commit each) for all its tests
pytestmark = pytest.mark.xdist_group("quality")


#: the scripts that grade without reading (tools/judging_harness.py), and the careful assessor
PEOPLE = ("careful", *SCRIPTS)


@pytest.fixture(scope="module")
@slow_fixture
def campaign(memory_root):
    return graded_campaign(memory_root / "qc.sqlite", "auto")


def graded_campaign(db_path, known: str, people: tuple[str, ...] = PEOPLE):
    """The campaign with ``known`` answers (``auto``: --auto-honeypots, ``gold``: the judged
    file's grades, as --gold gives them), graded by ``people`` (the scripts and the careful
    assessor): ``tools.judging_harness.shortcut_campaign``."""
    from dsr.judging.campaigns import Settings
    from tests.support.data import shared_file

    path = shared_file("judged/cmu_dog-valid-judged.jsonl")
    defaults = Settings()  # the defaults of dsr judge create
    assert defaults.honeypot_threshold == 0.7 and defaults.min_honeypots == 3 and defaults.honeypot_rate == 0.1
    return shortcut_campaign(db_path, path, known, people, DIALOGUES)


@pytest.mark.slow
def test_the_title_shortcut_is_real_on_this_pool(campaign):
    _, judged, items, truth, given, views = campaign
    pool = items[items["candidate"].notna()]
    answer = {k: title_matcher(*views[k]) for k in pool.index}  # what the script answers anywhere
    relevant = [k for k, d, c in zip(pool.index, pool["dialogue"], pool["candidate"]) if truth[d, c] >= 1]
    irrelevant = [k for k, d, c in zip(pool.index, pool["dialogue"], pool["candidate"]) if truth[d, c] == 0]
    found = np.mean([answer[k] == 2 for k in relevant])
    false = np.mean([answer[k] == 2 for k in irrelevant])
    assert found > 0.9 and false < 0.3, (found, false)  # it finds the relevant ones cheaply


def test_not_relevant_checks_are_chosen_against_the_shortcuts(campaign):
    """The not-relevant checks were once chosen by the word-overlap rule itself (no word
    shared with the last turns), so the word-overlap script answered them right. Now each
    catches the title-match script (its title matches the dialogue's), the word-overlap one
    (it shares a word with the last turns) or both; the retitled ones, first, catch the two
    together too (the dialogue's own title and a shared word), which a script grading by
    "own title and a shared content word" passed at 0.875 before them."""
    _, _, items, _, _, views = campaign
    checks = items[items["gold"].notna()]
    negatives = checks[checks["gold"] == 0]
    assert len(negatives) >= 60
    assert set(negatives["source"]) <= {"retitled-document", "same-document", "related-document", "other-document"}
    titles = np.array([title_matcher(*views[k]) == 2 for k in negatives.index])
    overlap = np.array([word_overlap(*views[k]) == 2 for k in negatives.index])
    both = np.array([title_and_overlap(*views[k]) == 2 for k in negatives.index])
    assert titles.mean() > 0.6 and overlap.mean() > 0.4 and (titles | overlap).all(), (titles.mean(), overlap.mean())
    retitled = (negatives["source"] == "retitled-document").to_numpy()
    assert both[retitled].all() and both.mean() > 0.5, both.mean()  # the two together, caught by retitled checks


def test_cheating_scripts_are_excluded_and_the_careful_assessor_kept(campaign):
    from dsr.judging.campaign_report import outcome

    judging, *_ = campaign
    result = outcome(judging, "qc", "mv")
    verdict = {a: c.counted for a, c in result.checks.items()}
    assert verdict == {p: p == "careful" for p in PEOPLE}
    accuracy = {a: round(c.accuracy, 3) for a, c in result.checks.items()}
    assert all(accuracy[a] < 0.67 for a in PEOPLE if a != "careful"), accuracy  # threshold 0.7
    assert result.checks["zeros"].accuracy == 0.5  # all not-relevant checks right, no relevant one
    assert result.checks["careful"].accuracy >= 0.8 and result.checks["careful"].checks >= 100
    flags = {p["assessor"]: p["flags"] for p in result.assessors}
    assert flags["careful"] == []
    assert all("failed-honeypots" in flags[a] for a in PEOPLE if a != "careful")
    assert "too-fast" in flags["titles"] and "one-grade" in flags["zeros"]
    assert "low-agreement" in flags["random"] and "low-agreement" in flags["overlap"]


def test_grade_times_are_checked_on_every_path(campaign):
    from dsr.core.errors import InputError
    from dsr.judging.campaigns import Refused

    judging, _, _, _, given, _ = campaign
    careful = next(a for a in judging.assignments.assessors() if a.name == "careful")
    key = next(k for who, k in given if who == "careful")
    for bad in (math.nan, math.inf, -1e300, -1.0, 1e300, "3", True):
        with pytest.raises(Refused) as refused:
            judging.grade(careful, key, 1, seconds=bad)
        assert refused.value.status == 422 and "seconds" in refused.value.message
        with pytest.raises(InputError) as err:
            judging.import_grades(
                "qc",
                [{"item": key, "assessor": "careful", "grade": 1, "seconds": bad, "where": {"path": "grades.csv", "line": 4}}],
                origin=None,
            )
        assert err.value.field == "seconds" and err.value.line == 4 and len(str(err.value)) < 200
    frame = judging.grades_frame(judging.campaign("qc"))
    assert frame["seconds"].between(0, 3600).all()
    assert frame.set_index(["assessor", "item"]).loc[("careful", judging.item(key).id), "grade"] == given["careful", key]


def test_report_flags_come_from_the_params(campaign, capsys):
    from dsr.core.errors import InputError
    from dsr.judging.campaign_report import outcome

    judging, *_ = campaign
    lax = outcome(judging, "qc", "mv", {"min_seconds": 0.1, "one_grade_share": 1.0})
    assert lax.to_json()["settings"]["flags"] == {
        "min_seconds": 0.1,
        "one_grade_share": 1.0,
        "min_kappa": 0.2,
        "min_flag_grades": 20,
    }
    flags = {p["assessor"]: p["flags"] for p in lax.assessors}
    assert "too-fast" not in flags["titles"] and "one-grade" in flags["zeros"]
    with pytest.raises(InputError) as err:
        outcome(judging, "qc", "mv", {"min_seconds": -1.0})
    assert err.value.field == "min_seconds"


@pytest.mark.slow
def test_grade_times_are_refused_by_the_api_the_import_and_never_reach_the_report(tmp_path, capsys):
    """The same check through the page's JSON API (a real server: 422 naming seconds) and
    ``dsr judge import`` of a crowd results CSV (exit 2 naming file, line and field, nothing
    stored); the report then prints no long number."""
    import csv
    import re

    import httpx

    from dsr.cli import main
    from dsr.judging.campaigns import Judging
    from tests.support.board import LiveServer, make_board
    from tests.support.judging import assignments, sample_campaign

    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    board = make_board(db, tmp_path)
    judging = Judging(board.engine)
    _, tokens = sample_campaign(judging)
    key = next(p["key"] for p in assignments(judging, "s1") if p["assessor"] == "alice")
    bearer = {"Authorization": f"Bearer {tokens['alice']}", "Content-Type": "application/json"}
    with LiveServer(board) as server:
        for raw in ("NaN", "-1e300", "1e999", "-Infinity", "7200", "-0.5"):
            body = f'{{"item": "{key}", "grade": 1, "seconds": {raw}}}'
            answer = httpx.post(f"{server.url}/judge/api/grades", content=body, headers=bearer)
            assert answer.status_code == 422 and "seconds" in answer.json()["error"], (raw, answer.text)
        ok = httpx.post(f"{server.url}/judge/api/grades", json={"item": key, "grade": 1, "seconds": 4.25}, headers=bearer)
        assert ok.status_code == 200
    board.close()
    other = next(p["key"] for p in assignments(judging, "s1") if p["assessor"] == "bob")
    results = tmp_path / "Batch_results.csv"
    with open(results, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["WorkerId", "WorkTimeInSeconds", "Input.item_1", "Answer.grade_1"])
        writer.writerow(["W1", "12", other, "2"])
        writer.writerow(["W2", "-1e300", other, "1"])
    capsys.readouterr()
    assert main(["judge", "import", "s1", str(results), "--format", "crowd", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "Batch_results.csv:3" in err and "'seconds'" in err and "Traceback" not in err and len(err) < 300
    frame = judging.grades_frame(judging.campaign("s1"))
    assert len(frame) == 1 and frame["seconds"].tolist() == [4.25]  # nothing of the file stored
    assert main(["judge", "report", "s1", "--db", db]) == 0
    assert not re.search(r"\d{12}", capsys.readouterr().out)


@pytest.mark.slow
def test_gold_items_from_a_judged_file_exclude_the_cheaters_too(db_folder):
    """With known grades from a judged file (--gold), most judged-0 candidates are of other
    films, which a title-matcher answers right: the not-relevant checks are taken from the
    dialogue's own or a related document first."""
    from dsr.judging.campaign_report import outcome

    judging, _, items, _, _, views = graded_campaign(db_folder / "gold.sqlite", "gold")
    negatives = items[(items["gold"] == 0)]
    assert set(items.loc[items["gold"].notna(), "source"]) == {"judged"}
    assert np.mean([title_matcher(*views[k]) == 2 for k in negatives.index]) > 0.75  # 0.86 here
    result = outcome(judging, "qc", "mv")
    verdict = {a: c.counted for a, c in result.checks.items()}
    assert verdict == {p: p == "careful" for p in PEOPLE}
    assert result.checks["careful"].accuracy >= 0.8
