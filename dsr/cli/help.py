"""``--help`` for every command: defaults named, one example each.

Applied once to the whole parser after every area has registered its
commands (:func:`dsr.cli.build_parser`), so command modules keep
writing plain ``add_argument`` calls:

* an option with a default (not None, False or empty) whose help does not
  mention it gets ``(default: X)``;
* every command's help ends with ``example:`` and the command line from
  :data:`EXAMPLES` (a new command adds its line there; a test checks that
  every command has one and that it parses);
* help text keeps the line breaks of epilogs (tables of formats, protocols)
  and wraps the rest.
"""

from __future__ import annotations

import argparse
import textwrap

#: command path ("data fetch") -> one command line that works as written (from the
#: repository root, after the README's quickstart for the runs it names)
EXAMPLES = {
    "": "dsr run sample --ranker bm25 --out runs/bm25.run",
    "collections": "dsr collections --json",
    "data": "dsr data fetch cmu_dog",
    "data fetch": "dsr data fetch cmu_dog",
    "data build": "dsr data build cmu_dog --source ../shared/data/cmu_dog --split valid --out cmu_dog-valid.jsonl",
    "stats": "dsr stats sample",
    "run": "dsr run sample --ranker bm25 --query all --param k1=0.9 b=0.4 --out runs/bm25.run",
    "rerank": "dsr rerank sample --run runs/bm25.run --reranker bi-encoder --model all-MiniLM-L6-v2 --top-k 20 --out runs/bi.run",
    "fuse": "dsr fuse runs/bm25.run runs/dense.run --method rrf --param k=60 --out runs/rrf.run",
    "evaluate": "dsr evaluate sample runs/bm25.run runs/rrf.run --baseline bm25",
    "validate": "dsr validate sample runs/rrf.run",
    "trec_eval": "dsr trec_eval -q -m map -m P.5,10 qrels.test results.test",
    "train": "dsr train cmu_dog --source ../shared/data/cmu_dog --split train --name dialogue-minilm",
    "reproduce": "dsr reproduce sample --out out/sample",
    "export": "dsr export sample --format beir --out export/sample-beir",
    "qrels": "dsr qrels sample --out sample.qrels.gz",
    "serve": "dsr serve --port 8000",
    "submit": "dsr submit sample runs/bm25.run --server http://127.0.0.1:8000 --token dsr_TOKEN --system BM25",
    "board": "dsr board list",
    "board add-team": "dsr board add-team my-lab --member ada",
    "board add-phase": "dsr board add-phase sample --phase public",
    "board add-baseline": "dsr board add-baseline sample out/sample/runs --phase public",
    "board rebuild": "dsr board rebuild",
    "board export": "dsr board export sample --phase public --format latex --out board.tex",
    "board list": "dsr board list",
    "board add-member": "dsr board add-member my-lab 'Ada Lovelace' --email ada@example.org",
    "board remove-member": "dsr board remove-member my-lab 'Ada Lovelace'",
    "board rotate-token": "dsr board rotate-token my-lab 'Ada Lovelace'",
    "board set-phase": "dsr board set-phase sample --phase test --closes 2027-03-01",
    "board freeze": "dsr board freeze sample --phase test",
    "board participant-file": "dsr board participant-file sample --phase test --out test-dialogues.jsonl",
    "judge": "dsr judge list",
    "judge guidelines": "dsr judge guidelines --out guidelines.yaml",
    "judge create": "dsr judge create ccpe-1 ccpe-pool.jsonl --guidelines guidelines.yaml --k 3 --auto-honeypots",
    "judge add-assessor": "dsr judge add-assessor alice",
    "judge remove-assessor": "dsr judge remove-assessor alice",
    "judge rotate-token": "dsr judge rotate-token alice",
    "judge assign": "dsr judge assign ccpe-1 --assessors alice bob carol dave",
    "judge status": "dsr judge status ccpe-1",
    "judge report": "dsr judge report ccpe-1 --method ds",
    "judge review": "dsr judge review ccpe-1 --adjudicate 3f9a0c1d2b4e5a6f=2 --by eve",
    "judge export": "dsr judge export ccpe-1 --out ccpe-judged.jsonl --qrels ccpe-judged.qrels --only-relevant",
    "judge export-tasks": "dsr judge export-tasks ccpe-1 --format label-studio --out ls-tasks/",
    "judge import": "dsr judge import ccpe-1 ls-export.json --format label-studio",
    "judge list": "dsr judge list",
    "corpus": "dsr corpus build enwiki-pages-articles.xml.bz2 --out wiki/",
    "corpus build": "dsr corpus build enwiki-pages-articles.xml.bz2 --out wiki/",
    "corpus index": "dsr corpus index wiki/ --bm25 --dense --index ivfpq",
    "corpus search": 'dsr corpus search wiki/ --query "roman concrete" --method fused',
    "pool": "dsr pool ccpe --source data/ccpe --corpus wiki/ --out ccpe-pool.jsonl",
    "kfold": "dsr kfold cmu_dog --source ../shared/data/cmu_dog --split train --eval cmu_dog_judged "
    "--eval-source ../shared/data/judged --name dialogue-minilm-bi --out out/kfold",
    "agreement": "dsr agreement cmu_dog cmu_dog_judged --silver-source ../shared/data/cmu_dog "
    "--silver-split valid --judged-source ../shared/data/judged runs/a.run runs/b.run",
    "decide": "dsr decide cmu_dog cmu_dog_judged --silver-source ../shared/data/cmu_dog --silver-split "
    "valid --dev-source ../shared/data/judged --default runs/bm25.run runs/dense.run",
}


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each line of a description or epilog on its own; indented lines are kept as
    written (so tables and examples stay aligned)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for line in text.splitlines():
            if not line.strip() or line.startswith(" "):
                out.append(indent + line if line.strip() else "")
            else:
                out.append(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent))
        return "\n".join(out)


def commands(parser: argparse.ArgumentParser, path: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every parser under ``parser`` by command path (``""`` is ``parser`` itself)."""
    found = {path: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(commands(sub, f"{path} {name}".strip()))
    return found


def add_defaults_and_examples(parser: argparse.ArgumentParser) -> None:
    """Name the defaults and add the example to every command under ``parser``."""
    for path, command in commands(parser).items():
        formatter = command.formatter_class
        if not (isinstance(formatter, type) and issubclass(formatter, argparse.RawDescriptionHelpFormatter)):
            command.formatter_class = HelpFormatter  # raw ones keep their own line breaks
        for action in command._actions:
            if _shows_default(action):
                action.help = f"{action.help} (default: %(default)s)" if action.help else "default: %(default)s"
        example = EXAMPLES.get(path)
        if example:
            epilog = (command.epilog or "").rstrip("\n")
            command.epilog = f"{epilog}\n\nexample:\n  {example}" if epilog else f"example:\n  {example}"


def _shows_default(action: argparse.Action) -> bool:
    if not action.option_strings or action.help == argparse.SUPPRESS:
        return False
    default = action.default
    if default is None or default is False or default == argparse.SUPPRESS or default == []:
        return False
    return "default" not in (action.help or "").lower()
