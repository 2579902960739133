"""The board's settings, declared once as :class:`~dsr.core.params.Param`\\ s: the
command line's flags (``--db``, ``--max-upload-mb``, ``--opens``...), defaults, help and
checks all come from here, and so do the records the library takes
(:class:`dsr.board.service.BoardConfig`, :class:`dsr.board.phases.Season`), made by
keyword and checked when made. This module imports nothing heavy (``dsr --help`` reads it).
"""

from __future__ import annotations

from dsr.core.params import Param

#: where a board lives (every board command takes them)
BOARD_PARAMS = (
    Param(
        "db",
        None,
        "str",
        metavar="URL",
        help="database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB (default: SQLite under $DSR_HOME/board/)",
    ),
    Param("store", None, "any", metavar="DIR", help="run store (default $DSR_HOME/board/runs)"),
)

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

#: what ``dsr serve`` accepts
SERVE_PARAMS = (
    Param(
        "max_upload_mb",
        None,
        "float",
        above=0,
        optional=True,
        metavar="MB",
        help="largest run file accepted, unpacked (default: each phase's follows its collection: "
        "twice its full-depth run, at least 20)",
    ),
    Param("rate_limit", 30.0, "float", low=0, metavar="N", help="submissions per minute per team (default 30; 0 for no limit)"),
    Param(
        "workers",
        0,
        "int",
        low=0,
        metavar="N",
        help="scoring worker processes of each server process (dsr serve: default the cores "
        "shared among the server processes, at least 1, at most 4 each; 0 scores in the "
        "request's thread, as the library does)",
    ),
    Param(
        "score_timeout",
        60.0,
        "float",
        above=0,
        metavar="S",
        help="seconds a scoring worker may spend on one run: past them the run is refused (422) "
        "and the worker replaced (default 60; with --workers 0 runs are scored in the request's "
        "thread, without this bound)",
    ),
    Param(
        "processes",
        1,
        "int",
        low=1,
        metavar="N",
        help="server processes answering on the port (PostgreSQL only; each has its own scoring workers; default 1)",
    ),
)

#: a phase's season (``add-phase``, ``set-phase``); None leaves it as it is, or the default
SEASON_PARAMS = (
    Param(
        "primary",
        None,
        "str",
        metavar="M",
        help="the measure the board ranks by, groups and gives "
        "intervals for (default nDCG@5 when the phase has it, else its first)",
    ),
    Param("opens", None, "any", metavar="WHEN", help="submissions taken from then (ISO date or time, UTC)"),
    Param("closes", None, "any", metavar="WHEN", help="no submission from then on (ISO date or time, UTC)"),
    Param("final", None, "bool", optional=True, help="the final phase: no score is shown anywhere until `dsr board freeze`"),
)
