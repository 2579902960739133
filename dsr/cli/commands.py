"""The table of commands: each command's module and one-line help, in ``--help`` order.

``dsr --help`` lists the commands from this table alone; a command's module (its
``register(subparsers)`` and handlers, and through them the library) is imported only
when that command runs or shows its own help. A module's commands are consecutive
here; its ``register`` adds them all, each with ``dsr.cli.common.add_command`` (its help
from here).
"""

from __future__ import annotations

#: command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "collections": ("dsr.cli.data", "list the registered sources: licence, cache folder, availability"),
    "data": ("dsr.cli.data", "download (fetch) or convert (build) a source"),
    "stats": ("dsr.cli.data", "counts per subset: dialogues, candidates, labels, context, lengths"),
    "run": ("dsr.cli.ranking", "rank every dialogue's candidates with a ranker"),
    "rerank": ("dsr.cli.ranking", "rescore a run's top k with a cross-encoder or bi-encoder"),
    "fuse": ("dsr.cli.ranking", "fuse runs (rrf, isr, borda, combsum, combmnz, wsum, interp)"),
    "evaluate": ("dsr.cli.evaluation", "measure runs (official split protocol, significance, reports)"),
    "validate": ("dsr.cli.evaluation", "check a run file before evaluation or submission"),
    "trec_eval": (
        "dsr.cli.trec_eval",
        "trec_eval's command and output, byte for byte (-q, -m map, -m P.5,10, -c, -l, -M, -J, -n, -Z; --release 9.0.8|10.0)",
    ),
    "agreement": ("dsr.cli.agreement", "Kendall tau between system rankings by silver and by judged labels"),
    "decide": ("dsr.cli.decision", "the decision rule: does a candidate replace the default (judged dev and silver valid, Holm)"),
    "serve": ("dsr.cli.board", "start the leaderboard server (web pages and JSON API)"),
    "submit": ("dsr.cli.board", "submit a run file to a leaderboard server"),
    "board": ("dsr.cli.board", "organise a leaderboard: teams, phases, baselines, rebuild, export"),
    "judge": ("dsr.cli.judge", "judging campaigns: pool -> tasks -> grades -> judged collection"),
    "train": ("dsr.cli.training", "fine-tune a bi-encoder or cross-encoder on a collection's labels"),
    "kfold": (
        "dsr.cli.kfold",
        "document-disjoint k-fold: train per fold, rank each fold's evaluation dialogues, pool, test against zero-shot",
    ),
    "reproduce": ("dsr.cli.reproduce", "the whole baseline table, end to end"),
    "export": ("dsr.cli.interchange", "write a collection as TREC, BEIR, Hugging Face or ir_datasets files"),
    "qrels": ("dsr.cli.interchange", "write a collection's graded qrels (TREC format)"),
    "corpus": ("dsr.cli.corpus", "a sentence corpus for open retrieval: build, index, search"),
    "pool": ("dsr.cli.corpus", "each dialogue's top sentences of a corpus, as a benchmark file to judge"),
}


#: ``dsr --help`` lists the commands by task, in this order (a command of no group is listed last,
#: under "other"; tests/cli/test_cli_help.py checks that every command has its group)
GROUPS: dict[str, tuple[str, ...]] = {
    "evaluate": ("evaluate", "validate", "trec_eval", "agreement"),
    "rank and fuse": ("run", "rerank", "fuse", "reproduce"),
    "train and decide": ("train", "kfold", "decide"),
    "leaderboard": ("serve", "submit", "board"),
    "judging": ("judge",),
    "corpus": ("corpus", "pool"),
    "data and export": ("collections", "data", "stats", "export", "qrels"),
}


def grouped() -> dict[str, list[str]]:
    """Every command of :data:`COMMANDS` under its task (``other`` for one no group names)."""
    out = {title: [c for c in names if c in COMMANDS] for title, names in GROUPS.items()}
    named = {c for names in GROUPS.values() for c in names}
    rest = [c for c in COMMANDS if c not in named]
    if rest:
        out["other"] = rest
    return out


def listing(width: int = 14) -> str:
    """The commands by task, as ``dsr --help`` prints them."""
    lines = ["commands, by task (dsr COMMAND --help for each):"]
    for title, names in grouped().items():
        lines.append(f"  {title}:")
        lines += [f"    {name:<{width}}{summary(name)}" for name in names]
    return "\n".join(lines)


def summary(command: str) -> str:
    """The one-line help of ``command`` (what ``dsr --help`` lists)."""
    return COMMANDS[command][1]
