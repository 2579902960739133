"""Tokens: 256 random bits shown once, only their sha256 stored (a team member's, an assessor's)."""

from __future__ import annotations

import hashlib
import secrets


def hash_token(token: str) -> str:
    """Tokens are 256 random bits, so one sha256 is enough (no salt or slow hash needed)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return "dsr_" + secrets.token_urlsafe(32)
