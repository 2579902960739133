"""``dsr kfold``: argument handling; the evaluation is :mod:`dsr.training.kfold`,
the per-fold training is :func:`dsr.training.recipe.train` (``dsr train``) itself."""

from __future__ import annotations

import argparse
import sys
from argparse import _SubParsersAction

from dsr.cli.common import add_collection_argument, add_command, add_param_flags
from dsr.collections import load_collection
from dsr.core.atomic import check_replaceable
from dsr.core.errors import InputError
from dsr.core.params import parse_assignments
from dsr.evaluation.tables import render
from dsr.training import kfold
from dsr.training.kfold import KFOLD_PARAMS, KfoldSettings, folds_markdown, kfold_evaluate, out_files, trained_for_fold
from dsr.training.recipe import train
from dsr.training.settings import PARAMS, RECIPE_NAMES, TrainSettings, pipeline_named

#: settings kfold sets for every fold itself
PER_FOLD = ("base", "folds", "fold", "overwrite")


def register(subparsers: _SubParsersAction) -> None:
    p = add_command(
        subparsers,
        "kfold",
        description=kfold.__doc__.split("\n\n")[1].replace("\n", " "),
        epilog="Example: dsr kfold cmu_dog --source ../shared/data/cmu_dog --split train "
        "--eval cmu_dog_judged --eval-source ../shared/data/judged --folds 3 "
        "--name dialogue-minilm-bi --in-domain dsr:dialogue-minilm-bi --out out/kfold",
    )
    add_collection_argument(p)
    p.add_argument(
        "--eval", required=True, metavar="COLLECTION", help="collection to evaluate on (e.g. cmu_dog_judged); never trained on"
    )
    p.add_argument("--eval-source", metavar="DIR", help="--source of the evaluation collection")
    p.add_argument("--eval-split", metavar="S", help="--split of the evaluation collection")
    p.add_argument(
        "--name", required=True, metavar="PREFIX", help="fold models are saved as dsr:PREFIX-fold0 ... dsr:PREFIX-fold{K-1}"
    )
    add_param_flags(p, KFOLD_PARAMS)  # --folds, --base
    p.add_argument(
        "--in-domain",
        metavar="MODEL",
        help="also rank with this model trained on every document (e.g. dsr:NAME from a plain `dsr train`)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the runs (the report goes to DIR/report)")
    p.add_argument(
        "--recipe",
        choices=RECIPE_NAMES,
        metavar="NAME",
        help="the `dsr train` recipe every fold trains with (`dsr train --help` lists them; default quick); "
        "a pipeline trains every stage per fold, and each fold's reranker reranks its first stage's top k",
    )
    p.add_argument(
        "--train-param",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="a `dsr train` setting for every fold, repeatable (e.g. --train-param "
        "max_steps=60 lr=1e-4; names as in `dsr train --help`, with _)",
    )
    p.set_defaults(func=cmd_kfold)


def cmd_kfold(args: argparse.Namespace) -> int:
    chosen = KfoldSettings.from_values(args)  # checked by their Params, before loading anything
    given = train_settings(args.train_param + ([f"recipe={args.recipe}"] if args.recipe else []))
    evaluation = load_collection(args.eval, args.eval_source, args.eval_split)
    out = check_replaceable(args.out, out_files(), field="--out")  # before any training
    pipeline = pipeline_named(args.recipe)
    models, rerankers = [], []
    for i in range(chosen.folds):
        name = f"{args.name}-fold{i}"
        stages = pipeline.models(name) if pipeline else [name]
        if not all(trained_for_fold(model, chosen.folds, i) for model in stages):
            print(f"dsr kfold: training fold {i} of {chosen.folds} as dsr:{name}", file=sys.stderr)
            per_fold = {"base": chosen.base, "folds": chosen.folds, "fold": i, "overwrite": True}
            train(args.collection, name, TrainSettings.of(given, per_fold), source=args.source, split=args.split)
        models.append(f"dsr:{name}")
        if pipeline:  # the first stage ranks; a stage with a top k reranks it
            rerankers += [f"dsr:{m}" for stage, m in zip(pipeline.stages, stages, strict=True) if stage.top_k]
    results, gains = kfold_evaluate(
        evaluation,
        models,
        out,
        base=chosen.base,
        in_domain=args.in_domain,
        measures=list(chosen.measures),
        command=["dsr", *sys.argv[1:]],
        rerankers=rerankers or None,
        top_k=pipeline.describe(args.name)["top_k"] if pipeline else None,
    )
    print(render(results, "text", verbose=False, measures=results.measures))  # every table: the report
    print("\nper fold: the fold model against zero-shot on the dialogues of the documents it left out\n" + folds_markdown(gains))
    print(f"\nruns: {out}/, report: {out / 'report'}/")
    return 0


def train_settings(items: list[str]) -> TrainSettings:
    """``--train-param`` as training settings: names of ``dsr train``'s settings, less those
    kfold sets per fold (checked before the first fold trains)."""
    settings = parse_assignments(items, "--train-param")
    known = {p.name for p in PARAMS} - set(PER_FOLD)
    unknown = sorted(set(settings) - known)
    if unknown:
        raise InputError(
            f"not a `dsr train` setting kfold passes on: {', '.join(unknown)}; "
            f"known: {', '.join(sorted(known))} ({', '.join(PER_FOLD)} are set per "
            "fold)",
            field="--train-param",
        )
    try:
        return TrainSettings(**settings)
    except InputError as err:
        raise InputError(err.message, field="--train-param") from None
