"""A board's tables as CSV and LaTeX (``eval.tables``, as ``dsr board export`` writes them)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from eval.board import leaderboard
from eval.board.routes.deps import BoardDep, find_phase
from eval.board.service import Board
from retrieval.errors import InputError

router = APIRouter()


def export(board: Board, collection: str, phase: str, kind: str, select: str, baseline: int | None):
    from eval.tables import to_csv, to_latex

    found = find_phase(board, collection, phase)
    if found is None:
        return PlainTextResponse("no such board\n", status_code=404)
    try:
        lb = leaderboard.build(board, found, select=select, baseline_id=baseline)
    except InputError as err:
        return PlainTextResponse(f"{err}\n", status_code=400)
    if kind == "csv":
        return PlainTextResponse(to_csv(lb.results), media_type="text/csv")
    return PlainTextResponse(to_latex(lb.results), media_type="application/x-latex")


@router.get("/board/{collection}/{phase}/export.csv")
def export_csv(board: BoardDep, collection: str, phase: str, select: str = "all",
               baseline: int | None = None):
    return export(board, collection, phase, "csv", select, baseline)


@router.get("/board/{collection}/{phase}/export.tex")
def export_tex(board: BoardDep, collection: str, phase: str, select: str = "all",
               baseline: int | None = None):
    return export(board, collection, phase, "tex", select, baseline)
