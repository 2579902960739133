"""The judging campaigns' tables, in the board's database (the shared :class:`dsr.db.base.Base`,
migrations 0003 and 0006 of the one chain in ``dsr/migrations``).

A campaign holds its pool (each dialogue's record as in the pool file), its tasks
(a dialogue's sentences to grade, honeypots planted) and items, the assessors'
assignments and grades. Assessors authenticate with tokens stored hashed, as teams
do; assessors known only from an imported Label Studio or crowdsourcing file have
no token. A grade is one row per (item, assessor): giving it again replaces it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from dsr.db.base import Base, BrowserSession, utcnow


class Campaign(Base):
    __tablename__ = "judge_campaigns"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    guidelines_json: Mapped[str] = mapped_column(Text)
    k: Mapped[int] = mapped_column(Integer)
    chunk: Mapped[int] = mapped_column(Integer)
    honeypot_rate: Mapped[float] = mapped_column(Float)
    threshold: Mapped[float] = mapped_column(Float)
    min_checks: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    pool_json: Mapped[str] = mapped_column(Text)  # the pool's name, hash and size
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class JudgeDialogue(Base):
    __tablename__ = "judge_dialogues"
    __table_args__ = (UniqueConstraint("campaign_id", "dialogue_id", name="uq_judge_dialogue"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("judge_campaigns.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    dialogue_id: Mapped[str] = mapped_column(String(500))
    data_json: Mapped[str] = mapped_column(Text)  # the pool file's record


class JudgeTask(Base):
    __tablename__ = "judge_tasks"
    __table_args__ = (UniqueConstraint("campaign_id", "seq", name="uq_judge_task_seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("judge_campaigns.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)  # 1, 2, ... within the campaign
    dialogue_pk: Mapped[int] = mapped_column(ForeignKey("judge_dialogues.id"))
    size: Mapped[int] = mapped_column(Integer)


class JudgeItem(Base):
    """A sentence of a task: a pool candidate, or a planted honeypot (``candidate_id`` null).
    ``gold`` is set on the task's honeypot checks only; ``key`` is the public name."""

    __tablename__ = "judge_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("judge_campaigns.id"), index=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("judge_tasks.id"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(32), unique=True)
    candidate_id: Mapped[str | None] = mapped_column(String(500), nullable=True)
    title: Mapped[str] = mapped_column(Text, default="")
    body: Mapped[str] = mapped_column(Text)
    gold: Mapped[int | None] = mapped_column(Integer, nullable=True)
    source: Mapped[str] = mapped_column(String(20), default="pool")


class Assessor(Base):
    __tablename__ = "judge_assessors"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    origin: Mapped[str] = mapped_column(String(20), default="web")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Assignment(Base):
    __tablename__ = "judge_assignments"
    __table_args__ = (UniqueConstraint("task_id", "assessor_id", name="uq_judge_assignment"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    task_id: Mapped[int] = mapped_column(ForeignKey("judge_tasks.id"))
    assessor_id: Mapped[int] = mapped_column(ForeignKey("judge_assessors.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Grade(Base):
    __tablename__ = "judge_grades"
    __table_args__ = (UniqueConstraint("item_id", "assessor_id", name="uq_judge_grade"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("judge_items.id"))
    assessor_id: Mapped[int] = mapped_column(ForeignKey("judge_assessors.id"), index=True)
    grade: Mapped[int | None] = mapped_column(Integer, nullable=True)  # null: unsure
    unsure: Mapped[bool] = mapped_column(Boolean, default=False)
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    source: Mapped[str] = mapped_column(String(20), default="web")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class JudgeSession(BrowserSession, Base):
    """An assessor's browser login (:class:`~dsr.db.base.BrowserSession`'s columns, and whose)."""

    __tablename__ = "judge_web_sessions"
    assessor_id: Mapped[int] = mapped_column(ForeignKey("judge_assessors.id"))


class Review(Base):
    """A decision of ``dsr judge review`` on an item (migration ``0006_judge_review``):
    ``adjudicate`` (``grade`` is the adjudicator's and wins in the export) or ``more``
    (sent back for more judgements; ``note`` names the assessors added). ``decided_by``
    is who decided."""

    __tablename__ = "judge_reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("judge_items.id"), index=True)
    action: Mapped[str] = mapped_column(String(20))
    grade: Mapped[int | None] = mapped_column(Integer, nullable=True)
    decided_by: Mapped[str] = mapped_column(String(200))
    note: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
