"""A board's exports: CSV and LaTeX (``dsr.evaluation.tables``) and JSON, as ``dsr board export`` writes
them (``dsr.board.admin.export``: with the board, collection hash, dsr version and freeze).
A final phase exports nothing before it is frozen."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from dsr.board.admin import export as render
from dsr.board.routes.deps import BoardDep, find_phase
from dsr.board.service import Board
from dsr.core.errors import InputError

router = APIRouter()
MEDIA = {"csv": "text/csv", "latex": "application/x-latex", "json": "application/json"}


def export(board: Board, collection: str, phase: str, kind: str, select: str) -> PlainTextResponse:
    found = find_phase(board, collection, phase)
    if found is None:
        return PlainTextResponse("no such board\n", status_code=404)
    if not found.scores_shown:
        return PlainTextResponse("this final phase publishes its results when the organisers freeze it\n", status_code=403)
    try:
        return PlainTextResponse(render(board, found, kind, select), media_type=MEDIA[kind])
    except InputError as err:
        return PlainTextResponse(f"{err}\n", status_code=400)


@router.get("/board/{collection}/{phase}/export.csv")
def export_csv(board: BoardDep, collection: str, phase: str, select: str = "all") -> PlainTextResponse:
    return export(board, collection, phase, "csv", select)


@router.get("/board/{collection}/{phase}/export.tex")
def export_tex(board: BoardDep, collection: str, phase: str, select: str = "all") -> PlainTextResponse:
    return export(board, collection, phase, "latex", select)


@router.get("/board/{collection}/{phase}/export.json")
def export_json(board: BoardDep, collection: str, phase: str, select: str = "all") -> PlainTextResponse:
    return export(board, collection, phase, "json", select)
