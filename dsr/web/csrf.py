"""CSRF tokens, signed with itsdangerous and bound to the browser.

A token is ``csrf.TIMESTAMP.SIGNATURE``: a timestamped signature (``TimestampSigner``)
under the site's secret, salted with what binds it — the application's name and, when the
browser is signed in, its session key, else a random nonce kept in an ``HttpOnly``,
``SameSite=Strict`` cookie. So a token made for another browser or another session, a
cookie and field chosen by an attacker (the plain double submit), a tampered timestamp or
a token older than ``max_age`` is refused. Nothing secret is in the token: the page may
show it.
"""

from __future__ import annotations

from itsdangerous import BadSignature, TimestampSigner

#: the signed value (the binding is in the salt, so the token reveals nothing)
VALUE = b"csrf"


def _signer(secret: bytes, app: str, binding: str, issued: float | None = None) -> TimestampSigner:
    if issued is None:
        return TimestampSigner(secret, salt=f"dsr.csrf|{app}|{binding}")
    return _IssuedAt(int(issued), secret, salt=f"dsr.csrf|{app}|{binding}")


class _IssuedAt(TimestampSigner):
    """A signer whose tokens say they were made at ``issued`` (tests make old ones)."""

    def __init__(self, issued: int, secret: bytes, salt: str) -> None:
        super().__init__(secret, salt=salt)
        self.issued = issued

    def get_timestamp(self) -> int:
        return self.issued


def issue(secret: bytes, app: str, binding: str, issued: float | None = None) -> str:
    """A token for ``binding`` (a session key or a browser nonce) of application ``app``,
    made now or at ``issued`` (seconds since the epoch)."""
    return _signer(secret, app, binding, issued).sign(VALUE).decode("ascii")


def valid(secret: bytes, app: str, binding: str | None, sent: object, max_age: float) -> bool:
    """Whether ``sent`` is a token made for ``binding`` of ``app`` in the last ``max_age`` seconds
    (and not in the future)."""
    if not binding or not isinstance(sent, str) or not sent or not sent.isascii():
        return False
    try:
        value = _signer(secret, app, binding).unsign(sent, max_age=max_age)  # type: ignore[call-overload]  # a float age: itsdangerous compares it, declares an int
    except BadSignature:  # wrong binding or secret, tampered, expired or from the future
        return False
    return value == VALUE
