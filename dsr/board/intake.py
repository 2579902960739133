"""What a submission carries, checked before anything is stored: the metadata a participant
types, the run file (one layer of gzip unpacked by the command line's reader, with a size
cap; a compressed stream inside it is refused), the
sidecar (kept only as its published allow-list) and the client's idempotency key.

Every refusal is a :class:`Refused` with the HTTP status to answer and a message
naming the field; nothing is written before these checks pass.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from dsr.board.published import check_text, published_metadata
from dsr.board.settings import RUN_TYPES
from dsr.core.errors import InputError
from dsr.core.textfiles import TooLarge, unpack, without_bom
from dsr.db.refused import Refused

MAX_SIDECAR = 256 * 1024
_KEY = re.compile(r"[\x21-\x7e]{1,200}")


def text_field(value: str, field: str, multiline: bool = False) -> str:
    """``check_text`` as a 422 naming the field."""
    try:
        return check_text(value, field, multiline=multiline)
    except InputError as err:
        raise Refused(422, f"field '{field}' {err.message}") from None


@dataclass
class Metadata:
    """What a participant says about a run (required on the form and the API)."""

    system: str
    description: str = ""
    link: str = ""
    run_type: str = "automatic"
    trained_on_collection: bool = False

    def check(self) -> Metadata:
        self.system = text_field((self.system or "").strip(), "system")
        if not self.system:
            raise Refused(422, "system name is required")
        if len(self.system) > 200:
            raise Refused(422, "system name is longer than 200 characters")
        self.description = text_field(self.description or "", "description", multiline=True)
        if len(self.description) > 5000:
            raise Refused(422, "description is longer than 5000 characters")
        self.link = text_field((self.link or "").strip(), "link")
        if len(self.link) > 500:
            raise Refused(422, "link is longer than 500 characters")
        if self.link and not self.link.startswith(("https://", "http://")):
            raise Refused(422, "link must start with https:// or http://")
        if self.run_type not in RUN_TYPES:
            raise Refused(422, f"run type must be one of {', '.join(RUN_TYPES)}")
        return self


#: the magic bytes of the compressed formats a run upload may not hold (after its one gzip layer)
COMPRESSED = {
    b"\x1f\x8b": "gzip",
    b"PK\x03\x04": "zip",
    b"PK\x05\x06": "zip",
    b"BZh": "bz2",
    b"\xfd7zXZ\x00": "xz",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x5d\x00\x00": "lzma",
}


def compressed(data: bytes) -> str | None:
    """The compressed format ``data`` starts with (its magic bytes, after a byte order mark),
    or None: a run file's text is never one."""
    head = without_bom(data[:16])
    return next((name for magic, name in COMPRESSED.items() if head.startswith(magic)), None)


def unpack_run(data: bytes, limit: int) -> bytes:
    """The run's text: the upload, or every member of a gzip upload (the command line's
    reader, ``dsr.core.textfiles.unpack``), capped at ``limit`` unpacked bytes. One layer: a
    compressed stream inside the gzip (a gzip of a gzip, of a zip, ...), or an upload in
    another compressed format, is refused before anything reads it further, so the cap counts
    every byte the scorer reads."""
    if len(data) > limit:
        raise Refused(413, f"the run file is larger than {limit} bytes")
    outer = compressed(data)
    if outer not in (None, "gzip"):
        raise Refused(422, f"the run file is {outer}: the board takes a run as plain text or gzip (one layer)")
    try:
        text = unpack(data, limit)
    except TooLarge:
        raise Refused(413, f"the unpacked run file is larger than {limit} bytes") from None
    except InputError as err:
        raise Refused(422, f"the run file is not valid gzip: {err.message}") from None
    inner = compressed(text)
    if inner is not None:
        raise Refused(
            422, f"the run file holds {inner} inside its {outer or 'text'}: the board unpacks one layer of gzip, no more"
        )
    return text


def published_from_sidecar(sidecar: bytes | None) -> dict[str, Any]:
    """The published allow-list of an uploaded sidecar ({} without one); a sidecar that is
    not a JSON object, is nested too deeply to read, or is too large is refused."""
    if not sidecar:
        return {}
    if len(sidecar) > MAX_SIDECAR:
        raise Refused(413, f"the sidecar is larger than {MAX_SIDECAR} bytes")
    try:
        value = json.loads(without_bom(sidecar).decode("utf-8"))
    except RecursionError:
        raise Refused(422, "the sidecar is nested too deeply to read") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise Refused(422, f"the sidecar is not JSON ({err})") from None
    if not isinstance(value, dict):
        raise Refused(422, "the sidecar must be a JSON object")
    _check_json_text(value)
    return published_metadata(value)


def _check_json_text(value: Any) -> None:
    """Every key and string of the sidecar is text a board can keep (``check_text``: no lone
    surrogate, no NUL or other control character), else a 422 naming its place."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                text_field(key, f"sidecar {where}{key!r} (a key)", multiline=True)
                stack.append((f"{where}{key}.", child))
        elif isinstance(item, list):
            stack.extend((f"{where}{i}.", child) for i, child in enumerate(item))
        elif isinstance(item, str):
            text_field(item, f"sidecar {where.rstrip('.')}", multiline=True)


def idempotency_key(value: str | None) -> str | None:
    """The ``Idempotency-Key`` header: 1 to 200 printable ASCII characters, or absent."""
    if value is None or value == "":
        return None
    if not _KEY.fullmatch(value):
        raise Refused(422, "header 'Idempotency-Key' must be 1 to 200 printable ASCII characters")
    return value


def ranking_digest(text: bytes) -> str:
    """The sha256 of a run's parsed ranking: its (topic, doc, score, tag) records, sorted, the
    score as a float. Line ends (CRLF), blank or added lines, spacing, the order of lines, the
    rank column (trec_eval ignores it) and how a score is written (``1.5``, ``1.50``) do not
    change it; another doc, score or run tag does. A line that is not six fields (the
    validator refuses such a run) enters as its fields."""
    records = []
    for line in without_bom(text).decode("utf-8", "replace").splitlines():
        fields = line.split()
        if len(fields) == 6:
            qid, _q0, doc, _rank, score, tag = fields
            try:
                score = repr(float(score))
            except ValueError:
                pass
            records.append([qid, doc, score, tag])
        elif fields:
            records.append(fields)
    records.sort()
    return hashlib.sha256(json.dumps(records, separators=(",", ":")).encode("utf-8")).hexdigest()


def request_digest(phase_id: int, digest: str, filename: str, meta: Metadata, published: dict[str, Any]) -> str:
    """The sha256 of everything a submission request says: the board, the run's bytes, the
    file name, the metadata and the sidecar's published part (an ``Idempotency-Key`` is bound
    to it: the same key with any other field is refused)."""
    request = {
        "phase": phase_id,
        "run": digest,
        "filename": filename,
        "system": meta.system,
        "description": meta.description,
        "link": meta.link,
        "run_type": meta.run_type,
        "trained_on_collection": bool(meta.trained_on_collection),
        "published": published,
    }
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode("utf-8")).hexdigest()


def display_name(filename: str | None) -> str:
    """The uploaded file's base name, for display only (never used in a path)."""
    name = (filename or "run").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(ch for ch in name if ch.isprintable())[:200]
    return name or "run"
