"""The judging pages of ``dsr serve``: assessors log in with their token and grade in the browser.

Same app, database, sign-in and token scheme as the leaderboard (an assessor's token is made
by ``dsr judge add-assessor`` and stored hashed). The task page works without
JavaScript (one small form per sentence); with it (``/static/judge.js``, the only
script the site serves, allowed on these pages alone by their
Content-Security-Policy) the keyboard, the mouse and touch do everything: the scale's keys
(or its named buttons) grade and move on, ``u`` is unsure, ``j``/``k`` (or the arrows) move,
``g`` shows the guidelines; grading stops at the end of the dialogue, where Enter or the
"Next dialogue" control goes on. Every grade is sent as it is given and committed before
the answer (``POST /judge/api/grades``; the page marks it saved only then).

Security as on the board, from the same web core (:mod:`dsr.web`): sessions and CSRF tokens
bound to them on forms and on the JSON API from the browser (``X-CSRF-Token``, the page's
``<meta name="csrf">``), bearer tokens for API clients, autoescaped templates, and blind
pages (see :mod:`dsr.judging.views`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy import select
from starlette.concurrency import run_in_threadpool

from dsr.db.engine import read_session, write_session
from dsr.db.refused import Refused
from dsr.judging.campaigns import MAX_SECONDS, Judging
from dsr.judging.models import Assessor, Campaign, JudgeSession, JudgeTask
from dsr.judging.views import content, my_campaigns, task_rows, task_view
from dsr.web.pages import Pages, Site
from dsr.web.security import csp
from dsr.web.signin import CSRF_REFUSED, SignIn

router = APIRouter()
ROUTERS = [router]  # what dsr.server adds to the board's app
STATIC = Path(__file__).parent / "static"  # served under /judge/static by dsr.server
#: the assessor's sign-in: session cookie ``dsr_judge``, the logged-out forms' nonce ``dsr_judge_csrf``
SIGNIN = SignIn(
    app="judging", cookie="dsr_judge", csrf_cookie="dsr_judge_csrf", table=JudgeSession, read=read_session, write=write_session
)


def judging(request: Request) -> Judging:
    """The app's :class:`Judging`, on the board's engine (made on first use)."""
    state = request.app.state
    if getattr(state, "judging", None) is None:
        state.judging = Judging(state.board.engine)
    return state.judging


def web_assessor(request: Request) -> Assessor | None:
    row = SIGNIN.session(judging(request).engine, request)
    if row is None:
        return None
    with read_session(judging(request).engine) as s:
        found = s.get(Assessor, row.assessor_id)
    return found if found is not None and found.token_hash is not None else None  # removed: no session


def api_assessor(request: Request) -> tuple[Assessor | None, bool]:
    """(assessor, by bearer token): a bearer token, else the browser session."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return judging(request).assignments.assessor_for_token(token.strip()), True
    return web_assessor(request), False


PAGES = Pages(
    Path(__file__).parent / "templates",
    Site(
        "dsr judging",
        "/judge",
        "/judge/login",
        "/judge/logout",
        "judge_base.html",
        back="Your campaigns",
        signin="judge_login.html",
    ),
    SIGNIN,
    "assessor",
    web_assessor,
    headers={"Content-Security-Policy": csp(scripts=True), "Cache-Control": "no-store"},
)
render = PAGES.render
problem = PAGES.problem


@router.get("/judge", response_class=HTMLResponse)
def judge_index(request: Request) -> Response:
    assessor = web_assessor(request)
    if assessor is None:
        return RedirectResponse("/judge/login", status_code=303)
    return render(request, "judge_index.html", {"assessor": assessor, "campaigns": my_campaigns(judging(request), assessor)})


@router.get("/judge/login", response_class=HTMLResponse)
def judge_login_form(request: Request) -> HTMLResponse:
    return PAGES.signin_form(request)


@router.post("/judge/login")
async def judge_login(request: Request) -> Response:
    form = await SIGNIN.checked_form(request)
    if form is None:
        return problem(request, 403, CSRF_REFUSED)
    assessor = judging(request).assignments.assessor_for_token(str(form.get("token") or "").strip())
    if assessor is None:
        return PAGES.signin_form(request, "wrong token")
    return SIGNIN.start(judging(request).engine, request, "/judge", assessor_id=assessor.id)


@router.post("/judge/logout")
async def judge_logout(request: Request) -> Response:
    if await SIGNIN.checked_form(request) is None:
        return problem(request, 403, CSRF_REFUSED)
    return SIGNIN.end(judging(request).engine, request, "/judge/login")


def _campaign(request: Request, name: str) -> Campaign | None:
    with read_session(judging(request).engine) as s:
        return s.scalar(select(Campaign).where(Campaign.name == name))


@router.get("/judge/{name}", response_class=HTMLResponse)
def judge_continue(request: Request, name: str) -> Response:
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
def judge_guidelines(request: Request, name: str) -> Response:
    campaign = _campaign(request, name)
    if web_assessor(request) is None:
        return RedirectResponse("/judge/login", status_code=303)
    if campaign is None:
        return problem(request, 404, "no such campaign")
    return render(request, "judge_guidelines.html", {"campaign": campaign, "rules": judging(request).guidelines(campaign)})


@router.get("/judge/{name}/task/{seq}", response_class=HTMLResponse)
def judge_task(request: Request, name: str, seq: int) -> Response:
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
    return render(
        request,
        "judge_task.html",
        {
            "assessor": assessor,
            "view": view,
            "rules": rules,
            "keys": json.dumps({g.key: g.grade for g in rules.scale}),
            "max_seconds": MAX_SECONDS,
        },
    )


def _same_dialogue(request: Request, campaign: Campaign, seq: int, following: int | None) -> bool:
    """Whether the assessor's next task is more of this task's dialogue (a dialogue longer than
    --chunk is cut into tasks): the page's end says "more of this dialogue", else "next dialogue"."""
    if following is None:
        return False
    with read_session(judging(request).engine) as s:
        dialogues = s.execute(
            select(JudgeTask.seq, JudgeTask.dialogue_pk).where(
                JudgeTask.campaign_id == campaign.id, JudgeTask.seq.in_([seq, following])
            )
        ).all()
    return len({d for _, d in dialogues}) == 1


@router.post("/judge/{name}/task/{seq}")
async def judge_task_form(request: Request, name: str, seq: int) -> Response:
    """The no-JavaScript path: one sentence's form, then back to the task at the next sentence."""
    assessor = web_assessor(request)
    if assessor is None:
        return problem(request, 401, "log in with your assessor token first")
    form = await SIGNIN.checked_form(request)
    if form is None:
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


@router.post("/judge/api/grades", response_model=None)
async def judge_api_grade(request: Request) -> JSONResponse | dict[str, Any]:
    """``{"item": KEY, "grade": G}`` or ``{"item": KEY, "unsure": true}`` (``seconds`` optional):
    committed before the answer; ``new`` says whether it is the assessor's first on the item.
    The database work runs in the thread pool, so grades sent at the same moment share one
    commit (see ``Judging.grade``) instead of queueing on the event loop."""
    body = await request.body()
    return await run_in_threadpool(_api_grade, request, body)


def _json_body(raw: bytes) -> Any:
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


def _api_grade(request: Request, raw: bytes) -> JSONResponse | dict[str, Any]:
    assessor, bearer = api_assessor(request)
    if assessor is None:
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    if not bearer and not SIGNIN.csrf_ok(request, request.headers.get("x-csrf-token")):
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
        if (
            (grade is not None and not isinstance(grade, int))
            or isinstance(grade, bool)
            or (seconds is not None and not isinstance(seconds, (int, float)))
        ):
            raise ValueError("grade is a whole number and seconds a number")
    except ValueError as err:
        return JSONResponse({"error": f"bad request: {err}"}, status_code=400)
    try:
        new = judging(request).grade(assessor, body["item"], grade, unsure, seconds)
    except Refused as no:
        return JSONResponse({"error": no.message}, status_code=no.status)
    return {"item": body["item"], "grade": None if unsure else grade, "unsure": unsure, "new": new}


def _api_caller(request: Request, name: str) -> tuple[Assessor, Campaign] | JSONResponse:
    """(assessor, campaign) for a bearer token's request on a campaign, else the 401 or 404
    answer."""
    assessor, _ = api_assessor(request)
    if assessor is None:
        return JSONResponse({"error": "missing or wrong token"}, status_code=401)
    campaign = _campaign(request, name)
    if campaign is None:
        return JSONResponse({"error": "no such campaign"}, status_code=404)
    return assessor, campaign


@router.get("/judge/api/campaigns/{name}/tasks", response_model=None)
def judge_api_tasks(request: Request, name: str) -> JSONResponse | dict[str, Any]:
    """The asking assessor's tasks: seq, size, graded, and the item keys in order."""
    caller = _api_caller(request, name)
    if isinstance(caller, JSONResponse):
        return caller
    assessor, campaign = caller
    from dsr.judging.models import JudgeTask

    out = []
    for row in task_rows(judging(request), assessor, campaign):
        with read_session(judging(request).engine) as s:
            task = s.scalar(select(JudgeTask).where(JudgeTask.campaign_id == campaign.id, JudgeTask.seq == row["seq"]))
        assert task is not None, "a row of task_rows is a task"
        out.append({**row, "items": [it["key"] for it in content(judging(request), task).items]})
    return {"campaign": name, "tasks": out}


@router.get("/judge/api/campaigns/{name}/tasks/{seq}", response_model=None)
def judge_api_task(request: Request, name: str, seq: int) -> JSONResponse | dict[str, Any]:
    """One of the asking assessor's tasks as the page shows it: the dialogue's title, turns and
    who speaks next, and each sentence's key, document title, text and the assessor's own
    grade. Nothing else: no pool order, no run, no other assessor's grade, no mark on checks."""
    caller = _api_caller(request, name)
    if isinstance(caller, JSONResponse):
        return caller
    assessor, campaign = caller
    try:
        view = task_view(judging(request), assessor, campaign, seq)
    except Refused as no:
        return JSONResponse({"error": no.message}, status_code=no.status)
    return {
        "campaign": name,
        "seq": seq,
        "title": view["title"],
        "turns": view["turns"],
        "next_speaker": view["next_speaker"],
        "sentences": [{k: s[k] for k in ("key", "title", "body", "grade")} for s in view["sentences"]],
        "scale": [{"grade": g.grade, "name": g.name, "help": g.help} for g in judging(request).guidelines(campaign).scale],
    }
