"""Reading text and JSON from users' files, with errors that name the file and line.

Every reader of JSON or JSON Lines input goes through here, so a missing
file, a folder, bytes that are not UTF-8, a malformed line or a lone surrogate escape
(``\ud800`` without its pair: text no UTF-8 file can hold) all give the same clear
InputError (exit code 2).
"""

from __future__ import annotations

import gc
import json
import re
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


#: a ``\\uD800``-``\\uDFFF`` escape: a surrogate, valid only as one half of a pair
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def lone_surrogate(obj: Any, where: str = "") -> str | None:
    """Where (``a.b[2].c``) a string of ``obj`` holds a lone surrogate (a ``\\ud800`` escape
    without its pair: no UTF-8 text can hold it), or None."""
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return where or "(the value)"
        return None
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        inner = f"{where}[{key}]" if isinstance(key, int) else (f"{where}.{key}" if where else str(key))
        if isinstance(key, str) and lone_surrogate(key) is not None:
            return inner
        found = lone_surrogate(value, inner)
        if found is not None:
            return found
    return None


def _no_lone_surrogate(text: str, obj: Any, path: str | Path, line: int | None) -> Any:
    """``obj`` unless a string in it holds a lone surrogate (then an InputError naming the
    field); checked only when ``text`` holds a surrogate escape at all."""
    if _SURROGATE_ESCAPE.search(text):
        found = lone_surrogate(obj)
        if found is not None:
            raise InputError(
                "a \\ud800-\\udfff escape without its pair (a lone surrogate): no UTF-8 text can hold it",
                path=path,
                line=line,
                field=found,
            )
    return obj


def _parse_int(digits: str) -> int | float:
    return int(digits) if len(digits) <= 4000 else float(digits)


def parse_json(text: str, path: str | Path) -> Any:
    """One JSON document; a syntax error names its line and column."""
    try:
        obj = loads(text)
    except json.JSONDecodeError as err:
        raise InputError(json_error(err), path=path, line=err.lineno) from None
    return _no_lone_surrogate(text, obj, path, None)


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
        yield lineno, _no_lone_surrogate(line, obj, path, lineno)


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
    size^1.25 (measured on 8,460 dialogues). The records hold no reference cycles,
    so nothing is left for the collector; it is restored as it was, also on an error.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
