"""The review queue's decisions (``dsr judge review``): an adjudicator's grade for an item, or
the item sent back to more assessors, each recorded with who decided. :class:`Reviews` is a
service of :class:`dsr.judging.campaigns.Judging`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from dsr.core.errors import InputError
from dsr.db.engine import get_row, read_session, write_session
from dsr.judging.guidelines import Guidelines
from dsr.judging.models import Assessor, Assignment, Campaign, JudgeItem, JudgeTask, Review
from dsr.judging.quality import EXTRA


class Reviews:
    """Decisions on uncertain or disputed items, on judging's database (``engine``) with its
    campaigns by name and their guidelines: :class:`dsr.judging.campaigns.Judging` holds one
    as ``judging.reviews``."""

    def __init__(self, engine: Engine, campaign: Callable[[str], Campaign], guidelines: Callable[[Campaign], Guidelines]) -> None:
        self.engine = engine
        self.campaign = campaign
        self.guidelines = guidelines

    def adjudicate(self, name: str, decisions: dict[str, int], by: str, note: str = "") -> int:
        """An adjudicator's grades (item key -> grade), recorded with who decided; the latest
        per item wins over the aggregate in the report and the export. All or nothing."""
        campaign = self.campaign(name)
        by = _checked_name(by, "by")
        values = self.guidelines(campaign).grades
        with write_session(self.engine) as s:
            for key, grade in decisions.items():
                if isinstance(grade, bool) or grade not in values:
                    raise InputError(f"grade of {key} must be one of {values}, got {grade!r}", field="adjudicate")
                item = _pool_item(s, campaign, key, "adjudicate")
                s.add(Review(item_id=item.id, action="adjudicate", grade=grade, decided_by=by, note=note))
        return len(decisions)

    def send_back(self, name: str, keys: list[str], by: str, extra: int = 1) -> dict[str, list[str]]:
        """Send items back for more judgements: each item's task gets ``extra`` more assessors
        (with a token, not holding it yet, the least loaded first), recorded with who decided.
        Returns item key -> the assessors added. All or nothing."""
        campaign = self.campaign(name)
        by = _checked_name(by, "by")
        extra = EXTRA.check(extra)
        out: dict[str, list[str]] = {}
        with write_session(self.engine) as s:
            people = {a.id: a.name for a in s.scalars(select(Assessor).where(Assessor.origin == "web"))}
            holders: dict[int, set[int]] = {}
            load = dict.fromkeys(people, 0)
            for task_id, assessor_id, size in s.execute(
                select(Assignment.task_id, Assignment.assessor_id, JudgeTask.size)
                .join(JudgeTask)
                .where(JudgeTask.campaign_id == campaign.id)
            ):
                holders.setdefault(task_id, set()).add(assessor_id)
                if assessor_id in load:
                    load[assessor_id] += size
            for key in dict.fromkeys(keys):
                item = _pool_item(s, campaign, key, "send_back")
                have = holders.setdefault(item.task_id, set())
                free = sorted((a for a in people if a not in have), key=lambda a: (load[a], people[a]))
                if len(free) < extra:
                    raise InputError(
                        f"item {key} needs {extra} more assessor(s); {len(free)} with a token "
                        "do not hold its task (add some with dsr judge add-assessor)",
                        field="send_back",
                    )
                size = get_row(s, JudgeTask, item.task_id).size
                for a in free[:extra]:
                    s.add(Assignment(task_id=item.task_id, assessor_id=a))
                    have.add(a)
                    load[a] += size
                out[key] = [people[a] for a in free[:extra]]
                s.add(Review(item_id=item.id, action="more", decided_by=by, note="added: " + ", ".join(out[key])))
        return out

    def of(self, campaign: Campaign) -> list[dict[str, Any]]:
        """Every review decision of the campaign, oldest first: item id and key, action, grade,
        by, note, when."""
        query = (
            select(Review.item_id, JudgeItem.key, Review.action, Review.grade, Review.decided_by, Review.note, Review.created_at)
            .join(JudgeItem, Review.item_id == JudgeItem.id)
            .where(JudgeItem.campaign_id == campaign.id)
            .order_by(Review.id)
        )
        with read_session(self.engine) as s:
            return [dict(zip(("item", "key", "action", "grade", "by", "note", "at"), row)) for row in s.execute(query)]


def _pool_item(s: Session, campaign: Campaign, key: str, where: str) -> JudgeItem:
    """The campaign's sentence (not a planted check) of item ``key``, else an InputError."""
    row = s.scalar(select(JudgeItem).where(JudgeItem.campaign_id == campaign.id, JudgeItem.key == key))
    if row is None or row.candidate_id is None:
        raise InputError(
            f"{key!r} is not a sentence of campaign {campaign.name!r}"
            + (" (a planted check has no grade to decide)" if row is not None else ""),
            field=where,
        )
    return row


def _checked_name(name: str, field: str) -> str:
    name = (name or "").strip()
    if not name or len(name) > 100 or "/" in name or not name.isprintable():
        raise InputError("a name of 1 to 100 printable characters without '/'", field=field)
    return name
