"""Errors that mean "the input is wrong" (exit code 2), as opposed to bugs (exit 1).

``InputError`` is a ``ValueError``: a caller of the library catches it as it would
any bad value. Its ``field`` names what was wrong: a field of a file's record, or the
Python parameter of the function called (``max_steps``, ``out``); the command line
shows a parameter as its flag (``--max-steps``), in one place (``dsr.cli.flags``).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType


class InputError(ValueError):
    """Bad input: names the file, the line or record, and the field.

    ``str(err)`` reads ``FILE:LINE: record ID: field FIELD: message``, leaving
    out the parts that are not known, so a user can go straight to the spot.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.record = record
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path if self.line is None else f"{self.path}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.record is not None:
            where.append(f"record {self.record}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ": ".join(where + [self.message])


#: the distribution's name, for install hints
DISTRIBUTION = "dialogue-sentence-retrieval"


def require_extra(module: str, extra: str, field: str | None = None, also: str = "") -> ModuleType:
    """Import ``module`` and return it; when it cannot be imported, an InputError (exit 2)
    saying which extra to install: ``install it with: pip install
    'dialogue-sentence-retrieval[EXTRA]'`` (``also``: a sentence added after it)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        missing = getattr(err, "name", None) or module
        raise InputError(
            f"{missing} is not installed (needed for this command): install it with: "
            f"pip install '{DISTRIBUTION}[{extra}]' (or pip install -e '.[{extra}]' in a "
            f"checkout){also}",
            field=field,
        ) from None
