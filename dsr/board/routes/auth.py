"""Logging in and out of the browser pages (a member's token opens a server-side session;
:mod:`dsr.web.signin` does the sessions and the CSRF check)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dsr.board.routes.deps import PAGES, SIGNIN, BoardDep, error_page
from dsr.web.signin import CSRF_REFUSED

router = APIRouter()


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> HTMLResponse:
    return PAGES.signin_form(request)


@router.post("/login")
async def login(request: Request, board: BoardDep) -> Response:
    form = await SIGNIN.checked_form(request)
    if form is None:
        return error_page(request, 403, CSRF_REFUSED)
    found = board.members.identify(str(form.get("token") or "").strip())
    if found is None:
        return PAGES.signin_form(request, "wrong token")
    team, member = found
    return SIGNIN.start(board.engine, request, "/submit", team_id=team.id, member_id=member.id)


@router.post("/logout")
async def logout(request: Request, board: BoardDep) -> Response:
    if await SIGNIN.checked_form(request) is None:
        return error_page(request, 403, CSRF_REFUSED)
    return SIGNIN.end(board.engine, request, "/")
