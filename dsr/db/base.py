"""The declarative base of every table (the board's and judging's: one metadata, one Alembic
chain), the time the tables store, and the columns every application's login table has."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def utcnow() -> datetime:
    """UTC now without tzinfo: times are stored naive UTC (SQLite keeps no time zone)."""
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass


class BrowserSession:
    """The columns of a browser login's table (a mixin: the board's ``web_sessions`` and
    judging's ``judge_web_sessions`` add whose session it is). The cookie holds a random key,
    the table its sha256 (:class:`dsr.web.signin.SignIn` reads and writes these columns)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime)
