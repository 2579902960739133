"""The board's tables. Schema changes go through Alembic (``eval/board/migrations``).

Times are naive UTC datetimes (SQLite keeps no time zone). Per-topic values
are stored as float64 bytes (topics x measures of the phase, exact); hidden
labels as JSON text on their phase. Neither is ever served for a hidden phase.
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (Boolean, DateTime, ForeignKey, Index, Integer, LargeBinary, String, Text,
                        UniqueConstraint, false as sa_false)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class Team(Base):
    """A participant (or the organisers' baselines team); authenticates with a token stored hashed."""

    __tablename__ = "teams"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    organiser: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Phase(Base):
    """A board: one collection, one phase (public labels or hidden ones held by the server)."""

    __tablename__ = "phases"
    __table_args__ = (UniqueConstraint("collection", "name", name="uq_phase_collection_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    collection: Mapped[str] = mapped_column(String(100))        # display name (URL part)
    name: Mapped[str] = mapped_column(String(100))
    collection_ref: Mapped[str] = mapped_column(String(1000))   # what load_collection gets
    collection_hash: Mapped[str] = mapped_column(String(64))
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str] = mapped_column(Text, default="")
    #: hidden phases: {topic: {doc: grade}} (never served); public: null (the collection's labels)
    labels_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    topics_json: Mapped[str] = mapped_column(Text)              # topic ids in order
    measures_json: Mapped[str] = mapped_column(Text)
    daily_quota: Mapped[int | None] = mapped_column(Integer, nullable=True)
    total_quota: Mapped[int | None] = mapped_column(Integer, nullable=True)
    baseline_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    #: runs whose scores tie as float32 are refused (``add-phase --strict``), not only counted
    strict: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    #: hidden phases: the fewest dialogues an aggregate (and its complement) may cover;
    #: null: ``scoring.MIN_DIALOGUES``
    min_dialogues: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Submission(Base):
    """An accepted run (invalid and refused runs are never stored)."""

    __tablename__ = "submissions"
    __table_args__ = (Index("ix_submissions_phase_team_time", "phase_id", "team_id", "created_at"),
                      # the same run text once per board (a duplicate is refused, 409)
                      Index("uq_submission_phase_sha256", "phase_id", "sha256", unique=True),
                      # a retried request (same Idempotency-Key) is answered, not stored again
                      Index("uq_submission_team_key", "team_id", "idempotency_key", unique=True))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    phase_id: Mapped[int] = mapped_column(ForeignKey("phases.id"))
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    system: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    link: Mapped[str] = mapped_column(String(500), default="")
    run_type: Mapped[str] = mapped_column(String(20))            # automatic / manual
    trained_on_collection: Mapped[bool] = mapped_column(Boolean, default=False)
    baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    filename: Mapped[str] = mapped_column(String(200), default="")
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(Integer)
    lines: Mapped[int] = mapped_column(Integer)
    #: the published metadata taken from the sidecar (``eval.board.published``: an
    #: allow-list); nothing else of a sidecar is kept
    sidecar_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    means_json: Mapped[str] = mapped_column(Text)                # {subset: {measure: mean}}
    # float64 (topics x measures); loaded only when asked for (boards read it through
    # Board.matrix, which caches it: a row never changes once written)
    per_topic: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    #: topics whose scores tie as float32 (scored as trec_eval orders them)
    tied_topics: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: the client's ``Idempotency-Key`` and the answer it got, returned again on a retry
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    answer_json: Mapped[str | None] = mapped_column(Text, nullable=True)

    team: Mapped[Team] = relationship(lazy="joined")
    phase: Mapped[Phase] = relationship(lazy="joined")


class WebSession(Base):
    """A browser login (cookie holds a random key; the table its hash)."""

    __tablename__ = "web_sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    expires_at: Mapped[datetime] = mapped_column(DateTime)
    #: this session's CSRF token (a form must carry it; a token of another session fails)
    csrf: Mapped[str | None] = mapped_column(String(64), nullable=True)
