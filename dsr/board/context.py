"""What the board's services share, explicitly and typed: the database, the settings, the
clock and the board's secret. :class:`~dsr.board.members.Members` and
:class:`~dsr.board.phases.Phases` each take one :class:`BoardContext`;
:class:`dsr.board.service.Board` makes it and composes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Engine

from dsr.board.models import Setting, utcnow
from dsr.board.settings import BoardSettings
from dsr.db.engine import read_session


@dataclass
class BoardContext:
    """One board's database (``engine``), settings, clock and secret."""

    engine: Engine
    settings: BoardSettings
    clock: Callable[[], datetime] = utcnow
    _secret: bytes | None = field(default=None, init=False, repr=False)

    def login_secret(self, refresh: bool = False) -> bytes:
        """The board's secret, which binds a login form to its browser and keys the release
        noise (migration 0005 makes it); read once (``refresh``: read it again)."""
        if self._secret is None or refresh:
            with read_session(self.engine) as s:
                row = s.get(Setting, "login_secret")
            if row is None:
                raise RuntimeError("the board's database has no login secret: run its migrations")
            self._secret = bytes.fromhex(row.value)
        return self._secret
