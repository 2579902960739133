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
import re
import shutil
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DatabaseError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.orm import Session

from dsr.core.atomic import disk_full, full_disk_error
from dsr.core.errors import InputError
from dsr.db.place import sqlite_url  # noqa: F401 (its home before dsr.db.place)

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


def shown_url(url: str) -> str:
    """``url`` as an error may print it: its password, if any, as ``***``."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # not a URL SQLAlchemy reads: hide what looks like a password anyway
        return re.sub(r"(://[^/:@]*:)[^/]*@", r"\1***@", url)


def make_engine(url: str) -> Engine:
    """An engine for ``url`` (``sqlite:///FILE`` or ``postgresql://...``), schema not touched."""
    try:
        parsed = make_url(url)
    except Exception as err:
        raise InputError(f"not a database URL: {shown_url(url)!r} ({err})", field="url") from None
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database:
            raise InputError(f"{shown_url(url)!r} names no database file: give sqlite:///FILE", field="url")
        if parsed.database != ":memory:":
            folder = Path(parsed.database).parent
            if folder.exists() and not folder.is_dir():
                raise InputError(f"{shown_url(url)}: {folder} is not a folder", field="url")
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise InputError(
                    f"{shown_url(url)}: cannot make its folder {folder} ({err.strerror or err})", field="url"
                ) from None
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


def open_database(url: str, revision: str = "head") -> Engine:
    """An engine for ``url`` with its schema migrated (:func:`migrate`): what every command and
    ``dsr serve`` opens. A database that cannot be opened or written (a folder or another kind
    of file, a server that does not answer, a full disk) is an InputError naming the URL
    without its password (:func:`database_error`)."""
    engine = make_engine(url)
    try:
        with engine.connect():
            pass
        migrate(engine, revision)
    except Exception as err:
        found = database_error(err, url)
        engine.dispose()
        if found is None:
            raise
        raise found from None
    return engine


#: SQLite's words for a database it cannot use, and what to tell the user
_SQLITE_SAYS = (
    ("file is not a database", "is not an SQLite database (another kind of file?): give --db a database file or a new name"),
    ("database disk image is malformed", "is damaged (SQLite: the database disk image is malformed); restore it from a copy"),
    ("attempt to write a readonly database", "cannot be written (read-only): give --db a file in a writable folder"),
    ("database is locked", "is locked by another process (waited 60 s): try again when it is done"),
)


def database_error(err: BaseException, url: str) -> InputError | None:
    """What to tell the user of ``err``, met opening or writing the database at ``url`` (an
    InputError naming the URL without its password, or a full disk's error), or None when it
    is not the database's state or reachability (a bug: it goes on as it is)."""
    if not isinstance(err, (DatabaseError, InterfaceError, OperationalError)):
        return None
    where = shown_url(url)
    reason = str(getattr(err, "orig", None) or err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    try:
        parsed = make_url(url)
    except Exception:
        return InputError(f"cannot open the database {where!r}: {reason}", field="url")
    if parsed.get_backend_name() != "sqlite":
        return InputError(
            f"cannot use the PostgreSQL database {where}: {reason} (is the server running and is the URL right?)", field="url"
        )
    path = Path(parsed.database or "")
    if disk_full(err) or ("disk I/O error" in reason and _nearly_full(path)):
        return full_disk_error(where, err if disk_full(err) else OSError(28, "No space left on device"))
    if path.is_dir():
        return InputError(f"{where}: {path} is a folder, not an SQLite database file", field="url")
    for says, told in _SQLITE_SAYS:
        if says in reason:
            return InputError(f"{where}: {path} {told}", field="url")
    return InputError(f"cannot open the SQLite database {where} ({path}): {reason}", field="url")


def _nearly_full(path: Path) -> bool:
    """Whether the disk under ``path`` has less than a megabyte free (SQLite says "disk I/O
    error", not "full", when it cannot grow its write-ahead log's index on a full disk)."""
    folder = path if path.is_dir() else path.parent
    try:
        return shutil.disk_usage(folder).free < 2**20
    except OSError:
        return False


def _sqlite_events(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Transactions are begun below (pysqlite's own BEGIN cannot be IMMEDIATE).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
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
    def _checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
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


def _write_lock(engine: Engine) -> Any:
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


R = TypeVar("R")


def get_row(s: Session, model: type[R], key: Any) -> R:
    """The row of ``model`` at ``key`` that the caller knows is there (it read or wrote it in
    this transaction, or holds its foreign key): a LookupError naming it if it is not."""
    row = s.get(model, key)
    if row is None:
        raise LookupError(f"no {model.__name__} row {key!r}")
    return row
