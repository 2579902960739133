"""Logging in and out of the browser pages (a member's token opens a server-side session; the
login form's CSRF token is bound to the browser, ``deps.login_csrf``)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import delete

from dsr.board.db import write_session
from dsr.board.models import WebSession, utcnow
from dsr.board.routes.deps import (
    CSRF_REFUSED,
    SESSION_COOKIE,
    SESSION_DAYS,
    BoardDep,
    checked_form,
    error_page,
    key_hash,
    page,
)

router = APIRouter()


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request):
    return page(request, "login.html", {})


@router.post("/login")
async def login(request: Request, board: BoardDep):
    form = await checked_form(request)
    if form is None:
        return error_page(request, 403, CSRF_REFUSED)
    found = board.identify(str(form.get("token") or "").strip())
    if found is None:
        return page(request, "login.html", {"error": "wrong token"}, 401)
    team, member = found
    key = secrets.token_urlsafe(32)
    with write_session(board.engine) as s:
        s.execute(delete(WebSession).where(WebSession.expires_at < utcnow()))
        s.add(WebSession(key_hash=key_hash(key), team_id=team.id, member_id=member.id,
                         csrf=secrets.token_urlsafe(32),
                         expires_at=utcnow() + timedelta(days=SESSION_DAYS)))
    response = RedirectResponse("/submit", status_code=303)
    response.set_cookie(SESSION_COOKIE, key, httponly=True, samesite="lax",
                        max_age=SESSION_DAYS * 86400, secure=request.url.scheme == "https")
    return response


@router.post("/logout")
async def logout(request: Request, board: BoardDep):
    form = await checked_form(request)
    if form is None:
        return error_page(request, 403, CSRF_REFUSED)
    key = request.cookies.get(SESSION_COOKIE)
    if key:
        with write_session(board.engine) as s:
            s.execute(delete(WebSession).where(WebSession.key_hash == key_hash(key)))
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response
