"""What every router of the board app shares: the board, the templates, who is asking,
CSRF-checked forms, error pages and the submission form's parts.

A router gets the :class:`dsr.board.service.Board` with ``board: BoardDep`` (the
app holds it in ``app.state.board``); pages are rendered with :func:`page` (the web
core's :class:`dsr.web.pages.Pages`), which adds the CSRF token and the logged-in team
to every template. Sign-in and CSRF are the web core's (:data:`SIGNIN`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.datastructures import FormData

from dsr.board.models import Member, Phase, Team, WebSession, stamp
from dsr.board.service import Board, Metadata, Refused, quota_text
from dsr.db.engine import read_session, write_session
from dsr.web.pages import Pages, Site
from dsr.web.signin import SignIn

_T = TypeVar("_T")

HERE = Path(__file__).resolve().parents[1]
#: the browser's sign-in: session cookie ``dsr_session``, the logged-out forms' nonce ``dsr_csrf``
SIGNIN = SignIn(
    app="board", cookie="dsr_session", csrf_cookie="dsr_csrf", table=WebSession, read=read_session, write=write_session
)


async def get_board(request: Request) -> Board:
    """The app's board (a coroutine: FastAPI would run a plain function in a thread)."""
    return request.app.state.board


BoardDep = Annotated[Board, Depends(get_board)]


def web_session(board: Board, request: Request) -> WebSession | None:
    """The browser session of the session cookie, if it is valid and not expired."""
    row = SIGNIN.session(board.engine, request)
    if row is None or not board.members.member_active(row.member_id):
        return None  # expired, or its member was removed or got a new token
    return row


def web_team(board: Board, request: Request) -> Team | None:
    """The team of the browser session, if there is a valid one."""
    row = web_session(board, request)
    if row is None:
        return None
    with read_session(board.engine) as s:
        return s.get(Team, row.team_id)


PAGES = Pages(
    HERE / "templates",
    Site("dsr leaderboard", "/", "/login", "/logout", "base.html", back="Back to the boards"),
    SIGNIN,
    "team",
    lambda request: web_team(request.app.state.board, request),
)
PAGES.filters["num"] = lambda v, d=4: "–" if v is None else f"{v:.{d}f}"
PAGES.filters["length_of_json"] = lambda text: len(json.loads(text))
PAGES.filters["stamp"] = stamp
PAGES.filters["quota_text"] = quota_text


def bearer_identity(board: Board, request: Request) -> tuple[Team, Member] | None:
    """The team and member of an ``Authorization: Bearer TOKEN`` header (None for a wrong,
    rotated or revoked token)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return board.members.identify(token.strip())


def bearer_team(board: Board, request: Request) -> Team | None:
    """The team of an ``Authorization: Bearer TOKEN`` header."""
    found = bearer_identity(board, request)
    return None if found is None else found[0]


def unauthorized(message: str = "missing or wrong token") -> JSONResponse:
    return JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": 'Bearer realm="dsr"'})


def page(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
    """Render template ``name`` with the CSRF token and the logged-in team (``context['team']``
    when the caller knows it already)."""
    return PAGES.render(request, name, context, status)


async def checked_form(request: Request) -> FormData | None:
    """The posted form when its CSRF field is the session's token, or logged out one made for
    this browser; else None."""
    return await SIGNIN.checked_form(request)


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return PAGES.problem(request, status, message)


def find_phase(board: Board, collection: str, phase: str) -> Phase | None:
    for p in board.phases.all():
        if p.collection == collection and p.name == phase:
            return p
    return None


async def read_upload(form: FormData) -> tuple[bytes, str, Metadata, bytes | None]:
    """The run file, its name, the metadata and the sidecar of a submission form (web or API)."""
    upload = form.get("run")
    if upload is None or isinstance(upload, str):
        raise Refused(422, "no run file (field 'run')")
    data = await upload.read()
    sidecar = form.get("sidecar")
    side = await sidecar.read() if sidecar is not None and not isinstance(sidecar, str) else None
    meta = Metadata(
        str(form.get("system") or ""),
        str(form.get("description") or ""),
        str(form.get("link") or ""),
        str(form.get("run_type") or "automatic"),
        str(form.get("trained_on_collection") or "").lower() in ("1", "true", "yes", "on"),
    )
    return data, upload.filename or "run", meta, side or None


#: the threads of :func:`in_thread` beside a board's scoring workers (one each): a submission's
#: thread waits on the database and on a worker, but between the waits it runs Python under
#: the process's one GIL. 40 threads (anyio's limit for FastAPI's sync routes) under 20
#: clients each held a little work and handed the GIL round the lot, and more of them held a
#: PostgreSQL connection at once than the pool keeps (10), so overflow connections were opened
#: and closed all the time: p95 latency was higher on both databases than with 4 threads a
#: process of 2 scoring workers (bench/bench_board.py writes the figures)
SPARE_THREADS = 2


def submission_threads(board: Board) -> int:
    """Threads of an app's :func:`in_thread` pool: one for each scoring worker (its run waits
    on it) and :data:`SPARE_THREADS` for work that needs no worker (the rate limit, a replay,
    a refusal, scoring in the thread when a board has no workers)."""
    return max(0, board.config.workers) + SPARE_THREADS


async def in_thread(request: Request, function: Callable[..., _T], *args: Any) -> _T:
    """Database and CPU work of a request, off the event loop: in a thread of the app's own
    pool (:func:`submission_threads`; made at its first use, on the event loop), handed over
    by asyncio itself (``run_in_executor``: a third of the CPU of anyio's
    ``run_in_threadpool`` a hand-over, measured, which a submission makes twice)."""
    state = request.app.state
    pool = getattr(state, "threads", None)
    if pool is None:
        pool = state.threads = ThreadPoolExecutor(submission_threads(state.board), thread_name_prefix="dsr-request")
    return await asyncio.get_running_loop().run_in_executor(pool, partial(function, *args))
