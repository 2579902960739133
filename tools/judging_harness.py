"""Judging campaigns on real pools and simulated assessors, for the tests and benchmarks
(``tests/support/judging.py`` re-exports them; the benchmarks use them).

* :func:`as_pool`: a collection as ``dsr pool`` writes it (labels 0, ``meta.judged`` false),
  so a campaign never sees the answers; the original labels are the simulation's truth.
* :func:`sample_campaign`: a campaign on the bundled ``sample`` collection (20 dialogues,
  508 candidates) with automatic honeypots and four assessors holding tokens.
* :func:`assignments` / :func:`simulate`: who holds which item, and grades drawn from the
  truth with a known noise rate per assessor (a wrong grade is uniform over the others).
* :data:`SCRIPTS` / :func:`shortcut_campaign`: assessors that grade without reading (by title,
  word overlap, both, position, task size, at random, all 0) beside a careful one, every task
  of a campaign on a judged file (tests/judging/test_quality.py, bench/judging_shortcuts.py).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from sqlalchemy import select

from dsr.core.data import Collection, Dialogue
from dsr.db.engine import read_session
from dsr.judging.models import Assessor, Assignment, JudgeDialogue, JudgeItem, JudgeTask

ASSESSORS = ("alice", "bob", "carol", "dave")


def as_pool(collection: Collection, top: int | None = None) -> Collection:
    """``collection`` with labels 0 and ``meta.judged`` false (grades capped at ``top`` are the
    caller's business: the truth keeps the original labels)."""
    dialogues = [
        Dialogue(
            d.id,
            d.title,
            d.context,
            d.target,
            [replace(c, label=0) for c in d.candidates],
            subset=d.subset,
            subreddit=d.subreddit,
            source=d.source,
            meta={**d.meta, "judged": False},
        )
        for d in collection
    ]
    return Collection(f"{collection.name}-pool", dialogues)


def truth_of(collection: Collection, top: int = 2) -> dict[tuple[str, str], int]:
    return {(d.id, c.id): min(c.label, top) for d in collection for c in d.candidates}


def sample_campaign(
    judging,
    name: str = "s1",
    k: int = 3,
    chunk: int = 10,
    honeypot_rate: float = 0.1,
    honeypot_threshold: float = 0.7,
    assessors=ASSESSORS,
    assign: bool = True,
    seed: int = 0,
    min_honeypots: int = 3,
):
    """A campaign on ``sample`` with automatic honeypots; returns (truth, {assessor: token})."""
    from dsr.collections import load_collection
    from dsr.judging import guidelines, honeypots
    from dsr.judging.campaigns import Settings

    sample = load_collection("sample")
    pool = as_pool(sample)
    rules = guidelines.load()
    golds = honeypots.auto_golds(pool, 0, 2, seed)
    judging.create(
        name,
        pool,
        rules,
        Settings(
            k=k,
            chunk=chunk,
            honeypot_rate=honeypot_rate,
            honeypot_threshold=honeypot_threshold,
            min_honeypots=min_honeypots,
            seed=seed,
        ),
        golds,
    )
    tokens = {
        a: judging.assignments.add_assessor(a) for a in assessors if a not in {x.name for x in judging.assignments.assessors()}
    }
    if assign:
        judging.assignments.assign(name, list(assessors))
    return truth_of(sample), tokens


def assignments(judging, name: str) -> list[dict]:
    """Every (assessor, item) pair a campaign's assignments make, in task and item order."""
    campaign = judging.campaign(name)
    query = (
        select(
            Assessor.name,
            JudgeItem.key,
            JudgeDialogue.dialogue_id,
            JudgeItem.candidate_id,
            JudgeItem.gold,
            JudgeTask.seq,
            JudgeItem.position,
        )
        .join(Assignment, Assignment.assessor_id == Assessor.id)
        .join(JudgeTask, JudgeTask.id == Assignment.task_id)
        .join(JudgeItem, JudgeItem.task_id == JudgeTask.id)
        .join(JudgeDialogue, JudgeDialogue.id == JudgeTask.dialogue_pk)
        .where(JudgeTask.campaign_id == campaign.id)
        .order_by(JudgeTask.seq, JudgeItem.position, Assessor.name)
    )
    with read_session(judging.engine) as s:
        return [dict(zip(("assessor", "key", "dialogue", "candidate", "gold", "seq", "position"), r)) for r in s.execute(query)]


def true_grade(pair: dict, truth: dict) -> int:
    """A pool item's true grade, a planted sentence's known one."""
    if not isinstance(pair["candidate"], str):  # None, or NaN from a DataFrame
        return int(pair["gold"])
    return truth[pair["dialogue"], pair["candidate"]]


def noisy(true: int, p: float, rng, values=(0, 1, 2)) -> int:
    if rng.random() >= p:
        return true
    return int(rng.choice([v for v in values if v != true]))


def simulate(pairs: list[dict], truth: dict, noise: dict[str, float], seed: int = 0) -> list[dict]:
    """Grade rows for ``Judging.import_grades(..., origin=None)``: the truth with noise."""
    rng = np.random.default_rng(seed)
    return [
        {
            "item": p["key"],
            "assessor": p["assessor"],
            "grade": noisy(true_grade(p, truth), noise[p["assessor"]], rng),
            "seconds": float(rng.uniform(2, 12)),
        }
        for p in pairs
    ]


# --- scripts that grade without reading -------------------------------------------------------
# Each grades what the judging page shows (``dsr.judging.views.task_view``: the dialogue, each
# sentence's title and text, the task's size and order); tests/judging/test_quality.py and
# bench/judging_shortcuts.py run them against a campaign's honeypots.


def _recent(view: dict, last: int = 3) -> set[str]:
    from dsr.core.text import content_words

    words: set[str] = set()
    for turn in view["turns"][-last:]:
        words |= content_words(turn["text"])
    return words


def title_matcher(view: dict, sentence: dict) -> int:
    """2 when the sentence's title shares a content word with the dialogue (its title, turns)."""
    from dsr.core.text import content_words

    words = content_words(view["title"])
    for turn in view["turns"]:
        words |= content_words(turn["text"])
    return 2 if content_words(sentence["title"]) & words else 0


def word_overlap(view: dict, sentence: dict) -> int:
    """2 when the sentence shares a content word with the last three turns, else 0."""
    from dsr.core.text import content_words

    return 2 if content_words(sentence["body"]) & _recent(view) else 0


def title_and_overlap(view: dict, sentence: dict) -> int:
    """2 when the sentence carries the dialogue's own title and shares a content word with the
    last three turns (own title plus a shared word)."""
    return 2 if sentence["title"] == view["title"] and word_overlap(view, sentence) else 0


def by_position(view: dict, sentence: dict) -> int:
    """2 for the first two sentences of a task, else 0 (a page read top to bottom, lazily)."""
    return 2 if [s["key"] for s in view["sentences"]].index(sentence["key"]) < 2 else 0


def by_size(view: dict, sentence: dict, smallest: int) -> int:
    """The task-size exploit: a task larger than the smallest of its dialogue held the planted
    check (not relevant): 0 to all of it; elsewhere the word-overlap answer."""
    return 0 if len(view["sentences"]) > smallest else word_overlap(view, sentence)


#: the scripts, by assessor name ("size" is given each dialogue's smallest task; "random" and
#: "zeros" grade without the page)
SCRIPTS = ("titles", "overlap", "both", "position", "size", "random", "zeros")


def _scripted(name: str, view: dict, sentence: dict, smallest: int, rng) -> int:
    if name == "titles":
        return title_matcher(view, sentence)
    if name == "overlap":
        return word_overlap(view, sentence)
    if name == "both":
        return title_and_overlap(view, sentence)
    if name == "position":
        return by_position(view, sentence)
    if name == "size":
        return by_size(view, sentence, smallest)
    if name == "random":
        return int(rng.integers(3))
    return 0


def shortcut_campaign(db_path, judged_path, known: str, people=("careful", *SCRIPTS), dialogues: int = 30):
    """A campaign on the first ``dialogues`` of a judged file (labels hidden) with ``known``
    answers (``auto``: ``--auto-honeypots``, ``gold``: the judged grades, as ``--gold`` gives
    them), every task graded by each of ``people``: the careful assessor (the true grades with
    10 % noise; a planted check's known answer) and the :data:`SCRIPTS`, through the store's
    grade path. Returns (judging, judged, items, truth, given, views)."""
    from dsr.core.data import read_benchmark
    from dsr.judging import guidelines, honeypots
    from dsr.judging.campaigns import Judging, Settings
    from dsr.judging.views import task_rows, task_view

    judged = Collection("cmu-judged", read_benchmark(judged_path).dialogues[:dialogues])
    pool = as_pool(judged)
    judging = Judging.open(f"sqlite:///{db_path}")
    golds = honeypots.auto_golds(pool, 0, 2, seed=5) if known == "auto" else honeypots.judged_golds(pool, judged)
    # every script grades every task (k only says how many assessors a task gets)
    judging.create("qc", pool, guidelines.load(), Settings(seed=5, k=len(people)), golds)
    for name in people:
        judging.assignments.add_assessor(name)
    judging.assignments.assign("qc")
    campaign = judging.campaign("qc")
    items = judging.items_frame(campaign).set_index("key")
    truth = truth_of(judged)
    rng = np.random.default_rng(7)
    given: dict[tuple[str, str], int] = {}
    views = {}
    for assessor in judging.assignments.assessors():
        pages = [task_view(judging, assessor, campaign, row["seq"]) for row in task_rows(judging, assessor, campaign)]
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
                else:
                    grade = _scripted(assessor.name, view, sentence, smallest[view["title"]], rng)
                judging.grade(assessor, key, grade, seconds=float(rng.uniform(3, 9)) if assessor.name == "careful" else 0.4)
                given[assessor.name, key] = grade
    return judging, judged, items, truth, given, views
