"""What every router of the board app shares: the board, the templates, who is asking,
CSRF-checked forms, error pages and the submission form's parts.

A router gets the :class:`eval.board.service.Board` with ``board: BoardDep`` (the
app holds it in ``app.state.board``); pages are rendered with :func:`page`, which
adds the CSRF token and the logged-in team to every template.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import select

from eval.board.db import read_session
from eval.board.models import Phase, Team, WebSession, utcnow
from eval.board.service import Board, Metadata, Refused

HERE = Path(__file__).resolve().parents[1]
SESSION_COOKIE = "dsr_session"
CSRF_COOKIE = "dsr_csrf"
SESSION_DAYS = 7
CSRF_REFUSED = "the form's CSRF token is missing or wrong: reload the page"

templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["num"] = lambda v, d=4: "–" if v is None else f"{v:.{d}f}"
templates.env.filters["length_of_json"] = lambda text: len(json.loads(text))


def get_board(request: Request) -> Board:
    return request.app.state.board


BoardDep = Annotated[Board, Depends(get_board)]


def key_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def web_session(board: Board, request: Request) -> WebSession | None:
    """The browser session of the session cookie, if it is valid and not expired."""
    key = request.cookies.get(SESSION_COOKIE)
    if not key:
        return None
    with read_session(board.engine) as s:
        row = s.scalar(select(WebSession).where(WebSession.key_hash == key_hash(key)))
    if row is None or row.expires_at < utcnow() or not row.csrf:
        return None
    return row


def web_team(board: Board, request: Request) -> Team | None:
    """The team of the browser session, if there is a valid one."""
    row = web_session(board, request)
    if row is None:
        return None
    with read_session(board.engine) as s:
        return s.get(Team, row.team_id)


def bearer_team(board: Board, request: Request) -> Team | None:
    """The team of an ``Authorization: Bearer TOKEN`` header."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return board.team_for_token(token.strip())


def unauthorized(message: str = "missing or wrong token") -> JSONResponse:
    return JSONResponse({"error": message}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="dsr"'})


def expected_csrf(request: Request) -> str | None:
    """The CSRF token a form must carry: the logged-in session's own (a token of another
    session does not pass), or before logging in the double-submit cookie's."""
    session = web_session(get_board(request), request)
    return session.csrf if session is not None else request.cookies.get(CSRF_COOKIE)


def page(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
    """Render template ``name`` with the CSRF token and the logged-in team (``context['team']``
    when the caller knows it already)."""
    expected = expected_csrf(request)
    token = expected or secrets.token_urlsafe(32)
    team = context.pop("team", None) or web_team(get_board(request), request)
    response = templates.TemplateResponse(request, name, {**context, "csrf": token, "team": team},
                                          status_code=status)
    if expected is None:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
    return response


async def checked_form(request: Request):
    """The posted form when its CSRF field is the expected token (:func:`expected_csrf`), else None."""
    form = await request.form()
    expected = expected_csrf(request) or ""
    sent = form.get("csrf") or ""
    if not expected or not isinstance(sent, str) or not hmac.compare_digest(expected, sent):
        return None
    return form


def error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return page(request, "error.html", {"status": status, "message": message}, status)


def find_phase(board: Board, collection: str, phase: str) -> Phase | None:
    for p in board.phases():
        if p.collection == collection and p.name == phase:
            return p
    return None


async def read_upload(form) -> tuple[bytes, str, Metadata, bytes | None]:
    """The run file, its name, the metadata and the sidecar of a submission form (web or API)."""
    upload = form.get("run")
    if upload is None or isinstance(upload, str):
        raise Refused(422, "no run file (field 'run')")
    data = await upload.read()
    sidecar = form.get("sidecar")
    side = await sidecar.read() if sidecar is not None and not isinstance(sidecar, str) else None
    meta = Metadata(str(form.get("system") or ""), str(form.get("description") or ""),
                    str(form.get("link") or ""), str(form.get("run_type") or "automatic"),
                    str(form.get("trained_on_collection") or "").lower() in ("1", "true", "yes", "on"))
    return data, upload.filename or "run", meta, side or None


async def in_thread(function, *args):
    """Validation and scoring are CPU work: keep them off the event loop."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args)
