"""Token sign-in and sign-out for a web application, and its CSRF check.

A member's (or an assessor's) token opens a server-side session: the cookie holds a random
key, the application's table (``table``: a model with ``key_hash`` and ``expires_at``) its
sha256. Signing out deletes the row, and the application revokes sessions by deleting
rows or by refusing them in its own check (the board ends a session whose member lost its
token), so a copied cookie is of no use after either. Forms and browser API calls carry a
CSRF token of :mod:`dsr.web.csrf` bound to this session, or before signing in to the
browser's nonce cookie.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import Engine, delete, select

from dsr.web import csrf

#: how long a signed-out form's CSRF token is good for (seconds)
FORM_SECONDS = 86400
CSRF_REFUSED = "the form's CSRF token is missing or wrong: reload the page"


def key_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def now() -> datetime:
    """UTC now without tzinfo (how the tables store times)."""
    return datetime.now(UTC).replace(tzinfo=None)


def secret_of(request: Request) -> bytes:
    """The site's signing secret (``app.state.secret``, see :func:`dsr.web.security.web_app`)."""
    return request.app.state.secret


@dataclass(frozen=True)
class SignIn:
    """One application's sign-in: its cookies, its sessions' table, where to go after.

    ``read`` and ``write`` give a database session on an engine (a context manager; ``write``
    commits)."""

    app: str
    cookie: str
    csrf_cookie: str
    table: Any
    read: Callable[[Any], AbstractContextManager]
    write: Callable[[Any], AbstractContextManager]
    days: int = 7

    def session(self, engine: Engine, request: Request) -> Any:
        """The row of the browser's session cookie, if there is one and it has not expired."""
        key = request.cookies.get(self.cookie)
        if not key:
            return None
        with self.read(engine) as s:
            row = s.scalar(select(self.table).where(self.table.key_hash == key_hash(key)))
        return None if row is None or row.expires_at < now() else row

    def start(self, engine: Engine, request: Request, to: str, **fields: Any) -> RedirectResponse:
        """Open a session (``fields`` fill the row: who signed in) and go to ``to``; expired rows
        are swept on the way."""
        key = secrets.token_urlsafe(32)
        with self.write(engine) as s:
            s.execute(delete(self.table).where(self.table.expires_at < now()))
            s.add(self.table(key_hash=key_hash(key), expires_at=now() + timedelta(days=self.days), **fields))
        response = RedirectResponse(to, status_code=303)
        response.set_cookie(
            self.cookie, key, httponly=True, samesite="lax", max_age=self.days * 86400, secure=request.url.scheme == "https"
        )
        return response

    def end(self, engine: Engine, request: Request, to: str) -> RedirectResponse:
        """Sign out: the session's row is deleted (its cookie is of no use after) and the cookie too."""
        key = request.cookies.get(self.cookie)
        if key:
            with self.write(engine) as s:
                s.execute(delete(self.table).where(self.table.key_hash == key_hash(key)))
        response = RedirectResponse(to, status_code=303)
        response.delete_cookie(self.cookie)
        return response

    def _binding(self, request: Request) -> tuple[str | None, float]:
        key = request.cookies.get(self.cookie)
        if key:
            return "session:" + key_hash(key), self.days * 86400
        nonce = request.cookies.get(self.csrf_cookie)
        return (None if not nonce else "nonce:" + nonce), FORM_SECONDS

    def csrf_token(self, request: Request) -> tuple[str, str | None]:
        """A CSRF token for this browser's session, or for its nonce; and the nonce when the
        browser has none yet (made now: :meth:`keep_nonce` sets it on the answer)."""
        binding, _ = self._binding(request)
        nonce = None
        if binding is None:
            nonce = secrets.token_urlsafe(32)
            binding = "nonce:" + nonce
        return csrf.issue(secret_of(request), self.app, binding), nonce

    def keep_nonce(self, request: Request, response: Response, nonce: str | None) -> None:
        if nonce is not None:
            response.set_cookie(self.csrf_cookie, nonce, httponly=True, samesite="strict", secure=request.url.scheme == "https")

    def csrf_ok(self, request: Request, sent: object) -> bool:
        """Whether ``sent`` (a form field or an ``X-CSRF-Token`` header) is a token of this
        browser's session, or of its nonce when signed out, sent from a page of this site
        (:func:`same_origin`)."""
        binding, max_age = self._binding(request)
        return same_origin(request) and csrf.valid(secret_of(request), self.app, binding, sent, max_age)

    async def checked_form(self, request: Request) -> Any:
        """The posted form when its ``csrf`` field passes :meth:`csrf_ok`, else None."""
        form = await request.form()
        return form if self.csrf_ok(request, form.get("csrf")) else None


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (an ``Origin`` header is one already)."""
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}" if rest else url.lower()


def same_origin(request: Request) -> bool:
    """Whether a form post comes from a page of this site: its ``Origin`` header (every browser
    sends one with a POST; ``null`` from a sandboxed or privacy-stripped page is refused),
    else its ``Referer``, is this server's own origin (as the request reached it: the Host
    header, or the ``X-Forwarded-Host`` a reverse proxy sets, which no form can send, and the
    scheme a trusted proxy forwarded). A login-form token and its nonce
    cookie that an attacker fetched and planted in a victim's browser are then of no use:
    the post that would log the victim in as the attacker comes from the attacker's page.
    A request with neither header is not a browser's form (a script with its own token) and
    is judged by its CSRF token alone."""
    sent = request.headers.get("origin")
    if sent is None:
        referer = request.headers.get("referer")
        if not referer:
            return True
        sent = origin_of(referer)
    hosts = [request.url.netloc, *request.headers.get("x-forwarded-host", "").split(",")[:1]]
    return origin_of(sent) in {f"{request.url.scheme}://{h.strip()}".lower() for h in hosts if h.strip()}
