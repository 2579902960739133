"""What every router of the board app shares: the board, the templates, who is asking,
CSRF-checked forms, error pages and the submission form's parts.

A router gets the :class:`dsr.board.service.Board` with ``board: BoardDep`` (the
app holds it in ``app.state.board``); pages are rendered with :func:`page`, which
adds the CSRF token and the logged-in team to every template.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from pathlib import Path
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import select

from dsr.board.db import read_session
from dsr.board.models import Member, Phase, Team, WebSession, stamp, utcnow
from dsr.board.service import Board, Metadata, Refused, quota_text

HERE = Path(__file__).resolve().parents[1]
SESSION_COOKIE = "dsr_session"
CSRF_COOKIE = "dsr_csrf"
SESSION_DAYS = 7
#: how long a login form's CSRF token is good for (seconds)
LOGIN_FORM_SECONDS = 86400
CSRF_REFUSED = "the form's CSRF token is missing or wrong: reload the page"

templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["num"] = lambda v, d=4: "–" if v is None else f"{v:.{d}f}"
templates.env.filters["length_of_json"] = lambda text: len(json.loads(text))
templates.env.filters["stamp"] = stamp


templates.env.filters["quota_text"] = quota_text


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
    if row is None or row.expires_at < utcnow() or not row.csrf or not board.member_active(row.member_id):
        return None          # expired, or its member was removed or got a new token
    return row


def web_team(board: Board, request: Request) -> Team | None:
    """The team of the browser session, if there is a valid one."""
    row = web_session(board, request)
    if row is None:
        return None
    with read_session(board.engine) as s:
        return s.get(Team, row.team_id)


def bearer_identity(board: Board, request: Request) -> tuple[Team, Member] | None:
    """The team and member of an ``Authorization: Bearer TOKEN`` header (None for a wrong,
    rotated or revoked token)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return board.identify(token.strip())


def bearer_team(board: Board, request: Request) -> Team | None:
    """The team of an ``Authorization: Bearer TOKEN`` header."""
    found = bearer_identity(board, request)
    return None if found is None else found[0]


def unauthorized(message: str = "missing or wrong token") -> JSONResponse:
    return JSONResponse({"error": message}, status_code=401,
                        headers={"WWW-Authenticate": 'Bearer realm="dsr"'})


def login_csrf(board: Board, nonce: str, issued: int) -> str:
    """A logged-out form's CSRF token: ``ISSUED.HMAC(board secret, browser nonce, ISSUED)``. It is
    bound to the browser's ``dsr_csrf`` cookie (a random nonce): a token made for another
    browser's cookie, or a cookie and field chosen by an attacker, does not pass."""
    mac = hmac.new(board.login_secret(), f"{nonce}|{issued}".encode(), hashlib.sha256).hexdigest()
    return f"{issued}.{mac}"


def login_csrf_ok(board: Board, nonce: str | None, sent: str) -> bool:
    """Whether ``sent`` is a login token made for this browser's nonce in the last day."""
    issued, _, _mac = sent.partition(".")
    if not nonce or not issued.isdigit() or not 0 <= time.time() - int(issued) <= LOGIN_FORM_SECONDS:
        return False
    return hmac.compare_digest(login_csrf(board, nonce, int(issued)), sent)


def expected_csrf(request: Request) -> str | None:
    """The CSRF token of a logged-in session (a token of another session does not pass), None
    when logged out."""
    session = web_session(get_board(request), request)
    return None if session is None else session.csrf


def page(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
    """Render template ``name`` with the CSRF token and the logged-in team (``context['team']``
    when the caller knows it already)."""
    board = get_board(request)
    token = expected_csrf(request)
    nonce = None
    if token is None:     # logged out: a token bound to this browser's nonce (made now if none)
        nonce = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        token = login_csrf(board, nonce, int(time.time()))
    team = context.pop("team", None) or web_team(board, request)
    response = templates.TemplateResponse(request, name, {**context, "csrf": token, "team": team},
                                          status_code=status)
    if nonce is not None and nonce != request.cookies.get(CSRF_COOKIE):
        response.set_cookie(CSRF_COOKIE, nonce, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
    return response


async def checked_form(request: Request):
    """The posted form when its CSRF field is the session's token, or logged out one made for
    this browser (:func:`login_csrf`); else None."""
    form = await request.form()
    sent = form.get("csrf") or ""
    if not isinstance(sent, str) or not sent:
        return None
    expected = expected_csrf(request)
    if expected is not None:
        return form if hmac.compare_digest(expected, sent) else None
    return form if login_csrf_ok(get_board(request), request.cookies.get(CSRF_COOKIE), sent) else None


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
