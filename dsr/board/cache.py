"""What a board process keeps of its phases' scores: one object owns it all.

A phase's scoring data (its collection, labels and measures made ready), each row's
per-topic matrix and each team's ladder values are read often and change only when the
organisers rebuild or remove rows; :class:`ScoreCache` keeps them, keyed so that a change
is a new key (a phase's ``scores_version``, a team's list of rows), and is the one place
that forgets them (:meth:`ScoreCache.forget_rows`). Threads of one server share it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from dsr.board.scoring import PhaseData

#: ladders kept before the oldest go (a team's ladder is one list per list of its rows)
MAX_LADDERS = 10_000


class ScoreCache:
    """Phase data, row matrices and ladder values of one board process, thread-safe."""

    def __init__(self) -> None:
        self._phase_data: dict[tuple[int, str], PhaseData] = {}
        self._matrices: dict[tuple[int, int, int], Any] = {}  # (phase, scores_version, row)
        self._versions: dict[int, int] = {}  # each phase's newest seen
        self._ladders: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def phase_data(self, key: tuple[int, str], build: Callable[[], PhaseData]) -> PhaseData:
        """The phase data of ``key`` (phase id, spec key), built once (outside the lock)."""
        with self._lock:
            data = self._phase_data.get(key)
        if data is None:
            data = build()
            with self._lock:
                self._phase_data[key] = data
        return data

    def matrix(self, phase_id: int, version: int, row: int, read: Callable[[], Any]) -> Any:
        """A row's per-topic values at its phase's ``version`` (read once); a newer version of
        the phase lets the older values go."""
        key = (phase_id, version, row)
        cached = self._matrices.get(key)
        if cached is None:
            cached = read()
            with self._lock:
                if self._versions.setdefault(phase_id, version) < version:
                    self._versions[phase_id] = version
                    for old in [k for k in self._matrices if k[0] == phase_id and k[1] < version]:
                        del self._matrices[old]
                self._matrices[key] = cached
        return cached

    def ladder(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """A team's ladder values for ``key`` (its phase, version, quota, data and rows: a row
        never changes once written), made once."""
        with self._lock:
            if key in self._ladders:
                return self._ladders[key]
        values = make()
        with self._lock:
            if len(self._ladders) >= MAX_LADDERS:
                self._ladders.clear()
            self._ladders[key] = values
        return values

    def held(self) -> dict[str, int]:
        """How many of each it holds (a warmed-up server holds its open phases' data)."""
        with self._lock:
            return {"phases": len(self._phase_data), "matrices": len(self._matrices), "ladders": len(self._ladders)}

    def forget_rows(self) -> None:
        """Rows were removed: every matrix and ladder goes (phase data stays)."""
        with self._lock:
            self._matrices.clear()
            self._ladders.clear()
