"""The board's settings, declared once as :class:`~dsr.core.params.Param`\\ s: the
command line's flags (``--db``, ``--max-upload-mb``, ``--opens``...), defaults, help and
checks all come from here, and so do the records the library takes
(:class:`BoardSettings`, :class:`SeasonSettings`; :class:`dsr.board.service.BoardConfig`
and :class:`dsr.board.phases.Season` add what they do), made by keyword and checked when
made. This module imports nothing heavy (``dsr --help`` reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dsr.core.params import Param, Settings, setting


@dataclass(frozen=True, kw_only=True)
class BoardPlace(Settings):
    """Where a board lives (every board command takes it)."""

    WHAT = "the board"

    db: str | None = setting(
        None,
        "database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB (default: SQLite under $DSR_HOME/board/)",
        metavar="URL",
    )
    store: Any = setting(None, "run store (default $DSR_HOME/board/runs)", metavar="DIR")


BOARD_PARAMS = BoardPlace.params()


#: what a submission says of itself (``dsr.board.client.submit``; ``dsr submit`` flags); the
#: server checks them again (``dsr.board.intake``) for any client
RUN_TYPES = ("automatic", "manual")
SUBMIT_PARAMS = (
    Param("description", "", "str", "what the system does"),
    Param("link", "", "str", "paper or code link", metavar="URL"),
    Param("run_type", "automatic", "str", "automatic or manual", choices=RUN_TYPES),
)

#: which runs a leaderboard lists (``dsr board export``, ``dsr.board.admin.export``; checked by
#: ``dsr.board.leaderboard.build``, whose own default, the web page's, is best)
SELECTIONS = ("all", "best", "latest")
SELECT = Param("select", "all", "str", "every run, or each team's best or latest (default all)", choices=SELECTIONS)

#: a new team's first member (``Board.add_team``), a member's contact (``Board.add_member``) and a
#: phase's description (``Board.add_phase``)
MEMBER = Param("member", "lead", "str", "the first member's name (default lead)", metavar="WHO")
EMAIL = Param("email", "", "str", "a contact address (kept for organisers, never served)")
PHASE_DESCRIPTION = Param("description", "", "str", "shown on the board")

#: where ``dsr serve`` listens (``dsr.server.serve`` and ``serve_processes`` check them)
LISTEN_PARAMS = (
    Param("host", "127.0.0.1", "str", "address to listen on (default 127.0.0.1)"),
    Param("port", 8000, "int", "port (default 8000)", low=0, high=65535),
)


@dataclass(frozen=True, kw_only=True)
class ServeSettings(Settings):
    """What ``dsr serve`` accepts."""

    WHAT = "the board"

    max_upload_mb: float | None = setting(
        None,
        "largest run file accepted, unpacked (default: each phase's follows its collection: "
        "twice its full-depth run, at least 20)",
        above=0,
        metavar="MB",
    )
    rate_limit: float = setting(30.0, "submissions per minute per team (default 30; 0 for no limit)", low=0, metavar="N")
    workers: int = setting(
        0,
        "scoring worker processes of each server process (dsr serve: default the cores "
        "shared among the server processes, at least 1, at most 4 each; 0 scores in the "
        "request's thread, as the library does)",
        low=0,
        metavar="N",
    )
    score_timeout: float = setting(
        60.0,
        "seconds a scoring worker may spend on one run: past them the run is refused (422) "
        "and the worker replaced (default 60; with --workers 0 runs are scored in the request's "
        "thread, without this bound)",
        above=0,
        metavar="S",
    )
    processes: int = setting(
        1,
        "server processes answering on the port (PostgreSQL only; each has its own scoring workers; default 1)",
        low=1,
        metavar="N",
    )


SERVE_PARAMS = ServeSettings.params()


@dataclass(frozen=True, kw_only=True)
class BoardSettings(ServeSettings, BoardPlace):
    """A board's database and run store, and what its server accepts."""


@dataclass(frozen=True, kw_only=True)
class SeasonSettings(Settings):
    """A phase's season (``add-phase``, ``set-phase``); None leaves it as it is, or the default
    (``opens`` and ``closes``: naive UTC datetimes)."""

    WHAT = "a phase's season"

    primary: str | None = setting(
        None,
        "the measure the board ranks by, groups and gives intervals for (default nDCG@5 when the phase has it, else its first)",
        metavar="M",
    )
    opens: Any = setting(None, "submissions taken from then (ISO date or time, UTC)", metavar="WHEN")
    closes: Any = setting(None, "no submission from then on (ISO date or time, UTC)", metavar="WHEN")
    final: bool | None = setting(None, "the final phase: no score is shown anywhere until `dsr board freeze`")


SEASON_PARAMS = SeasonSettings.params()
