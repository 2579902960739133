"""What the board or judging does not allow (a submission, a grade, a page), with the HTTP
status to answer with: one type for both applications, their routes and their commands."""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    """Not accepted: ``status`` is the HTTP status to answer with; ``problems`` (a run's) and
    ``quota`` and any ``extra`` fields go into the JSON answer (:meth:`to_json`)."""

    def __init__(
        self, status: int, message: str, problems: list[dict] | None = None, quota: dict | None = None, **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems or []
        self.quota = quota
        self.extra = extra

    def to_json(self) -> dict[str, Any]:
        return {"error": self.message, "problems": self.problems, "quota": self.quota, **self.extra}
