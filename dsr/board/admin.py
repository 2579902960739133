"""Organisers' operations beyond ``service.Board``: baselines, rebuild, export, the participant
file."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select, update

from dsr.board import leaderboard, participants, scoring
from dsr.board.db import read_session, write_session
from dsr.board.intake import ranking_digest
from dsr.board.models import Phase, Submission
from dsr.board.published import published_metadata
from dsr.board.service import Board, Metadata, Refused
from dsr.core import __version__
from dsr.core.errors import InputError
from dsr.core.run import sidecar_path
from dsr.evaluation.grouping import run_names
from dsr.evaluation.tables import latex_escape, to_csv, to_latex

#: what a folder given to ``add-baseline`` stands for
RUN_PATTERNS = ("*.run", "*.run.gz")


def _runs_in(folder: Path) -> list[Path]:
    return sorted(p for pattern in RUN_PATTERNS for p in folder.glob(pattern) if p.is_file())


def run_files(paths: list[str]) -> list[Path]:
    """The run files named, a folder standing for its ``*.run`` and ``*.run.gz`` files (or its
    ``runs/``'s: ``dsr reproduce``'s ``out/NAME``)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = _runs_in(path) or _runs_in(path / "runs")
            if not found:
                raise InputError("no *.run or *.run.gz file in this folder (or its runs/)", path=path)
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise InputError("no such run file or folder", path=path)
    return out


def add_baselines(board: Board, phase: Phase, paths: list[str], default: bool = False) -> list[Submission]:
    """Load runs (e.g. ``dsr reproduce``'s) as baseline rows; the first becomes the phase's
    baseline unless one is set (``default`` makes the first of these the baseline)."""
    team = board.organisers()
    added = []
    files = run_files(paths)
    names = run_names([str(p) for p in files])       # BM25.run.gz -> BM25, as dsr evaluate names it
    for path in files:
        side = sidecar_path(path)
        sidecar = side.read_bytes() if side.is_file() else None
        name = names[str(path)]
        description = ""
        if sidecar:
            try:   # the published allow-list only: a sidecar's paths never reach the board
                config = published_metadata(json.loads(sidecar))
                description = json.dumps({k: config[k] for k in ("ranker", "params", "query")
                                          if k in config}, sort_keys=True)
            except (ValueError, RecursionError):
                pass
        try:
            accepted = board.submit(team, phase, path.read_bytes(), path.name,
                                    Metadata(name, description, "", "automatic", False), sidecar,
                                    baseline=True)
        except Refused as refused:
            details = "; ".join(p["text"] for p in refused.problems[:5])
            raise InputError(f"{refused.message}{': ' + details if details else ''}", path=path) from None
        added.append(accepted.row)
    if default and added:
        with write_session(board.engine) as s:
            s.get(Phase, phase.id).baseline_id = added[0].id
    return added


@dataclass
class RebuildReport:
    rescored: int = 0
    changed: int = 0
    missing: list[int] = field(default_factory=list)     # rows whose run file is gone or altered
    orphans: int = 0                                    # store files no row names (harmless)


def rebuild(board: Board) -> RebuildReport:
    """Re-validate and re-score every stored run from the run store and the phases' labels.

    The board is a function of runs + labels: this recomputes every row's
    per-topic values and means (e.g. after labels were corrected or the
    database was restored from an older backup) and reports rows whose file is
    missing or no longer matches its sha256, and store files no row names.
    """
    report = RebuildReport()
    named: set[str] = set()
    changed: set[int] = set()
    with read_session(board.engine) as s:
        subs = list(s.scalars(select(Submission).order_by(Submission.id)))
    for sub in subs:
        named.add(sub.sha256)
        if not board.store.verify(sub.sha256):
            report.missing.append(sub.id)
            continue
        data = board.phase_data(sub.phase)
        scored = scoring.check_and_score(data, board.store.path(sub.sha256))
        if not scored.validation.valid:
            report.missing.append(sub.id)
            continue
        blob = scoring.matrix_bytes(scored.values.values)
        means = json.dumps(scored.means(data.subsets))
        tied = len(scored.validation.tied_topics)
        with write_session(board.engine) as s:
            row = s.get(Submission, sub.id)
            if row.per_topic != blob or row.means_json != means or row.tied_topics != tied:
                report.changed += 1
                changed.add(row.phase_id)
                row.per_topic, row.means_json, row.tied_topics = blob, means, tied
        _set_ranking(board, sub.id, ranking_digest(board.store.get(sub.sha256)))
        report.rescored += 1
    if changed:      # every server process reads these phases' rows again (their caches' key)
        with write_session(board.engine) as s:
            s.execute(update(Phase).where(Phase.id.in_(changed))
                      .values(scores_version=Phase.scores_version + 1))
    for path in board.store.root.glob("??/*"):
        if path.name not in named:
            report.orphans += 1
    return report


def _set_ranking(board: Board, submission_id: int, ranking: str) -> None:
    """Record a row's ranking digest (rows of before migration 0005 hold their file's); kept
    as it was when the team has that ranking on the board already under another row."""
    from sqlalchemy.exc import IntegrityError

    try:
        with write_session(board.engine) as s:
            s.get(Submission, submission_id).ranking_sha256 = ranking
    except IntegrityError:
        pass


def provenance(phase: Phase) -> dict[str, str | None]:
    """What an export says of where its numbers come from: the board, the collection's
    content hash, the dsr version, and when the board was frozen (None while it is not)."""

    return {"board": f"{phase.collection}/{phase.name}", "collection_hash": phase.collection_hash,
            "dsr_version": __version__,
            "frozen": None if phase.frozen_at is None else phase.frozen_at.isoformat() + "Z"}


def export(board: Board, phase: Phase, fmt: str, select_rule: str = "all") -> str:
    """The board as CSV or LaTeX (``dsr.evaluation.tables``, after comment lines ``#`` / ``%`` naming
    the board, collection hash, dsr version and freeze) or JSON (the API's answer with them)."""

    lb = leaderboard.build(board, phase, select=select_rule, baselines="all")
    about = provenance(phase)
    if fmt == "json":
        return json.dumps({**lb.to_json(), "provenance": about}, indent=2, ensure_ascii=False) + "\n"
    if lb.ladder:    # a hidden phase exports what its board shows: ladder values
        return _ladder_table(lb, fmt, about)
    if fmt == "csv":
        return _with_columns(to_csv(lb.results), {k: v or "" for k, v in about.items()})
    return "".join(f"% {k}: {v or 'not frozen'}\n" for k, v in about.items()) + to_latex(lb.results)


def _ladder_table(lb, fmt: str, about: dict) -> str:
    """A hidden phase's published values (``dsr.board.release``) as CSV (one line per run,
    subset and measure) or LaTeX (one row per run, the measures on "all")."""
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["run", "team", "system", "subset", "measure", "published", *about])
        for e in lb.entries:
            sub = e.submission
            for subset, values in e.means.items():
                for measure, value in values.items():
                    writer.writerow([sub.id, sub.team.name, sub.system, subset, measure,
                                     "" if value is None else f"{value:g}", *(v or "" for v in about.values())])
        return out.getvalue()
    head = " & ".join(["System", "Team", *map(latex_escape, lb.measures)])
    lines = [f"% {k}: {v or 'not frozen'}\n" for k, v in about.items()]
    lines += ["% published values of a hidden phase (the ladder rule, docs/board.md)\n",
              "\\begin{tabular}{ll" + "r" * len(lb.measures) + "}\n\\toprule\n", head + " \\\\\n\\midrule\n"]
    for e in lb.entries:
        cells = ["" if e.means["all"][m] is None else f"{e.means['all'][m]:.2f}" for m in lb.measures]
        lines.append(" & ".join([latex_escape(e.submission.system), latex_escape(e.submission.team.name),
                                 *cells]) + " \\\\\n")
    lines.append("\\bottomrule\n\\end{tabular}\n")
    return "".join(lines)


def _with_columns(text: str, columns: dict[str, str]) -> str:
    """CSV ``text`` with ``columns`` (the same value on every row) added on the right."""
    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for i, row in enumerate(rows):
        writer.writerow(row + (list(columns) if i == 0 else list(columns.values())))
    return out.getvalue()


def participant_file(board: Board, phase: Phase, out: str | Path,
                     keep_scores: bool = False) -> participants.ParticipantFile:
    """The dialogues of a hidden phase as participants get them (:mod:`dsr.board.participants`),
    written atomically to ``out``."""
    if not phase.hidden:
        raise InputError(f"{phase.collection}/{phase.name} is a public phase: its labels are public, give "
                         "participants its collection file", field="phase")
    data = board.phase_data(phase)
    return participants.write(data.collection, data.qrels, out, keep_scores=keep_scores)
