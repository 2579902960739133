"""Reading text and JSON from users' files, with errors that name the file and line.

Every reader of JSON or JSON Lines input goes through here, so a missing
file, a folder, bytes that are not UTF-8 or a malformed line all give the same
clear InputError (exit code 2).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dsr.core.errors import InputError


def read_text(path: str | Path, encoding: str = "utf-8-sig") -> str:
    """The file's text, UTF-8 with or without a byte order mark at its start (``utf-8-sig``:
    a file some Windows tool saved reads as the same file without the mark)."""
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


def loads(text: str) -> Any:
    """``json.loads`` that fails only with ``json.JSONDecodeError`` on any text.

    Nesting deeper than Python's recursion limit becomes a JSONDecodeError
    instead of a RecursionError, and an integer too long for ``int`` (Python
    refuses over 4,300 digits) is read as a float (so ``inf`` when huge), which
    the number checks of :mod:`dsr.core.data` then reject naming the field.
    """
    try:
        # the C parser's own integers first (a Python callback per number costs a tenth of
        # reading a benchmark file); only text with an integer over 4,300 digits, which
        # Python refuses (ValueError), is read again with the callback
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", text, 0) from None
    except ValueError:
        pass
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError:
        raise
    except ValueError as err:  # pragma: no cover - json raises JSONDecodeError for bad syntax
        raise json.JSONDecodeError(str(err), text, 0) from None


def _parse_int(digits: str) -> int | float:
    return int(digits) if len(digits) <= 4000 else float(digits)


def parse_json(text: str, path: str | Path) -> Any:
    """One JSON document; a syntax error names its line and column."""
    try:
        return loads(text)
    except json.JSONDecodeError as err:
        raise InputError(json_error(err), path=path, line=err.lineno) from None


def load_json(path: str | Path) -> Any:
    return parse_json(read_text(path), path)


def split_lines(text: str) -> list[str]:
    """JSON Lines split on ``\n`` only (``\r\n`` too): ``str.splitlines`` would also split on
    U+2028, U+2029, U+0085 and other characters JSON allows raw inside strings."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def iter_json_lines(text: str, path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, object) for each non-empty line of JSON Lines text."""
    for lineno, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except json.JSONDecodeError as err:
            raise InputError(json_error(err), path=path, line=lineno) from None
        yield lineno, obj


def json_error(err: json.JSONDecodeError) -> str:
    """The message of an InputError for a JSON syntax error."""
    if err.msg == "nested too deeply":
        return "malformed JSON: nested too deeply (arrays or objects inside each other)"
    return f"malformed JSON: {err.msg} (column {err.colno})"


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a file's records are built.

    Reading allocates about ten objects per candidate and frees none, so each of
    the collector's passes (one per 700 allocations, the oldest generation ever
    more often as it grows) walks every record read so far: loading grew as
    size^1.25 (8,460 dialogues, issue 34). The records hold no reference cycles,
    so nothing is left for the collector; it is restored as it was, also on an error.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
