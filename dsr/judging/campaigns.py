"""Campaigns in the board's database: create, assign, grade, read back.

:class:`Judging` binds an engine (the leaderboard's: SQLite by default, PostgreSQL
by URL; see :mod:`dsr.db.engine`); ``dsr judge`` commands, the judging pages and
the tests all go through it. A grade is committed before :meth:`Judging.grade`
returns (so before the page is told it is saved); grades arriving at the same moment
from the server's threads share one transaction, one commit and one fsync (group
commit), since SQLite writes one transaction at a time. There is one row per (item,
assessor), so a grade given again (or sent again after a lost answer) replaces the row
instead of adding one.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Table, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from dsr.core.data import Collection, dialogue_from_json
from dsr.core.errors import InputError
from dsr.db.base import utcnow
from dsr.db.engine import get_row, open_database, read_session, write_connection, write_session
from dsr.db.refused import Refused
from dsr.judging import guidelines as guidelines_module
from dsr.judging.assignments import Assignments
from dsr.judging.guidelines import Guidelines
from dsr.judging.models import Assessor, Assignment, Campaign, Grade, JudgeDialogue, JudgeItem, JudgeTask
from dsr.judging.quality import SECONDS, Settings, checked_seconds
from dsr.judging.reviews import Reviews, _checked_name
from dsr.judging.tasks import plan_tasks

if TYPE_CHECKING:  # the server imports this module: pandas and the planners only when used
    import pandas as pd

    from dsr.judging.honeypots import GoldSet

#: campaign names the judging pages use as paths (/judge/login, /judge/api/...)
RESERVED_NAMES = frozenset({"login", "logout", "api"})
#: the longest dialogue or candidate id a campaign stores (its columns: String(500))
MAX_ID = 500
#: the longest time a grade may say it took (longer means the page was left open)
MAX_SECONDS = SECONDS.default


#: the statements of :meth:`Judging.grade`, built once, on the tables (SQLAlchemy Core: no
#: statement is built, and no ORM execution runs, per grade; the hot path of the judging pages)
_GRADES: Table = Grade.__table__  # type: ignore[assignment]  # a mapped class's table is a Table
_ASSIGNMENTS: Table = Assignment.__table__  # type: ignore[assignment]
_ASSIGNED = select(_ASSIGNMENTS.c.id).where(
    _ASSIGNMENTS.c.task_id == bindparam("task"), _ASSIGNMENTS.c.assessor_id == bindparam("assessor")
)
_GRADED = select(_GRADES.c.id).where(_GRADES.c.item_id == bindparam("item"), _GRADES.c.assessor_id == bindparam("assessor"))
_INSERT_GRADE = insert(_GRADES)
_UPDATE_GRADE = update(_GRADES).where(_GRADES.c.id == bindparam("grade_id"))


def _pandas() -> ModuleType:
    """pandas, imported on first use, in this one place (importing this module does not load it)."""
    import pandas

    return pandas


@dataclass(frozen=True)
class ItemRef:
    id: int
    task_id: int
    campaign_id: int


@dataclass
class _Job:
    """One grade waiting for the group commit of :meth:`Judging.grade`."""

    assessor_id: int
    ref: ItemRef
    grade: int | None
    unsure: bool
    seconds: float | None
    source: str
    new: bool = False
    done: bool = False
    error: Exception | None = None


def _grading_state(s: Any, campaign_id: int) -> tuple[dict[str, tuple[int, int]], dict[str, int], set[Any], dict[Any, Any]]:
    """A campaign's items by key (id, task), assessors by name, (task, assessor) assignments
    and (item, assessor) grades, as an import of grades reads them."""
    items = {
        k: (i, t)
        for k, i, t in s.execute(
            select(JudgeItem.key, JudgeItem.id, JudgeItem.task_id).where(JudgeItem.campaign_id == campaign_id)
        )
    }
    people = {a.name: a.id for a in s.scalars(select(Assessor))}
    assigned = set(
        s.execute(
            select(Assignment.task_id, Assignment.assessor_id).join(JudgeTask).where(JudgeTask.campaign_id == campaign_id)
        ).all()
    )
    graded = dict(
        ((i, a), g)
        for i, a, g in s.execute(
            select(Grade.item_id, Grade.assessor_id, Grade.id).join(JudgeItem).where(JudgeItem.campaign_id == campaign_id)
        )
    )
    return items, people, assigned, graded


def _check_id_lengths(pool: Collection) -> None:
    """Every dialogue and candidate id fits what every database's columns hold (PostgreSQL
    refuses longer)."""
    for d in pool:
        too_long = [("id", d.id)] * (len(d.id) > MAX_ID) + [
            (f"candidates[{i}].id", c.id) for i, c in enumerate(d.candidates) if len(c.id) > MAX_ID
        ]
        if too_long:
            raise InputError(
                f"an id is at most {MAX_ID} characters (got {len(too_long[0][1])})", record=d.id[:80], field=too_long[0][0]
            )


def _items(campaign_id: int, tasks: list[Any], planned: list[Any]) -> list[JudgeItem]:
    """The items of each planned task, each with a fresh key."""
    return [
        JudgeItem(
            campaign_id=campaign_id,
            task_id=task.id,
            position=p,
            key=secrets.token_hex(8),
            candidate_id=it.candidate,
            title=it.title,
            body=it.body,
            gold=it.gold,
            source=it.source,
        )
        for task, t in zip(tasks, planned)
        for p, it in enumerate(t.items)
    ]


class Judging:
    """Judging campaigns stored in the database behind ``engine``; its services
    (``assignments``: assessors and who grades what; ``reviews``: the review queue's
    decisions) read the campaigns through it."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.assignments = Assignments(engine, self.campaign)
        self.reviews = Reviews(engine, self.campaign, self.guidelines)
        self._items: dict[str, ItemRef] = {}
        self._guidelines: dict[tuple[int, str], Guidelines] = {}
        self._scales: dict[int, list[int]] = {}
        #: what never changes once written (task contents), for the pages (dict operations are atomic)
        self.cache: dict[Any, Any] = {}
        self._pending: list[_Job] = []
        self._pending_lock = threading.Lock()
        self._writer = threading.Lock()
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str) -> Judging:
        return cls(open_database(url))

    # -- campaigns ---------------------------------------------------------
    def create(
        self, name: str, pool: Collection, rules: Guidelines, settings: Settings, golds: dict[str, GoldSet] | None = None
    ) -> Campaign:
        """A campaign over ``pool``: its dialogues, tasks and items (honeypots planted)."""
        name = _checked_name(name, "NAME")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise InputError("a campaign name is letters, digits, '.', '_' and '-' (it is a URL part)", field="NAME")
        if name.lower() in RESERVED_NAMES:
            raise InputError(f"{name!r} is a path of the judging pages; choose another name", field="NAME")
        _check_id_lengths(pool)
        planned = plan_tasks(pool, golds or {}, settings.chunk, settings.honeypot_rate, rules.relevant_from, settings.seed)
        described = {k: v for k, v in pool.describe().items() if k != "meta"}
        with write_session(self.engine) as s:
            if s.scalar(select(Campaign.id).where(Campaign.name == name)) is not None:
                raise InputError(f"campaign {name!r} exists already", field="NAME")
            campaign = Campaign(
                name=name,
                description=settings.description,
                guidelines_json=json.dumps(rules.to_json()),
                k=settings.k,
                chunk=settings.chunk,
                honeypot_rate=settings.honeypot_rate,
                threshold=settings.honeypot_threshold,
                min_checks=settings.min_honeypots,
                seed=settings.seed,
                pool_json=json.dumps(described),
            )
            s.add(campaign)
            s.flush()
            rows = {
                d.id: JudgeDialogue(
                    campaign_id=campaign.id, position=i, dialogue_id=d.id, data_json=json.dumps(d.to_json(), ensure_ascii=False)
                )
                for i, d in enumerate(pool)
            }
            s.add_all(rows.values())
            s.flush()
            tasks = [
                JudgeTask(campaign_id=campaign.id, seq=n, dialogue_pk=rows[t.dialogue].id, size=len(t.items))
                for n, t in enumerate(planned, start=1)
            ]
            s.add_all(tasks)
            s.flush()
            s.add_all(_items(campaign.id, tasks, planned))
        return campaign

    def campaign(self, name: str) -> Campaign:
        with read_session(self.engine) as s:
            found = s.scalar(select(Campaign).where(Campaign.name == name))
        if found is None:
            names = ", ".join(c.name for c in self.campaigns()) or "none yet"
            raise InputError(f"no campaign {name!r} (campaigns: {names})", field="CAMPAIGN")
        return found

    def campaigns(self) -> list[Campaign]:
        with read_session(self.engine) as s:
            return list(s.scalars(select(Campaign).order_by(Campaign.id)))

    def guidelines(self, campaign: Campaign) -> Guidelines:
        key = (campaign.id, campaign.guidelines_json)
        with self._lock:
            cached = self._guidelines.get(key)
        if cached is None:
            cached = guidelines_module.from_json(json.loads(campaign.guidelines_json))
            with self._lock:
                self._guidelines[key] = cached
        return cached

    def scale(self, campaign_id: int, fresh: bool = False) -> list[int]:
        """The campaign's grades (cached; ``fresh`` reads them again)."""
        with self._lock:
            values = None if fresh else self._scales.get(campaign_id)
        if values is None:
            with read_session(self.engine) as s:
                values = self.guidelines(get_row(s, Campaign, campaign_id)).grades
            with self._lock:
                self._scales[campaign_id] = values
        return values

    def set_guidelines(self, name: str, rules: Guidelines) -> None:
        """Replace a campaign's text and examples; the scale's grades cannot change once graded."""
        campaign = self.campaign(name)
        if rules.grades != self.guidelines(campaign).grades and self._graded(campaign.id):
            raise InputError(
                f"the campaign has grades: its scale's grades cannot change (now {self.guidelines(campaign).grades})",
                field="scale",
            )
        with write_session(self.engine) as s:
            get_row(s, Campaign, campaign.id).guidelines_json = json.dumps(rules.to_json())

    def _graded(self, campaign_id: int) -> int:
        with read_session(self.engine) as s:
            return int(
                s.scalar(select(func.count()).select_from(Grade).join(JudgeItem).where(JudgeItem.campaign_id == campaign_id)) or 0
            )

    def pool(self, campaign: Campaign) -> Collection:
        """The campaign's pool, as it was given (labels untouched)."""
        with read_session(self.engine) as s:
            rows = s.scalars(
                select(JudgeDialogue.data_json).where(JudgeDialogue.campaign_id == campaign.id).order_by(JudgeDialogue.position)
            ).all()
        return Collection(json.loads(campaign.pool_json)["name"], [dialogue_from_json(json.loads(r)) for r in rows])

    # -- grades --------------------------------------------------------------
    def item(self, key: str) -> ItemRef | None:
        """An item by its public key (cached: items never change)."""
        with self._lock:
            ref = self._items.get(key)
        if ref is None:
            with read_session(self.engine) as s:
                row = s.execute(
                    select(JudgeItem.id, JudgeItem.task_id, JudgeItem.campaign_id).where(JudgeItem.key == key)
                ).first()
            if row is None:
                return None
            ref = ItemRef(*row)
            with self._lock:
                self._items[key] = ref
        return ref

    def grade(
        self,
        assessor: Assessor,
        key: str,
        grade: int | None,
        unsure: bool = False,
        seconds: float | None = None,
        source: str = "web",
    ) -> bool:
        """Record one grade (committed on return); True when it is the item's first from them."""
        ref = self.item(key)
        if ref is None:
            raise Refused(404, "no such item")
        if unsure:
            grade = None
        elif grade not in self.scale(ref.campaign_id) and grade not in self.scale(ref.campaign_id, True):
            raise Refused(422, f"grade must be one of {self.scale(ref.campaign_id)} (or unsure)")
        try:
            seconds = checked_seconds(seconds)
        except InputError as err:
            raise Refused(422, err.message) from None
        job = _Job(assessor.id, ref, grade, unsure, seconds, source)
        with self._pending_lock:
            self._pending.append(job)
        with self._writer:  # group commit: the first to get here writes everyone's
            if not job.done:
                with self._pending_lock:
                    batch, self._pending = self._pending, []
                self._write(batch)
        if job.error is not None:
            raise job.error
        return job.new

    def _write(self, batch: list[_Job]) -> None:
        """The grades waiting together, in one transaction (one commit, one fsync for all);
        a refused grade writes nothing and does not hold the others back."""
        for attempt in (1, 2):
            try:
                with write_connection(self.engine) as conn:
                    for job in batch:
                        try:
                            job.new = self._upsert(conn, job.assessor_id, job.ref, job.grade, job.unsure, job.seconds, job.source)
                            job.error = None
                        except Refused as refused:  # raised before anything is written
                            job.error = refused
                break
            except IntegrityError as err:  # the same grade sent twice at once (PostgreSQL): again
                if attempt == 2:
                    for job in batch:
                        job.error = err
            except Exception as err:  # nothing of the batch is committed: all are told
                for job in batch:
                    job.error = err
                break
        for job in batch:
            job.done = True

    def _upsert(
        self,
        conn: Connection,
        assessor_id: int,
        ref: ItemRef,
        grade: int | None,
        unsure: bool,
        seconds: float | None,
        source: str,
    ) -> bool:
        """Insert or replace one grade (prepared Core statements: this is the hot path)."""
        if conn.execute(_ASSIGNED, {"task": ref.task_id, "assessor": assessor_id}).first() is None:
            raise Refused(403, "this item is not in one of your tasks")
        existing = conn.execute(_GRADED, {"item": ref.id, "assessor": assessor_id}).scalar()
        now = utcnow()
        values: dict[str, Any] = {"grade": grade, "unsure": unsure, "source": source, "updated_at": now}
        if seconds is not None:
            values["seconds"] = seconds
        if existing is None:
            conn.execute(_INSERT_GRADE, {"item_id": ref.id, "assessor_id": assessor_id, "created_at": now, **values})
            return True
        conn.execute(_UPDATE_GRADE, {"grade_id": existing, **values})
        return False

    def import_grades(self, name: str, rows: list[dict[str, Any]], origin: str | None) -> int:
        """Many grades in one transaction (``rows``: item key, assessor, grade or None for
        unsure, seconds, and ``where`` for error messages).

        From another tool (``origin`` "label-studio", "crowd"): assessors are created without
        a token as ``origin:ID`` and given the item's task. With ``origin`` None the assessors
        exist and must hold the item's task (bulk grading, e.g. simulated assessors). A grade
        given again replaces the earlier one, so importing a file again changes nothing."""
        campaign = self.campaign(name)
        values = self.guidelines(campaign).grades
        with write_session(self.engine) as s:
            items, people, assigned, graded = _grading_state(s, campaign.id)
            new, changed, now = [], [], utcnow()
            for row in rows:
                where = row.get("where") or {}
                if row["item"] not in items:
                    raise InputError(f"item {row['item']!r} is not in campaign {name!r}", **where)
                if row["grade"] is not None and row["grade"] not in values:
                    raise InputError(f"grade must be one of {values}, got {row['grade']!r}", **where)
                seconds = checked_seconds(row.get("seconds"), {**where, "field": row.get("seconds_field", "seconds")})
                item_id, task_id = items[row["item"]]
                who = self._importer(s, people, row["assessor"], origin, where)
                if (task_id, who) not in assigned:
                    if origin is None:
                        raise InputError(f"{row['assessor']} does not hold this item's task", **where)
                    s.add(Assignment(task_id=task_id, assessor_id=who))
                    assigned.add((task_id, who))
                values_of = {
                    "grade": row["grade"],
                    "unsure": row["grade"] is None,
                    "seconds": seconds,
                    "source": origin or "bulk",
                    "updated_at": now,
                }
                if (item_id, who) in graded and graded[item_id, who] is None:
                    raise InputError(f"{row['assessor']} grades item {row['item']} twice", **where)
                if (item_id, who) in graded:
                    changed.append({"id": graded[item_id, who], **values_of})
                else:
                    graded[item_id, who] = None
                    new.append({"item_id": item_id, "assessor_id": who, "created_at": now, **values_of})
            if new:
                s.execute(insert(Grade), new)
            if changed:
                s.execute(update(Grade), changed)
        return len(rows)

    @staticmethod
    def _importer(s: Session, people: dict[str, int], assessor: str, origin: str | None, where: dict[str, Any]) -> int:
        name = assessor if origin is None else f"{origin}:{assessor}"
        if name not in people:
            if origin is None:
                raise InputError(f"no assessor {assessor!r}", **where)
            row = Assessor(name=name, token_hash=None, origin=origin)
            s.add(row)
            s.flush()
            people[name] = row.id
        return people[name]

    # -- review ----------------------------------------------------------------
    # -- reading -------------------------------------------------------------
    def grades_frame(self, campaign: Campaign) -> pd.DataFrame:
        """Every grade of the campaign, one row per (item, assessor) (see ``aggregate.COLUMNS``)."""
        pd = _pandas()

        from dsr.judging.aggregate import COLUMNS

        query = (
            select(
                Grade.item_id,
                Assessor.name,
                Grade.grade,
                Grade.unsure,
                Grade.seconds,
                JudgeItem.gold,
                JudgeItem.candidate_id.is_(None),
                JudgeDialogue.dialogue_id,
                JudgeItem.candidate_id,
                JudgeTask.seq,
                Grade.created_at,
            )
            .join(Assessor, Grade.assessor_id == Assessor.id)
            .join(JudgeItem, Grade.item_id == JudgeItem.id)
            .join(JudgeTask, JudgeItem.task_id == JudgeTask.id)
            .join(JudgeDialogue, JudgeTask.dialogue_pk == JudgeDialogue.id)
            .where(JudgeItem.campaign_id == campaign.id)
            .order_by(Grade.item_id, Assessor.name)
        )
        with read_session(self.engine) as s:
            rows = s.execute(query).all()
        frame = pd.DataFrame([tuple(r) for r in rows], columns=list(COLUMNS))
        frame["grade"] = frame["grade"].astype(float)
        frame["gold"] = frame["gold"].astype(float)
        frame["seconds"] = frame["seconds"].astype(float)
        frame["unsure"] = frame["unsure"].astype(bool)
        frame["planted"] = frame["planted"].astype(bool)
        return frame

    def items_frame(self, campaign: Campaign) -> pd.DataFrame:
        """Every item: id, key, task seq, position, dialogue, candidate, title, body, gold, source."""
        pd = _pandas()

        query = (
            select(
                JudgeItem.id,
                JudgeItem.key,
                JudgeTask.seq,
                JudgeItem.position,
                JudgeDialogue.dialogue_id,
                JudgeItem.candidate_id,
                JudgeItem.title,
                JudgeItem.body,
                JudgeItem.gold,
                JudgeItem.source,
            )
            .join(JudgeTask, JudgeItem.task_id == JudgeTask.id)
            .join(JudgeDialogue, JudgeTask.dialogue_pk == JudgeDialogue.id)
            .where(JudgeItem.campaign_id == campaign.id)
            .order_by(JudgeTask.seq, JudgeItem.position)
        )
        with read_session(self.engine) as s:
            rows = s.execute(query).all()
        return pd.DataFrame(
            [tuple(r) for r in rows],
            columns=["item", "key", "task", "position", "dialogue", "candidate", "title", "body", "gold", "source"],
        )
