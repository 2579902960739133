"""Cross-encoder reranker: a sentence-transformers CrossEncoder scores each
(query, candidate) pair of a run's top k.

The model comes through :mod:`dsr.core.models` (``all-MiniLM``-style short
names, hub ids, local folders, ``dsr:NAME`` for trained models; offline
first), so a folder saved by ``transformers`` (``save_pretrained`` of a
``*ForSequenceClassification`` with one label, plus its tokenizer) works the
same way as a published cross-encoder. The default model
(``cross-encoder/ms-marco-MiniLM-L-6-v2``) is not bundled: offline, pass a
folder or a model trained with ``dsr train`` (``dsr:NAME``).

Scores
------
The reranked block's scores are the model's raw logits (no sigmoid):
sentence-transformers applies a sigmoid to one-label models by default, and
in float32 it saturates, turning distinct logits into ties. Order is the
same either way.

Below the block, the rest of the run keeps its original order with scores
``lowest block score - 1``, ``- 2``, ...: they say where a sentence stands, not
how good the model thinks it is (the model never saw them). Ties inside the
block follow the run tie rule (initial rank, then sentence id).
"""

from __future__ import annotations

import contextlib
import math
import sys
from pathlib import Path
from typing import Any

from dsr.core.candidate_text import BODY_FORMS, candidate_text
from dsr.core.data import Candidate, Collection
from dsr.core.errors import InputError
from dsr.core.jsonio import load_json
from dsr.core.models import ResolvedModel, load_cross_encoder, load_float64_cross_encoder, resolve_model
from dsr.core.params import Param
from dsr.core.queries import DEFAULT_DECAY, OWN_STRATEGIES, STRATEGIES, check_strategy, model_query_budget, query_text
from dsr.core.run import Run

# the body text forms are the dense ranker's, so both read candidates alike (the context form
# is for bi-encoders: dsr rerank --reranker bi-encoder, dsr run --ranker dense)
from dsr.indexes.backends import CHOICES, DEFAULT_BACKEND, load_fast, resolve_backend
from dsr.indexes.embeddings import near_tied
from dsr.indexes.exactness import BACKEND_HELP
from dsr.rerankers.base import Reranker, rerank_top_k

#: the published MS MARCO cross-encoder of MiniLM-L6 size (hub id cross-encoder/NAME)
DEFAULT_MODEL = "ms-marco-MiniLM-L-6-v2"
#: logits of one topic closer than this are a near tie, settled in float64 (settle_near_ties):
#: 37 times fp32's largest error measured on the sample (2.7e-6, logits of -1.3 to 2.3;
#: tests/rerankers/test_cross_encoder_near_ties.py keeps it at least 10 times)
NEAR_TIE = 1e-4
#: decimals a float64 logit is kept to (as the bi-encoder's cosines)
FLOAT64_DECIMALS = 12


class CrossEncoderReranker(Reranker):
    """Rescore each topic's top ``top_k`` (None: all) with a cross-encoder.

    Parameters: ``model`` (spec for :func:`dsr.core.models.resolve_model`),
    ``query`` (strategy of :mod:`dsr.core.queries`) and its ``decay``,
    ``batch_size``, ``max_length`` (tokens of query + candidate; longer pairs
    are truncated), ``text`` (``body`` or ``title: body``), ``top_k``,
    ``precision`` (``fp32``, the default, or ``bf16``: faster, see score_pairs),
    ``backend`` (``torch``, the default: exact; ``openvino`` / ``openvino-bf16`` / ``openvino-int8``,
    faster, or ``auto``, int8 where the CPU has VNNI or AMX: see
    :mod:`dsr.indexes.backends`; precision applies to torch only, and ``auto`` with
    ``precision=bf16`` is torch). The run's config records the backend that ran.
    """

    name = "cross-encoder"
    #: parameters a `dsr train` model's card (dsr_model.json) supplies when not given
    CARD_PARAMS = ("query", "max_length", "text")
    PARAMS = (
        Param("model", DEFAULT_MODEL, "str", "cross-encoder: a short name, a folder, dsr:NAME or a hub id"),
        Param("query", "all", "str", "query strategy (dsr.core.queries)", choices=STRATEGIES, grid=OWN_STRATEGIES),
        Param("decay", DEFAULT_DECAY, "float", "per-turn weight decay of query=weighted", above=0, high=1),
        Param("batch_size", 32, "int", "pairs scored per batch", low=1),
        Param("max_length", 256, "int", "word pieces of query + candidate (longer pairs are truncated)", low=1),
        Param("text", "body", "str", "what a candidate's text is", choices=BODY_FORMS),
        Param("top_k", None, "int", "rescore each topic's top k (none: all)", low=1),
        Param(
            "precision", "fp32", "str", "fp32 (exact) or bf16 (faster on AVX-512 BF16 CPUs and GPUs)", choices=("fp32", "bf16")
        ),
        Param("backend", DEFAULT_BACKEND, "str", BACKEND_HELP + " (torch with precision=bf16)", choices=CHOICES),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.explicit = set(params)
        if self.params["backend"] not in ("torch", "auto") and self.params["precision"] != "fp32":
            raise InputError(
                f"precision={self.params['precision']} is for the torch backend; backend {self.params['backend']} sets its own",
                field="precision",
            )
        self.model_info: ResolvedModel | None = None  # once rerank() has loaded it

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["params"] = {**out["params"], "backend": self.backend()}  # as it runs: auto resolved
        if self.model_info is not None:
            out["model"] = self.model_info.describe()
        return out

    def resolve(self) -> ResolvedModel:
        """Resolve the model (once). A model made by ``dsr train`` is used with the query
        strategy, max length and candidate text it was trained with, from its card, unless given."""

        if self.model_info is None:
            self.model_info = resolve_model(self.params["model"], "cross-encoder")
            card = Path(self.model_info.path) / "dsr_model.json"
            trained = load_json(card) if card.exists() else {}
            for key in self.CARD_PARAMS:
                if key not in self.explicit and trained.get(key) is not None:
                    self.params[key] = trained[key]
            check_strategy(self.params["query"])
        return self.model_info

    def rerank(self, collection: Collection, run: Run, top_k: int | None = None) -> Run:
        """A new run: each topic's top ``top_k`` (default: the ``top_k`` parameter, else all)
        rescored by the model, the rest below in their original order.

        Every topic must be a dialogue of ``collection`` and every sentence a
        candidate of it (or of the collection's sentence pool), else InputError.
        """

        model_info = self.resolve()
        p = self.params
        k = top_k if top_k is not None else p["top_k"]
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InputError(f"top_k must be a whole number >= 1, got {k!r}", field="top_k")

        pairs, keys = self._pairs(collection, run, k, self._budget())
        backend = self.backend()
        if backend == "torch":
            # bf16 runs under torch's autocast, which only knows torch's own linear layers
            model = load_cross_encoder(model_info, max_length=p["max_length"], autocast=p["precision"] != "fp32")
        else:
            model = load_fast(model_info, "cross-encoder", backend, p["max_length"])
        scores = score_pairs(model, pairs, p["batch_size"], p["precision"])
        if backend == "torch" and p["precision"] == "fp32":  # the exact path (a fast one states its tolerance)
            scores = settle_near_ties(scores, pairs, [qid for qid, _ in keys], model_info, p["max_length"])
        reranked = rerank_top_k(collection, run, dict(zip(keys, scores)), k)
        # the tag names the first stage too, as the bi-encoder's does: "bm25-...>>cross-encoder-...@k"
        reranked.tag = f"{run.tag}>>{self.tag}" + (f"@{k}" if k else "")
        return reranked

    def backend(self) -> str:
        """The backend that runs: ``auto`` resolved (torch when ``precision`` is not fp32)."""
        if self.params["backend"] == "auto" and self.params["precision"] != "fp32":
            return "torch"
        return resolve_backend(self.params["backend"])

    @property
    def tag(self) -> str:
        """``cross-encoder-MODEL`` and the parameters that differ from the defaults
        (``top_k`` shows as ``@k`` in the run's tag instead)."""
        changed = [
            f"{k}={v}" for k, v in sorted(self.params.items()) if k not in ("model", "top_k") and v != self.DEFAULTS.get(k)
        ]
        model = str(self.params["model"]).rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
        return "-".join([self.name, model, *changed]).replace(" ", "_")

    def _budget(self) -> tuple[int, Any]:
        """(max_length, word-piece counter) of the model, for fitting query texts per pair."""

        _, count = model_query_budget(self.resolve().path, self.params["max_length"])
        return self.params["max_length"], count

    def _pairs(self, collection: Collection, run: Run, k: int | None, budget: tuple[int, Any] | None = None) -> Any:
        """(query text, candidate text) per scored sentence; with ``budget`` = (max_length,
        counter), each query is fitted to what the pair leaves it (see pair_query_budget)."""
        p = self.params
        pool: dict[str, Candidate] | None = None
        pairs: list[tuple[str, str]] = []
        keys: list[tuple[str, str]] = []
        for qid, ranked in run.rankings.items():
            if qid not in collection:
                raise InputError(f"topic {qid!r} is not a dialogue of collection {collection.name!r}", record=qid, field="qid")
            dialogue = collection[qid]
            query = query_text(dialogue, p["query"], p["decay"])
            fitted: dict[int, str] = {}
            candidates = {c.id: c for c in dialogue.candidates}
            for doc, _ in ranked if k is None else ranked[:k]:
                candidate = candidates.get(doc)
                if candidate is None:
                    # open-retrieval runs may rank sentences of the whole pool
                    pool = collection.unique_sentences() if pool is None else pool
                    candidate = pool.get(doc)
                if candidate is None:
                    raise InputError(f"sentence {doc!r} is not in collection {collection.name!r}", record=qid, field="docid")
                sentence = candidate_text(candidate, p["text"])
                if budget is None:
                    pairs.append((query, sentence))
                    continue
                room = pair_query_budget(budget[0], budget[1](sentence))
                if room not in fitted:
                    fitted[room] = query_text(dialogue, p["query"], p["decay"], budget=room, count=budget[1])
                pairs.append((fitted[room], sentence))
                keys.append((qid, doc))
        return pairs, keys


def settle_near_ties(
    scores: list[float], pairs: list[tuple[str, str]], topics: list[str], model: ResolvedModel, max_length: int | None
) -> list[float]:
    """``scores`` (fp32 logits of ``pairs``, the pair of topic ``topics[i]``) with every near
    tie re-scored in float64: a new list.

    Why: as a bi-encoder's cosines (:func:`dsr.indexes.embeddings.settle_near_ties`), fp32
    logits differ in their last bits with the kernel (the CPU's instruction set) and the batch
    a pair was padded in, so two pairs of one topic whose logits are within fp32's error swap
    places from one machine to the next, and a published figure moves. Each pair within
    :data:`NEAR_TIE` of a different pair next to it in its topic's order is scored alone (no
    batch, no padding) by the model in float64 on the CPU, kept to :data:`FLOAT64_DECIMALS`
    decimals, and so is every other copy of that pair: those come in one order on every
    machine; the others are further apart than fp32's error, so their order never depended on
    it. One pair twice in a topic gets one score: a true tie, left to the run's tie rule."""
    by_topic: dict[str, list[int]] = {}
    for i, topic in enumerate(topics):
        by_topic.setdefault(topic, []).append(i)
    near: set[tuple[str, str]] = set()
    for rows in by_topic.values():
        near |= near_tied([scores[i] for i in rows], [pairs[i] for i in rows], NEAR_TIE)
    if not near:
        return list(scores)
    torch = _torch()
    encoder = load_float64_cross_encoder(model, max_length)
    settled = {}
    for pair in near:  # each alone: its logit does not depend on what it was batched with
        logit = encoder.predict([pair], show_progress_bar=False, activation_fn=torch.nn.Identity(), convert_to_tensor=True)
        settled[pair] = round(float(logit.reshape(-1)[0].item()), FLOAT64_DECIMALS)
    return [settled.get(pair, score) for pair, score in zip(pairs, scores)]


def _torch() -> Any:
    """torch, imported on first use (a reranker that never scores does not load it)."""
    import torch

    return torch


def pair_query_budget(max_length: int, sentence_tokens: int) -> int:
    """Word pieces a query may take beside a sentence of ``sentence_tokens`` in ``max_length``.

    A pair holds [CLS] query [SEP] sentence [SEP]. Too long, the tokenizer
    cuts the longer of the two first ("longest_first"), so a query of half
    the room is never cut, whatever the sentence.
    """
    room = max_length - 3
    return max(room - sentence_tokens, room // 2, 1)


def _one_score_each(logits: Any) -> list[float]:
    """Logits of shape (n,) or (n, 1) as (n,) floats, else InputError (not a one-label model)."""
    import numpy as np

    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    if logits.ndim != 1:
        raise InputError(
            f"the cross-encoder gives {logits.shape[-1]} scores per pair; "
            "a reranker needs a model with one output (num_labels=1)",
            field="model",
        )
    return logits


def score_pairs(model: Any, pairs: list[tuple[str, str]], batch_size: int = 32, precision: str = "fp32") -> list[float]:
    """Raw logits of a one-label CrossEncoder for each (query, text) pair, in input order.

    Pairs are scored longest first so that a batch holds pairs of similar
    length (less padding); a tqdm bar on stderr counts pairs. ``precision``
    "bf16" runs the model under bfloat16 autocast: on CPUs with AVX-512 BF16
    (or a GPU) about 1.8x the pairs per second, with scores that differ from
    fp32 in the third significant digit (more ties, broken by the tie rule).
    """
    import numpy as np
    from tqdm import tqdm

    torch = _torch()
    device = getattr(model, "device", torch.device("cpu"))
    autocast = (
        torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)
        if precision == "bf16"
        else contextlib.nullcontext()
    )

    if not pairs:
        return []
    out = np.empty(len(pairs), dtype=np.float64)
    if hasattr(model, "runner"):  # a fast backend (dsr.indexes.backends) orders and batches by itself
        out[:] = _one_score_each(model.predict(pairs, show_progress_bar=sys.stderr.isatty()))
    else:
        order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
        with tqdm(total=len(pairs), unit="pair", desc="cross-encoder", leave=False, disable=None) as bar:  # a tty's
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                with autocast:
                    logits = model.predict(
                        [pairs[i] for i in batch],
                        batch_size=batch_size,
                        show_progress_bar=False,
                        activation_fn=torch.nn.Identity(),
                        convert_to_numpy=True,
                    )
                out[batch] = _one_score_each(logits)
                bar.update(len(batch))
    bad = [i for i in range(len(pairs)) if not math.isfinite(out[i])]
    if bad:
        raise ValueError(f"the cross-encoder returned a non-finite score for {len(bad)} pair(s)")
    return out.tolist()
