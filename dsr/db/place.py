"""Where the database both applications share lives, light to import (no SQLAlchemy until a
check needs it): ``$DSR_HOME/board/board.sqlite`` unless a URL is given, and the check that
an SQLite file's folder can be written before anything is opened."""

from __future__ import annotations

from pathlib import Path

from dsr.core.home import dsr_home, require_writable


def board_home() -> Path:
    """``$DSR_HOME/board``: the embedded database and the board's run store."""
    return dsr_home() / "board"


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path)}"


def default_url() -> str:
    """The shared database when no URL is given: SQLite under ``$DSR_HOME/board``."""
    return sqlite_url(board_home() / "board.sqlite")


def check_sqlite_folder(url: str, given: bool) -> None:
    """An SQLite database's folder can be written, else an InputError naming it (a read-only
    DSR_HOME, a ``--db`` file on a read-only disk); ``given``: the URL was the user's."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # opening the database names a bad URL
        return
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        require_writable(
            Path(parsed.database).parent,
            "give --db a file in a writable folder" if given else "set DSR_HOME to a writable folder or give --db",
        )
