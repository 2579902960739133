"""The judging pages of ``dsr serve``: assessors log in with their token and grade in the browser.

Same app, database and token scheme as the leaderboard (an assessor's token is made
by ``dsr judge add-assessor`` and stored hashed). The task page works without
JavaScript (one small form per sentence); with it (``/static/judge.js``, the only
script the site serves, allowed on these pages alone by their
Content-Security-Policy) the keyboard, the mouse and touch do everything: the scale's keys
(or its named buttons) grade and move on, ``u`` is unsure, ``j``/``k`` (or the arrows) move,
``g`` shows the guidelines; grading stops at the end of the dialogue, where Enter or the
"Next dialogue" control goes on. Every grade is sent as it is given and committed before
the answer (``POST /judge/api/grades``; the page marks it saved only then).

Security as on the board: a CSRF double submit on forms and on the JSON API from the
browser (``X-CSRF-Token``), bearer tokens for API clients, autoescaped templates, and
blind pages (see :mod:`dsr.judging.views`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import timedelta
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import delete, select
from starlette.concurrency import run_in_threadpool

from dsr.board.db import read_session, write_session
from dsr.board.models import utcnow
from dsr.judging.campaigns import MAX_SECONDS, Judging, Refused
from dsr.judging.models import Assessor, JudgeSession, JudgeTask
from dsr.judging.views import content, my_campaigns, task_rows, task_view

router = APIRouter()
ROUTERS = [router]   # what dsr.server adds to the board's app
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
STATIC = Path(__file__).parent / "static"   # served under /judge/static by dsr.server
JUDGE_COOKIE = "dsr_judge"
CSRF_COOKIE = "dsr_judge_csrf"  # its own double-submit cookie: the board may treat dsr_csrf otherwise
SESSION_DAYS = 7
PAGE_CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
            "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
CSRF_REFUSED = "the form's CSRF token is missing or wrong: reload the page"


def judging(request: Request) -> Judging:
    """The app's :class:`Judging`, on the board's engine (made on first use)."""
    state = request.app.state
    if getattr(state, "judging", None) is None:
        state.judging = Judging(state.board.engine)
    return state.judging


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def web_assessor(request: Request) -> Assessor | None:
    key = request.cookies.get(JUDGE_COOKIE)
    if not key:
        return None
    with read_session(judging(request).engine) as s:
        row = s.scalar(select(JudgeSession).where(JudgeSession.key_hash == _hash(key)))
        if row is None or row.expires_at < utcnow():
            return None
        return s.get(Assessor, row.assessor_id)


def api_assessor(request: Request) -> tuple[Assessor | None, bool]:
    """(assessor, by bearer token): a bearer token, else the browser session."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return judging(request).assessor_for_token(token.strip()), True
    return web_assessor(request), False


def render(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
    token = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
    assessor = context.pop("assessor", None) or web_assessor(request)
    response = templates.TemplateResponse(request, name, {**context, "csrf": token, "assessor": assessor},
                                          status_code=status)
    response.headers["Content-Security-Policy"] = PAGE_CSP
    response.headers["Cache-Control"] = "no-store"
    if request.cookies.get(CSRF_COOKIE) != token:
        response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
    return response


def csrf_ok(request: Request, sent) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE) or ""
    return bool(cookie) and isinstance(sent, str) and hmac.compare_digest(cookie, sent)


def problem(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "judge_error.html", {"status": status, "message": message}, status)


@router.get("/judge", response_class=HTMLResponse)
def judge_index(request: Request):
    assessor = web_assessor(request)
    if assessor is None:
        return RedirectResponse("/judge/login", status_code=303)
    return render(request, "judge_index.html",
                  {"assessor": assessor, "campaigns": my_campaigns(judging(request), assessor)})


@router.get("/judge/login", response_class=HTMLResponse)
def judge_login_form(request: Request):
    return render(request, "judge_login.html", {})


@router.post("/judge/login")
async def judge_login(request: Request):
    form = await request.form()
    if not csrf_ok(request, form.get("csrf")):
        return problem(request, 403, CSRF_REFUSED)
    assessor = judging(request).assessor_for_token(str(form.get("token") or "").strip())
    if assessor is None:
        return render(request, "judge_login.html", {"error": "wrong token"}, 401)
    key = secrets.token_urlsafe(32)
    with write_session(judging(request).engine) as s:
        s.execute(delete(JudgeSession).where(JudgeSession.expires_at < utcnow()))
        s.add(JudgeSession(key_hash=_hash(key), assessor_id=assessor.id,
                           expires_at=utcnow() + timedelta(days=SESSION_DAYS)))
    response = RedirectResponse("/judge", status_code=303)
    response.set_cookie(JUDGE_COOKIE, key, httponly=True, samesite="lax", max_age=SESSION_DAYS * 86400,
                        secure=request.url.scheme == "https")
    return response


@router.post("/judge/logout")
async def judge_logout(request: Request):
    form = await request.form()
    if not csrf_ok(request, form.get("csrf")):
        return problem(request, 403, CSRF_REFUSED)
    key = request.cookies.get(JUDGE_COOKIE)
    if key:
        with write_session(judging(request).engine) as s:
            s.execute(delete(JudgeSession).where(JudgeSession.key_hash == _hash(key)))
    response = RedirectResponse("/judge/login", status_code=303)
    response.delete_cookie(JUDGE_COOKIE)
    return response


def _campaign(request: Request, name: str):
    from dsr.judging.models import Campaign

    with read_session(judging(request).engine) as s:
        return s.scalar(select(Campaign).where(Campaign.name == name))


@router.get("/judge/{name}", response_class=HTMLResponse)
def judge_continue(request: Request, name: str):
    """To the assessor's first task with an ungraded sentence (the list when all are done)."""
    assessor, campaign = web_assessor(request), _campaign(request, name)
    if assessor is None:
        return RedirectResponse("/judge/login", status_code=303)
    if campaign is None:
        return problem(request, 404, "no such campaign")
    rows = task_rows(judging(request), assessor, campaign)
    left = [r["seq"] for r in rows if r["done"] < r["size"]]
    return RedirectResponse(f"/judge/{name}/task/{left[0]}" if left else "/judge", status_code=303)


@router.get("/judge/{name}/guidelines", response_class=HTMLResponse)
def judge_guidelines(request: Request, name: str):
    campaign = _campaign(request, name)
    if web_assessor(request) is None:
        return RedirectResponse("/judge/login", status_code=303)
    if campaign is None:
        return problem(request, 404, "no such campaign")
    return render(request, "judge_guidelines.html",
                  {"campaign": campaign, "rules": judging(request).guidelines(campaign)})


@router.get("/judge/{name}/task/{seq}", response_class=HTMLResponse)
def judge_task(request: Request, name: str, seq: int):
    assessor, campaign = web_assessor(request), _campaign(request, name)
    if assessor is None:
        return RedirectResponse("/judge/login", status_code=303)
    if campaign is None:
        return problem(request, 404, "no such campaign")
    try:
        view = task_view(judging(request), assessor, campaign, seq)
    except Refused as refused:
        return problem(request, refused.status, refused.message)
    rules = judging(request).guidelines(campaign)
    view["continues"] = _same_dialogue(request, campaign, seq, view["following"])
    return render(request, "judge_task.html",
                  {"assessor": assessor, "view": view, "rules": rules,
                   "keys": json.dumps({g.key: g.grade for g in rules.scale}), "max_seconds": MAX_SECONDS})


def _same_dialogue(request: Request, campaign, seq: int, following: int | None) -> bool:
    """Whether the assessor's next task is more of this task's dialogue (a dialogue longer than
    --chunk is cut into tasks): the page's end says "more of this dialogue", else "next dialogue"."""
    if following is None:
        return False
    with read_session(judging(request).engine) as s:
        dialogues = s.execute(select(JudgeTask.seq, JudgeTask.dialogue_pk).where(
            JudgeTask.campaign_id == campaign.id, JudgeTask.seq.in_([seq, following]))).all()
    return len({d for _, d in dialogues}) == 1


@router.post("/judge/{name}/task/{seq}")
async def judge_task_form(request: Request, name: str, seq: int):
    """The no-JavaScript path: one sentence's form, then back to the task at the next sentence."""
    assessor = web_assessor(request)
    if assessor is None:
        return problem(request, 401, "log in with your assessor token first")
    form = await request.form()
    if not csrf_ok(request, form.get("csrf")):
        return problem(request, 403, CSRF_REFUSED)
    unsure = bool(form.get("unsure"))
    try:
        grade = None if unsure else int(str(form.get("grade")))
        judging(request).grade(assessor, str(form.get("item") or ""), grade, unsure)
    except ValueError:
        return problem(request, 422, "choose a grade")
    except Refused as refused:
        return problem(request, refused.status, refused.message)
    return RedirectResponse(f"/judge/{name}/task/{seq}", status_code=303)


@router.post("/judge/api/grades")
async def judge_api_grade(request: Request):
    """``{"item": KEY, "grade": G}`` or ``{"item": KEY, "unsure": true}`` (``seconds`` optional):
    committed before the answer; ``new`` says whether it is the assessor's first on the item.
    The database work runs in the thread pool, so grades sent at the same moment share one
    commit (see ``Judging.grade``) instead of queueing on the event loop."""
    body = await request.body()
    return await run_in_threadpool(_api_grade, request, body)


def _json_body(raw: bytes):
    """The request's JSON; a body nested too deep for the parser is a ValueError (400), not a 500."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None


def _text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _api_grade(request: Request, raw: bytes):
    assessor, bearer = api_assessor(request)
    if assessor is None:
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    if not bearer and not csrf_ok(request, request.headers.get("x-csrf-token")):
        return JSONResponse({"error": CSRF_REFUSED}, status_code=403)
    try:
        body = _json_body(raw)
        if not isinstance(body, dict) or not isinstance(body.get("item"), str):
            raise ValueError("a JSON object with an item key")
        if not _text(body["item"]):
            raise ValueError("item is not valid Unicode text (a lone surrogate?)")
        unsure = body.get("unsure") is True
        grade = body.get("grade")
        seconds = body.get("seconds")
        if (grade is not None and not isinstance(grade, int)) or isinstance(grade, bool) or \
                (seconds is not None and not isinstance(seconds, (int, float))):
            raise ValueError("grade is a whole number and seconds a number")
    except ValueError as err:
        return JSONResponse({"error": f"bad request: {err}"}, status_code=400)
    try:
        new = judging(request).grade(assessor, body["item"], grade, unsure, seconds)
    except Refused as refused:
        return JSONResponse({"error": refused.message}, status_code=refused.status)
    return {"item": body["item"], "grade": None if unsure else grade, "unsure": unsure, "new": new}


@router.get("/judge/api/campaigns/{name}/tasks")
def judge_api_tasks(request: Request, name: str):
    """The asking assessor's tasks: seq, size, graded, and the item keys in order."""
    assessor, _ = api_assessor(request)
    if assessor is None:
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    campaign = _campaign(request, name)
    if campaign is None:
        return JSONResponse({"error": "no such campaign"}, status_code=404)
    from dsr.judging.models import JudgeTask

    out = []
    for row in task_rows(judging(request), assessor, campaign):
        with read_session(judging(request).engine) as s:
            task = s.scalar(select(JudgeTask).where(JudgeTask.campaign_id == campaign.id,
                                                    JudgeTask.seq == row["seq"]))
        out.append({**row, "items": [it["key"] for it in content(judging(request), task).items]})
    return {"campaign": name, "tasks": out}


@router.get("/judge/api/campaigns/{name}/tasks/{seq}")
def judge_api_task(request: Request, name: str, seq: int):
    """One of the asking assessor's tasks as the page shows it: the dialogue's title, turns and
    who speaks next, and each sentence's key, document title, text and the assessor's own
    grade. Nothing else: no pool order, no run, no other assessor's grade, no mark on checks."""
    assessor, _ = api_assessor(request)
    if assessor is None:
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    campaign = _campaign(request, name)
    if campaign is None:
        return JSONResponse({"error": "no such campaign"}, status_code=404)
    try:
        view = task_view(judging(request), assessor, campaign, seq)
    except Refused as refused:
        return JSONResponse({"error": refused.message}, status_code=refused.status)
    return {"campaign": name, "seq": seq, "title": view["title"], "turns": view["turns"],
            "next_speaker": view["next_speaker"],
            "sentences": [{k: s[k] for k in ("key", "title", "body", "grade")} for s in view["sentences"]],
            "scale": [{"grade": g.grade, "name": g.name, "help": g.help}
                      for g in judging(request).guidelines(campaign).scale]}
