"""The ASGI app both web applications are built on: security headers and the
Content-Security-Policy on every answer, a cap on request bodies (413), a full disk answered
507 (Insufficient Storage) instead of a bare 500, the shared static files under ``/static``
and ``/healthz``.

The policy forbids scripts; a page that needs its own script (judging's task page) sends
``csp(scripts=True)`` itself, which allows scripts of this site only.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import OperationalError

from dsr.core.atomic import disk_full

#: the shared assets (``/static/site.css``)
STATIC = Path(__file__).parent / "static"


def csp(scripts: bool = False) -> str:
    """The Content-Security-Policy: nothing from elsewhere, styles of this site, no script
    unless ``scripts`` (then this site's scripts, and requests to this site)."""
    allowed = "script-src 'self'; connect-src 'self'; " if scripts else ""
    return (
        f"default-src 'none'; {allowed}style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    )


HEADERS = {
    "Content-Security-Policy": csp(),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


class _TooLarge(Exception):
    pass


class Guard:
    """ASGI middleware, both of the web core's rules in one layer (each layer wraps every
    request and every message sent): a request body over ``limit`` bytes is answered 413
    (header or stream), and every answer gets :data:`HEADERS` where it does not set them itself.

    Plain ASGI, not ``@app.middleware("http")`` (Starlette's ``BaseHTTPMiddleware`` runs each
    request in one more task and streams the answer through a memory channel: CPU on the
    event loop that, with 20 concurrent submissions, showed in the board's p95)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.extra = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in HEADERS.items()]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _send_413(send, self.limit, self.extra)
        received = 0
        started = False

        async def limited_receive() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def guarded_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = list(message.get("headers") or [])
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in self.extra if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except _TooLarge:
            if not started:
                await _send_413(send, self.limit, self.extra)


async def _send_413(send: Any, limit: int, extra: list[tuple[bytes, bytes]]) -> None:
    body = json.dumps({"error": f"request body larger than {limit} bytes"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra],
        }
    )
    await send({"type": "http.response.body", "body": body})


def web_app(title: str, *, secret: bytes, max_body: int) -> FastAPI:
    """A FastAPI app with the security headers, the body cap, ``/static`` and ``/healthz``.

    ``secret`` signs the CSRF tokens (:mod:`dsr.web.csrf`); it is kept in ``app.state.secret``."""
    # FastAPI's OpenTelemetry hooks (FastAPI >= 0.160) off: the site configures no provider, and
    # the check for one cost every request three look-ups of OpenTelemetry's globals (py-spy)
    off: dict[str, Any] = {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    options = off if "telemetry" in inspect.signature(FastAPI.__init__).parameters else {}
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None, **options)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    app.state.secret = secret

    app.add_middleware(Guard, limit=max_body)

    @app.get("/healthz")
    def healthz() -> Any:
        return {"ok": True}

    app.add_exception_handler(OSError, full_disk)
    app.add_exception_handler(OperationalError, full_disk)
    return app


#: what a request that met a full disk is told (nothing of it was stored)
FULL_DISK = "the server's disk is full: nothing of this request was stored (try again once the organisers have freed some space)"


async def full_disk(request: Request, exc: Exception) -> Any:
    """507 Insufficient Storage for a full disk (an OSError of ``dsr.core.atomic.DISK_FULL``, or
    SQLite's "database or disk is full"): the write failed whole, nothing was stored. Any other
    error goes on to the server's 500."""
    if not disk_full(exc):
        raise exc
    if "/api/" in request.url.path:
        return JSONResponse({"error": FULL_DISK}, status_code=507)
    return HTMLResponse(f"<!doctype html><title>507</title><p>{FULL_DISK}</p>", status_code=507)


def mount_static(app: FastAPI, path: str, directory: Path) -> None:
    """Serve ``directory`` under ``path`` (an application's own assets)."""
    app.mount(path, StaticFiles(directory=str(directory)), name=path.strip("/").replace("/", "-"))
