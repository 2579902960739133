"""Judging campaigns on real pools and simulated assessors, for the tests and benchmarks
(``tests/support/judging.py`` re-exports them; ``bench/bench_judging.py`` uses them).

* :func:`as_pool`: a collection as ``dsr pool`` writes it (labels 0, ``meta.judged`` false),
  so a campaign never sees the answers; the original labels are the simulation's truth.
* :func:`sample_campaign`: a campaign on the bundled ``sample`` collection (20 dialogues,
  508 candidates) with automatic honeypots and four assessors holding tokens.
* :func:`assignments` / :func:`simulate`: who holds which item, and grades drawn from the
  truth with a known noise rate per assessor (a wrong grade is uniform over the others).
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
    tokens = {a: judging.add_assessor(a) for a in assessors if a not in {x.name for x in judging.assessors()}}
    if assign:
        judging.assign(name, list(assessors))
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
