"""``dsr submit``: send a run to a leaderboard server's JSON API."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from retrieval.errors import InputError
from retrieval.run import sidecar_path


@dataclass
class Answer:
    status: int
    body: dict


def submit(server: str, token: str, collection: str, run: str | Path, *, phase: str | None = None,
           system: str, description: str = "", link: str = "", run_type: str = "automatic",
           trained: bool = False, sidecar: str | Path | None = None, timeout: float = 120.0) -> Answer:
    """POST the run (and its sidecar: ``RUN.json`` beside it unless given) to ``server``."""
    import httpx

    run = Path(run)
    if not run.is_file():
        raise InputError("no such run file", path=run)
    side = Path(sidecar) if sidecar else sidecar_path(run)
    if sidecar and not side.is_file():
        raise InputError("no such sidecar file", path=side, field="--sidecar")
    files = {"run": (run.name, run.read_bytes(), "application/octet-stream")}
    if side.is_file():
        files["sidecar"] = (side.name, side.read_bytes(), "application/json")
    data = {"collection": collection, "phase": phase or "", "system": system,
            "description": description, "link": link, "run_type": run_type,
            "trained_on_collection": "true" if trained else "false"}
    url = server.rstrip("/") + "/api/submissions"
    try:
        response = httpx.post(url, data=data, files=files, timeout=timeout,
                              headers={"Authorization": f"Bearer {token}"})
    except httpx.HTTPError as err:
        raise InputError(f"cannot reach the server: {err}", field="--server") from None
    try:
        body = response.json()
    except ValueError:
        body = {"error": response.text[:500]}
    return Answer(response.status_code, body)
