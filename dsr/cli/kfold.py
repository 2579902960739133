"""``dsr kfold``: argument handling; the evaluation is :mod:`dsr.training.kfold`,
the per-fold training is ``dsr train`` itself."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dsr.cli.common import add_collection_argument
from retrieval.errors import InputError
from dsr.training import kfold
from dsr.training.kfold import kfold_evaluate, trained_for_fold


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "kfold", help="document-disjoint k-fold: train per fold, rank each fold's evaluation "
                      "dialogues, pool, test against zero-shot",
        description=kfold.__doc__.split("\n\n")[1].replace("\n", " "),
        epilog="Example: dsr kfold cmu_dog --source ../shared/data/cmu_dog --split train "
               "--eval cmu_dog_judged --eval-source ../shared/data/judged --folds 3 "
               "--name dialogue-minilm-bi --in-domain dsr:dialogue-minilm-bi --out out/kfold")
    add_collection_argument(p)
    p.add_argument("--eval", required=True, metavar="COLLECTION",
                   help="collection to evaluate on (e.g. cmu_dog_judged); never trained on")
    p.add_argument("--eval-source", metavar="DIR", help="--source of the evaluation collection")
    p.add_argument("--eval-split", metavar="S", help="--split of the evaluation collection")
    p.add_argument("--folds", type=int, default=3, metavar="K", help="document folds (default 3)")
    p.add_argument("--name", required=True, metavar="PREFIX",
                   help="fold models are saved as dsr:PREFIX-fold0 ... dsr:PREFIX-fold{K-1}")
    p.add_argument("--base", default="all-MiniLM-L6-v2",
                   help="base model: trained per fold, and the zero-shot comparison")
    p.add_argument("--in-domain", metavar="MODEL", help="also rank with this model trained on "
                   "every document (e.g. dsr:NAME from a plain `dsr train`)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the runs (the report goes to DIR/report)")
    p.add_argument("--measures", nargs="+", default=["nDCG@5", "RR", "nDCG@10"], metavar="M")
    p.add_argument("--train-arg", action="append", default=[], metavar="ARG",
                   help="extra `dsr train` argument, repeatable (e.g. --train-arg=--max-steps=60)")
    p.set_defaults(func=cmd_kfold)


def cmd_kfold(args: argparse.Namespace) -> int:
    from eval.report import write_report
    from eval.tables import render
    from retrieval.collections import load_collection

    evaluation = load_collection(args.eval, args.eval_source, args.eval_split)
    out = Path(args.out)
    models = []
    for i in range(args.folds):
        name = f"{args.name}-fold{i}"
        if not trained_for_fold(name, args.folds, i):
            _train_fold(args, name, i)
        models.append(f"dsr:{name}")
    results = kfold_evaluate(evaluation, models, out, base=args.base, in_domain=args.in_domain,
                             measures=args.measures)
    write_report(results, out / "report", command=["dsr", *sys.argv[1:]])
    print(render(results, "text", verbose=False, measures=results.measures))   # every table: the report
    print(f"\nruns: {out}/, report: {out / 'report'}/")
    return 0


def _train_fold(args: argparse.Namespace, name: str, i: int) -> None:
    from dsr.cli.training import register

    argv = ["train", args.collection, "--name", name, "--base", args.base, "--folds",
            str(args.folds), "--fold", str(i), "--overwrite", *args.train_arg]
    if args.source:
        argv += ["--source", args.source]
    if args.split:
        argv += ["--split", args.split]
    print(f"dsr kfold: training fold {i}: dsr {' '.join(argv)}", file=sys.stderr)
    parser = argparse.ArgumentParser(prog="dsr")
    register(parser.add_subparsers())
    train_args = parser.parse_args(argv)
    code = train_args.func(train_args)
    if code != 0:
        raise InputError(f"training fold {i} failed (exit {code})", field="--train-arg")
