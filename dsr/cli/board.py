"""``dsr serve``, ``dsr submit`` and ``dsr board ...``: the argparse glue of the leaderboard."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from argparse import Namespace, _SubParsersAction
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dsr.board.client import published_for, quota_text, submit
from dsr.board.participants import WITHHELD
from dsr.board.release import SETTINGS as QUOTAS
from dsr.board.release import rule as release_rule
from dsr.board.scoring import split_ref
from dsr.board.settings import (
    BOARD_PARAMS,
    EMAIL,
    LISTEN_PARAMS,
    MEMBER,
    PHASE_DESCRIPTION,
    SEASON_PARAMS,
    SELECT,
    SERVE_PARAMS,
    SUBMIT_PARAMS,
)
from dsr.board.workers import check_socket_room
from dsr.cli.common import add_command, add_param_flags, param_values, show_help
from dsr.core import docs_url
from dsr.core.atomic import atomic_write
from dsr.core.errors import InputError, require_extra
from dsr.core.params import by_name, resolve
from dsr.evaluation.measures import split_measure_list
from dsr.evaluation.qrels import read_qrels

if TYPE_CHECKING:  # SQLAlchemy and FastAPI load with them: imported where a command opens the board
    from dsr.board.models import Member, Phase
    from dsr.board.phases import Season
    from dsr.board.service import Board

SERVE_SETTINGS = by_name(SERVE_PARAMS)

#: what the board extra provides, by import name (serve needs all; the board commands the database part)
SERVER_MODULES = ("fastapi", "uvicorn", "jinja2", "python_multipart", "sqlalchemy", "alembic")
DATABASE_MODULES = ("sqlalchemy", "alembic")

BOARD_EPILOG = """\
The board lives in one database (--db; default SQLite at $DSR_HOME/board/board.sqlite) and
one run store (--store; default $DSR_HOME/board/runs). Give serve and board commands the same.
"""


def _db_options(parser: argparse.ArgumentParser) -> None:
    add_param_flags(parser, BOARD_PARAMS)


def _phase_parser(sub: _SubParsersAction, name: str, help: str, collection_help: str | None = None) -> argparse.ArgumentParser:
    """``dsr board NAME``: an action on one phase, with the database options, COLLECTION and --phase."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    _db_options(parser)
    parser.add_argument("collection", metavar="COLLECTION", help=collection_help)
    parser.add_argument("--phase", metavar="P")
    return parser


def register(subparsers: _SubParsersAction) -> None:
    s = add_command(
        subparsers,
        "serve",
        description=f"Serve the leaderboard: boards, run pages, a submission form and /api/... (see {docs_url('board')}).",
        epilog=BOARD_EPILOG,
    )
    _db_options(s)
    add_param_flags(s, LISTEN_PARAMS)  # --host, --port
    add_param_flags(s, SERVE_PARAMS)
    s.set_defaults(workers=None)  # dsr serve: one scoring process per core (at most 4)
    s.set_defaults(func=cmd_serve)

    _submit_parser(subparsers)

    b = add_command(subparsers, "board", description=f"Organisers' commands (see {docs_url('board')}).", epilog=BOARD_EPILOG)
    sub = b.add_subparsers(dest="board_command", metavar="ACTION")

    t = sub.add_parser("add-team", help="create a team and its first member; print the member's token (shown once)")
    _db_options(t)
    t.add_argument("name", metavar="NAME")
    add_param_flags(t, (MEMBER,))
    t.set_defaults(func=cmd_board_add_team)

    _add_phase_parser(sub)
    _season_parsers(sub)
    _member_parsers(sub)
    _run_parsers(sub)
    b.set_defaults(func=lambda args: show_help(b))


def _run_parsers(sub: argparse._SubParsersAction) -> None:
    """``add-baseline``, ``rebuild``, ``export``, ``participant-file`` and ``list``."""
    a = sub.add_parser("add-baseline", help="add runs (e.g. dsr reproduce's out/NAME/runs) as baseline rows")
    _db_options(a)
    a.add_argument("collection", metavar="COLLECTION", help="the board's collection name")
    a.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run files, or folders of *.run and *.run.gz files (each named as dsr evaluate names it: BM25.run.gz is BM25)",
    )
    a.add_argument("--phase", metavar="P")
    a.add_argument("--default", action="store_true", help="make the first of these the board's baseline")
    a.set_defaults(func=cmd_board_add_baseline)

    r = sub.add_parser("rebuild", help="re-score every stored run from the run store and the labels")
    _db_options(r)
    r.set_defaults(func=cmd_board_rebuild)

    e = _phase_parser(sub, "export", "the board as CSV, LaTeX or JSON")
    e.add_argument("--format", choices=("csv", "latex", "json"), default="csv")
    add_param_flags(e, (SELECT,))
    e.add_argument("--out", metavar="FILE", help="write here (atomically) instead of stdout")
    e.set_defaults(func=cmd_board_export)

    w = _phase_parser(
        sub,
        "participant-file",
        "the dialogues of a hidden phase for participants: no label, next turn, meta or other field derived from them",
        collection_help="the board's collection name",
    )
    w.add_argument("--out", required=True, metavar="FILE", help="the benchmark file to write (atomically)")
    w.add_argument(
        "--keep-scores",
        action="store_true",
        help="keep the candidates' initial scores (only when they were computed from the "
        "context alone: a score made with the next turn or the labels gives them away)",
    )
    w.set_defaults(func=cmd_board_participant_file)

    ls = sub.add_parser("list", help="phases and teams")
    _db_options(ls)
    ls.set_defaults(func=cmd_board_list)


def _member_parsers(sub: _SubParsersAction) -> None:
    """``add-member``, ``remove-member`` and ``rotate-token``."""
    for action, text in (
        ("add-member", "add a person to a team and print their token (shown once)"),
        ("remove-member", "take a person off a team: their token stops working at once"),
        ("rotate-token", "give a member a new token (shown once); the old one stops working"),
    ):
        m = sub.add_parser(action, help=text)
        _db_options(m)
        m.add_argument("team", metavar="TEAM")
        m.add_argument("name", metavar="NAME", help="the person's name")
        if action == "add-member":
            add_param_flags(m, (EMAIL,))
        m.set_defaults(func=cmd_board_member, action=action)


def _submit_parser(subparsers: _SubParsersAction) -> None:
    """``dsr submit``'s options."""
    u = add_command(
        subparsers,
        "submit",
        description="Upload a run (and the published metadata of RUN.json beside it: printed first) to a "
        "server started by dsr serve; a try without an answer is sent again with its "
        "Idempotency-Key. "
        "Exit 0 when accepted, 2 when refused (the validator's messages are printed).",
    )
    u.add_argument("collection", metavar="COLLECTION", help="the board's collection name")
    u.add_argument("run", metavar="RUN", help="TREC run file (.run or .run.gz)")
    u.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    u.add_argument("--token", metavar="T", help="your member token (default: $DSR_TOKEN)")
    u.add_argument("--phase", metavar="P", help="phase (needed when the collection has several)")
    u.add_argument("--system", metavar="NAME", help="system name (default: the file name)")
    add_param_flags(u, SUBMIT_PARAMS)  # --description, --link, --run-type
    u.add_argument("--trained", action="store_true", help="the system was trained or tuned on this collection")
    u.add_argument("--sidecar", metavar="FILE", help="sidecar JSON (default: RUN.json when present)")
    u.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    u.set_defaults(func=cmd_submit)


def _add_phase_parser(sub: _SubParsersAction) -> None:
    """``dsr board add-phase``'s options."""
    p = sub.add_parser("add-phase", help="open a board: a collection and a phase (public or hidden labels)")
    _db_options(p)
    p.add_argument("collection", metavar="COLLECTION", help="a registered collection or a benchmark .jsonl path")
    p.add_argument("--phase", required=True, metavar="NAME", help="phase name, e.g. public or test")
    p.add_argument(
        "--hidden", action="store_true", help="labels only the server holds (--qrels, else the collection file's own labels)"
    )
    p.add_argument("--qrels", metavar="FILE", help="hidden labels (TREC qrels); their topics are the phase's")
    p.add_argument("--measures", nargs="+", metavar="M", help="ir_measures strings (default: dsr evaluate's)")
    for name in ("daily_quota", "total_quota"):  # declared once: dsr.board.release.PARAMS
        setting = QUOTAS[name]
        p.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            metavar=setting.metavar,
            help=f"{setting.help}; default {setting.default} on hidden phases, none on public ones",
        )
    add_param_flags(p, (PHASE_DESCRIPTION,))
    p.add_argument("--name", metavar="NAME", help="the collection's name on the board (default its own)")
    p.add_argument(
        "--strict", action="store_true", help="refuse runs whose scores tie as 32-bit floats (default: accept, count and say it)"
    )
    p.add_argument(
        "--min-dialogues",
        type=int,
        metavar="N",
        help="hidden phases: the fewest dialogues a published mean (and all minus it) may "
        "cover; smaller subsets are merged or withheld, and another hidden phase whose "
        "published groups differ from this one's in fewer dialogues is refused (default 20)",
    )
    p.add_argument(
        "--split", metavar="S", help="a registered collection's split (e.g. valid for cmu_dog, plain or grounded for sample)"
    )
    p.add_argument(
        "--subset-name",
        dest="subset_names",
        action="extend",
        nargs="+",
        default=[],
        metavar="OLD=NEW",
        help="hidden phases: show subset OLD as NEW (the board, the API and the participant file); "
        "by default subsets that give a withheld field away (CMU_DoG's section = the withheld "
        "meta.docIdx) are shown under neutral names",
    )
    _allow_overlap(p)
    add_param_flags(p, SEASON_PARAMS)
    p.set_defaults(func=cmd_board_add_phase)


def _allow_overlap(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-overlap",
        action="store_true",
        help="add a hidden phase even when it shares labels with another hidden phase (the same "
        "judged pairs with grades that agree; what it gives away is printed); never beside a "
        "public phase",
    )


def _season_parsers(sub: _SubParsersAction) -> None:
    """``dsr board set-phase`` and ``dsr board freeze``."""
    s = _phase_parser(sub, "set-phase", "change a phase's primary measure, dates or final switch")
    add_param_flags(s, SEASON_PARAMS)
    _allow_overlap(s)
    s.set_defaults(func=cmd_board_set_phase)
    f = _phase_parser(sub, "freeze", "end a phase: no more submissions; a final phase's results are published")
    f.set_defaults(func=cmd_board_freeze)


def _board(args: Namespace, **extra: Any) -> Board:
    for module in DATABASE_MODULES:
        require_extra(module, "board")
    from dsr.board.service import Board, BoardConfig

    return Board(BoardConfig(**param_values(args, BOARD_PARAMS), **extra))


def cmd_serve(args: Namespace) -> int:
    for module in SERVER_MODULES:
        require_extra(module, "board")
    from dsr.board.service import default_workers

    resolve(param_values(args, LISTEN_PARAMS), LISTEN_PARAMS, "")  # as dsr.server.serve checks them
    SERVE_SETTINGS["processes"].check(args.processes)  # before it divides the cores
    if args.workers is None:
        args.workers = default_workers(args.processes)
    if args.workers:  # before the board is opened (with --processes, each process would refuse it)
        check_socket_room()
    settings = param_values(args, SERVE_PARAMS)
    if args.processes > 1:
        return _serve_processes(args, settings)
    board = _board(args, **settings)
    board.warm_up()
    print(
        f"dsr: leaderboard on http://{args.host}:{args.port}/ (database {board.engine.url.render_as_string()}, "
        f"runs in {board.store.root})",
        file=sys.stderr,
    )
    from dsr.server import serve  # FastAPI and uvicorn load here, not for `dsr --help`

    try:
        serve(board, host=args.host, port=args.port)
    finally:
        board.close()  # the scoring workers
    return 0


def _serve_processes(args: Namespace, settings: dict) -> int:
    """``dsr serve --processes N``: the board checked, migrated and recovered here once (no
    scoring workers), then N server processes on the port (``dsr.server.serve_processes``)."""
    board = _board(args, **{**settings, "workers": 0})
    try:
        if board.engine.dialect.name != "postgresql":
            raise InputError(
                f"--processes {args.processes} needs PostgreSQL (--db postgresql://...): "
                "on SQLite one process serves the board (SQLite writes one transaction at a "
                "time, and processes waiting on its file lock poll for it: slower, not "
                "faster)",
                field="--processes",
            )
        url = board.engine.url.render_as_string()
        config = dataclasses.replace(board.config, workers=args.workers)
    finally:
        board.close()
    print(
        f"dsr: leaderboard on http://{args.host}:{args.port}/ ({args.processes} processes with "
        f"{args.workers} scoring worker(s) each, database {url}, runs in {config.store_dir()})",
        file=sys.stderr,
    )
    from dsr.server import serve_processes

    serve_processes(config, host=args.host, port=args.port)
    return 0


def cmd_submit(args: Namespace) -> int:
    token = args.token or os.environ.get("DSR_TOKEN")
    if not token:
        raise InputError("give --token or set DSR_TOKEN", field="--token")
    system = args.system or Path(args.run).name.removesuffix(".gz").removesuffix(".run")
    if not args.json:  # what the board will publish, before anything is sent
        published = published_for(Path(args.run), args.sidecar)
        print(f"published metadata: {json.dumps(published, sort_keys=True) if published else 'none'}")
    answer = submit(
        args.server,
        token,
        args.collection,
        args.run,
        phase=args.phase,
        system=system,
        description=args.description,
        link=args.link,
        run_type=args.run_type,
        trained=args.trained,
        sidecar=args.sidecar,
    )
    body = answer.body
    if args.json:
        json.dump({"status": answer.status, **body}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    elif answer.status == 201:
        _print_accepted(args.server.rstrip("/"), body, answer.replayed)
    else:
        for problem in body.get("problems") or []:
            print(problem.get("text") or problem.get("message"), file=sys.stderr)
        first = f" (first: {args.server.rstrip('/')}{body['first']})" if body.get("first") else ""
        print(f"dsr: refused ({answer.status}): {body.get('error')}{first}", file=sys.stderr)
        _print_quota(body.get("quota"), sys.stderr)
    return 0 if answer.status == 201 else 2


def _print_accepted(server: str, body: dict, replayed: bool) -> None:
    """The server's answer, whatever the phase: scores where it gives them (a final phase gives
    none before its freeze), every other field it sends as it is."""
    again = " (the answer to an earlier try of this submission)" if replayed else ""
    print(f"accepted: run #{body.get('id')} {server}{body.get('url', '')}{again}")
    means = body.get("means")
    if isinstance(means, dict) and means:
        subset = "all" if "all" in means else next(iter(means))
        values = means[subset] if isinstance(means[subset], dict) else {}
        shown = ", ".join(f"{m} {_number(v)}" for m, v in list(values.items())[:5] if v is not None)
        print(f"{'all dialogues' if subset == 'all' else subset}: {shown or 'no score published'}")
    else:
        print("scores: none published yet (a final phase shows them once the board is frozen)")
    for name, value in body.items():
        if name not in SHOWN_FIELDS and value not in (None, "", [], {}):
            print(f"{name}: {value if isinstance(value, str) else json.dumps(value, sort_keys=True)}")
    if body.get("ties"):
        print(f"ties: {body['ties']}")
    _print_quota(body.get("quota_before"), label="quota before")
    _print_quota(body.get("quota"), label="quota now")


#: the answer's fields :func:`_print_accepted` says in its own words (others are printed as they come)
SHOWN_FIELDS = {"id", "url", "means", "ties", "tied_topics", "quota_before", "quota", "sha256", "lines", "published"}


def _number(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def table(headers: list[str], rows: list[list]) -> str:
    """An aligned text table (numbers right-aligned, 4 decimals; None as '-')."""
    cells = [[("-" if v is None else _number(v) if isinstance(v, float) else str(v)) for v in row] for row in rows]
    right = [
        bool(rows) and all(isinstance(r[c], (int, float)) and not isinstance(r[c], bool) for r in rows)
        for c in range(len(headers))
    ]
    widths = [max(len(r[c]) for r in [headers, *cells]) for c in range(len(headers))]
    return "\n".join(
        "  ".join(v.rjust(w) if right[c] else v.ljust(w) for c, (v, w) in enumerate(zip(r, widths))).rstrip()
        for r in [headers, *cells]
    )


def _print_quota(quota: dict[str, Any] | None, stream: TextIO | None = None, label: str = "quota") -> None:
    if quota and (quota.get("daily_limit") is not None or quota.get("total_limit") is not None):
        print(f"{label}: {quota_text(quota)}", file=stream or sys.stdout)


def cmd_board_add_team(args: Namespace) -> int:
    token = _board(args).members.add_team(args.name, member=args.member)
    print(
        f"team {args.name!r} created with member {args.member.strip()!r}; the member's token "
        "(shown once, only its hash is stored):",
        file=sys.stderr,
    )
    print(token)
    return 0


def cmd_board_add_phase(args: Namespace) -> int:
    if args.qrels and not args.hidden:
        raise InputError("--qrels loads hidden labels: add --hidden", field="--qrels")
    labels = read_qrels(args.qrels) if args.qrels else None
    board = _board(args)
    phase = board.phases.add_phase(
        collection_ref(args.collection, args.split),
        args.phase,
        hidden=args.hidden,
        labels=labels,
        measures=split_measure_list(args.measures) if args.measures else None,
        daily_quota=args.daily_quota,
        total_quota=args.total_quota,
        description=args.description,
        display=args.name,
        strict=args.strict,
        min_dialogues=args.min_dialogues,
        season=_season(args),
        allow_overlap=args.allow_overlap,
        subset_names=_subset_names(args.subset_names),
    )
    kind = "hidden labels" if phase.hidden else "public labels"
    ties = "runs with tied scores refused" if phase.strict else "tied scores counted and said"
    print(f"board {phase.collection}/{phase.name}: {len(json.loads(phase.topics_json))} dialogues, {kind}, {ties}")
    data = board.phase_data(phase)
    if phase.hidden:
        print(
            f"published means: {', '.join(f'{s} ({len(i)} dialogues)' for s, i in data.subsets.items())}"
            f" (each, and all minus each, covers at least {phase.min_dialogues} dialogues)"
        )
    for old, new in json.loads(phase.groups_json or "{}").items():
        print(f"  subset {old!r} is shown as {new!r} (the board, the API and the participant file)")
    for note in data.subset_notes:
        print(f"  {note}")
    print(f"quota: {quotas(phase)}")
    if phase.hidden:
        rule = release_rule(phase, {name: len(idx) for name, idx in data.subsets.items()})
        steps = ", ".join(f"{g} {st:g}" for g, st in rule["steps"].items())
        print(
            f"release: a team's value changes only when a one-sided paired t-test finds a run better than "
            f"its best so far (level {rule['level']:.2g}); it is the lower edge of the cell of its mean plus "
            f"Laplace noise of scale {rule['noise']:g}/n, on each group's grid (step {steps}: no cell is one "
            f"exact count)"
        )
    _warn_overlaps(board, phase)
    _print_season(phase)
    return 0


def _subset_names(pairs: list[str]) -> dict[str, str] | None:
    """``--subset-name OLD=NEW ...`` as {OLD: NEW}."""
    names = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old:
            raise InputError(f"{pair!r} is not OLD=NEW", field="subset_names")
        names[old] = new
    return names or None


def collection_ref(collection: str, split: str | None) -> str:
    """What a phase stores to load its collection: the name or path, and a registered
    collection's split (``dsr.board.scoring.load_collection_ref``)."""
    return split_ref(collection, split)


def _warn_overlaps(board: Board, phase: Phase) -> None:
    for problem in board.phases.overlaps(phase):
        print(f"dsr: WARNING: --allow-overlap: {problem}", file=sys.stderr)


def quotas(phase: Phase) -> str:
    """A phase's quotas in words (per team, all its members together)."""
    parts = [f"{n} {what}" for n, what in ((phase.daily_quota, "per UTC day"), (phase.total_quota, "in all")) if n is not None]
    return f"{', '.join(parts)} per team (all its members together)" if parts else "none"


def when(text: str | None, field: str) -> datetime | None:
    """An ISO date or time as a naive UTC datetime (a time without an offset is UTC)."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"{text!r} is not an ISO date or time (e.g. 2026-03-01 or 2026-03-01T12:00Z)", field=field) from None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def _season(args: Namespace) -> Season:
    from dsr.board.phases import Season

    return Season(primary=args.primary, opens=when(args.opens, "opens"), closes=when(args.closes, "closes"), final=args.final)


def _print_season(phase: Phase) -> None:
    from dsr.board.models import stamp
    from dsr.db.base import utcnow

    dates = (
        ", ".join(f"{k} {stamp(v)}" for k, v in (("opens", phase.opens_at), ("closes", phase.closes_at)) if v is not None)
        or "no dates"
    )
    state = phase.closed_reason(utcnow()) or "open for submissions"
    print(
        f"season {phase.collection}/{phase.name}: primary measure {phase.primary()}, {dates}"
        f"{', final phase' if phase.final else ''}; {state}"
    )


def cmd_board_set_phase(args: Namespace) -> int:
    board = _board(args)
    phase = board.phases.set_season(
        board.phases.get_phase(args.collection, args.phase), _season(args), allow_overlap=args.allow_overlap
    )
    _warn_overlaps(board, phase)
    _print_season(phase)
    return 0


def cmd_board_freeze(args: Namespace) -> int:
    board = _board(args)
    phase = board.phases.freeze(board.phases.get_phase(args.collection, args.phase))
    _print_season(phase)
    if phase.final:
        print(f"the final results of {phase.collection}/{phase.name} are published")
    return 0


def cmd_board_member(args: Namespace) -> int:
    board = _board(args)
    if args.action == "remove-member":
        members = board.members.remove_member(args.team, args.name)
        print(
            f"{args.name.strip()!r} removed from team {args.team!r}: their token and browser sessions no longer work",
            file=sys.stderr,
        )
        names = ", ".join(m.name + (f" <{m.email}>" if m.email else "") for m in members) or "nobody"
        print(f"team {args.team}: {names}")
        return 0
    if args.action == "add-member":
        token = board.members.add_member(args.team, args.name, args.email)
        what = f"{args.name.strip()!r} added to team {args.team!r}; their token"
    else:
        token = board.members.rotate_token(args.team, args.name)
        what = f"a new token for {args.name.strip()!r} of team {args.team!r} (the old one no longer works)"
    print(f"{what} (shown once, only its hash is stored):", file=sys.stderr)
    print(token)
    return 0


def cmd_board_add_baseline(args: Namespace) -> int:
    from dsr.board.admin import add_baselines

    board = _board(args)
    phase = board.phases.get_phase(args.collection, args.phase)
    added = add_baselines(board, phase, args.runs, default=args.default)
    measures = json.loads(phase.measures_json)
    shown = [phase.primary(), *[m for m in measures if m != phase.primary()]][:4]
    rows = [[f"#{sub.id}", sub.system, *[json.loads(sub.means_json).get("all", {}).get(m) for m in shown]] for sub in added]
    print(f"{len(added)} baseline(s) added to {phase.collection}/{phase.name} (means over all dialogues):")
    print(table(["run", "system", *shown], rows))
    if added.aliases:
        print(f"{len(added.aliases)} run(s) not loaded again, each the same ranking as a baseline (an alias):")
        print(table(["run", "the same ranking as"], [list(pair) for pair in added.aliases]))
    return 0


def cmd_board_rebuild(args: Namespace) -> int:
    from dsr.board.admin import rebuild

    report = rebuild(_board(args))
    print(
        f"rescored {report.rescored} run(s), {report.changed} changed; {report.orphans} store file(s) named by no row (harmless)"
    )
    if report.missing:
        print(f"dsr: error: run file missing or altered for submission(s) {', '.join(map(str, report.missing))}", file=sys.stderr)
        return 2
    return 0


def cmd_board_export(args: Namespace) -> int:
    from dsr.board.admin import export

    SELECT.check(args.select)  # before the board opens (as leaderboard.build checks it)
    board = _board(args)
    text = export(board, board.phases.get_phase(args.collection, args.phase), args.format, args.select)
    if args.out:
        with atomic_write(args.out) as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_board_participant_file(args: Namespace) -> int:
    from dsr.board.admin import participant_file

    board = _board(args)
    phase = board.phases.get_phase(args.collection, args.phase)
    written = participant_file(board, phase, args.out, keep_scores=args.keep_scores)
    withheld = [w for w in WITHHELD if not (args.keep_scores and "score" in w)]
    print(
        f"wrote {written.dialogues} dialogues ({written.candidates} candidates) of {phase.collection}/{phase.name} to {args.out}"
    )
    print(f"withheld: {'; '.join(withheld)}" + (f" (meta keys: {', '.join(written.meta_keys)})" if written.meta_keys else ""))
    print("candidates are listed " + ("by score, then id" if args.keep_scores else "in the order of their ids"))
    for warning in written.warnings:
        print(f"dsr: WARNING: {warning}", file=sys.stderr)
    return 0


def token_state(member: Member) -> str:
    """What ``board list`` says of a member's token: active only when they hold one."""
    if member.removed_at is not None:
        return f"removed {member.removed_at:%Y-%m-%d}"
    return "active" if member.token_hash else "no token (dsr board rotate-token gives one)"


def cmd_board_list(args: Namespace) -> int:
    board = _board(args)  # first: it says what to install when the board extra is missing
    from sqlalchemy import select

    from dsr.board.models import Team
    from dsr.db.engine import read_session

    for p in board.phases.all():
        print(
            f"board {p.collection}/{p.name}: {'hidden' if p.hidden else 'public'}, "
            f"quota: {quotas(p)}; {len(board.submissions(p))} run(s)"
        )
    with read_session(board.engine) as s:
        teams = list(s.scalars(select(Team).order_by(Team.name)))
    runs = board.members.runs_by_member()
    rows = []
    for team in teams:
        members = board.members.of_team(team, removed=True)
        if team.organiser or runs.get((team.id, None)) or not members:  # baselines, runs of before 0005
            rows.append(
                [
                    team.name,
                    "(organisers)" if team.organiser else "(team token, before 0005)",
                    "",
                    runs.get((team.id, None), 0),
                    "",
                ]
            )
        for m in members:
            rows.append([team.name, m.name, m.email, runs.get((team.id, m.id), 0), token_state(m)])
    print()
    print(table(["team", "member", "email", "runs", "token"], rows) if rows else "no team yet")
    from dsr.board.admin import identical_rankings

    same = identical_rankings(board)
    if same:
        print("\nidentical rankings from different teams (the same documents in the same order on every topic):")
        for group in same:
            print(f"  {group['board']}: " + " = ".join(f"#{r['id']} {r['team']} ({r['system']})" for r in group["runs"]))
    return 0
