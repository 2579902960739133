"""What a board publishes from a run's sidecar: an allow-list, and text checks at intake.

A sidecar (``RUN.json``) records how a run was made, with the paths, command
line and machine of whoever made it. A board keeps and serves only
:func:`published_metadata` of it:

* ``ranker`` / ``reranker`` / ``fusion``: the stage's name;
* ``params``: parameters whose value is a number, true/false, null or a short
  string that is not a path; ``query``: the query strategy;
* ``models``: each model's name, source, weights sha256 and revision (a name
  or spec that is a path is left out);
* ``versions``: package versions;
* ``collection``: its name and content hash;
* ``description``, ``paper`` and ``code`` when the sidecar has them (links:
  http(s) URLs only).

Anything else (``command_line``, ``inputs``, ``collection.meta``, a label
file's path, the machine) is dropped before the row is written. ``dsr
submit`` applies the same function before it sends, and prints the result.

:func:`check_text` is the intake rule for every string a submission carries
(metadata fields and published values): UTF-8 text without NUL or other
control characters (newline and tab allowed where ``multiline``), so no
database refuses it later and no page fails to encode it.
"""

from __future__ import annotations

import re
from typing import Any

from dsr.core.errors import InputError
from dsr.core.text import unprintable

STAGE_KEYS = ("ranker", "reranker", "fusion")
MODEL_KEYS = ("name", "spec", "source", "weights_sha256", "revision")
MAX_STRING = 200
MAX_ITEMS = 100
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.@+-]{0,63}")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]{0,63}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def is_pathlike(text: str) -> bool:
    """A local path (absolute, home, relative with folders, Windows) or a URL-like ``x:``
    string; a hub id such as ``org/model`` (one slash) is not."""
    return (
        text.startswith(("/", "~", ".")) or "\\" in text or ":" in text or text.count("/") > 1 or any(ch.isspace() for ch in text)
    )


def _plain(value: Any) -> Any:
    """``value`` when it is a publishable scalar, else None (dropped)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value if value == value and abs(value) != float("inf") else None
    if (
        isinstance(value, str)
        and len(value) <= MAX_STRING
        and not is_pathlike(value)
        and not _CONTROL.search(value)
        and _encodable(value)
    ):
        return value
    return None


def _link(value: Any) -> str | None:
    if (
        isinstance(value, str)
        and value.startswith(("https://", "http://"))
        and len(value) <= 500
        and not _CONTROL.search(value)
        and not any(ch.isspace() for ch in value)
        and _encodable(value)
    ):
        return value
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON \ud800 escape
        return False
    return True


def _params(params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        return {}
    return {
        key: value
        for key, value in list(params.items())[:MAX_ITEMS]
        if isinstance(key, str) and _KEY.fullmatch(key) and (value is None or _plain(value) is not None)
    }


def _models(models: Any) -> list[dict[str, Any]]:
    out = []
    for model in (models if isinstance(models, list) else [])[:MAX_ITEMS]:
        if not isinstance(model, dict):
            continue
        kept = {k: _plain(model.get(k)) for k in MODEL_KEYS if _plain(model.get(k)) is not None}
        if kept.get("weights_sha256") is not None and not _HEX64.fullmatch(str(kept["weights_sha256"])):
            kept.pop("weights_sha256")
        if kept:
            out.append(kept)
    return out


def _versions(versions: Any) -> dict[str, str]:
    if not isinstance(versions, dict):
        return {}
    return {
        k: v
        for k, v in list(versions.items())[:MAX_ITEMS]
        if isinstance(k, str) and _KEY.fullmatch(k) and isinstance(v, str) and _VERSION.fullmatch(v)
    }


def published_metadata(sidecar: Any) -> dict[str, Any]:
    """The allow-listed part of a run sidecar (see the module's docstring); {} for anything
    that is not a JSON object."""
    if not isinstance(sidecar, dict):
        return {}
    out: dict[str, Any] = {}
    for key in STAGE_KEYS:
        if _plain(sidecar.get(key)) is not None and isinstance(sidecar.get(key), str):
            out[key] = sidecar[key]
    params = _params(sidecar.get("params"))
    if params:
        out["params"] = params
    query = sidecar.get("query", (sidecar.get("params") or {}).get("query") if isinstance(sidecar.get("params"), dict) else None)
    if isinstance(query, str) and _plain(query) is not None:
        out["query"] = query
    for key, value in (("models", _models(sidecar.get("models"))), ("versions", _versions(sidecar.get("versions")))):
        if value:
            out[key] = value
    collection = sidecar.get("collection")
    if isinstance(collection, dict):
        kept = {
            "name": _plain(collection.get("name")) if isinstance(collection.get("name"), str) else None,
            "hash": collection.get("hash")
            if isinstance(collection.get("hash"), str) and _HEX64.fullmatch(collection["hash"])
            else None,
        }
        if any(v is not None for v in kept.values()):
            out["collection"] = {k: v for k, v in kept.items() if v is not None}
    description = sidecar.get("description")
    if (
        isinstance(description, str)
        and description.strip()
        and _encodable(description)
        and not _CONTROL.search(re.sub(r"[\n\r\t]", "", description))
    ):
        out["description"] = description[:2000]
    for key in ("paper", "code"):
        if _link(sidecar.get(key)):
            out[key] = sidecar[key]
    return out


def check_name(value: str, field: str) -> str:
    """``value`` when it is a name a board can show (a team, a member, a collection or a phase):
    :func:`check_text`, and printable (``dsr.core.text.unprintable``: no format character,
    such as a bidi control that shows the name as another), else an InputError naming
    ``field``."""
    check_text(value, field)
    hidden = unprintable(value)
    if hidden is not None:
        raise InputError(f"holds {hidden}, which is not printable: a name is shown as it is written", field=field)
    return value


def check_text(value: str, field: str, *, multiline: bool = False) -> str:
    """``value`` when it is text a board can store and serve, else an InputError naming
    ``field``: no lone surrogate (not UTF-8), no NUL or other control character
    (newline, carriage return and tab allowed when ``multiline``)."""
    if not _encodable(value):
        raise InputError("is not UTF-8 text (a lone surrogate)", field=field)
    text = value.replace("\n", "").replace("\r", "").replace("\t", "") if multiline else value
    bad = _CONTROL.search(text)
    if bad:
        raise InputError(
            f"holds a control character (U+{ord(bad.group()):04X} at position {value.index(bad.group()) + 1})", field=field
        )
    return value
