"""``dsr judge ...``: judging campaigns, the argparse glue (the work is :mod:`dsr.judging`)."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import Namespace, _SubParsersAction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsr.cli.common import add_command, add_param_flags, add_settings_flags, param_values, show_help
from dsr.collections import load_collection
from dsr.core import docs_url
from dsr.core.atomic import atomic_dir, atomic_write, check_output_path, write_json
from dsr.core.data import write_benchmark
from dsr.core.errors import InputError
from dsr.db.place import check_sqlite_folder
from dsr.evaluation.qrels import qrels_from_collection, write_qrels
from dsr.judging import guidelines, honeypots
from dsr.judging.exchange import tally

if TYPE_CHECKING:  # SQLAlchemy loads with it: imported where a command opens the store
    from dsr.judging.campaigns import Judging
from dsr.judging.quality import (
    CAMPAIGN_PARAMS,
    EXTRA,
    FLAG_PARAMS,
    METHOD,
    OVERLAP,
    REVIEW_METHOD,
    REVIEW_PARAMS,
    JudgingPlace,
    Settings,
)

JUDGE_EPILOG = """\
A campaign lives in the leaderboard's database (--db; default SQLite at
$DSR_HOME/board/board.sqlite): give dsr serve the same --db and assessors judge at /judge.
Walk-through: {docs}.
""".format(docs=docs_url("judging"))


def _db(parser: argparse.ArgumentParser) -> None:
    add_settings_flags(parser, JudgingPlace)


def register(subparsers: _SubParsersAction) -> None:
    j = add_command(
        subparsers,
        "judge",
        description="Run a relevance judging campaign on a pool (dsr pool's output or "
        "any benchmark file): tasks, honeypots, browser judging under "
        "dsr serve, Label Studio and crowdsourcing exchange, aggregation, "
        "agreement, and the judged collection.",
        epilog=JUDGE_EPILOG,
    )
    sub = j.add_subparsers(dest="judge_command", metavar="ACTION")
    _register_setup(sub)
    _register_results(sub)
    _register_review(sub)
    j.set_defaults(func=lambda args: show_help(j))


def _register_setup(sub: _SubParsersAction) -> None:
    g = sub.add_parser(
        "guidelines", help="write the default scale and guidelines (YAML) to edit, or load edited ones into a campaign"
    )
    _db(g)
    g.add_argument("campaign", nargs="?", metavar="CAMPAIGN", help="the campaign to give FILE to")
    g.add_argument("file", nargs="?", metavar="FILE", help="guidelines YAML for CAMPAIGN")
    g.add_argument("--out", metavar="FILE", help="write the default guidelines here")
    g.set_defaults(func=cmd_guidelines)

    c = sub.add_parser(
        "create", help="a campaign from a pool: tasks of --chunk sentences, k assessors per sentence, honeypots planted"
    )
    _db(c)
    c.add_argument("name", metavar="NAME", help="the campaign's name (its URL part)")
    c.add_argument("pool", metavar="POOL", help="dsr pool's output, any benchmark .jsonl, or a registered name")
    c.add_argument("--source", metavar="DIR", help="--source of a registered POOL")
    c.add_argument("--split", metavar="S", help="--split of a registered POOL")
    c.add_argument("--guidelines", metavar="FILE", help="scale and guidelines (default: the built-in 0/1/2)")
    c.add_argument("--gold", metavar="FILE", help="a judged collection giving known answers (same dialogue ids)")
    c.add_argument(
        "--auto-honeypots",
        action="store_true",
        help="known answers from the pool: the sentence the next turn quotes (relevant), a "
        "sentence of an unrelated document (not relevant)",
    )
    add_param_flags(c, CAMPAIGN_PARAMS)
    c.set_defaults(func=cmd_create)

    a = sub.add_parser("add-assessor", help="create an assessor and print their token (shown once)")
    _db(a)
    a.add_argument("name", metavar="NAME")
    a.set_defaults(func=cmd_add_assessor)
    for action, text in (
        ("remove-assessor", "revoke an assessor's token and browser sessions at once (their grades stay)"),
        ("rotate-token", "give an assessor a new token (shown once); the old one stops working"),
    ):
        r = sub.add_parser(action, help=text)
        _db(r)
        r.add_argument("name", metavar="NAME")
        r.set_defaults(func=cmd_assessor_token, action=action)

    s = sub.add_parser("assign", help="give every task k assessors, balancing the load (resumable)")
    _db(s)
    s.add_argument("campaign", metavar="CAMPAIGN")
    who = s.add_argument("--assessors", nargs="+", metavar="NAME", help="who (default: every assessor with a token)")
    release = s.add_argument(
        "--release", nargs="+", default=[], metavar="NAME", help="first take back these assessors' tasks they have not started"
    )
    who.takes_names = release.takes_names = True
    add_param_flags(s, (OVERLAP,))
    s.set_defaults(func=cmd_assign)


def _register_results(sub: _SubParsersAction) -> None:
    st = sub.add_parser("status", help="progress per assessor")
    _db(st)
    st.add_argument("campaign", metavar="CAMPAIGN")
    st.set_defaults(func=cmd_status)

    r = sub.add_parser("report", help="honeypots, aggregation, agreement (alpha, kappas) and per-assessor figures")
    _db(r)
    r.add_argument("campaign", metavar="CAMPAIGN")
    add_param_flags(r, (METHOD,))
    r.add_argument("--json", action="store_true", help="print JSON")
    add_param_flags(r.add_argument_group("assessor flags"), FLAG_PARAMS)
    r.set_defaults(func=cmd_report)

    e = sub.add_parser("export", help="the judged collection (benchmark file) and its qrels")
    _db(e)
    e.add_argument("campaign", metavar="CAMPAIGN")
    e.add_argument("--out", required=True, metavar="FILE", help="benchmark .jsonl to write")
    e.add_argument("--qrels", metavar="FILE", help="also write TREC qrels here")
    e.add_argument("--report", metavar="FILE", help="also write the report (JSON) here")
    add_param_flags(e, (METHOD,))
    e.add_argument(
        "--only-relevant", action="store_true", help="keep only dialogues with a relevant sentence (as the SIGIR 2022 set does)"
    )
    e.add_argument("--partial", action="store_true", help="keep only fully judged dialogues instead of refusing")
    e.set_defaults(func=cmd_export)

    t = sub.add_parser("export-tasks", help="the tasks for Label Studio or a crowdsourcing batch")
    _db(t)
    t.add_argument("campaign", metavar="CAMPAIGN")
    t.add_argument("--format", required=True, choices=("label-studio", "crowd"))
    t.add_argument("--out", required=True, metavar="DIR", help="folder to write (replaced as a set)")
    t.set_defaults(func=cmd_export_tasks)

    i = sub.add_parser("import", help="grades back from a Label Studio JSON export or a batch results CSV")
    _db(i)
    i.add_argument("campaign", metavar="CAMPAIGN")
    i.add_argument("file", metavar="FILE")
    i.add_argument("--format", required=True, choices=("label-studio", "crowd"))
    i.set_defaults(func=cmd_import)

    ls = sub.add_parser("list", help="campaigns and assessors")
    _db(ls)
    ls.set_defaults(func=cmd_list)


def _register_review(sub: _SubParsersAction) -> None:
    v = sub.add_parser(
        "review",
        help="items whose aggregate is uncertain or whose assessors disagree: "
        "list them, send them back for more judgements, or adjudicate",
    )
    _db(v)
    v.add_argument("campaign", metavar="CAMPAIGN")
    add_param_flags(v, (REVIEW_METHOD,))
    add_param_flags(v.add_argument_group("which items are listed"), REVIEW_PARAMS)
    v.add_argument(
        "--adjudicate",
        nargs="+",
        action="extend",
        default=[],
        metavar="ITEM=GRADE",
        help="an adjudicator's grade for an item (its key, as listed); it wins in the export",
    )
    v.add_argument(
        "--send-back", nargs="*", metavar="ITEM", help="give these items' tasks to more assessors (no ITEM: every listed item)"
    )
    add_param_flags(v, (EXTRA,))
    v.add_argument(
        "--by", metavar="NAME", help="who decides (recorded with the decision; required with --adjudicate and --send-back)"
    )
    v.add_argument("--json", action="store_true", help="print JSON")
    v.set_defaults(func=cmd_review)


def _judging(args: Namespace) -> Judging:
    """The campaign store behind ``--db`` (judging's own record, :class:`JudgingPlace`); an
    SQLite file's folder must be writable (a read-only DSR_HOME is exit 2 naming the folder,
    as for dsr serve)."""
    from dsr.judging.campaigns import Judging

    place = JudgingPlace(db=args.db)
    check_sqlite_folder(place.url(), given=place.db is not None)
    return Judging.open(place.url())


def cmd_guidelines(args: Namespace) -> int:

    if args.campaign and args.file:
        _judging(args).set_guidelines(args.campaign, guidelines.load(args.file))
        print(f"campaign {args.campaign}: guidelines replaced from {args.file}")
        return 0
    if args.campaign or not args.out:
        raise InputError("give --out FILE (write the default), or CAMPAIGN FILE (load into a campaign)", field="FILE")

    with atomic_write(args.out) as handle:
        handle.write(guidelines.default_text())
    print(f"wrote {args.out}: edit it, then dsr judge create ... --guidelines {args.out}")
    return 0


def cmd_create(args: Namespace) -> int:
    settings = Settings(**param_values(args, CAMPAIGN_PARAMS))  # checked before any work
    rules = guidelines.load(args.guidelines)
    pool = load_collection(args.pool, args.source, args.split)
    golds: dict = {}
    if args.gold:
        golds = honeypots.judged_golds(pool, load_collection(args.gold))
    if args.auto_honeypots:
        auto = honeypots.auto_golds(pool, rules.grades[0], rules.grades[-1], args.seed)
        golds = honeypots.merge(golds, auto)
    if args.honeypot_rate > 0 and not golds:
        print("dsr: warning: no honeypots (give --gold FILE or --auto-honeypots): every assessor counts", file=sys.stderr)
    judging = _judging(args)
    judging.create(args.name, pool, rules, settings, golds)
    items = judging.items_frame(judging.campaign(args.name))
    print(
        f"campaign {args.name}: {len(pool)} dialogues, {items['task'].nunique()} tasks, "
        f"{int(items['candidate'].notna().sum())} sentences, {int(items['gold'].notna().sum())} honeypot "
        f"checks ({int(items['candidate'].isna().sum())} planted); {args.k} assessors per sentence"
    )
    return 0


def cmd_add_assessor(args: Namespace) -> int:
    token = _judging(args).assignments.add_assessor(args.name)
    print(f"assessor {args.name!r} created; their token (shown once, only its hash is stored):", file=sys.stderr)
    print(token)
    return 0


def cmd_assessor_token(args: Namespace) -> int:
    judging = _judging(args)
    if args.action == "remove-assessor":
        grades = judging.assignments.remove_assessor(args.name)
        print(
            f"assessor {args.name.strip()!r} removed: their token and browser sessions no longer work; their "
            f"{grades} grade(s) stay (dsr judge assign CAMPAIGN --release {args.name.strip()!r} hands on the "
            "tasks they have not started)",
            file=sys.stderr,
        )
        return 0
    token = judging.assignments.rotate_assessor_token(args.name)
    print(
        f"a new token for assessor {args.name.strip()!r} (the old one no longer works; shown once, only its hash is stored):",
        file=sys.stderr,
    )
    print(token)
    return 0


def cmd_assign(args: Namespace) -> int:
    load = _judging(args).assignments.assign(args.campaign, args.assessors, args.release, args.overlap)
    for name, sentences in sorted(load.items()):
        print(f"{name}: {sentences} sentences")
    return 0


def cmd_status(args: Namespace) -> int:
    from dsr.judging.views import progress, task_rows

    judging = _judging(args)
    campaign = judging.campaign(args.campaign)
    for assessor in judging.assignments.assessors():
        rows = task_rows(judging, assessor, campaign)
        if rows:
            p = progress(rows)
            print(f"{assessor.name}: {p['done']} of {p['total']} sentences graded, {p['tasks_done']} of {p['tasks']} tasks done")
    return 0


def cmd_report(args: Namespace) -> int:
    from dsr.judging.campaign_report import outcome

    result = outcome(_judging(args), args.campaign, args.method, param_values(args, FLAG_PARAMS)).to_json()
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(_report_text(result))
    return 0


def _fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _report_text(r: dict) -> str:
    a = r["agreement"]
    lines = [
        f"campaign {r['campaign']} ({r['method']}): {r['items']} sentences, {r['grades']} grades, "
        f"{r['counted_grades']} counted; {r['items_with_k_counted_grades']} sentences with "
        f"k={r['settings']['k']} counted grades, {r['items_without_counted_grade']} with none",
        f"Krippendorff's alpha: ordinal {_fmt(a['alpha_ordinal'])}, relevant/not {_fmt(a['alpha_binary'])}",
        f"Fleiss' kappa: {_fmt(a['fleiss']['kappa'])} over {a['fleiss']['items']} sentences with "
        f"{a['fleiss']['raters_per_item']} grades (relevant/not {_fmt(a['fleiss_binary']['kappa'])})",
        f"Cohen's kappa, mean over {len(a['pairs'])} pairs: {_fmt(a['cohen_mean'])} "
        f"(linear weights {_fmt(a['cohen_linear_mean'])})",
        "assessor  grades  unsure  honeypots  accuracy  counted  =aggregate  kappa  kappa-others  median s  flags",
    ]
    for p in r["assessors"]:
        lines.append(
            f"{p['assessor']}  {p['grades']}  {p['unsure']}  {p['honeypots']}  "
            f"{_fmt(p['honeypot_accuracy'])}  {'yes' if p['counted'] else 'NO: ' + p['reason']}  "
            f"{_fmt(p['agreement_with_aggregate'])}  {_fmt(p['kappa_with_aggregate'])}  "
            f"{_fmt(p['kappa_with_others'])}  {_fmt(p['median_seconds'], 1)}  "
            f"{', '.join(p['flags']) or '-'}"
        )
    return "\n".join(lines)


def _decisions(pairs: list[str]) -> dict[str, int]:
    out = {}
    for pair in pairs:
        key, sep, grade = pair.partition("=")
        if not sep or not key or not grade.strip().lstrip("-").isdigit():
            raise InputError(f"expected ITEM=GRADE, got {pair!r}", field="--adjudicate")
        out[key.strip()] = int(grade)
    return out


def cmd_review(args: Namespace) -> int:
    from dsr.judging.review import review_queue

    judging = _judging(args)
    decisions = _decisions(args.adjudicate)
    acting = bool(decisions) or args.send_back is not None
    if acting and not args.by:
        raise InputError("say who decides: --by NAME", field="--by")
    thresholds = param_values(args, REVIEW_PARAMS)
    if decisions:
        judging.reviews.adjudicate(args.campaign, decisions, args.by)
        print(f"{len(decisions)} item(s) adjudicated by {args.by}", file=sys.stderr)
    if args.send_back is not None:
        keys = args.send_back or [r["key"] for r in review_queue(judging, args.campaign, args.method, thresholds)]
        added = judging.reviews.send_back(args.campaign, keys, args.by, args.extra)
        for key, people in added.items():
            print(f"{key}: sent back to {', '.join(people)} (by {args.by})", file=sys.stderr)
    queue = review_queue(judging, args.campaign, args.method, thresholds)
    if args.json:
        json.dump(
            {"campaign": args.campaign, "method": args.method, "thresholds": thresholds, "items": queue},
            sys.stdout,
            indent=2,
            ensure_ascii=False,
        )
        print()
        return 0
    print(f"campaign {args.campaign} ({args.method}): {len(queue)} item(s) to review")
    for r in queue:
        grades = " ".join(f"{a}={g}" for a, g in r["grades"].items())
        text = r["text"] if len(r["text"]) <= 70 else r["text"][:67] + "..."
        print(
            f"{r['key']}  {'+'.join(r['why'])}{' (sent back)' if r['sent_back'] else ''}  "
            f"aggregate {r['aggregate']} p={r['posterior']:.2f} agree={r['agreement']:.2f}  {grades}  "
            f"{r['dialogue']}  {text}"
        )
    return 0


def cmd_export(args: Namespace) -> int:
    from dsr.judging.campaign_report import judged_collection, outcome

    for path, flag in ((args.out, "--out"), (args.qrels, "--qrels"), (args.report, "--report")):
        if path:
            check_output_path(path, flag)
    judging = _judging(args)
    result = outcome(judging, args.campaign, args.method)
    collection = judged_collection(judging, result, args.only_relevant, args.partial)
    write_benchmark(collection, args.out)
    if args.qrels:
        write_qrels(qrels_from_collection(collection), args.qrels)
    if args.report:
        write_json(args.report, result.to_json())
    relevant = sum(1 for d in collection if d.relevant)
    print(
        f"wrote {args.out}: {len(collection)} dialogues ({relevant} with a relevant sentence), "
        f"{sum(len(d.candidates) for d in collection)} judged sentences ({args.method})"
    )
    return 0


def cmd_export_tasks(args: Namespace) -> int:
    import dsr.judging.crowdsourcing as crowdsourcing
    import dsr.judging.labelstudio as labelstudio
    from dsr.judging.views import all_tasks

    module = labelstudio if args.format == "label-studio" else crowdsourcing
    judging = _judging(args)
    campaign = judging.campaign(args.campaign)
    tasks = all_tasks(judging, campaign)
    with atomic_dir(args.out, module.FILES, field="--out") as folder:
        module.write(folder, tasks, judging.guidelines(campaign))
    made = f"{len(module.by_dialogue(tasks))} Label Studio tasks, one per dialogue, from " if module is labelstudio else ""
    print(
        f"wrote {args.out}: {', '.join(module.FILES)} ({made}{len(tasks)} tasks, {sum(len(t.items) for _, t in tasks)} sentences)"
    )
    return 0


def cmd_import(args: Namespace) -> int:
    import dsr.judging.crowdsourcing as crowdsourcing
    import dsr.judging.labelstudio as labelstudio

    module = labelstudio if args.format == "label-studio" else crowdsourcing
    rows, left_out = module.read(Path(args.file))  # the whole file is checked before anything is stored
    judging = _judging(args)
    counts = tally(judging, args.campaign, rows, module.ORIGIN)
    judging.import_grades(args.campaign, rows, module.ORIGIN)
    people = len({r["assessor"] for r in rows})
    print(
        f"imported {args.file} into {args.campaign}: {counts.text()} ({len(rows)} grades from {people} "
        f"{module.ORIGIN} assessor(s)); {left_out} sentence place(s) left out (skipped or not graded)"
    )
    return 0


def cmd_list(args: Namespace) -> int:
    judging = _judging(args)
    for c in judging.campaigns():
        pool = json.loads(c.pool_json)
        print(
            f"campaign {c.name}: pool {pool['name']} ({pool['dialogues']} dialogues), k={c.k}, "
            f"honeypots {c.honeypot_rate:g} (threshold {c.threshold:g})"
        )
    for a in judging.assignments.assessors():
        state = "" if a.origin != "web" else (", token active" if a.token_hash else ", removed: no token")
        print(f"assessor {a.name} ({a.origin}{state})")
    return 0
