"""Reading text and JSON from users' files, with errors that name the file and line.

Every reader of JSON or JSON Lines input goes through here, so a missing
file, a folder, bytes that are not UTF-8 or a malformed line all give the same
clear InputError (exit code 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from retrieval.errors import InputError


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """The file's text; ``utf-8-sig`` also accepts a byte-order mark."""
    try:
        return Path(path).read_text(encoding=encoding)
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", path=path) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None


def parse_json(text: str, path: str | Path) -> Any:
    """One JSON document; a syntax error names its line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"malformed JSON: {err.msg} (column {err.colno})",
                         path=path, line=err.lineno) from None


def load_json(path: str | Path) -> Any:
    return parse_json(read_text(path), path)


def iter_json_lines(text: str, path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-empty line of JSON Lines text."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"malformed JSON: {err.msg} (column {err.colno})",
                             path=path, line=lineno) from None
        yield lineno, obj
