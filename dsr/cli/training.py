"""``dsr train``: argument handling. The flags are the fields of
:class:`dsr.training.settings.TrainSettings`, parsed into one and handed whole to
:func:`dsr.training.recipe.train` (``dsr.train``)."""

from __future__ import annotations

import argparse
import json
import sys
from argparse import _SubParsersAction
from pathlib import Path
from typing import Any

from dsr.cli.commands import summary
from dsr.cli.common import add_collection_argument, add_param_flags
from dsr.core import docs_url, registry
from dsr.core.home import models_dir
from dsr.training.card import describe_run, text_params
from dsr.training.recipe import train
from dsr.training.settings import GROUPS, PIPELINES, RECOMMENDED, TrainSettings


def register(subparsers: _SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help=summary("train"),
        description="Fine-tune a bi-encoder (default: MultipleNegativesRankingLoss, in-batch and "
        "pool negatives; use it with `dsr run --ranker dense --param model=dsr:NAME`) "
        "or a cross-encoder (--model-type cross-encoder; `dsr rerank --model dsr:NAME`) "
        "on COLLECTION's labels and save it as $DSR_HOME/models/NAME. The defaults "
        f"finish on a laptop CPU; see {docs_url('training')}. The judged "
        "development set (cmu_dog_judged) is never trained on (exit 2).",
        epilog=recipes_help(),
    )
    add_collection_argument(p)
    p.add_argument("--name", required=True, help="model name: saved as $DSR_HOME/models/NAME")
    for title, declared in GROUPS.items():
        add_param_flags(p.add_argument_group(title), declared)
    p.add_argument("--json", action="store_true", help="print the model card as JSON")
    p.set_defaults(func=cmd_train)


def recipes_help() -> str:
    """The named recipes, for ``--help`` (the registry's, :data:`dsr.training.settings.RECIPES` first)."""
    lines = ["recipes (--recipe NAME; flags given beside it override its settings):"]
    for _, recipe in registry.items("recipe"):
        lines.append(f"{recipe.name}: {recipe.summary}" + (f" ({recipe.cost})" if recipe.cost else ""))
        lines.append(f"    = {recipe.flags() or '(the defaults above)'}")
    for pipeline in PIPELINES.values():
        lines.append(f"{pipeline.name} (a pipeline): {pipeline.summary}")
        lines.append("    = " + " then ".join(f"{s.recipe} as NAME{s.suffix}" for s in pipeline.stages))
    chosen = " then ".join(s.recipe for s in RECOMMENDED.stages)
    lines.append(f"recommended: {chosen}, what the decision rule chose (dsr decide --help)")
    return "\n".join(lines)


def cmd_train(args: argparse.Namespace) -> int:
    settings = TrainSettings.from_values(args)
    card = train(args.collection, args.name, settings, source=args.source, split=args.split)
    if args.json:
        json.dump(card, sys.stdout, indent=2, sort_keys=True)
        print()
    else:
        for stage in card.get("stages") or [card]:
            print_summary(stage, models_dir() / stage["name"])
        if card.get("pipeline"):
            print(pipeline_use(card["pipeline"]))
    return 0


def pipeline_use(pipeline: dict[str, Any]) -> str:
    """How to run a trained pipeline (its first stage, then its reranker over the top k)."""
    first, *rest = pipeline["models"]
    line = f"pipeline {pipeline['name']}: dsr run ... --ranker dense --param model=dsr:{first} --out FIRST.run"
    for model in rest:
        line += f"; dsr rerank ... --run FIRST.run --model dsr:{model} --top-k {pipeline.get('top_k') or 20} --out RUN"
    return line


def print_summary(card: dict[str, Any], final: Path) -> None:
    t = card["training"]
    d = card["training_data"]
    print(f"model: {final}")
    if card.get("kind") == "bi-encoder":
        print(
            f"use:   dsr run COLLECTION --ranker dense --param model=dsr:{card['name']} "
            f"--query {card['query']}{text_params(card)} --out RUN"
        )
    else:
        print(f"use:   dsr rerank COLLECTION --run RUN --model dsr:{card['name']} --out RUN (queries: {card['query']})")
    print(f"data:  {d['pairs']} pairs ({d['positives']} positives) from {d['train_dialogues']} dialogues of {d['collection']}")
    print(
        f"train: {describe_run(t)}; loss {t['train_loss']:.4f}"
        + (f" (recipe {card['named_recipe']})" if card.get("named_recipe") else "")
    )
    held = card.get("heldout")
    if held:
        print(f"held out ({held['dialogues']} dialogues):")
        for name, scores in held["rankers"].items():
            print(f"  {name:8s} " + "  ".join(f"{m} {v:.4f}" for m, v in scores.items()))
