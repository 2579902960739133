"""The web site ``dsr serve`` runs: the leaderboard with the judging pages added.

The board (:mod:`dsr.board`) and judging (:mod:`dsr.judging`) are separate units: judging
sits on the board's database, the board knows nothing of judging, and both stand on the web
core (:mod:`dsr.web`: sessions, sign-in, CSRF, templates, static files, security headers). This module,
above both, puts them together in one ASGI app.

``dsr serve --processes N`` runs N such apps, one per process, on one port: uvicorn's own
supervisor (``uvicorn.run(..., workers=N)``) binds the socket, starts the processes, and
starts a new one when one dies. Each process builds its own :class:`Board` from the same
settings (:func:`site_from_environment`): its database connections, its scoring workers, its
warm-up, its judging pages. What they must agree on (quotas, the rate limit, idempotency
keys, the ladder, the caches' versions) is in the database (docs/board.md, "Several
processes").
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
from collections.abc import AsyncIterator, Sequence
from typing import Any

import uvicorn

from dsr.board.app import create_app
from dsr.board.service import Board, BoardConfig
from dsr.board.settings import LISTEN_PARAMS
from dsr.core.params import resolve
from dsr.judging.routes import ROUTERS as JUDGING_ROUTERS
from dsr.judging.routes import STATIC as JUDGING_STATIC
from dsr.web.security import mount_static

#: how ``dsr serve --processes N`` hands its settings to the processes it starts (JSON)
SETTINGS_ENV = "DSR_SERVE_SETTINGS"


def create_site(board: Board, routers: Sequence[Any] = ()) -> Any:
    """The board's app with the judging pages (``/judge``, their assets under
    ``/judge/static``), then ``routers``."""
    app = create_app(board, routers=[*JUDGING_ROUTERS, *routers])
    mount_static(app, "/judge/static", JUDGING_STATIC)
    return app


class _Stopped(Exception):
    """SIGTERM, raised in the main thread (:func:`serve`)."""


def _stopped(signum: int, frame: Any) -> None:
    raise _Stopped


def serve(board: Board, *, host: str, port: int) -> None:
    """Run the site until stopped (uvicorn, one process). SIGTERM (``kill``, ``systemctl
    stop``, ``docker stop``) returns here once uvicorn has shut down gracefully: after that
    uvicorn puts back the handler it found and sends itself the signal again, and with the
    default handler the process ended there, before the caller's ``finally`` (which closes
    the scoring workers) and Python's exit handlers (multiprocessing's, which remove the
    forkserver's ``pymp-*`` folder from TMPDIR: one was left at each stop)."""
    resolve({"host": host, "port": port}, LISTEN_PARAMS, "")
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        uvicorn.run(create_site(board), host=host, port=port, log_level="warning")
    except _Stopped:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def serve_processes(config: BoardConfig, *, host: str, port: int) -> None:
    """Run ``config.processes`` processes of the site on one port until stopped; each makes
    its own :class:`Board` from ``config`` (:func:`site_from_environment`)."""
    resolve({"host": host, "port": port}, LISTEN_PARAMS, "")
    settings = {k: (None if v is None else str(v) if k == "store" else v) for k, v in dataclasses.asdict(config).items()}
    os.environ[SETTINGS_ENV] = json.dumps(settings)
    uvicorn.run(
        "dsr.server:site_from_environment", factory=True, workers=config.processes, host=host, port=port, log_level="warning"
    )


def site_from_environment() -> Any:
    """One process of ``dsr serve --processes N``: a :class:`Board` from the settings its
    parent put in :data:`SETTINGS_ENV` (migrated already by the parent, whose checks it
    repeats), warmed up, with its scoring workers; closed when the process stops."""
    board = Board(BoardConfig(**json.loads(os.environ[SETTINGS_ENV])))
    board.warm_up()
    app = create_site(board)

    @contextlib.asynccontextmanager
    async def closing(_app: Any) -> AsyncIterator[None]:
        try:
            yield
        finally:
            board.close()
            # uvicorn's supervisor stops this process with SIGTERM; after this shutdown uvicorn
            # sends itself the signal again, with the default handler, which ended the process
            # before Python's exit handlers (multiprocessing's remove the scoring workers'
            # forkserver folder, pymp-* in TMPDIR). Held back, it is never delivered: the
            # process returns from uvicorn and exits with its exit handlers run (status 0).
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})

    app.router.lifespan_context = closing
    return app
