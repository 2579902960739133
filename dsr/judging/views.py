"""What an assessor sees: their campaigns, their tasks with progress, one task's page.

Blind by construction: a task's view holds the dialogue, the sentences (public item
keys, titles, texts) and the asking assessor's own grades, and nothing else: no
other assessor's grade, no candidate id, no sign of which sentences are honeypots.
Task contents never change once made, so they are cached per task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, func, select

from dsr.db.engine import get_row, read_session
from dsr.db.refused import Refused
from dsr.judging.campaigns import Judging
from dsr.judging.models import Assessor, Assignment, Campaign, Grade, JudgeDialogue, JudgeItem, JudgeTask


@dataclass(frozen=True)
class TaskContent:
    title: str
    turns: list[dict[str, str]]
    next_speaker: str
    items: list[dict[str, str]]  # key, title, body


def task_rows(judging: Judging, assessor: Assessor, campaign: Campaign) -> list[dict[str, int]]:
    """The assessor's tasks in the campaign, in order: seq, size and how many they graded."""
    graded = (
        select(func.count(Grade.id))
        .join(JudgeItem, Grade.item_id == JudgeItem.id)
        .where(and_(JudgeItem.task_id == JudgeTask.id, Grade.assessor_id == assessor.id))
        .scalar_subquery()
    )
    query = (
        select(JudgeTask.seq, JudgeTask.size, graded)
        .join(Assignment, Assignment.task_id == JudgeTask.id)
        .where(Assignment.assessor_id == assessor.id, JudgeTask.campaign_id == campaign.id)
        .order_by(JudgeTask.seq)
    )
    with read_session(judging.engine) as s:
        return [{"seq": seq, "size": size, "done": done} for seq, size, done in s.execute(query)]


def progress(rows: list[dict[str, int]]) -> dict[str, Any]:
    done = sum(r["done"] for r in rows)
    total = sum(r["size"] for r in rows)
    unfinished = [r["seq"] for r in rows if r["done"] < r["size"]]
    return {
        "tasks": len(rows),
        "tasks_done": len(rows) - len(unfinished),
        "done": done,
        "total": total,
        "next": unfinished[0] if unfinished else None,
    }


def my_campaigns(judging: Judging, assessor: Assessor) -> list[dict[str, Any]]:
    """The campaigns the assessor has tasks in, with their progress."""
    with read_session(judging.engine) as s:
        ids = s.scalars(
            select(JudgeTask.campaign_id)
            .join(Assignment, Assignment.task_id == JudgeTask.id)
            .where(Assignment.assessor_id == assessor.id)
            .distinct()
        ).all()
        campaigns = [get_row(s, Campaign, i) for i in sorted(ids)]
    return [{"campaign": c, **progress(task_rows(judging, assessor, c))} for c in campaigns]


def content(judging: Judging, task: JudgeTask) -> TaskContent:
    """What the task shows (cached on ``judging``: a task never changes once made)."""
    cached = judging.cache.get(("task", task.id))
    if cached is not None:
        return cached
    with read_session(judging.engine) as s:
        record = json.loads(s.scalar(select(JudgeDialogue.data_json).where(JudgeDialogue.id == task.dialogue_pk)) or "{}")
        items = s.execute(
            select(JudgeItem.key, JudgeItem.title, JudgeItem.body)
            .where(JudgeItem.task_id == task.id)
            .order_by(JudgeItem.position)
        ).all()
    target = record.get("target") or {}
    made = TaskContent(
        record.get("title") or "",
        [{"speaker": t.get("author_name") or t.get("author_id") or "?", "text": t["body"]} for t in record["context"]],
        target.get("author_name") or target.get("author_id") or "?",
        [{"key": k, "title": t, "body": b} for k, t, b in items],
    )
    judging.cache[("task", task.id)] = made
    return made


def task_view(judging: Judging, assessor: Assessor, campaign: Campaign, seq: int) -> dict[str, Any]:
    """One task as its assessor sees it, with their own grades and where they are."""
    rows = task_rows(judging, assessor, campaign)
    order = [r["seq"] for r in rows]
    if seq not in order:
        raise Refused(404 if not rows else 403, "this task is not one of yours")
    with read_session(judging.engine) as s:
        task = s.scalar(select(JudgeTask).where(JudgeTask.campaign_id == campaign.id, JudgeTask.seq == seq))
        assert task is not None, "the task is one of the assessor's"
        mine = dict(
            s.execute(
                select(JudgeItem.key, Grade.grade)
                .join(Grade, Grade.item_id == JudgeItem.id)
                .where(JudgeItem.task_id == task.id, Grade.assessor_id == assessor.id)
            ).all()
        )
    made = content(judging, task)
    at = order.index(seq)
    items = [{**it, "graded": it["key"] in mine, "grade": mine.get(it["key"])} for it in made.items]
    return {
        "campaign": campaign,
        "seq": seq,
        "number": at + 1,
        "title": made.title,
        "turns": made.turns,
        "next_speaker": made.next_speaker,
        "sentences": items,
        "previous": order[at - 1] if at > 0 else None,
        "following": order[at + 1] if at + 1 < len(order) else None,
        "progress": progress(rows),
    }


def all_tasks(judging: Judging, campaign: Campaign) -> list[tuple[int, TaskContent]]:
    """Every task of the campaign in order, as (seq, content): what other tools are given."""
    with read_session(judging.engine) as s:
        tasks = s.scalars(select(JudgeTask).where(JudgeTask.campaign_id == campaign.id).order_by(JudgeTask.seq)).all()
    return [(task.seq, content(judging, task)) for task in tasks]
