"""Organisers' operations beyond ``service.Board``: baselines, rebuild, export, the participant
file."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select, update

from dsr.board import leaderboard, participants, scoring
from dsr.board.archive import RunFiles
from dsr.board.intake import ranking_digest, unpack_run
from dsr.board.leaderboard import Entry, Leaderboard
from dsr.board.models import Phase, Submission, Team
from dsr.board.published import published_metadata
from dsr.board.service import Board, Metadata, Refused
from dsr.core import __version__, docs_url
from dsr.core.errors import InputError
from dsr.core.run import parse_run_line, sidecar_path
from dsr.core.textfiles import without_bom
from dsr.core.ties import trec_eval_order
from dsr.db.engine import get_row, read_session, write_session
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


class Loaded(list[Submission]):
    """The baseline rows ``add_baselines`` added (a list of Submission), and the runs it did not
    load because they hold a ranking already loaded: ``aliases`` of (run name, the row's system
    name and id it is the same ranking as)."""

    def __init__(self, rows: Iterable[Submission] = (), aliases: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(rows)
        self.aliases: list[tuple[str, str]] = list(aliases)


@dataclass
class _Baseline:
    path: Path
    name: str
    data: bytes
    text: bytes
    sidecar: bytes | None
    ranking: str


def add_baselines(board: Board, phase: Phase, paths: list[str], default: bool = False) -> Loaded:
    """Load runs (e.g. ``dsr reproduce``'s) as baseline rows; the first becomes the phase's
    baseline unless one is set (``default`` makes the first of these the baseline).

    A run whose ranking is one loaded already (``dsr reproduce`` writes ``BM25`` and the
    configuration it was tuned to, ``BM25_title+all``, as the same ranking) is not loaded again:
    it is reported as an alias of that row. All or nothing: every run is checked before any is
    loaded, and a failure while loading takes out the rows this call added."""
    team = board.members.organisers()
    files = run_files(paths)
    names = run_names([str(p) for p in files])  # BM25.run.gz -> BM25, as dsr evaluate names it
    runs = [_baseline(board, phase, path, names[str(path)]) for path in files]
    with read_session(board.engine) as s:
        present = {
            row.ranking_sha256: row
            for row in s.scalars(select(Submission).where(Submission.phase_id == phase.id, Submission.team_id == team.id))
        }
    loading: dict[str, _Baseline] = {}
    aliases = []
    for run in runs:
        first = present.get(run.ranking)
        if first is not None:
            aliases.append((run.name, f"#{first.id} {first.system} (on the board already)"))
        elif run.ranking in loading:
            aliases.append((run.name, loading[run.ranking].name))
        else:
            loading[run.ranking] = run
    _check_all(board, team, phase, list(loading.values()))
    added = Loaded(aliases=aliases)
    try:
        for run in loading.values():
            added.append(
                board.submit(
                    team,
                    phase,
                    run.data,
                    run.path.name,
                    Metadata(run.name, _description(run.sidecar), "", "automatic", False),
                    run.sidecar,
                    baseline=True,
                ).row
            )
    except BaseException as err:
        _take_out(board, phase, added)
        if isinstance(err, Refused):
            raise InputError(err.message, path=run.path) from None
        raise
    if default and added:
        with write_session(board.engine) as s:
            get_row(s, Phase, phase.id).baseline_id = added[0].id
    return added


def _baseline(board: Board, phase: Phase, path: Path, name: str) -> _Baseline:
    """A run file read as the board reads an upload, with its sidecar and ranking digest."""
    side = sidecar_path(path)
    data = path.read_bytes()
    try:
        text = unpack_run(data, board.upload_limit(phase))
    except Refused as refused:
        raise InputError(refused.message, path=path) from None
    return _Baseline(path, name, data, text, side.read_bytes() if side.is_file() else None, ranking_digest(text))


def _description(sidecar: bytes | None) -> str:
    """A baseline's description: its ranker, parameters and query, from the published part of
    its sidecar (a sidecar's paths never reach the board)."""
    if not sidecar:
        return ""
    try:
        config = published_metadata(json.loads(sidecar))
    except (ValueError, RecursionError):
        return ""
    return json.dumps({k: config[k] for k in ("ranker", "params", "query") if k in config}, sort_keys=True)


def _check_all(board: Board, team: Team, phase: Phase, runs: list[_Baseline]) -> None:
    """Every run validated and scored as the board will (nothing stored): one InputError naming
    each run that would be refused, before any is loaded."""
    pdata = board.phase_data(phase)
    wrong = []
    for run in runs:
        try:
            board._score(team, phase, pdata, run.text, run.path.name)
        except Refused as refused:
            details = "; ".join(p["text"] for p in refused.problems[:5])
            wrong.append(f"{run.path}: {refused.message}{': ' + details if details else ''}")
    if wrong:
        raise InputError(f"{len(wrong)} of {len(runs)} run(s) would be refused, so none was loaded: " + " | ".join(wrong))


def _take_out(board: Board, phase: Phase, rows: list[Submission]) -> None:
    """Delete the rows a failed ``add_baselines`` added (their stored files stay: a run file is
    kept by its sha256 and may be another row's; ``rebuild`` counts unnamed ones)."""
    if not rows:
        return
    ids = {row.id for row in rows}
    with write_session(board.engine) as s:
        fresh = get_row(s, Phase, phase.id)
        if fresh.baseline_id in ids:
            fresh.baseline_id = None
        for row_id in ids:
            s.delete(get_row(s, Submission, row_id))
    board.cache.forget_rows()


def stored_runs(board: Board) -> RunFiles:
    """The board's run files as the organisers' commands use them: by digest, through the run
    store's interface (:class:`~dsr.board.archive.RunFiles`), never by path."""
    return board.store


def identical_rankings(board: Board) -> list[dict]:
    """Runs of different teams on one board that rank every topic alike (the same documents in
    the same order: the same per-topic values, whatever their scores or tags): for organisers,
    as ``dsr board list`` shows them. ``[{"board", "runs": [{"id", "team", "system"}]}]``."""
    groups: dict[tuple[str, str], list[Submission]] = {}
    with read_session(board.engine) as s:
        rows = list(s.scalars(select(Submission).order_by(Submission.id)))
        teams = {row.id: row.team.name for row in rows}
        phases = {row.id: f"{row.phase.collection}/{row.phase.name}" for row in rows}
    for row in rows:
        data = stored_runs(board).read(row.sha256)
        if data is not None:
            groups.setdefault((phases[row.id], order_digest(data)), []).append(row)
    out = []
    for (where, _), members in groups.items():
        if len({teams[r.id] for r in members}) > 1:
            out.append({"board": where, "runs": [{"id": r.id, "team": teams[r.id], "system": r.system} for r in members]})
    return out


#: order digests by file sha256 (a stored run never changes)
_ORDERS: dict[str, str] = {}


def order_digest(text: bytes) -> str:
    """The sha256 of a run's order: each topic's documents as trec_eval ranks them (score as
    float32 descending, ties by doc id descending), scores and tags left out (a file that does
    not parse: the sha256 of its bytes)."""
    digest = hashlib.sha256(text).hexdigest()
    if digest in _ORDERS:
        return _ORDERS[digest]
    rankings: dict[str, list[tuple[str, float]]] = {}
    for line in without_bom(text).decode("utf-8", "replace").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parsed, problems = parse_run_line(line.split())
        if problems or parsed is None:
            return digest
        rankings.setdefault(parsed.qid, []).append((parsed.doc, parsed.score))
    order = {q: [d for d, _ in trec_eval_order(r)] for q, r in sorted(rankings.items())}
    _ORDERS[digest] = hashlib.sha256(json.dumps(order, separators=(",", ":")).encode("utf-8")).hexdigest()
    return _ORDERS[digest]


@dataclass
class RebuildReport:
    rescored: int = 0
    changed: int = 0
    missing: list[int] = field(default_factory=list)  # rows whose run file is gone or altered
    orphans: int = 0  # store files no row names (harmless)


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
        stored = stored_runs(board).read(sub.sha256)
        if stored is None:
            report.missing.append(sub.id)
            continue
        data = board.phase_data(sub.phase)
        with stored_runs(board).scratch(stored) as path:
            scored = scoring.check_and_score(data, path)
        if not scored.validation.valid:
            report.missing.append(sub.id)
            continue
        assert scored.values is not None, "a valid run is scored"
        blob = scoring.matrix_bytes(scored.values.values)
        means = json.dumps(scored.means(data.subsets))
        tied = len(scored.validation.tied_topics)
        with write_session(board.engine) as s:
            row = get_row(s, Submission, sub.id)
            if row.per_topic != blob or row.means_json != means or row.tied_topics != tied:
                report.changed += 1
                changed.add(row.phase_id)
                row.per_topic, row.means_json, row.tied_topics = blob, means, tied
        _set_ranking(board, sub.id, ranking_digest(stored))
        report.rescored += 1
    if changed:  # every server process reads these phases' rows again (their caches' key)
        with write_session(board.engine) as s:
            s.execute(update(Phase).where(Phase.id.in_(changed)).values(scores_version=Phase.scores_version + 1))
    report.orphans = len(set(stored_runs(board).digests()) - named)
    return report


def _set_ranking(board: Board, submission_id: int, ranking: str) -> None:
    """Record a row's ranking digest (rows of before migration 0005 hold their file's); kept
    as it was when the team has that ranking on the board already under another row."""
    from sqlalchemy.exc import IntegrityError

    try:
        with write_session(board.engine) as s:
            get_row(s, Submission, submission_id).ranking_sha256 = ranking
    except IntegrityError:
        pass


def provenance(phase: Phase) -> dict[str, str | None]:
    """What an export says of where its numbers come from: the board, the collection's
    content hash, the dsr version, and when the board was frozen (None while it is not)."""

    return {
        "board": f"{phase.collection}/{phase.name}",
        "collection_hash": phase.collection_hash,
        "dsr_version": __version__,
        "frozen": None if phase.frozen_at is None else phase.frozen_at.isoformat() + "Z",
    }


def export(board: Board, phase: Phase, fmt: str, select_rule: str = "all") -> str:
    """The board as CSV or LaTeX (``dsr.evaluation.tables``, after comment lines ``#`` / ``%`` naming
    the board, collection hash, dsr version and freeze) or JSON (the API's answer with them)."""

    lb = leaderboard.build(board, phase, select=select_rule, baselines="all")
    about = provenance(phase)
    if fmt == "json":
        return json.dumps({**lb.to_json(), "provenance": about}, indent=2, ensure_ascii=False) + "\n"
    if lb.ladder:  # a hidden phase exports what its board shows: ladder values
        return _ladder_table(lb, fmt, about)
    if fmt == "csv":
        return _with_columns(to_csv(lb.results), {k: v or "" for k, v in about.items()}, _places(lb))
    return "".join(f"% {k}: {v or 'not frozen'}\n" for k, v in about.items()) + _board_latex(lb) + "\n" + to_latex(lb.results)


def _rank_text(entry: Entry) -> str:
    """A row's rank as the board shows it: ``2`` or the range ``2-4``."""
    if not entry.rank:
        return ""
    low, high = entry.rank
    return str(low) if low == high else f"{low}-{high}"


def _places(lb: Leaderboard) -> dict[str, dict[str, str]]:
    """run key -> {"rank", "group"}: the board's rank range and letter group of each row."""
    return {e.key: {"rank": _rank_text(e), "group": e.group} for e in lb.entries}


def _board_latex(lb: Leaderboard) -> str:
    """The board as its page shows it: rank (a range where rows are not significantly
    different), letter group, system, team and the means on the board's subset, ▲/▼ against
    the baseline; the best mean per measure bold."""
    marks = {"better": r"$^{\blacktriangle}$", "worse": r"$^{\blacktriangledown}$"}
    values = {m: [e.means.get(lb.subset, {}).get(m) for e in lb.entries] for m in lb.measures}
    best = {m: max((v for v in vs if v is not None), default=None) for m, vs in values.items()}
    lines = [
        f"% the board on {lb.subset}, sorted by {lb.sort}: rank ranges and letter groups from "
        "all pairs (Holm); rows sharing a letter are not significantly different\n",
        "\\begin{tabular}{rlll" + "r" * len(lb.measures) + "}\n\\toprule\n",
        " & ".join(["Rank", "Group", "System", "Team", *map(latex_escape, lb.measures)]) + " \\\\\n\\midrule\n",
    ]
    for e in lb.entries:
        cells = []
        for m in lb.measures:
            v = e.means.get(lb.subset, {}).get(m)
            text = "" if v is None else f"{v:.3f}"
            top = best[m]
            if v is not None and top is not None and round(v, 3) == round(top, 3):
                text = "\\textbf{" + text + "}"
            cells.append(text + marks.get(e.marks.get(lb.subset, {}).get(m, ""), ""))
        lines.append(
            " & ".join(
                [
                    _rank_text(e).replace("-", "--"),
                    e.group,
                    latex_escape(e.submission.system),
                    latex_escape(e.submission.team.name),
                    *cells,
                ]
            )
            + " \\\\\n"
        )
    lines.append("\\bottomrule\n\\end{tabular}\n")
    return "".join(lines)


def _ladder_table(lb: Leaderboard, fmt: str, about: dict[str, str | None]) -> str:
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
                    writer.writerow(
                        [
                            sub.id,
                            sub.team.name,
                            sub.system,
                            subset,
                            measure,
                            "" if value is None else f"{value:g}",
                            *(v or "" for v in about.values()),
                        ]
                    )
        return out.getvalue()
    head = " & ".join(["System", "Team", *map(latex_escape, lb.measures)])
    lines = [f"% {k}: {v or 'not frozen'}\n" for k, v in about.items()]
    lines += [
        f"% published values of a hidden phase (the ladder rule, {docs_url('board')})\n",
        "\\begin{tabular}{ll" + "r" * len(lb.measures) + "}\n\\toprule\n",
        head + " \\\\\n\\midrule\n",
    ]
    for e in lb.entries:
        cells = ["" if e.means["all"][m] is None else f"{e.means['all'][m]:.2f}" for m in lb.measures]
        lines.append(" & ".join([latex_escape(e.submission.system), latex_escape(e.submission.team.name), *cells]) + " \\\\\n")
    lines.append("\\bottomrule\n\\end{tabular}\n")
    return "".join(lines)


def _with_columns(text: str, columns: dict[str, str], places: dict[str, dict[str, str]] | None = None) -> str:
    """CSV ``text`` with ``columns`` (the same value on every row) added on the right, after
    each run's ``rank`` and ``group`` on the board (``places``, by the ``run`` column)."""
    rows = list(csv.reader(io.StringIO(text)))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    run = rows[0].index("run") if rows and "run" in rows[0] else None
    for i, row in enumerate(rows):
        place = (
            []
            if places is None or run is None
            else (["rank", "group"] if i == 0 else list(places.get(row[run], {"rank": "", "group": ""}).values()))
        )
        writer.writerow(row + place + (list(columns) if i == 0 else list(columns.values())))
    return out.getvalue()


def participant_file(board: Board, phase: Phase, out: str | Path, keep_scores: bool = False) -> participants.ParticipantFile:
    """The dialogues of a hidden phase as participants get them (:mod:`dsr.board.participants`),
    written atomically to ``out``."""
    if not phase.hidden:
        raise InputError(
            f"{phase.collection}/{phase.name} is a public phase: its labels are public, give participants its collection file",
            field="phase",
        )
    data = board.phase_data(phase)
    return participants.write(data.collection, data.qrels, out, keep_scores=keep_scores)
