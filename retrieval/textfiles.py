"""Text files that may be gzipped: read by content (gzip magic bytes), written
gzipped when the name ends in ``.gz``. Runs and qrels use these, so
``x.run.gz`` works wherever ``x.run`` does.
"""

from __future__ import annotations

import contextlib
import gzip
import io
from pathlib import Path
from typing import IO, Iterator

from retrieval.atomic import atomic_write
from retrieval.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, decompressed when it is gzip; a corrupt or truncated gzip
    file is an InputError naming it."""
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, ValueError) as err:   # BadGzipFile is an OSError
        raise InputError(f"not a readable gzip file ({err})", path=path) from None


def read_lines(path: str | Path) -> list[str]:
    """Lines of a UTF-8 text file (gzip or plain), split on ``\\n`` only (so a
    stray U+2028 or form feed stays inside its line), without the newlines.
    Unreadable or non-UTF-8 files are an InputError naming the file."""
    try:
        lines = read_bytes(path).decode("utf-8").split("\n")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text ({err.reason} at byte {err.start})", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@contextlib.contextmanager
def atomic_write_text(path: str | Path) -> Iterator[IO[str]]:
    """Like ``atomic_write`` for text, gzipped when ``path`` ends in ``.gz``.

    The gzip header carries no file name and time 0, so the same content gives
    the same bytes (and the same sha256) every time.
    """
    path = Path(path)
    if not path.name.endswith(".gz"):
        with atomic_write(path) as handle:
            yield handle
        return
    with atomic_write(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped:
            with io.TextIOWrapper(zipped, encoding="utf-8", newline="\n") as text:
                yield text
