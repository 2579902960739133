"""``dsr train``: argument handling; the recipe is :mod:`retrieval.training.recipe`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from retrieval.cli.common import add_collection_argument, collection_from_args
from retrieval.errors import InputError
from retrieval.training.recipe import DEFAULT_BASE, DEFAULT_QUERY, DEFAULTS


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="fine-tune a cross-encoder reranker on a collection's labels",
        description="Fine-tune a cross-encoder on (query, candidate sentence, label) pairs from "
                    "COLLECTION and save it as $DSR_HOME/models/NAME (use it with "
                    "`dsr rerank --model dsr:NAME`). The defaults finish in under 30 minutes "
                    "on 2 CPU cores; see docs/training.md for larger recipes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_collection_argument(p)
    p.add_argument("--name", required=True, help="model name: saved as $DSR_HOME/models/NAME")
    p.add_argument("--base", default=DEFAULT_BASE,
                   help="starting checkpoint: a short name, a local folder or dsr:NAME "
                        "(a BERT-style encoder; its classification head starts untrained)")
    p.add_argument("--query", default=DEFAULT_QUERY, metavar="STRATEGY",
                   help="query strategy (last, last2, all, title+all, weighted)")
    g = p.add_argument_group("data")
    g.add_argument("--subset", metavar="NAME", help="train only on dialogues of this subset")
    g.add_argument("--val-of-split", type=int, metavar="K",
                   help="train on the val half of official split K (collections with a split "
                        "file, e.g. sigir2022: the supervised setting)")
    g.add_argument("--neg-per-pos", type=float, default=DEFAULTS["neg_per_pos"], metavar="R",
                   help="in-list negatives per positive (sampled; -1 keeps all)")
    g.add_argument("--random-negatives", type=int, default=DEFAULTS["random_negatives"], metavar="N",
                   help="random sentences from other dialogues added as negatives, per dialogue")
    g.add_argument("--targets", choices=("binary", "graded"), default=DEFAULTS["targets"],
                   help="binary: label > 0 -> 1; graded: label / highest label")
    g.add_argument("--holdout", type=float, default=DEFAULTS["holdout"], metavar="FRACTION",
                   help="fraction of dialogues (whole conversations) kept out for the card's metrics")
    g.add_argument("--holdout-max", type=int, default=DEFAULTS["holdout_max"], metavar="N",
                   help="at most this many held-out dialogues (scoring them takes time on CPU)")
    o = p.add_argument_group("optimisation")
    o.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    o.add_argument("--epochs", type=float, default=DEFAULTS["epochs"])
    o.add_argument("--batch-size", type=int, default=DEFAULTS["batch_size"])
    o.add_argument("--max-length", type=int, default=DEFAULTS["max_length"], metavar="L",
                   help="word pieces of query + sentence")
    o.add_argument("--lr", type=float, default=DEFAULTS["lr"], help="peak learning rate")
    o.add_argument("--warmup", type=float, default=DEFAULTS["warmup"], metavar="W",
                   help="linear warm-up: a fraction of the steps when < 1, else steps")
    o.add_argument("--max-steps", type=int, default=DEFAULTS["max_steps"], metavar="N",
                   help="stop after N optimiser steps (-1: run all epochs)")
    o.add_argument("--save-steps", type=int, default=DEFAULTS["save_steps"], metavar="N",
                   help="checkpoint every N steps (the last two are kept until the end)")
    o.add_argument("--resume", action="store_true",
                   help="continue from the newest checkpoint of an interrupted run of NAME")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model NAME")
    p.add_argument("--json", action="store_true", help="print the model card as JSON")
    p.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from retrieval.home import models_dir
    from retrieval.queries import check_strategy

    from retrieval.training.recipe import check_settings, resolve_base, train

    check_settings(args)
    check_strategy(args.query)
    final = models_dir() / args.name
    if final.exists() and not args.overwrite:
        raise InputError(f"model {args.name!r} already exists at {final}; pass --overwrite "
                         "to replace it or choose another --name", field="--name")
    base = resolve_base(args.base)
    collection = collection_from_args(args)
    result = train(collection, args, base, final)
    if args.json:
        json.dump(result, sys.stdout, indent=2, sort_keys=True)
        print()
    else:
        print_summary(result, final)
    return 0


def print_summary(card: dict[str, Any], final: Path) -> None:
    t = card["training"]
    d = card["training_data"]
    print(f"model: {final}")
    print(f"use:   dsr rerank COLLECTION --run RUN --model dsr:{card['name']} --out RUN "
          f"(queries: {card['query']})")
    print(f"data:  {d['pairs']} pairs ({d['positives']} positives) from {d['train_dialogues']} "
          f"dialogues of {d['collection']}")
    print(f"train: {t['steps']} steps, loss {t['train_loss']:.4f}, {t['wall_seconds']:.0f} s")
    held = card.get("heldout")
    if held:
        print(f"held out ({held['dialogues']} dialogues):")
        for name, scores in held["rankers"].items():
            print(f"  {name:8s} " + "  ".join(f"{m} {v:.4f}" for m, v in scores.items()))
