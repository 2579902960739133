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

from tests.support.judging import as_pool, noisy, truth_of
from tests.support.tiers import slow_fixture

DIALOGUES = 30

# one worker grades the module's campaign (10,000 grades, one commit each) for all its tests
pytestmark = pytest.mark.xdist_group("quality")


def title_matcher(view: dict, sentence: dict) -> int:
    from dsr.core.text import content_words

    words = content_words(view["title"])
    for turn in view["turns"]:
        words |= content_words(turn["text"])
    return 2 if content_words(sentence["title"]) & words else 0


def word_overlap(view: dict, sentence: dict) -> int:
    """The issue's bot: 2 when the sentence shares a word with the last three turns, else 0."""
    from dsr.core.text import content_words

    recent = set()
    for turn in view["turns"][-3:]:
        recent |= content_words(turn["text"])
    return 2 if content_words(sentence["body"]) & recent else 0


def by_position(view: dict, sentence: dict) -> int:
    """2 for the first two sentences of a task, else 0 (a page read top to bottom, lazily)."""
    return 2 if [s["key"] for s in view["sentences"]].index(sentence["key"]) < 2 else 0


def by_size(view: dict, sentence: dict, smallest: int) -> int:
    """The task-size exploit: a task larger than the smallest of its dialogue held the planted
    check (not relevant): 0 to all of it; elsewhere the word-overlap answer."""
    return 0 if len(view["sentences"]) > smallest else word_overlap(view, sentence)


def title_and_overlap(view: dict, sentence: dict) -> int:
    """2 when the sentence carries the dialogue's own title and shares a word with the last
    three turns: what automatic checks cannot catch (docs/judging.md), gold items do."""
    return 2 if sentence["title"] == view["title"] and word_overlap(view, sentence) else 0


#: the scripts that grade without reading, and the careful assessor
PEOPLE = ("careful", "titles", "overlap", "position", "size", "random", "zeros")


@pytest.fixture(scope="module")
@slow_fixture
def campaign(memory_root):
    return graded_campaign(memory_root / "qc.sqlite", "auto")


def graded_campaign(db_path, known: str, people: tuple[str, ...] = PEOPLE):
    """The campaign with ``known`` answers (``auto``: --auto-honeypots, ``gold``: the judged
    file's grades, as --gold gives them), graded by ``people`` (the scripts and the careful
    assessor)."""
    from dsr.core.data import Collection, read_benchmark
    from dsr.judging import guidelines, honeypots
    from dsr.judging.campaigns import Judging, Settings
    from dsr.judging.views import task_rows, task_view
    from tests.support.data import SHARED_DATA

    path = SHARED_DATA / "judged" / "cmu_dog-valid-judged.jsonl"
    if not path.is_file():
        pytest.skip("../shared/data/judged/cmu_dog-valid-judged.jsonl is not beside the checkout")
    judged = Collection("cmu-judged", read_benchmark(path).dialogues[:DIALOGUES])
    pool = as_pool(judged)
    judging = Judging.open(f"sqlite:///{db_path}")
    defaults = Settings()  # the defaults of dsr judge create
    golds = honeypots.auto_golds(pool, 0, 2, seed=5) if known == "auto" else honeypots.judged_golds(pool, judged)
    judging.create("qc", pool, guidelines.load(), Settings(seed=5, k=len(people)), golds)  # every script
    # grades every task (k only says how many assessors a task gets)
    for name in people:
        judging.add_assessor(name)
    judging.assign("qc")
    campaign = judging.campaign("qc")
    items = judging.items_frame(campaign).set_index("key")
    truth = truth_of(judged)
    rng = np.random.default_rng(7)
    given: dict[tuple[str, str], int] = {}
    views = {}
    for assessor in judging.assessors():
        rows = task_rows(judging, assessor, campaign)
        pages = [task_view(judging, assessor, campaign, row["seq"]) for row in rows]
        smallest: dict[str, int] = {}
        for view in pages:  # what the size script learns: each dialogue's smallest task
            smallest[view["title"]] = min(smallest.get(view["title"], 99), len(view["sentences"]))
        for view in pages:
            for sentence in view["sentences"]:
                key = sentence["key"]
                views[key] = (view, sentence)
                if assessor.name == "careful":
                    item = items.loc[key]
                    true = truth[item["dialogue"], item["candidate"]] if isinstance(item["candidate"], str) else int(item["gold"])
                    grade = noisy(true, 0.10, rng)
                elif assessor.name == "titles":
                    grade = title_matcher(view, sentence)
                elif assessor.name == "overlap":
                    grade = word_overlap(view, sentence)
                elif assessor.name == "position":
                    grade = by_position(view, sentence)
                elif assessor.name == "size":
                    grade = by_size(view, sentence, smallest[view["title"]])
                elif assessor.name == "both":
                    grade = title_and_overlap(view, sentence)
                elif assessor.name == "random":
                    grade = int(rng.integers(3))
                else:
                    grade = 0
                judging.grade(assessor, key, grade, seconds=float(rng.uniform(3, 9)) if assessor.name == "careful" else 0.4)
                given[assessor.name, key] = grade
    assert defaults.honeypot_threshold == 0.7 and defaults.min_honeypots == 3 and defaults.honeypot_rate == 0.1
    return judging, judged, items, truth, given, views


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
    """Issue 40: the not-relevant checks were chosen by the word-overlap rule itself (no word
    shared with the last turns), so the word-overlap script answered them right. Now each
    catches the title-match script (its title matches the dialogue's), the word-overlap one
    (it shares a word with the last turns) or both, two title-catching for one
    overlap-catching: each script grades most of them relevant, and no check is free for both."""
    _, _, items, _, _, views = campaign
    checks = items[items["gold"].notna()]
    negatives = checks[checks["gold"] == 0]
    assert len(negatives) >= 60
    assert set(negatives["source"]) <= {"same-document", "related-document", "other-document"}
    titles = np.array([title_matcher(*views[k]) == 2 for k in negatives.index])
    overlap = np.array([word_overlap(*views[k]) == 2 for k in negatives.index])
    assert titles.mean() > 0.6 and overlap.mean() > 0.4 and (titles | overlap).all(), (titles.mean(), overlap.mean())


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
    careful = next(a for a in judging.assessors() if a.name == "careful")
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


@pytest.mark.slow
def test_what_automatic_checks_cannot_catch_gold_items_do(db_folder):
    """The limit docs/judging.md states: a script that grades 2 only when a sentence has the
    dialogue's exact title and shares a word with the last turns answers every automatic
    not-relevant check right (none is both) and passes them; gold items exclude it."""
    from dsr.judging.campaign_report import outcome

    verdicts = {}
    for known in ("auto", "gold"):
        judging, *_ = graded_campaign(db_folder / f"{known}.sqlite", known, ("careful", "both"))
        verdicts[known] = {a: (c.counted, round(c.accuracy, 3)) for a, c in outcome(judging, "qc", "mv").checks.items()}
    assert verdicts["auto"]["both"][0] and not verdicts["gold"]["both"][0], verdicts
    assert verdicts["auto"]["careful"][0] and verdicts["gold"]["careful"][0], verdicts
