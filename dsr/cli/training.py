"""``dsr train``: argument handling; the recipes are :mod:`dsr.training.recipe`
(cross-encoder) and :mod:`dsr.training.biencoder` (bi-encoder, the default)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dsr.cli.common import add_collection_argument, collection_from_args
from retrieval.errors import InputError
from retrieval.data import TEXT_FORMS
from dsr.training.recipe import DEFAULT_BASE, DEFAULT_MODEL_TYPE, DEFAULTS, MODEL_TYPES


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="fine-tune a bi-encoder or cross-encoder on a collection's labels",
        description="Fine-tune a bi-encoder (default: MultipleNegativesRankingLoss, in-batch and "
                    "pool negatives; use it with `dsr run --ranker dense --param model=dsr:NAME`) "
                    "or a cross-encoder (--model-type cross-encoder; `dsr rerank --model dsr:NAME`) "
                    "on COLLECTION's labels and save it as $DSR_HOME/models/NAME. The defaults "
                    "finish in under 30 minutes on 2 CPU cores; see docs/training.md. The judged "
                    "development set (cmu_dog_judged) is never trained on (exit 2).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_collection_argument(p)
    p.add_argument("--name", required=True, help="model name: saved as $DSR_HOME/models/NAME")
    p.add_argument("--base", default=DEFAULT_BASE,
                   help="starting checkpoint: a short name, a local folder or dsr:NAME "
                        "(a BERT-style encoder; its classification head starts untrained)")
    p.add_argument("--model-type", choices=MODEL_TYPES, default=DEFAULT_MODEL_TYPE,
                   help="bi-encoder (MultipleNegativesRankingLoss) or cross-encoder (BCE)")
    p.add_argument("--query", default=None, metavar="STRATEGY",
                   help="query strategy (last, last2, all, title+all, weighted, title+recent; "
                        "default: title+recent for a bi-encoder, weighted for a cross-encoder)")
    p.add_argument("--text", choices=TEXT_FORMS, default="body",
                   help="bi-encoder: what a candidate's text is in training (the card records it; "
                        "rank with the same --param text=...)")
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
    g.add_argument("--exclude-docs", metavar="DOC[,DOC...]",
                   help="leave these documents (meta.document, e.g. CMU_DoG films) out of training: "
                        "their dialogues and their sentences in every pool")
    g.add_argument("--folds", type=int, metavar="K",
                   help="document folds (with --fold): train without fold I's documents")
    g.add_argument("--fold", type=int, metavar="I", help="the fold left out (0..K-1)")
    g.add_argument("--holdout", type=float, default=DEFAULTS["holdout"], metavar="FRACTION",
                   help="fraction of dialogues (whole conversations) kept out for the card's metrics")
    g.add_argument("--holdout-max", type=int, default=DEFAULTS["holdout_max"], metavar="N",
                   help="at most this many held-out dialogues (scoring them takes time on CPU)")
    o = p.add_argument_group("optimisation")
    o.add_argument("--seed", type=int, default=DEFAULTS["seed"])
    o.add_argument("--epochs", type=float, default=DEFAULTS["epochs"])
    o.add_argument("--batch-size", type=int, default=None,
                   help="examples per step (default: 32 bi-encoder, 16 cross-encoder)")
    o.add_argument("--max-length", type=int, default=None, metavar="L",
                   help="word pieces of query + sentence (cross-encoder, default 128) or of one "
                        "text (bi-encoder, default: the base model's max sequence length)")
    o.add_argument("--lr", type=float, default=DEFAULTS["lr"], help="peak learning rate")
    o.add_argument("--warmup", type=float, default=DEFAULTS["warmup"], metavar="W",
                   help="linear warm-up: a fraction of the steps when < 1, else steps")
    o.add_argument("--max-steps", type=int, default=None, metavar="N",
                   help="stop after N optimiser steps (-1: run all epochs; default 120 bi-encoder, "
                        "400 cross-encoder)")
    o.add_argument("--save-steps", type=int, default=None, metavar="N",
                   help="checkpoint every N steps (the last two are kept until the end)")
    o.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                   help="auto: bf16 autocast where the CPU (amx_bf16, avx512_bf16) or GPU has bf16 "
                        "units, else fp32; the card records the choice")
    o.add_argument("--resume", action="store_true",
                   help="continue from the newest checkpoint of an interrupted run of NAME")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model NAME")
    p.add_argument("--json", action="store_true", help="print the model card as JSON")
    p.set_defaults(func=cmd_train)


def cmd_train(args: argparse.Namespace) -> int:
    from retrieval.home import models_dir
    from retrieval.queries import check_strategy

    from dsr.training.recipe import (apply_recipe, check_settings, refuse_judged, resolve_base,
                                           train)

    apply_recipe(args)
    check_settings(args)
    check_strategy(args.query)
    from dsr.training.finetune import resolve_precision

    resolve_precision(args.precision)  # --precision bf16 without bf16 units: refused before any work
    if args.model_type != "bi-encoder" and args.text != "body":
        raise InputError("--text applies to bi-encoder training only (the cross-encoder recipe "
                         "reads candidate bodies)", field="--text")
    final = models_dir() / args.name
    if final.exists() and not args.overwrite:
        raise InputError(f"model {args.name!r} already exists at {final}; pass --overwrite "
                         "to replace it or choose another --name", field="--name")
    base = resolve_base(args.base)
    collection = collection_from_args(args)
    refuse_judged(collection, args.collection)
    if args.model_type == "bi-encoder":
        from dsr.training.biencoder import train_bi_encoder

        result = train_bi_encoder(collection, args, base, final)
    else:
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
    if card.get("kind") == "bi-encoder":
        print(f"use:   dsr run COLLECTION --ranker dense --param model=dsr:{card['name']} "
              f"--query {card['query']}"
              + (f" --param 'text={card['text']}'" if card.get("text", "body") != "body" else "") + " --out RUN")
    else:
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
