"""``dsr kfold``: document-disjoint evaluation of a trained bi-encoder in one command.

For each of ``--folds K`` folds of the training collection's documents
(:mod:`dsr.training.folds`), ``dsr train ... --folds K --fold I`` trains
``PREFIX-foldI`` without fold I's documents (an existing model whose card
records the same fold is reused). Each fold model then ranks only the
evaluation dialogues about its left-out documents, and the rankings are
pooled into one run over the whole evaluation collection: every dialogue is
ranked by a model that never saw its document, its sentences or its
conversations. The pooled run is compared with the zero-shot base model
under the same query strategy (paired tests over all evaluation dialogues,
Holm-corrected; ``dsr evaluate``'s machinery) and, with ``--in-domain
dsr:NAME``, with a model trained on every document.

Outputs in ``--out``: ``kfold.run``, ``zero-shot.run`` (and ``in-domain.run``)
with sidecars, ``folds.json`` and ``folds.md`` (:func:`fold_gains`: per fold, the paired gain
of the fold model over zero-shot on the dialogues of the documents it left out, with its 95 %
interval and the paired tests' p-values, then all folds pooled), and the report in ``report/``
(``results.md``, ``results.json``...), written as a set (:func:`dsr.core.atomic.atomic_dir`): a
``--out`` holding other files is refused before any training.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dsr.core.atomic import atomic_dir, write_json
from dsr.core.data import Collection
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.core.params import Settings, setting
from dsr.core.provenance import slug
from dsr.core.run import Run
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.report import REPORT_FILES, write_report_files
from dsr.evaluation.results import Results
from dsr.evaluation.significance import compare
from dsr.rankers import make_ranker
from dsr.rerankers import make_reranker
from dsr.training.card import CARD_FILE, ranking_params, read_card
from dsr.training.folds import dialogue_document

#: the runs ``--out`` holds
RUNS = ("kfold", "zero-shot", "in-domain")


@dataclass(frozen=True, kw_only=True)
class KfoldSettings(Settings):
    """``dsr kfold``'s settings: the folds (``dsr train``'s ``folds``, here 3 unless given), the
    base model trained per fold and compared zero-shot, and the report's measures."""

    folds: int = setting(3, "document folds, at least 2 (default 3): one left out, the others trained on", low=2, metavar="K")
    base: str = setting("all-MiniLM-L6-v2", "base model: trained per fold, and the zero-shot comparison")
    measures: Sequence[str] = setting(
        ("nDCG@5", "RR", "nDCG@10"), "measures of the report (default nDCG@5 RR nDCG@10)", metavar="M"
    )


#: every field of :class:`KfoldSettings` as a Param (``dsr kfold``'s --folds, --base, --measures)
KFOLD_PARAMS = KfoldSettings.params()


def out_files() -> tuple[str, ...]:
    """What ``dsr kfold --out`` holds (replaced as a set): the runs, their sidecars, the report."""
    return (
        *(f"{name}.run{ext}" for name in RUNS for ext in ("", ".json")),
        "folds.json",
        "folds.md",
        *(f"report/{name}" for name in REPORT_FILES),
    )


def trained_for_fold(name: str, k: int, i: int) -> bool:
    try:
        _, found = _card(f"dsr:{name}")
    except InputError:
        return False
    selection = (found or {}).get("training_data", {}).get("selection", {})
    return bool(found) and selection.get("folds") == k and selection.get("fold") == i


def card(model: str) -> dict[str, Any]:
    """The card of ``model``; InputError when it is no model, or not one `dsr train` made."""
    folder, found = _card(model)
    if found is None:
        raise InputError(f"not a model trained by `dsr train` (no {CARD_FILE})", path=folder / CARD_FILE, field="model")
    return found


def _card(model: str) -> tuple[Path, dict[str, Any] | None]:
    folder = Path(resolve_model(model, "bi-encoder").path)
    return folder, read_card(folder)


def fold_owners(evaluation: Collection, models: list[str], cards: list[dict[str, Any]]) -> dict[str | None, int]:
    """Document -> the fold model that left it out; InputError when the fold models read queries
    or candidates differently, a document is left out twice, or an evaluation document by none."""
    same = ranking_params(cards[0])
    owner: dict[str | None, int] = {}
    for i, fold_card in enumerate(cards):
        theirs = ranking_params(fold_card)
        if theirs["query"] != same["query"]:
            raise InputError(f"fold models use different query strategies ({same['query']}, {theirs['query']})", field="model")
        if theirs != same:
            raise InputError(
                f"fold models use different candidate texts ({same['text']}, {theirs['text']}; "
                f"context {same.get('context')}, {theirs.get('context')})",
                field="model",
            )
        for doc in fold_card.get("excluded_documents") or []:
            if doc in owner:
                raise InputError(
                    f"document {doc!r} is left out by two fold models ({models[owner[doc]]}, {models[i]})", field="model"
                )
            owner[doc] = i
    uncovered = sorted(map(str, {dialogue_document(d) for d in evaluation} - set(owner)))
    if uncovered:
        raise InputError(
            f"no fold model left out {', '.join(uncovered)}: every evaluation document must be held out by exactly one fold",
            field="model",
        )
    return owner


def kfold_evaluate(
    evaluation: Collection,
    models: list[str],
    out: Path,
    *,
    base: str = "all-MiniLM-L6-v2",
    in_domain: str | None = None,
    measures: Sequence[str] = ("nDCG@5", "RR"),
    command: Sequence[str] | None = None,
    rerankers: list[str] | None = None,
    top_k: int | None = None,
) -> tuple[Results, list[dict[str, Any]]]:
    """Rank each dialogue of ``evaluation`` with the fold model that left its document out
    (then, with ``rerankers``, one per fold: that fold's cross-encoder reranks its top
    ``top_k``), pool, evaluate the runs against zero-shot ``base`` and write ``out`` as a set
    (the runs and ``report/``, :func:`out_files`: a folder holding anything else is refused)."""
    if rerankers is not None and len(rerankers) != len(models):
        raise InputError(f"{len(rerankers)} fold rerankers for {len(models)} fold models", field="rerankers")
    cards = [card(m) for m in models]
    owner = fold_owners(evaluation, models, cards)
    same = ranking_params(cards[0])  # the query and candidate text the fold models were trained on
    pooled = pooled_run(evaluation, models, cards, owner, rerankers, top_k)
    # zero-shot and in-domain read the candidates as the fold models do
    runs = {"zero-shot": make_ranker("dense", model=base, **same).rank(evaluation), "kfold": pooled}
    if in_domain:
        runs["in-domain"] = make_ranker("dense", model=in_domain, **same).rank(evaluation)
    results = evaluate_runs(evaluation, runs, list(measures), subsets=["all"], baseline="zero-shot")
    fold_of = {d.id: owner[dialogue_document(d)] for d in evaluation}
    gains = fold_gains(results, [fold_of.get(t) for t in results.topics], models)
    write_out(out, runs, results, command, gains)
    return results, gains


def pooled_run(
    evaluation: Collection,
    models: list[str],
    cards: list[dict[str, Any]],
    owner: dict[str | None, int],
    rerankers: list[str] | None,
    top_k: int | None,
) -> Run:
    """One run over ``evaluation``: each dialogue ranked by the fold model that left its document
    out (``owner``), then reranked by that fold's reranker when there are ``rerankers``."""
    same = ranking_params(cards[0])
    query, text = same["query"], same["text"]
    rankings: dict[str, list[tuple[str, float]]] = {}
    fold_runs = []
    for i, model in enumerate(models):
        dialogues = [d for d in evaluation if owner[dialogue_document(d)] == i]
        part = Collection(f"{evaluation.name}-fold{i}", dialogues, meta=evaluation.meta)
        if not len(part):
            continue
        run = make_ranker("dense", model=model, **same).rank(part)
        if rerankers:
            run = make_reranker("cross-encoder", model=rerankers[i]).rerank(part, run, top_k)
        rankings.update(run.rankings)
        fold_runs.append(
            {
                "model": model,
                **({"reranker": rerankers[i], "top_k": top_k} if rerankers else {}),
                "dialogues": len(part),
                "documents": cards[i].get("excluded_documents"),
            }
        )
    tag = f"kfold-{len(models)}-dense-query={query}" + ("" if text == "body" else f"-text={slug(text)}")
    tag += f"-reranked-top{top_k or 'all'}" if rerankers else ""
    return Run(rankings, tag, {"kfold": fold_runs, "query": query, "text": text, "collection": evaluation.describe()})


def fold_gains(results: Results, folds: list[int | None], models: list[str]) -> list[dict[str, Any]]:
    """Per fold (then ``all`` folds pooled): the paired difference kfold − zero-shot of the
    primary measure over the evaluated dialogues whose document that fold left out: mean, 95 %
    t interval, the paired t-test's and the sign-flip test's p-values (uncorrected), and the two
    means. ``folds`` gives each of ``results.topics``' fold (None: not evaluated)."""
    measure = results.primary_measure
    column = results.measures.index(measure)
    values = {name: results.systems[name].per_topic for name in ("zero-shot", "kfold")}
    rows = []
    groups = [(str(i), model, [k for k, f in enumerate(folds) if f == i]) for i, model in enumerate(models)]
    for fold, model, index in [*groups, ("all", "pooled", [k for k, f in enumerate(folds) if f is not None])]:
        if not index:
            continue
        effect = compare(values, "zero-shot", results.measures, index=np.asarray(index))["kfold"][measure]
        rows.append(
            {
                "fold": fold,
                "model": model,
                "dialogues": len(index),
                "measure": measure,
                "zero_shot": float(values["zero-shot"][index, column].mean()),
                "kfold": float(values["kfold"][index, column].mean()),
                **{k: effect[k] for k in ("diff", "ci_low", "ci_high", "t", "perm")},
            }
        )
    return rows


def folds_markdown(gains: list[dict[str, Any]]) -> str:
    """The per-fold table (:func:`fold_gains`) in Markdown."""
    measure = gains[0]["measure"] if gains else "nDCG@5"
    lines = [
        f"| fold | model | dialogues | zero-shot {measure} | fold model {measure} | gain [95 % CI] | p (t / sign-flip) |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for g in gains:
        lines.append(
            f"| {g['fold']} | {g['model']} | {g['dialogues']} | {g['zero_shot']:.4f} | {g['kfold']:.4f} | "
            f"{g['diff']:+.4f} [{g['ci_low']:+.4f}, {g['ci_high']:+.4f}] | {_p(g['t'])} / {_p(g['perm'])} |"
        )
    return "\n".join(lines) + "\n"


def _p(value: float) -> str:
    return "<.001" if value < 0.001 else f"{value:.3f}"


def write_out(
    out: Path,
    runs: Mapping[str, Run],
    results: Results,
    command: Sequence[str] | None = None,
    gains: list[dict[str, Any]] | None = None,
) -> None:
    """``out`` as a set: each run (with its sidecar), the per-fold gains and the report in
    ``out/report``."""
    with atomic_dir(out, out_files(), field="out") as staging:
        for name, run in runs.items():
            run.write(staging / f"{name}.run")
        write_json(staging / "folds.json", gains or [])
        (staging / "folds.md").write_text(folds_markdown(gains or []), encoding="utf-8")
        (staging / "report").mkdir()
        write_report_files(results, staging / "report", command)
