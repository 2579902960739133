"""The web site ``dsr serve`` runs: the leaderboard with the judging pages added.

The board (:mod:`dsr.board`) and judging (:mod:`dsr.judging`) are separate units: judging
sits on the board's database, the board knows nothing of judging, and both stand on the web
core (:mod:`dsr.web`: sessions, sign-in, CSRF, templates, static files, security headers). This module,
above both, puts them together in one ASGI app.
"""

from __future__ import annotations

import uvicorn

from dsr.board.app import create_app
from dsr.board.service import Board
from dsr.judging.routes import ROUTERS as JUDGING_ROUTERS
from dsr.judging.routes import STATIC as JUDGING_STATIC
from dsr.web.security import mount_static


def create_site(board: Board, routers=()):
    """The board's app with the judging pages (``/judge``, their assets under
    ``/judge/static``), then ``routers``."""
    app = create_app(board, routers=[*JUDGING_ROUTERS, *routers])
    mount_static(app, "/judge/static", JUDGING_STATIC)
    return app


def serve(board: Board, *, host: str, port: int) -> None:
    """Run the site until stopped (uvicorn, one process)."""
    uvicorn.run(create_site(board), host=host, port=port, log_level="warning")
