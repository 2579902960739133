"""The board's ASGI app: middleware and the routers of ``dsr.board.routes`` (FastAPI;
server-rendered Jinja2 templates, no JavaScript), on the web core :mod:`dsr.web`.

Security rules, as a participant would test them:

* teams authenticate with tokens (``Authorization: Bearer`` on the API, a
  login form that opens a server-side session for the browser); a missing or
  wrong token is 401, another team's run file is 403;
* every form carries a CSRF token (:mod:`dsr.web.csrf`) bound to the logged-in
  session (a token of another session is refused), before logging in to the
  browser's ``SameSite=Strict`` nonce cookie;
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

from collections.abc import Iterable

from fastapi import APIRouter, FastAPI
from starlette.routing import BaseRoute, Mount, Route

from dsr.board.service import Board
from dsr.web.security import web_app


def create_app(board: Board, routers: Iterable[APIRouter] = ()) -> FastAPI:
    """The ASGI app serving ``board`` (a :class:`dsr.board.service.Board`): the routers of
    :data:`dsr.board.routes.ROUTERS`, then ``routers`` (more parts of the site)."""
    from dsr.board.routes import FIRST, ROUTERS

    max_body = board.upload_limit() + 512 * 1024  # the largest run, a sidecar and the form fields
    app = web_app("dsr leaderboard", secret=board.context.login_secret(), max_body=max_body)
    app.state.board = board
    app.state.routers = [*ROUTERS, *routers]
    for router in app.state.routers:
        app.include_router(router)
    app.router.routes[:0] = FIRST  # the hot routes, matched first
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
