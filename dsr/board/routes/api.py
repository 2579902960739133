"""The JSON API under ``/api`` (``Authorization: Bearer TOKEN`` where a team is needed)."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.routing import Route

from dsr.board import leaderboard
from dsr.board.intake import idempotency_key
from dsr.board.models import Member, Team, iso
from dsr.board.routes.deps import (
    BoardDep,
    bearer_identity,
    bearer_team,
    find_phase,
    in_thread,
    read_upload,
    unauthorized,
)
from dsr.board.routes.pages import run_file, run_view
from dsr.board.service import Board, Refused, tie_note
from dsr.core.errors import InputError

router = APIRouter(prefix="/api")


@router.get("/boards", response_model=None)
def api_boards(board: BoardDep) -> dict[str, Any]:
    return {
        "boards": [
            {
                "collection": p.collection,
                "phase": p.name,
                "hidden": p.hidden,
                "final": p.final,
                "frozen": p.frozen_at is not None,
                "primary": p.primary(),
                "opens": iso(p.opens_at),
                "closes": iso(p.closes_at),
                "measures": json.loads(p.measures_json),
                "topics": len(json.loads(p.topics_json)),
                "daily_quota": p.daily_quota,
                "total_quota": p.total_quota,
                "url": f"/api/boards/{p.collection}/{p.name}",
            }
            for p in board.phases.all()
        ]
    }


@router.get("/boards/{collection}/{phase}", response_model=None)
def api_board(
    board: BoardDep,
    collection: str,
    phase: str,
    sort: str | None = None,
    select: str = "best",
    baseline: int | None = None,
    subset: str = "all",
    team: str | None = None,
    baselines: str = "chosen",
) -> JSONResponse | dict[str, Any]:
    found = find_phase(board, collection, phase)
    if found is None:
        return JSONResponse({"error": "no such board"}, status_code=404)
    try:
        return leaderboard.build(
            board, found, sort=sort, select=select, baseline_id=baseline, subset=subset, team=team or None, baselines=baselines
        ).to_json()
    except InputError as err:
        return JSONResponse({"error": str(err)}, status_code=400)


@router.get("/boards/{collection}/{phase}/topics", response_model=None)
def api_topics(board: BoardDep, collection: str, phase: str) -> JSONResponse | dict[str, Any]:
    """The dialogues a run for this phase ranks (ids and subsets; never labels)."""
    found = find_phase(board, collection, phase)
    if found is None:
        return JSONResponse({"error": "no such board"}, status_code=404)
    data = board.phase_data(found)
    return {
        "collection": collection,
        "phase": phase,
        "topics": [{"id": d.id, "subset": d.subset} for d in data.collection.dialogues],
    }


@router.get("/runs/{submission_id}", response_model=None)
def api_run(request: Request, board: BoardDep, submission_id: int) -> JSONResponse | dict[str, Any]:
    view = run_view(board, submission_id)
    if view is None:
        return JSONResponse({"error": "no such run"}, status_code=404)
    return run_json(board, view, bearer_team(board, request))


@router.get("/runs/{submission_id}/file")
def api_run_file(request: Request, board: BoardDep, submission_id: int) -> Response:
    team = bearer_team(board, request)
    if team is None:
        return unauthorized()
    return run_file(board, team, submission_id)


@router.get("/quota/{collection}/{phase}", response_model=None)
def api_quota(request: Request, board: BoardDep, collection: str, phase: str) -> JSONResponse | dict[str, Any]:
    team = bearer_team(board, request)
    if team is None:
        return unauthorized()
    found = find_phase(board, collection, phase)
    if found is None:
        return JSONResponse({"error": "no such board"}, status_code=404)
    return {"team": team.name, "collection": collection, "phase": phase, "quota": board.quota(team, found)}


def _admit(board: Board, request: Request) -> tuple[Team, Member] | JSONResponse:
    """Who is submitting, and whether the team's rate allows it (both read or written in the
    database: in a thread, never on the event loop)."""
    found = bearer_identity(board, request)
    if found is None:
        return unauthorized()
    wait = board.limiter.allow(found[0].id)
    if wait:
        return JSONResponse(
            {"error": f"rate limit: try again in {wait:.1f} s"},
            status_code=429,
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    return found


async def api_submit(request: Request) -> JSONResponse:
    """``POST /api/submissions``: a plain Starlette route, matched before every router
    (:data:`FIRST`): the board's busiest answer skips FastAPI's walk over the site's routes
    and its dependency resolution (the same answers: it takes nothing FastAPI would parse)."""
    board: Board = request.app.state.board
    admitted = await in_thread(request, _admit, board, request)
    if isinstance(admitted, JSONResponse):
        return admitted
    team, member = admitted
    form = await request.form()
    try:
        collection, phase_name = str(form.get("collection") or ""), str(form.get("phase") or "")
        key = idempotency_key(request.headers.get("idempotency-key"))
        upload = await read_upload(form)
        accepted = await in_thread(
            request, partial(board.submit_named, key=key, member_id=member.id), team, collection, phase_name or None, *upload
        )
    except Refused as refused:
        return JSONResponse(refused.to_json(), status_code=refused.status)
    return JSONResponse(accepted.answer, status_code=201, headers={"Idempotency-Replayed": "true"} if accepted.replayed else None)


#: routes the app matches before its routers (:func:`dsr.board.app.create_app`)
FIRST = [Route("/api/submissions", api_submit, methods=["POST"])]


def run_json(board: Board, view: dict[str, Any], viewer: Team | None = None) -> dict[str, Any]:
    """A run as the API shows it; its file's sha256 only to its own team (and organisers): with
    it anyone could tell whether a team submitted a run they can make themselves."""
    sub = view["sub"]
    out = {
        "id": sub.id,
        "collection": sub.phase.collection,
        "phase": sub.phase.name,
        "hidden": sub.phase.hidden,
        "team": sub.team.name,
        "system": sub.system,
        "description": sub.description,
        "link": sub.link,
        "run_type": sub.run_type,
        "trained_on_collection": sub.trained_on_collection,
        "baseline": sub.baseline,
        "filename": sub.filename,
        "lines": sub.lines,
        "submitted": sub.created_at.isoformat() + "Z",
        "published": view["published"],
        "tied_topics": sub.tied_topics,
        "ties": tie_note(sub.tied_topics),
        "means": view["means"],
        "primary": view["primary"],
        "ci": None if view["ladder"] else view["ci"],
        "vs_baseline": view["versus"],
    }
    if viewer is not None and (viewer.id == sub.team_id or viewer.organiser):
        out["sha256"] = sub.sha256
    if view["plot"] is not None:
        data = board.phase_data(sub.phase)
        matrix = board.matrix(sub, len(data.measures))
        out["per_topic"] = {t: dict(zip(data.measures, map(float, row))) for t, row in zip(data.topics, matrix)}
    return out
