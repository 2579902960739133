"""The board's tables, on the shared :class:`dsr.db.base.Base`. Schema changes go through the
Alembic chain (``dsr/migrations``).

Times are naive UTC datetimes (SQLite keeps no time zone). Per-topic values
are stored as float64 bytes (topics x measures of the phase, exact); hidden
labels as JSON text on their phase. Neither is ever served for a hidden phase.
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import Boolean, DateTime, Float, ForeignKey, Index, Integer, LargeBinary, String, Text, UniqueConstraint
from sqlalchemy import false as sa_false
from sqlalchemy.orm import Mapped, mapped_column, relationship

from dsr.db.base import Base, BrowserSession, utcnow

#: a phase's primary measure unless it names one (the mission names MRR and nDCG)
PRIMARY_DEFAULT = "nDCG@5"


def stamp(when: datetime) -> str:
    """A naive UTC time as the board writes it: ``2026-03-01 12:00 UTC``."""
    return when.strftime("%Y-%m-%d %H:%M UTC")


def iso(when: datetime | None) -> str | None:
    """A naive UTC time as the API writes it (``2026-03-01T12:00:00Z``), None for None."""
    return None if when is None else when.isoformat() + "Z"


class Team(Base):
    """A participant (or the organisers' baselines team). Its members authenticate, each with a
    token of their own (:class:`Member`); ``token_hash`` is retired since migration 0005 (the
    hash of a discarded random secret: no token matches it)."""

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
    collection: Mapped[str] = mapped_column(String(100))  # display name (URL part)
    name: Mapped[str] = mapped_column(String(100))
    collection_ref: Mapped[str] = mapped_column(String(1000))  # what load_collection gets
    collection_hash: Mapped[str] = mapped_column(String(64))
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    description: Mapped[str] = mapped_column(Text, default="")
    #: hidden phases: {topic: {doc: grade}} (never served); public: null (the collection's labels)
    labels_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    topics_json: Mapped[str] = mapped_column(Text)  # topic ids in order
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
    #: the measure the board ranks, groups and gives intervals for (null: :func:`primary`'s default)
    primary_measure: Mapped[str | None] = mapped_column(String(100), nullable=True)
    #: submissions are taken from ``opens_at`` (inclusive) to ``closes_at`` (exclusive); null: no bound
    opens_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    closes_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    #: a final phase shows no score anywhere until it is frozen
    final: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    #: a frozen board takes no submission; freezing publishes a final phase's results
    frozen_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)
    #: raised whenever the phase's stored scores change (``dsr board rebuild``): every server
    #: process keys its caches of per-topic values and ladders by it (migration 0007)
    scores_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: hidden phases: {subset in the collection file: the name shown} (null: the file's own);
    #: a subset derived from a withheld field gets a neutral name (migration 0008)
    groups_json: Mapped[str | None] = mapped_column(Text, nullable=True)

    def primary(self) -> str:
        """The phase's primary measure: its own, else nDCG@5 when it has it, else its first."""
        measures = json.loads(self.measures_json)
        if self.primary_measure is not None and self.primary_measure in measures:
            return self.primary_measure
        return PRIMARY_DEFAULT if PRIMARY_DEFAULT in measures else measures[0]

    @property
    def scores_shown(self) -> bool:
        """Whether scores are published: always, but a final phase's only once frozen."""
        return not self.final or self.frozen_at is not None

    def closed_reason(self, now: datetime) -> str | None:
        """Why the phase takes no submission at ``now`` (naive UTC), or None when it is open."""
        if self.frozen_at is not None:
            return f"this board was frozen on {stamp(self.frozen_at)}: it takes no more submissions"
        if self.opens_at is not None and now < self.opens_at:
            return f"this phase opens on {stamp(self.opens_at)}: submissions are taken from then"
        if self.closes_at is not None and now >= self.closes_at:
            return f"this phase closed on {stamp(self.closes_at)}: it takes no more submissions"
        return None


class Submission(Base):
    """An accepted run (invalid and refused runs are never stored)."""

    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_phase_team_time", "phase_id", "team_id", "created_at"),
        # the same ranking once per team and board (a duplicate is refused, 409)
        Index("uq_submission_team_ranking", "phase_id", "team_id", "ranking_sha256", unique=True),
        # a retried request (same Idempotency-Key) is answered, not stored again
        Index("uq_submission_team_key", "team_id", "idempotency_key", unique=True),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    phase_id: Mapped[int] = mapped_column(ForeignKey("phases.id"))
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    system: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    link: Mapped[str] = mapped_column(String(500), default="")
    run_type: Mapped[str] = mapped_column(String(20))  # automatic / manual
    trained_on_collection: Mapped[bool] = mapped_column(Boolean, default=False)
    baseline: Mapped[bool] = mapped_column(Boolean, default=False)
    filename: Mapped[str] = mapped_column(String(200), default="")
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    size: Mapped[int] = mapped_column(Integer)
    lines: Mapped[int] = mapped_column(Integer)
    #: the published metadata taken from the sidecar (``dsr.board.published``: an
    #: allow-list); nothing else of a sidecar is kept
    sidecar_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    means_json: Mapped[str] = mapped_column(Text)  # {subset: {measure: mean}}
    # float64 (topics x measures); loaded only when asked for (boards read it through
    # Board.matrix, which caches it: a row never changes once written)
    per_topic: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    #: topics whose scores tie as float32 (scored as trec_eval orders them)
    tied_topics: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: the client's ``Idempotency-Key`` and the answer it got, returned again on a retry
    idempotency_key: Mapped[str | None] = mapped_column(String(200), nullable=True)
    answer_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    #: the member whose token submitted the run (null: a baseline, or a row of before 0005)
    member_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    #: the digest of the whole request (``intake.request_digest``): a key replayed with
    #: another field is refused
    request_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: the digest of the parsed ranking (``intake.ranking_digest``): once per team and board
    ranking_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)

    team: Mapped[Team] = relationship(lazy="joined")
    phase: Mapped[Phase] = relationship(lazy="joined")


class Member(Base):
    """A person on a team (``dsr board add-member``): a name, optionally an e-mail address
    (for the organisers, never served) and a token of their own, stored hashed. A removed
    member keeps its row (its submissions name it) but not its token."""

    __tablename__ = "team_members"
    __table_args__ = (UniqueConstraint("team_id", "name", name="uq_member_team_name"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    name: Mapped[str] = mapped_column(String(200))
    email: Mapped[str] = mapped_column(String(300), default="")
    added_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    token_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    removed_at: Mapped[datetime | None] = mapped_column(DateTime, nullable=True)


Index("uq_member_token_hash", Member.token_hash, unique=True)


class TeamRate(Base):
    """A team's rate limit (``dsr serve --rate-limit``), shared by every server process: the
    generic cell rate algorithm's theoretical arrival time, ``next_at`` (seconds since the
    epoch), of the team's next request (:class:`dsr.board.service.RateLimiter`)."""

    __tablename__ = "team_rates"
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"), primary_key=True)
    next_at: Mapped[float] = mapped_column(Float)


class Setting(Base):
    """A board-wide value (``login_secret``: what binds a login form to its browser)."""

    __tablename__ = "board_settings"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class WebSession(BrowserSession, Base):
    """A member's browser login (:class:`~dsr.db.base.BrowserSession`'s columns, and whose)."""

    __tablename__ = "web_sessions"
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id"))
    #: unused since the web core (dsr.web.csrf) signs tokens bound to the session's key; kept
    #: so that the schema needs no migration
    csrf: Mapped[str | None] = mapped_column(String(64), nullable=True)
    #: the member logged in (removing the member or rotating its token ends the session)
    member_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
