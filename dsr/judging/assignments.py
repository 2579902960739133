"""Assessors and who grades what (``dsr judge add-assessor``, ``dsr judge assign``):
:class:`Assignments` is a service of :class:`dsr.judging.campaigns.Judging`."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from sqlalchemy import Engine, delete, func, select
from sqlalchemy.orm import Session

from dsr.core.errors import InputError
from dsr.db.engine import get_row, read_session, write_session
from dsr.db.tokens import hash_token, new_token
from dsr.judging.models import Assessor, Assignment, Campaign, Grade, JudgeItem, JudgeSession, JudgeTask
from dsr.judging.quality import OVERLAP
from dsr.judging.reviews import _checked_name
from dsr.judging.tasks import assign


class Assignments:
    """Assessors, their tokens and their tasks, on judging's database (``engine``) with its
    campaigns by name (``campaign``): :class:`dsr.judging.campaigns.Judging` holds one as
    ``judging.assignments``."""

    def __init__(self, engine: Engine, campaign: Callable[[str], Campaign]) -> None:
        self.engine = engine
        self.campaign = campaign

    # -- assessors -----------------------------------------------------------
    def add_assessor(self, name: str) -> str:
        """Create an assessor; returns their token (shown once: only its hash is kept). A
        removed assessor's name can be added again: a new token (their grades stay theirs)."""
        name = _checked_name(name, "NAME")
        token = new_token()
        with write_session(self.engine) as s:
            row = s.scalar(select(Assessor).where(Assessor.name == name))
            if row is not None and (row.token_hash is not None or row.origin != "web"):
                raise InputError(
                    f"assessor {name!r} exists already (dsr judge rotate-token gives them a new token)", field="NAME"
                )
            if row is None:
                s.add(Assessor(name=name, token_hash=hash_token(token), origin="web"))
            else:
                row.token_hash = hash_token(token)
        return token

    def remove_assessor(self, name: str) -> int:
        """Revoke an assessor's token and end their browser sessions, at once (401 on the next
        request); their grades and assignments stay (``dsr judge assign --release NAME`` hands
        on the tasks they have not started). Returns how many grades they gave."""
        row = self._web_assessor(name)
        with write_session(self.engine) as s:
            get_row(s, Assessor, row.id).token_hash = None
            s.execute(delete(JudgeSession).where(JudgeSession.assessor_id == row.id))
            return int(s.scalar(select(func.count()).select_from(Grade).where(Grade.assessor_id == row.id)) or 0)

    def rotate_assessor_token(self, name: str) -> str:
        """A new token for an assessor (shown once); the old one and their browser sessions
        stop working at once."""
        row = self._web_assessor(name)
        token = new_token()
        with write_session(self.engine) as s:
            get_row(s, Assessor, row.id).token_hash = hash_token(token)
            s.execute(delete(JudgeSession).where(JudgeSession.assessor_id == row.id))
        return token

    def _web_assessor(self, name: str) -> Assessor:
        """An assessor who holds a token (not one of an import, nor a removed one)."""
        name = _checked_name(name, "NAME")
        with read_session(self.engine) as s:
            row = s.scalar(select(Assessor).where(Assessor.name == name))
        if row is None or row.token_hash is None:
            held = (
                ""
                if row is None
                else (
                    " (removed: dsr judge add-assessor gives them a new token)"
                    if row.origin == "web"
                    else f" (from {row.origin}: no token)"
                )
            )
            raise InputError(f"no assessor {name!r} with a token{held}", field="NAME")
        return row

    def assessor_for_token(self, token: str | None) -> Assessor | None:
        """The assessor holding ``token`` now (None for a wrong, rotated or revoked one): asked of
        the database every time, so a token revoked by another process stops at once."""
        if not token:
            return None
        with read_session(self.engine) as s:
            return s.scalar(select(Assessor).where(Assessor.token_hash == hash_token(token)))

    def assessors(self) -> list[Assessor]:
        with read_session(self.engine) as s:
            return list(s.scalars(select(Assessor).order_by(Assessor.name)))

    # -- assignments -----------------------------------------------------------
    def assign(
        self, name: str, assessors: list[str] | None = None, release: Iterable[str] = (), overlap: float = 0.0
    ) -> dict[str, int]:
        """Fill every task's places up to k (see :func:`dsr.judging.tasks.assign`); first drop
        the untouched assignments of the ``release``d assessors. ``overlap`` is the share of
        dialogues (drawn with the campaign's seed, the same on every call) whose tasks get one
        assessor more than k, to measure agreement on them. Returns the sentences now
        assigned to each assessor."""
        overlap = OVERLAP.check(overlap)
        campaign = self.campaign(name)
        with write_session(self.engine) as s:
            people = {a.name: a for a in s.scalars(select(Assessor))}
            chosen = list(assessors) if assessors else [n for n, a in people.items() if a.origin == "web"]
            gone = set(release)
            for who in [*chosen, *gone]:
                if who not in people:
                    raise InputError(f"no assessor {who!r} (add them with dsr judge add-assessor)", field="assessors")
            self._release(s, campaign.id, [people[n].id for n in gone])
            chosen = [n for n in chosen if n not in gone]
            sizes = dict(s.execute(select(JudgeTask.id, JudgeTask.size).where(JudgeTask.campaign_id == campaign.id)).all())
            existing: dict[int, set[str]] = {}
            load = dict.fromkeys(chosen, 0)
            names = {a.id: n for n, a in people.items()}
            for task_id, assessor_id in s.execute(
                select(Assignment.task_id, Assignment.assessor_id).join(JudgeTask).where(JudgeTask.campaign_id == campaign.id)
            ):
                existing.setdefault(task_id, set()).add(names[assessor_id])
                if names[assessor_id] in load:
                    load[names[assessor_id]] += sizes[task_id]
            new = assign(sizes, chosen, campaign.k, existing, load, campaign.seed)
            for t, n in new:
                load[n] += sizes[t]
                existing.setdefault(t, set()).add(n)
            twice = self._overlap_tasks(s, campaign, overlap)
            if twice:
                more = assign(
                    {t: sizes[t] for t in twice},
                    chosen,
                    campaign.k + 1,
                    {t: existing.get(t, set()) for t in twice},
                    load,
                    campaign.seed,
                )
                for t, n in more:
                    load[n] += sizes[t]
                new += more
            s.add_all(Assignment(task_id=t, assessor_id=people[n].id) for t, n in new)
        return load

    @staticmethod
    def _overlap_tasks(s: Session, campaign: Campaign, overlap: float) -> list[int]:
        """The tasks of a seeded ``overlap`` share of the campaign's dialogues."""
        if overlap <= 0:
            return []
        dialogues = sorted(set(s.scalars(select(JudgeTask.dialogue_pk).where(JudgeTask.campaign_id == campaign.id))))
        picked = np.random.default_rng([campaign.seed, 31]).permutation(dialogues)[: round(overlap * len(dialogues))]
        chosen = {int(d) for d in picked}
        return sorted(
            s.scalars(select(JudgeTask.id).where(JudgeTask.campaign_id == campaign.id, JudgeTask.dialogue_pk.in_(chosen)))
        )

    def _release(self, s: Session, campaign_id: int, assessor_ids: list[int]) -> None:
        if not assessor_ids:
            return
        rows = s.scalars(
            select(Assignment)
            .join(JudgeTask)
            .where(JudgeTask.campaign_id == campaign_id, Assignment.assessor_id.in_(assessor_ids))
        ).all()
        for row in rows:
            graded = s.scalar(
                select(func.count())
                .select_from(Grade)
                .join(JudgeItem)
                .where(JudgeItem.task_id == row.task_id, Grade.assessor_id == row.assessor_id)
            )
            if not graded:
                s.delete(row)
