"""Engines, migrations and sessions for SQLite (embedded default) and PostgreSQL, for the board
and judging alike (one database).

SQLite runs in WAL mode with a busy timeout; a write transaction that checks a
quota starts with ``BEGIN IMMEDIATE`` (:func:`write_session`), so two checks
cannot both see the old count. On PostgreSQL the same transaction locks the
team's row (``SELECT ... FOR UPDATE``, see ``dsr.board.service``). The schema is created
and upgraded by the one Alembic chain shipped in ``dsr/migrations`` (:func:`migrate` runs it
by its folder: the chain's ``env.py`` reads both applications' tables, layers above this one).
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session

from dsr.core.errors import InputError

#: the Alembic chain (``dsr.migrations``: its own unit, above the board and judging, whose models
#: its env.py reads; run from here by its folder, never imported)
MIGRATIONS = Path(__file__).parents[1] / "migrations"
#: SQLite connections kept open: one per request thread of the server (anyio's default limit is
#: 40 threads). SQLAlchemy's default (5, and 10 more opened, with their PRAGMAs, and closed
#: again on demand) made 20 concurrent submissions open and close connections all the time
#: (the board's p95 under 20 clients, bench/bench_board.py). PostgreSQL keeps 10 (a larger pool
#: measured slower there: each backend's caches and prepared statements serve fewer requests)
POOL_SIZE = 40
#: more, opened on demand and closed when returned (a thread can hold two: a read inside the
#: write transaction)
POOL_OVERFLOW = 20


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path)}"


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (``sqlite:///FILE`` or ``postgresql://...``), schema not touched."""
    try:
        parsed = make_url(url)
    except Exception as err:
        raise InputError(f"not a database URL: {url!r} ({err})", field="url") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            parsed, connect_args={"timeout": 60, "check_same_thread": False}, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW
        )
        _sqlite_events(engine)
        return engine
    if backend == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3
        engine = create_engine(parsed, pool_size=10, max_overflow=20)
        _ping_when_idle(engine)
        return engine
    raise InputError(f"unsupported database {backend!r}: use sqlite:///FILE or postgresql://...", field="url")


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record):
        # Transactions are begun below (pysqlite's own BEGIN cannot be IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection):
        immediate = connection.get_execution_options().get("board_write")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


#: a PostgreSQL connection idle this long (seconds) is tested before use
PING_AFTER_S = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Test a pooled connection before use when it sat idle for :data:`PING_AFTER_S` or more
    (a database restarted meanwhile: a fresh connection instead of an error), SQLAlchemy's
    pessimistic disconnect handling with a checkout event. ``pool_pre_ping`` tested it at
    every checkout: a ``SELECT 1`` round trip in each of a submission's three sessions. A
    connection in steady use is not tested; one that breaks in use invalidates the pool, whose
    older connections are then replaced."""

    @event.listens_for(engine, "checkin")
    def _checkin(_dbapi_connection, record):
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection, record, _proxy):
        if time.monotonic() - record.info.get("idle_since", float("-inf")) < PING_AFTER_S:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as err:  # the pool connects anew (three tries)
            raise DisconnectionError() from err


#: the PostgreSQL advisory lock that lets one process at a time migrate (any number, any host)
MIGRATION_LOCK = 0x647372_0007


def _alembic() -> ModuleType:
    """alembic with the parts used here, imported on first use in this one place."""
    import alembic.command
    import alembic.config
    import alembic.script

    return alembic


def migrate(engine: Engine, revision: str = "head") -> None:
    """Create or upgrade the schema to the newest migration (idempotent), or to ``revision``
    (an older board's schema, for the upgrade tests). On PostgreSQL the upgrade holds an
    advisory lock in its transaction: the processes of ``dsr serve --processes N`` (or several
    servers) starting together migrate one after the other, and the later ones find the schema
    up to date."""
    alembic = _alembic()
    config = alembic.config.Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        config.attributes["connection"] = connection
        alembic.command.upgrade(config, revision)


def revisions() -> list[str]:
    """The chain's revision ids, the first (``0001``) to the head, in order."""
    chain = _alembic().script.ScriptDirectory(str(MIGRATIONS)).walk_revisions()  # head first
    return [script.revision for script in reversed(list(chain))]


_READERS: weakref.WeakKeyDictionary[Engine, Engine] = weakref.WeakKeyDictionary()


def _reader(engine: Engine) -> Engine:
    """What a read session runs on: on PostgreSQL, connections in autocommit (each read is one
    statement or a few independent ones: no BEGIN and ROLLBACK round trips around them, two of
    the four a short read cost); SQLite's reads stay in a transaction (in-process: free)."""
    reader = _READERS.get(engine)
    if reader is None:
        reader = engine.execution_options(isolation_level="AUTOCOMMIT") if engine.dialect.name == "postgresql" else engine
        _READERS[engine] = reader
    return reader


@contextlib.contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A session for reading (nothing to flush: no autoflush before each query)."""
    with Session(_reader(engine), expire_on_commit=False, autoflush=False) as session:
        yield session


_WRITE_LOCKS: weakref.WeakKeyDictionary[Engine, threading.Lock] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """A session whose transaction holds SQLite's write lock from its start; commits on success.

    On SQLite the server's threads also queue on a lock first: SQLite's own
    busy handler polls with growing sleeps, which under 20 concurrent writers
    put seconds into the slowest requests. Other processes (admin commands)
    still meet ``BEGIN IMMEDIATE`` and the busy timeout.
    """
    with _write_lock(engine):
        with Session(engine, expire_on_commit=False) as session:
            with session.begin():
                # the option SQLite's "begin" event reads (BEGIN IMMEDIATE), on this session's
                # connection: an engine copy with it, made every transaction or kept in a map
                # that then held the engine alive, is not needed
                session.connection(execution_options={"board_write": True})
                yield session


def _write_lock(engine: Engine):
    """The lock this process's writers to an SQLite database queue on (none for PostgreSQL)."""
    if engine.dialect.name != "sqlite":
        return contextlib.nullcontext()
    return _WRITE_LOCKS.setdefault(engine, threading.Lock())


@contextlib.contextmanager
def write_connection(engine: Engine) -> Iterator[Connection]:
    """:func:`write_session`'s transaction (the same lock, ``BEGIN IMMEDIATE`` on SQLite, a
    commit on success) on a Core connection, without an ORM session: for a hot path that runs
    SQL statements only (a grade: ``dsr.judging.campaigns``)."""
    with _write_lock(engine):
        with engine.connect() as connection:
            connection.execution_options(board_write=True)
            with connection.begin():
                yield connection
