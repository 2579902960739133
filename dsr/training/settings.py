"""What ``dsr train`` takes, declared once as :class:`~dsr.core.params.Param`\\ s.

``dsr train``'s flags (``--max-steps``...), :func:`dsr.train`'s keyword arguments,
their checks (exit 2 naming the setting) and the model card's parameters all come
from :data:`PARAMS`. A setting whose default depends on the recipe (``query``,
``batch_size``, ``max_length``, ``max_steps``, ``save_steps``, ``lr``, ``batching``) is declared with
default ``None``; :data:`RECIPES` fills it for ``model_type``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dsr.core.candidate_text import CONTEXT_FORM, TEXT_FORMS
from dsr.core.errors import InputError
from dsr.core.params import Param, record_type, resolve
from dsr.core.queries import STRATEGIES
from dsr.training.pairs import TARGETS

DEFAULT_BASE = "all-MiniLM-L6-v2"
MODEL_TYPES = ("bi-encoder", "cross-encoder")
#: the bi-encoder recipe's losses
LOSSES = ("mnrl", "gist")
DEFAULT_MODEL_TYPE = "bi-encoder"

#: the model: what is trained, from what, on which query and candidate text
MODEL = (
    Param("base", DEFAULT_BASE, "str", "starting checkpoint: a short name, a local folder or "
          "dsr:NAME (a BERT-style encoder; a cross-encoder's classification head starts "
          "untrained)", metavar="MODEL"),
    Param("model_type", DEFAULT_MODEL_TYPE, "str", "bi-encoder (MultipleNegativesRankingLoss) or "
          "cross-encoder (BCE)", choices=MODEL_TYPES),
    Param("query", None, "str", "query strategy (default: title+recent for a bi-encoder, weighted "
          "for a cross-encoder)", choices=STRATEGIES, metavar="STRATEGY"),
    Param("text", "body", "str", "what a candidate's text is in training (a cross-encoder: body or "
          "'title: body'); the card records it and `dsr run`/`dsr rerank` read candidates so",
          choices=TEXT_FORMS),
    Param("loss", "mnrl", "str", "bi-encoder loss: mnrl (MultipleNegativesRankingLoss) or gist "
          "(GISTEmbedLoss: in-batch negatives the guide model scores above the positive are "
          "masked)", choices=LOSSES),
    Param("guide", None, "str", "with loss gist: the guide model (default: the base model, "
          "zero-shot)", metavar="MODEL"),
    Param("context", None, "int", "with text 'title: previous [SEP] body [SEP] next': neighbouring "
          "sentences on each side (default 1; the card records it)", low=1, high=20, metavar="N"),
    Param("documents", None, "str", "with the context text form: the documents' folder (CMU_DoG: "
          "its folder with WikiData/; default: the collection's source, else "
          "$DSR_HOME/data/cmu_dog)", metavar="DIR"),
)
#: the training data: which dialogues, which negatives, what is held out
DATA = (
    Param("subset", None, "str", "train only on dialogues of this subset", metavar="NAME"),
    Param("val_of_split", None, "int", "train on the val half of official split K (collections "
          "with a split file, e.g. sigir2022: the supervised setting)", low=0, metavar="K"),
    Param("neg_per_pos", 3.0, "float", "cross-encoder: in-list negatives per positive (sampled; "
          "-1 keeps all)", low=-1, metavar="R"),
    Param("random_negatives", 0, "int", "cross-encoder: random sentences from other dialogues "
          "added as negatives, per dialogue", low=0, metavar="N"),
    Param("hard_negatives", None, "str", "a bi-encoder (a model name or dsr:NAME) that picks the "
          "pool negatives: drawn among the non-relevant candidates it ranks highest (its top "
          "--hard-depth) rather than among all of them", metavar="MODEL"),
    Param("hard_depth", 10, "int", "with hard_negatives: how deep in the miner's ranking of a "
          "dialogue's non-relevant candidates negatives are drawn", low=1, metavar="N"),
    Param("targets", "binary", "str", "cross-encoder: binary (label > 0 -> 1) or graded (label / "
          "highest label)", choices=TARGETS),
    Param("eval_source", None, "str", "a CMU_DoG folder whose evaluation splits (valid, test) are "
          "read: training conversations that also appear there are dropped, as are the judged "
          "development set's (default: the collection's source, else $DSR_HOME/data/cmu_dog)",
          metavar="DIR"),
    Param("exclude_docs", None, "str", "leave these documents (meta.document, e.g. CMU_DoG films) "
          "out of training: their dialogues and their sentences in every pool",
          metavar="DOC[,DOC...]"),
    Param("folds", None, "int", "document folds (with fold): train without fold I's documents",
          low=2, metavar="K"),
    Param("fold", None, "int", "the fold left out (0..K-1)", low=0, metavar="I"),
    Param("holdout", 0.1, "float", "fraction of dialogues (whole conversations) kept out for the "
          "card's metrics", low=0, below=1, metavar="FRACTION"),
    Param("holdout_max", 100, "int", "at most this many held-out dialogues (scoring them takes "
          "time on CPU)", low=1, metavar="N"),
)
#: the optimisation
OPTIMISATION = (
    Param("seed", 42, "int", "seed of the head, dropout, data order and sampling"),
    Param("epochs", 1.0, "float", "passes over the training data", above=0),
    Param("batch_size", None, "int", "examples per step (default: 32 bi-encoder, 16 "
          "cross-encoder)", low=1, metavar="N"),
    Param("max_length", None, "int", "word pieces of query + sentence (cross-encoder) or of one "
          "text (bi-encoder); default: the bi-encoder's own (256 for all-MiniLM-L6-v2), 128 "
          "cross-encoder",
          low=8, metavar="L"),
    Param("lr", None, "float", "peak learning rate (default 5e-5)",
          above=0),
    Param("warmup", 0.1, "float", "linear warm-up: a fraction of the steps when < 1, else steps",
          low=0, metavar="W"),
    Param("max_steps", None, "int", "stop after N optimiser steps (-1: run all epochs; default "
          "120 bi-encoder, 400 cross-encoder)", low=-1, metavar="N"),
    Param("save_steps", None, "int", "checkpoint every N steps (the last two are kept until the "
          "end)", low=1, metavar="N"),
    Param("batching", None, "str", "bi-encoder: random (no-duplicate batches) or by-length "
          "(the same, each batch re-cut among examples of similar length: less padding, other "
          "in-batch negatives); default random", choices=("random", "by-length")),
    Param("padding", None, "str", "bi-encoder: column (each column of a batch padded to its "
          "longest text, as sentence-transformers does) or chunks (the batch's texts sorted by "
          "length and encoded in chunks, each padded to its own longest: the same embeddings "
          "and loss for about half the computation; the bi-encoder's default; a "
          "cross-encoder's is column)", choices=("column", "chunks")),
    Param("precision", "auto", "str", "auto: bf16 autocast where the CPU (amx_bf16, avx512_bf16) or "
          "GPU has bf16 units, else fp32; bf16 insists (refused without such units); the card "
          "records the choice", choices=("auto", "bf16", "fp32")),
    Param("resume", False, "bool", "continue from the newest checkpoint of an interrupted run "
          "of NAME"),
    Param("overwrite", False, "bool", "replace an existing model NAME"),
)
PARAMS = (*MODEL, *DATA, *OPTIMISATION)
#: the groups ``dsr train --help`` shows the settings in
GROUPS = {"model": MODEL, "data": DATA, "optimisation": OPTIMISATION}

#: what each recipe defaults to where a setting is declared without a default
RECIPES: dict[str, dict[str, Any]] = {
    "cross-encoder": {"query": "weighted", "batch_size": 16, "max_steps": 400, "max_length": 128,
                      "save_steps": 100, "lr": 5e-5, "batching": "random", "padding": "column"},
    # the earlier recipe stays (shorter ones, e.g. 56 steps of 32 at 128 word pieces, are
    # lower on the judged development set), computed without most of its padding (`padding`
    # chunks, dsr.training.chunks: the same embeddings and loss; 169 s of training on 2 cores
    # against ~350 s padded per column), which `dsr decide` finds not significantly different
    # on either label set (docs/results.md, "Issue 31: the training levers"; tools/issue31_levers.py)
    "bi-encoder": {"query": "title+recent", "batch_size": 32, "max_steps": 120, "max_length": None,
                   "save_steps": 60, "lr": 5e-5, "batching": "random", "padding": "chunks"},
}

#: the checked settings of one training (fields: PARAMS' names)
TrainSettings = record_type("TrainSettings", PARAMS)


def resolve_settings(given: Mapping[str, Any]) -> Any:
    """``given`` (name -> value) checked against :data:`PARAMS`, the declared defaults and the
    recipe's filled in: a ``TrainSettings``. InputError names the setting at fault."""
    values = resolve(given, PARAMS, "dsr train")
    for key, value in RECIPES[values["model_type"]].items():
        if values[key] is None:
            values[key] = value
    if values["max_steps"] == 0:
        raise InputError("must be a positive number of steps or -1, got 0", field="max_steps")
    if (values["folds"] is None) != (values["fold"] is None):
        raise InputError("folds K and fold I go together", field="folds")
    if values["text"] != CONTEXT_FORM and (values["context"] is not None or values["documents"] is not None):
        raise InputError(f"context and documents apply to text {CONTEXT_FORM!r} only",
                         field="context" if values["context"] is not None else "documents")
    if values["model_type"] != "bi-encoder" and values["text"] == CONTEXT_FORM:
        raise InputError(f"text {CONTEXT_FORM!r} applies to bi-encoder training only (a "
                         "cross-encoder reads 'body' or 'title: body')", field="text")
    if values["model_type"] != "bi-encoder" and values["batching"] != "random":
        raise InputError("batching applies to bi-encoder training only", field="batching")
    if values["model_type"] != "bi-encoder" and values["padding"] != "column":
        raise InputError("padding 'chunks' applies to bi-encoder training only", field="padding")
    if values["model_type"] != "bi-encoder" and (values["loss"] != "mnrl" or values["guide"]):
        raise InputError("loss and guide apply to bi-encoder training only (a cross-encoder "
                         "trains with binary cross-entropy)", field="loss" if values["loss"] != "mnrl"
                         else "guide")
    if values["guide"] is not None and values["loss"] != "gist":
        raise InputError("guide applies to loss 'gist' only", field="guide")
    return TrainSettings(**values)
