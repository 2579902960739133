"""The web pages and the JSON API (FastAPI; server-rendered Jinja2 templates, no JavaScript).

Security rules, as a participant would test them:

* teams authenticate with tokens (``Authorization: Bearer`` on the API, a
  login form that opens a server-side session for the browser); a missing or
  wrong token is 401, another team's run file is 403;
* every form carries a CSRF token (double submit: a ``SameSite=Strict`` cookie
  and a hidden field that must match);
* request bodies are capped (413) and submissions rate-limited per team (429);
* templates autoescape, and a Content-Security-Policy forbids scripts;
* no path is built from user input (the store names files by sha256), SQL only
  goes through the ORM;
* hidden phases: labels and per-topic values never leave the server; pages,
  API and exports carry means only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy import delete, select

from eval.board import leaderboard
from eval.board.db import read_session, write_session
from eval.board.models import Team, WebSession, utcnow
from eval.board.service import Board, Metadata, Refused, RUN_TYPES
from retrieval.errors import InputError

HERE = Path(__file__).parent
SESSION_COOKIE = "dsr_session"
CSRF_COOKIE = "dsr_csrf"
SESSION_DAYS = 7
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 (header or stream)."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _send_413(send, self.limit)
        received = 0
        started = False

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _send_413(send, self.limit)


async def _send_413(send, limit: int):
    body = json.dumps({"error": f"request body larger than {limit} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def create_app(board: Board) -> FastAPI:
    """The ASGI app serving ``board`` (a :class:`eval.board.service.Board`)."""
    app = FastAPI(title="dsr leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["num"] = lambda v, d=4: "–" if v is None else f"{v:.{d}f}"
    templates.env.filters["length_of_json"] = lambda text: len(json.loads(text))
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.state.board = board
    max_body = board.config.max_upload + 512 * 1024   # the run, a sidecar and the form fields

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        for key, value in HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    app.add_middleware(BodyLimit, limit=max_body)

    # -- helpers -----------------------------------------------------------
    def web_team(request: Request) -> Team | None:
        key = request.cookies.get(SESSION_COOKIE)
        if not key:
            return None
        with read_session(board.engine) as s:
            row = s.scalar(select(WebSession).where(WebSession.key_hash == _hash(key)))
            if row is None or row.expires_at < utcnow():
                return None
            return s.get(Team, row.team_id)

    def bearer_team(request: Request) -> Team | None:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return board.team_for_token(token.strip())

    def unauthorized(message: str = "missing or wrong token") -> JSONResponse:
        return JSONResponse({"error": message}, status_code=401,
                            headers={"WWW-Authenticate": 'Bearer realm="dsr"'})

    def csrf_value(request: Request) -> str:
        return request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)

    def page(request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
        token = csrf_value(request)
        team = context.pop("team", None) or web_team(request)
        response = templates.TemplateResponse(request, name, {**context, "csrf": token, "team": team},
                                              status_code=status)
        if request.cookies.get(CSRF_COOKIE) != token:
            response.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict",
                                secure=request.url.scheme == "https")
        return response

    async def checked_form(request: Request):
        form = await request.form()
        cookie = request.cookies.get(CSRF_COOKIE) or ""
        sent = form.get("csrf") or ""
        if not cookie or not isinstance(sent, str) or not hmac.compare_digest(cookie, sent):
            return None
        return form

    def error_page(request: Request, status: int, message: str) -> HTMLResponse:
        return page(request, "error.html", {"status": status, "message": message}, status)

    def find_phase(collection: str, phase: str):
        for p in board.phases():
            if p.collection == collection and p.name == phase:
                return p
        return None

    def rate_limited(team: Team) -> float:
        return board.limiter.allow(team.id)

    # -- pages -------------------------------------------------------------
    @app.get("/", response_class=HTMLResponse)
    def index(request: Request):
        return page(request, "index.html", {"phases": board.phases()})

    @app.get("/login", response_class=HTMLResponse)
    def login_form(request: Request):
        return page(request, "login.html", {})

    @app.post("/login")
    async def login(request: Request):
        form = await checked_form(request)
        if form is None:
            return error_page(request, 403, "the form's CSRF token is missing or wrong: reload the page")
        team = board.team_for_token(str(form.get("token") or "").strip())
        if team is None:
            return page(request, "login.html", {"error": "wrong token"}, 401)
        key = secrets.token_urlsafe(32)
        with write_session(board.engine) as s:
            s.execute(delete(WebSession).where(WebSession.expires_at < utcnow()))
            s.add(WebSession(key_hash=_hash(key), team_id=team.id,
                             expires_at=utcnow() + timedelta(days=SESSION_DAYS)))
        response = RedirectResponse("/submit", status_code=303)
        response.set_cookie(SESSION_COOKIE, key, httponly=True, samesite="lax",
                            max_age=SESSION_DAYS * 86400, secure=request.url.scheme == "https")
        return response

    @app.post("/logout")
    async def logout(request: Request):
        form = await checked_form(request)
        if form is None:
            return error_page(request, 403, "the form's CSRF token is missing or wrong: reload the page")
        key = request.cookies.get(SESSION_COOKIE)
        if key:
            with write_session(board.engine) as s:
                s.execute(delete(WebSession).where(WebSession.key_hash == _hash(key)))
        response = RedirectResponse("/", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    def submit_context(team: Team) -> dict:
        phases = board.phases()
        return {"phases": phases, "run_types": RUN_TYPES,
                "quotas": {p.id: board.quota(team, p) for p in phases}}

    @app.get("/submit", response_class=HTMLResponse)
    def submit_form(request: Request):
        team = web_team(request)
        if team is None:
            return RedirectResponse("/login", status_code=303)
        return page(request, "submit.html", {"team": team, **submit_context(team)})

    @app.post("/submit")
    async def submit_page(request: Request):
        team = web_team(request)
        if team is None:
            return error_page(request, 401, "log in with your team's token first")
        form = await checked_form(request)
        if form is None:
            return error_page(request, 403, "the form's CSRF token is missing or wrong: reload the page")
        wait = rate_limited(team)
        if wait:
            return error_page(request, 429, f"too many submissions: try again in {wait:.0f} s")
        values = {k: form.get(k) for k in ("phase", "system", "description", "link", "run_type")}
        try:
            phase = next((p for p in board.phases() if str(p.id) == str(values["phase"])), None)
            if phase is None:
                raise Refused(422, "choose a phase")
            upload = await _upload(form)
            sub, _before, _after = await _in_thread(board.submit, team, phase, *upload)
        except Refused as refused:
            return page(request, "submit.html",
                        {"team": team, **submit_context(team), "refused": refused, "values": values},
                        refused.status)
        return RedirectResponse(f"/runs/{sub.id}?submitted=1", status_code=303)

    @app.get("/board/{collection}/{phase}", response_class=HTMLResponse)
    def board_page(request: Request, collection: str, phase: str, sort: str | None = None,
                   order: str = "desc", select: str = "all", baseline: int | None = None,
                   subset: str = "all"):
        found = find_phase(collection, phase)
        if found is None:
            return error_page(request, 404, "no such board")
        try:
            lb = leaderboard.build(board, found, sort=sort, select=select, baseline_id=baseline,
                                   descending=order != "asc")
        except InputError as err:
            return error_page(request, 400, str(err))
        if subset not in lb.subsets:
            return error_page(request, 400, f"no subset {subset!r}; this board has {', '.join(lb.subsets)}")
        team = web_team(request)
        quota = board.quota(team, found) if team is not None else None
        def link(**changes) -> str:
            params = {"sort": lb.sort, "order": order, "select": lb.select, "subset": subset,
                      "baseline": lb.baseline.id if lb.baseline else None, **changes}
            return "?" + urlencode({k: v for k, v in params.items() if v is not None})

        return page(request, "board.html", {"lb": lb, "subset": subset, "order": order,
                                            "quota": quota, "team": team, "link": link})

    def export(collection: str, phase: str, kind: str, select: str, baseline: int | None):
        from eval.tables import to_csv, to_latex

        found = find_phase(collection, phase)
        if found is None:
            return PlainTextResponse("no such board\n", status_code=404)
        try:
            lb = leaderboard.build(board, found, select=select, baseline_id=baseline)
        except InputError as err:
            return PlainTextResponse(f"{err}\n", status_code=400)
        if kind == "csv":
            return PlainTextResponse(to_csv(lb.results), media_type="text/csv")
        return PlainTextResponse(to_latex(lb.results), media_type="application/x-latex")

    @app.get("/board/{collection}/{phase}/export.csv")
    def export_csv(collection: str, phase: str, select: str = "all", baseline: int | None = None):
        return export(collection, phase, "csv", select, baseline)

    @app.get("/board/{collection}/{phase}/export.tex")
    def export_tex(collection: str, phase: str, select: str = "all", baseline: int | None = None):
        return export(collection, phase, "tex", select, baseline)

    def run_view(submission_id: int, measure: str | None = None) -> dict | None:
        sub = board.submission(submission_id)
        if sub is None:
            return None
        data = board.phase_data(sub.phase)
        view = {"sub": sub, "means": json.loads(sub.means_json), "measures": data.measures,
                "subsets": list(data.subsets),
                "sidecar": json.loads(sub.sidecar_json) if sub.sidecar_json else None,
                "plot": None}
        if not sub.phase.hidden:   # per-topic values of a hidden phase never leave the server
            measure = measure if measure in data.measures else data.measures[0]
            matrix = board.matrix(sub, len(data.measures))
            column = matrix[:, data.measures.index(measure)]
            view["plot"] = {"measure": measure,
                            "topics": [{"id": t, "subset": d.subset, "value": float(v)}
                                       for t, d, v in zip(data.topics, data.collection.dialogues, column)]}
        return view

    @app.get("/runs/{submission_id}", response_class=HTMLResponse)
    def run_page(request: Request, submission_id: int, measure: str | None = None, submitted: int = 0):
        view = run_view(submission_id, measure)
        if view is None:
            return error_page(request, 404, "no such run")
        team = web_team(request)
        quota = board.quota(team, view["sub"].phase) if team is not None and submitted else None
        return page(request, "run.html", {**view, "submitted": bool(submitted), "quota": quota,
                                          "team": team})

    @app.get("/runs/{submission_id}/file")
    def run_file_page(request: Request, submission_id: int):
        team = web_team(request) or bearer_team(request)
        if team is None:
            return error_page(request, 401, "log in with your team's token to download run files")
        return run_file(team, submission_id)

    def run_file(team: Team, submission_id: int) -> Response:
        sub = board.submission(submission_id)
        if sub is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        if sub.team_id != team.id and not team.organiser:
            return JSONResponse({"error": "this run belongs to another team"}, status_code=403)
        return Response(board.store.get(sub.sha256), media_type="text/plain",
                        headers={"Content-Disposition": f'attachment; filename="run-{sub.id}.run"'})

    # -- JSON API ----------------------------------------------------------
    @app.get("/api/boards")
    def api_boards():
        return {"boards": [{"collection": p.collection, "phase": p.name, "hidden": p.hidden,
                            "measures": json.loads(p.measures_json),
                            "topics": len(json.loads(p.topics_json)),
                            "daily_quota": p.daily_quota, "total_quota": p.total_quota,
                            "url": f"/api/boards/{p.collection}/{p.name}"} for p in board.phases()]}

    @app.get("/api/boards/{collection}/{phase}")
    def api_board(collection: str, phase: str, sort: str | None = None, select: str = "all",
                  baseline: int | None = None):
        found = find_phase(collection, phase)
        if found is None:
            return JSONResponse({"error": "no such board"}, status_code=404)
        try:
            return leaderboard.build(board, found, sort=sort, select=select, baseline_id=baseline).to_json()
        except InputError as err:
            return JSONResponse({"error": str(err)}, status_code=400)

    @app.get("/api/boards/{collection}/{phase}/topics")
    def api_topics(collection: str, phase: str):
        """The dialogues a run for this phase ranks (ids and subsets; never labels)."""
        found = find_phase(collection, phase)
        if found is None:
            return JSONResponse({"error": "no such board"}, status_code=404)
        data = board.phase_data(found)
        return {"collection": collection, "phase": phase,
                "topics": [{"id": d.id, "subset": d.subset} for d in data.collection.dialogues]}

    @app.get("/api/runs/{submission_id}")
    def api_run(submission_id: int):
        view = run_view(submission_id)
        if view is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        return _run_json(board, view)

    @app.get("/api/runs/{submission_id}/file")
    def api_run_file(request: Request, submission_id: int):
        team = bearer_team(request)
        if team is None:
            return unauthorized()
        return run_file(team, submission_id)

    @app.get("/api/quota/{collection}/{phase}")
    def api_quota(request: Request, collection: str, phase: str):
        team = bearer_team(request)
        if team is None:
            return unauthorized()
        found = find_phase(collection, phase)
        if found is None:
            return JSONResponse({"error": "no such board"}, status_code=404)
        return {"team": team.name, "collection": collection, "phase": phase,
                "quota": board.quota(team, found)}

    @app.post("/api/submissions")
    async def api_submit(request: Request):
        team = bearer_team(request)
        if team is None:
            return unauthorized()
        wait = rate_limited(team)
        if wait:
            return JSONResponse({"error": f"rate limit: try again in {wait:.1f} s"}, status_code=429,
                                headers={"Retry-After": str(max(1, round(wait)))})
        form = await request.form()
        try:
            collection, phase_name = str(form.get("collection") or ""), str(form.get("phase") or "")
            phases = [p for p in board.phases() if p.collection == collection
                      and (p.name == phase_name or not phase_name)]
            if len(phases) != 1:
                names = ", ".join(f"{p.collection}/{p.name}" for p in board.phases()) or "none"
                raise Refused(404 if not phases else 422,
                              f"no single phase {collection}/{phase_name or '?'}; boards: {names}")
            upload = await _upload(form)
            sub, before, quota = await _in_thread(board.submit, team, phases[0], *upload)
        except Refused as refused:
            return JSONResponse({"error": refused.message, "problems": refused.problems,
                                 "quota": refused.quota}, status_code=refused.status)
        return JSONResponse({"id": sub.id, "url": f"/runs/{sub.id}", "sha256": sub.sha256,
                             "means": json.loads(sub.means_json), "quota_before": before,
                             "quota": quota}, status_code=201)

    @app.get("/healthz")
    def healthz():
        return {"ok": True}

    from eval.board.judging_routes import router as judging_router   # the judging pages (/judge)
    app.include_router(judging_router)
    return app


async def _upload(form) -> tuple[bytes, str, Metadata, bytes | None]:
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


async def _in_thread(function, *args):
    """Validation and scoring are CPU work: keep them off the event loop."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(function, *args)


def _run_json(board: Board, view: dict) -> dict:
    sub = view["sub"]
    out = {"id": sub.id, "collection": sub.phase.collection, "phase": sub.phase.name,
           "hidden": sub.phase.hidden, "team": sub.team.name, "system": sub.system,
           "description": sub.description, "link": sub.link, "run_type": sub.run_type,
           "trained_on_collection": sub.trained_on_collection, "baseline": sub.baseline,
           "filename": sub.filename, "sha256": sub.sha256, "lines": sub.lines,
           "submitted": sub.created_at.isoformat() + "Z", "sidecar": view["sidecar"],
           "means": view["means"]}
    if view["plot"] is not None:
        data = board.phase_data(sub.phase)
        matrix = board.matrix(sub, len(data.measures))
        out["per_topic"] = {t: dict(zip(data.measures, map(float, row)))
                            for t, row in zip(data.topics, matrix)}
    return out
