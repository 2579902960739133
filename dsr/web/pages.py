"""Server-rendered pages: Jinja2 templates (autoescaped) over one shared layout.

An application's templates sit in its own folder and extend its ``base`` template, which
extends ``layout.html`` of this package (the page's head, the header with the sign-in
state, the main block). The sign-in form (``signin.html``) and the error page
(``problem.html``) are this package's too. Every page gets the CSRF token (``csrf``) and
who is signed in, and sets the browser's CSRF nonce cookie when it has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from dsr.web.signin import SignIn

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Site:
    """What the layout shows of an application: its name, home, sign-in pages, back link."""

    name: str
    home: str
    login: str
    logout: str
    base: str
    back: str = "Back"
    #: the application's sign-in page (it extends ``signin.html``)
    signin: str = "login.html"


class Pages:
    """An application's templates and how it renders a page.

    ``who`` names the signed-in party in the templates (``team``, ``assessor``) and
    ``identify(request)`` finds it; ``headers`` are added to every page."""

    def __init__(
        self,
        directory: Path,
        site: Site,
        signin: SignIn,
        who: str,
        identify: Callable[[Request], Any],
        headers: dict[str, str] | None = None,
    ) -> None:
        self.templates = Jinja2Templates(directory=[str(directory), str(TEMPLATES)])
        self.site, self.signin, self.who, self.identify = site, signin, who, identify
        self.headers = headers or {}

    @property
    def filters(self) -> dict[str, Callable]:
        return self.templates.env.filters

    def render(self, request: Request, name: str, context: dict, status: int = 200) -> HTMLResponse:
        """Template ``name`` with ``context``, the CSRF token, the site and who is signed in
        (``context[who]`` when the caller knows it already)."""
        token, nonce = self.signin.csrf_token(request)
        person = context.pop(self.who, None) or self.identify(request)
        response = self.templates.TemplateResponse(
            request,
            name,
            {**context, "csrf": token, self.who: person, "signed_in": person, "site": self.site},
            status_code=status,
        )
        response.headers.update(self.headers)
        self.signin.keep_nonce(request, response, nonce)
        return response

    def problem(self, request: Request, status: int, message: str) -> HTMLResponse:
        """The error page: the status and a message for people."""
        return self.render(request, "problem.html", {"status": status, "message": message}, status)

    def signin_form(self, request: Request, error: str | None = None) -> HTMLResponse:
        """The application's sign-in page (``site.signin``, which extends ``signin.html``)."""
        return self.render(request, self.site.signin, {"error": error} if error else {}, 401 if error else 200)
