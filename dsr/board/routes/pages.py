"""The browser pages: the index, a board, a run (with its per-dialogue plot on public
phases), the run file download, and the submission form."""

from __future__ import annotations

import json
from functools import partial
from typing import Any
from urllib.parse import urlencode

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from dsr.board import leaderboard
from dsr.board.leaderboard import published_means, released_values
from dsr.board.models import Submission, Team
from dsr.board.release import uses_ladder
from dsr.board.routes.deps import (
    BoardDep,
    bearer_team,
    checked_form,
    error_page,
    find_phase,
    in_thread,
    page,
    read_upload,
    web_session,
    web_team,
)
from dsr.board.scoring import PhaseData
from dsr.board.service import RUN_TYPES, Board, Refused, tie_note
from dsr.core.errors import InputError
from dsr.db.base import utcnow
from dsr.evaluation.measures import nan_to_none
from dsr.evaluation.significance import mean_ci, paired_effects
from dsr.web.signin import CSRF_REFUSED

router = APIRouter()


@router.get("/", response_class=HTMLResponse)
def index(request: Request, board: BoardDep) -> HTMLResponse:
    phases = board.phases.all()
    now = utcnow()
    return page(request, "index.html", {"phases": phases, "closed_reasons": {p.id: p.closed_reason(now) for p in phases}})


@router.get("/board/{collection}/{phase}", response_class=HTMLResponse)
def board_page(
    request: Request,
    board: BoardDep,
    collection: str,
    phase: str,
    sort: str | None = None,
    order: str = "desc",
    select: str = "best",
    baseline: int | None = None,
    subset: str = "all",
    team: str | None = None,
    baselines: str = "chosen",
    columns: str = "primary",
) -> HTMLResponse:
    found = find_phase(board, collection, phase)
    if found is None:
        return error_page(request, 404, "no such board")
    try:
        lb = leaderboard.build(
            board,
            found,
            sort=sort,
            select=select,
            baseline_id=baseline,
            descending=order != "asc",
            subset=subset,
            team=team or None,
            baselines=baselines,
        )
    except InputError as err:
        return error_page(request, 400, str(err))
    who = web_team(board, request)
    quota = board.quota(who, found) if who is not None else None
    shown = lb.measures if columns == "all" else [lb.sort]

    view = {"order": order, "subset": subset, "baselines": baselines, "columns": columns}
    link = partial(_board_link, lb, view)

    return page(
        request,
        "board.html",
        {
            "lb": lb,
            "subset": subset,
            "order": order,
            "shown": shown,
            "columns": columns,
            "baselines_view": baselines,
            "quota": quota,
            "team": who,
            "link": link,
            "closed": found.closed_reason(utcnow()),
        },
    )


#: a board page's query parameters left out of its links when they are these
LINK_DEFAULTS = {"order": "desc", "select": "best", "subset": "all", "baselines": "chosen", "columns": "primary"}


def _board_link(lb: leaderboard.Leaderboard, view: dict[str, Any], **changes: Any) -> str:
    """The query string of the board page ``lb`` shown as ``view`` with ``changes`` made."""
    params = {
        "sort": lb.sort,
        "order": view["order"],
        "select": lb.select,
        "subset": view["subset"],
        "baseline": lb.baseline.id if lb.baseline else None,
        "team": lb.team,
        "baselines": view["baselines"],
        "columns": view["columns"],
        **changes,
    }
    defaults = {**LINK_DEFAULTS, "sort": lb.primary}
    return "?" + urlencode({k: v for k, v in params.items() if v is not None and defaults.get(k) != v})


def run_view(board: Board, submission_id: int, measure: str | None = None) -> dict | None:
    """What a run page and ``GET /api/runs/ID`` show: aggregates (none for a final phase
    before it is frozen) with the primary measure's intervals; on public phases the
    per-dialogue values and the comparison with the board's baseline."""
    sub = board.submission(submission_id)
    if sub is None:
        return None
    data = board.phase_data(sub.phase)
    primary = sub.phase.primary()
    view: dict[str, Any] = {
        "sub": sub,
        "means": None,
        "measures": data.measures,
        "subsets": list(data.subsets),
        "published": json.loads(sub.sidecar_json) if sub.sidecar_json else None,
        "ties": tie_note(sub.tied_topics),
        "plot": None,
        "primary": primary,
        "ci": None,
        "versus": None,
        "ladder": False,
    }
    if not sub.phase.scores_shown:
        return view
    if uses_ladder(sub.phase):  # its team's ladder values after it: no mean, no interval
        team_runs = [s for s in board.submissions(sub.phase) if s.team_id == sub.team_id]
        view["means"] = released_values(board, sub.phase, data, team_runs)[sub.id]
        view["ci"] = {name: {"low": None, "high": None} for name in data.subsets}
        view["ladder"] = True
        return view
    matrix = board.matrix(sub, len(data.measures))
    j = data.measures.index(primary)
    view["means"] = published_means(sub, data)
    intervals = {}
    for name, idx in data.subsets.items():
        _, low, high = mean_ci(matrix[idx, j][:, None], "t")
        intervals[name] = {"low": nan_to_none(low[0]), "high": nan_to_none(high[0])}
    view["ci"] = intervals
    if not sub.phase.hidden:  # per-topic values of a hidden phase never leave the server
        plot = versus_baseline(board, sub, data, measure if measure in data.measures else primary, matrix)
        view["plot"], view["versus"] = plot, plot["versus"]
    return view


def versus_baseline(board: Board, sub: Submission, data: PhaseData, measure: str, matrix: np.ndarray) -> dict[str, Any]:
    """Per dialogue, ``measure`` of the run and of the board's baseline (public phases):
    values, differences sorted for a plot, and wins/ties/losses
    (``dsr.evaluation.significance.paired_effects``)."""
    j = data.measures.index(measure)
    base = board.submission(sub.phase.baseline_id) if sub.phase.baseline_id else None
    column = matrix[:, j]
    other = board.matrix(base, len(data.measures))[:, j] if base is not None and base.id != sub.id else None
    topics = [
        {"id": t, "subset": d.subset, "value": float(v), "baseline": None if other is None else float(other[i])}
        for i, (t, d, v) in enumerate(zip(data.topics, data.collection.dialogues, column))
    ]
    versus: dict[str, Any] | None = None
    if other is not None and base is not None:
        effects = paired_effects(column[:, None], other[:, None])
        versus = {
            "baseline": {"id": base.id, "system": base.system},
            "measure": measure,
            **{
                k: nan_to_none(float(effects[k][0])) if k in ("diff", "ci_low", "ci_high", "d") else int(effects[k][0])
                for k in effects
            },
        }
        order = sorted(range(len(topics)), key=lambda i: column[i] - other[i], reverse=True)
        versus["sorted"] = [{"id": topics[i]["id"], "diff": float(column[i] - other[i])} for i in order]
    return {"measure": measure, "topics": topics, "versus": versus}


@router.get("/runs/{submission_id}", response_class=HTMLResponse)
def run_page(
    request: Request, board: BoardDep, submission_id: int, measure: str | None = None, submitted: int = 0
) -> HTMLResponse:
    view = run_view(board, submission_id, measure)
    if view is None:
        return error_page(request, 404, "no such run")
    team = web_team(board, request)
    quota = board.quota(team, view["sub"].phase) if team is not None and submitted else None
    return page(request, "run.html", {**view, "submitted": bool(submitted), "quota": quota, "team": team})


def run_file(board: Board, team: Team, submission_id: int) -> Response:
    """The stored run file: its own team's (or an organiser's) only."""
    sub = board.submission(submission_id)
    if sub is None:
        return JSONResponse({"error": "no such run"}, status_code=404)
    if sub.team_id != team.id and not team.organiser:
        return JSONResponse({"error": "this run belongs to another team"}, status_code=403)
    return Response(
        board.store.get(sub.sha256),
        media_type="text/plain",
        headers={"Content-Disposition": f'attachment; filename="run-{sub.id}.run"'},
    )


@router.get("/runs/{submission_id}/file")
def run_file_page(request: Request, board: BoardDep, submission_id: int) -> Response:
    team = web_team(board, request) or bearer_team(board, request)
    if team is None:
        return error_page(request, 401, "log in with your team's token to download run files")
    return run_file(board, team, submission_id)


def submit_context(board: Board, team: Team) -> dict:
    phases = board.phases.all()
    now = utcnow()
    return {
        "phases": phases,
        "run_types": RUN_TYPES,
        "quotas": {p.id: board.quota(team, p) for p in phases},
        "closed": {p.id: p.closed_reason(now) for p in phases},
    }


@router.get("/submit", response_class=HTMLResponse)
def submit_form(request: Request, board: BoardDep) -> Response:
    team = web_team(board, request)
    if team is None:
        return RedirectResponse("/login", status_code=303)
    return page(request, "submit.html", {"team": team, **submit_context(board, team)})


@router.post("/submit")
async def submit_page(request: Request, board: BoardDep) -> Response:
    session = web_session(board, request)
    team = web_team(board, request)
    if team is None or session is None:
        return error_page(request, 401, "log in with your token first")
    form = await checked_form(request)
    if form is None:
        return error_page(request, 403, CSRF_REFUSED)
    wait = await in_thread(request, board.limiter.allow, team.id)  # a write: never on the event loop
    if wait:
        return error_page(request, 429, f"too many submissions: try again in {wait:.0f} s")
    values = {k: form.get(k) for k in ("phase", "system", "description", "link", "run_type")}
    try:
        phase = next((p for p in board.phases.all() if str(p.id) == str(values["phase"])), None)
        if phase is None:
            raise Refused(422, "choose a phase")
        upload = await read_upload(form)
        accepted = await in_thread(request, partial(board.submit, member_id=session.member_id), team, phase, *upload)
    except Refused as refused:
        return page(
            request,
            "submit.html",
            {"team": team, **submit_context(board, team), "refused": refused, "values": values},
            refused.status,
        )
    return RedirectResponse(f"/runs/{accepted.row.id}?submitted=1", status_code=303)
