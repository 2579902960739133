"""``dsr submit``: send a run to a leaderboard server's JSON API.

Only the published metadata of the run's sidecar is sent (``dsr.board.published``:
the board's allow-list), so paths and command lines never leave the machine. Each
submission carries a fresh ``Idempotency-Key``; when the answer does not come back
(a timeout, a dropped connection) the same request is sent again with the same key,
and the server answers with the first submission's answer instead of storing it twice.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from dsr.board.published import published_metadata
from dsr.board.settings import SUBMIT_PARAMS
from dsr.core.errors import InputError, require_extra
from dsr.core.jsonio import load_json
from dsr.core.params import resolve
from dsr.core.run import sidecar_path

RETRIES = 2


@dataclass
class Answer:
    status: int
    body: dict
    published: dict[str, Any] = field(default_factory=dict)
    replayed: bool = False


def published_for(run: Path, sidecar: str | Path | None) -> dict[str, Any]:
    """The published metadata of the run's sidecar (``RUN.json`` beside it unless given)."""

    side = Path(sidecar) if sidecar else sidecar_path(run)
    if sidecar and not side.is_file():
        raise InputError("no such sidecar file", path=side, field="sidecar")
    if not side.is_file():
        return {}
    value = load_json(side)
    if not isinstance(value, dict):
        raise InputError("a run sidecar must be a JSON object", path=side, field="sidecar")
    return published_metadata(value)


def server_url(httpx: ModuleType, server: str) -> str:
    """``server`` (``http://HOST:PORT``, ``https://...``) without a trailing slash, or an
    InputError naming ``server`` when it is not such a URL (``http://[::1``, ``ftp://x``, ``x``)."""
    text = (server or "").strip().rstrip("/")
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as err:
        raise InputError(f"{server!r} is not a URL ({err}); e.g. http://127.0.0.1:8000", field="server") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InputError(f"{server!r} is not an http(s) URL with a host; e.g. http://127.0.0.1:8000", field="server")
    return text


def submit(
    server: str,
    token: str,
    collection: str,
    run: str | Path,
    *,
    phase: str | None = None,
    system: str,
    description: str = "",
    link: str = "",
    run_type: str = "automatic",
    trained: bool = False,
    sidecar: str | Path | None = None,
    timeout: float = 120.0,
    retries: int = RETRIES,
) -> Answer:
    """POST the run and its published metadata to ``server``, retrying with the same key."""
    resolve({"description": description, "link": link, "run_type": run_type}, SUBMIT_PARAMS, "")
    httpx = require_extra("httpx", "board", field="server")
    run = Path(run)
    if not run.is_file():
        raise InputError("no such run file", path=run)
    published = published_for(run, sidecar)
    files = {"run": (run.name, run.read_bytes(), "application/octet-stream")}
    if published:
        files["sidecar"] = ("published.json", json.dumps(published).encode(), "application/json")
    data = {
        "collection": collection,
        "phase": phase or "",
        "system": system,
        "description": description,
        "link": link,
        "run_type": run_type,
        "trained_on_collection": "true" if trained else "false",
    }
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": uuid.uuid4().hex}
    url = server_url(httpx, server) + "/api/submissions"
    for attempt in range(retries + 1):
        try:
            response = httpx.post(url, data=data, files=files, timeout=timeout, headers=headers)
            break
        except (httpx.TimeoutException, httpx.RemoteProtocolError, httpx.ReadError) as err:
            if attempt == retries:
                raise InputError(f"no answer from the server after {retries + 1} tries: {err}", field="server") from None
            time.sleep(min(2.0, 0.5 * 2**attempt))
        except httpx.HTTPError as err:
            raise InputError(f"cannot reach the server: {err}", field="server") from None
    try:
        body = response.json()
    except ValueError:
        body = {"error": response.text[:500]}
    if not isinstance(body, dict):  # not the board's answer (a proxy's?): said as it came
        body = {"error": json.dumps(body)[:500]}
    return Answer(response.status_code, body, published, response.headers.get("idempotency-replayed") == "true")


def quota_text(quota: dict) -> str:
    """A team's quota as the board and ``dsr submit`` say it: what is left, today and in all."""
    parts = []
    if quota.get("daily_limit") is not None:
        parts.append(f"{quota['daily_left']} of {quota['daily_limit']} left today")
    if quota.get("total_limit") is not None:
        parts.append(f"{quota['total_left']} of {quota['total_limit']} left in all")
    if not parts:
        return f"no limit ({quota['total_used']} submitted)"
    text = ", ".join(parts)
    if quota.get("daily_limit") is not None:
        text += f" (the day resets at {quota['resets_at'][11:16]} UTC)"
    return text
