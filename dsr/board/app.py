"""The board's ASGI app: middleware and the routers of ``dsr.board.routes`` (FastAPI;
server-rendered Jinja2 templates, no JavaScript).

Security rules, as a participant would test them:

* teams authenticate with tokens (``Authorization: Bearer`` on the API, a
  login form that opens a server-side session for the browser); a missing or
  wrong token is 401, another team's run file is 403;
* every form carries a CSRF token: a logged-in session's own (a token of
  another session is refused), before logging in a double-submit
  ``SameSite=Strict`` cookie;
* request bodies are capped (413) and submissions rate-limited per team (429);
* templates autoescape, and a Content-Security-Policy forbids scripts;
* no path is built from user input (the store names files by sha256), SQL only
  goes through the ORM;
* hidden phases: labels and per-topic values never leave the server; pages,
  API and exports carry means only, over subsets of at least the phase's
  minimum of dialogues (``scoring.publishable_subsets``);
* of a run's sidecar only the published allow-list is kept and served
  (``published``); text with NUL, control characters or lone surrogates is
  refused at intake (422 naming the field).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from starlette.routing import BaseRoute, Mount, Route

from dsr.board.service import Board

HERE = Path(__file__).parent
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


def create_app(board: Board, routers: Iterable[APIRouter] = ()) -> FastAPI:
    """The ASGI app serving ``board`` (a :class:`dsr.board.service.Board`): the routers of
    :data:`dsr.board.routes.ROUTERS`, then ``routers`` (more parts of the site)."""
    from dsr.board.routes import ROUTERS

    app = FastAPI(title="dsr leaderboard", docs_url=None, redoc_url=None, openapi_url=None)
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.state.board = board
    max_body = board.upload_limit() + 512 * 1024   # the largest run, a sidecar and the form fields

    @app.middleware("http")
    async def security_headers(request: Request, call_next):
        response = await call_next(request)
        for key, value in HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    app.add_middleware(BodyLimit, limit=max_body)
    app.state.routers = [*ROUTERS, *routers]
    for router in app.state.routers:
        app.include_router(router)

    @app.get("/healthz")
    def healthz():
        return {"ok": True}
    return app


def all_routes(app: FastAPI) -> list[BaseRoute]:
    """Every route the app answers (its own, its mounts and its routers'), each once.

    FastAPI keeps an included router as one node of ``app.routes``; tests that walk
    every page and answer take them from here."""
    seen: dict[tuple, BaseRoute] = {}
    candidates = [r for r in app.routes if isinstance(r, (Route, Mount))]
    for router in app.state.routers:
        candidates += router.routes
    for route in candidates:
        key = (type(route).__name__, route.path, tuple(sorted(getattr(route, "methods", None) or ())))
        seen.setdefault(key, route)
    return list(seen.values())
