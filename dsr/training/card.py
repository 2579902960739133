"""The model card of a trained reranker: ``dsr_model.json`` and ``README.md``.

``dsr_model.json`` is the machine-readable record (what went in, how it was
trained, how it did on held-out dialogues, on what machine with what
versions); ``README.md`` says the same for a reader. Both are written into the
model folder before it is renamed into place, so a model never exists without
its card.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsr.core.atomic import atomic_write, write_json
from dsr.core.jsonio import load_json

CARD_FILE = "dsr_model.json"


def read_card(folder: str | Path) -> dict[str, Any] | None:
    """The card in a model folder, or None when it has none (not a `dsr train` model)."""

    path = Path(folder) / CARD_FILE
    return load_json(path) if path.is_file() else None


def write_card(folder: Path, card: dict[str, Any]) -> None:
    write_json(folder / CARD_FILE, card)
    with atomic_write(folder / "README.md") as handle:
        handle.write(render_readme(card))


def ranking_params(card: dict[str, Any]) -> dict[str, Any]:
    """How a bi-encoder's card says to rank with it: its query strategy and candidate text
    (``title+recent`` and ``body`` when the card has none), and its context window."""
    return {
        "query": card.get("query") or "title+recent",
        "text": card.get("text") or "body",
        **({"context": card["context"]} if "context" in card else {}),
    }


def text_params(card: dict[str, Any]) -> str:
    """The ``--param``s that make `dsr run` read candidates as a bi-encoder was trained on them
    (empty for plain bodies), with a leading space."""
    text = card.get("text", "body")
    return (f" --param 'text={text}'" if text != "body" else "") + (
        f" --param context={card['context']}" if "context" in card else ""
    )


def describe_run(training: dict[str, Any]) -> str:
    """A card's ``training`` in a line: steps, passes, seconds, where, precision, peak memory."""
    where = training.get("hardware") or {}
    place = f"{where.get('device', training.get('device', '?'))}" + (
        f" ({where['name']}" + (f", {where['cores']} cores" if where.get("cores") else "") + ")" if where.get("name") else ""
    )
    precision = (training.get("precision") or {}).get("used")
    memory = training.get("memory") or {}
    return (
        f"{training['steps']} steps ({training['epochs']:g} passes), {training['wall_seconds']:.0f} s "
        f"on {place}"
        + (f", {precision}" if precision else "")
        + (f"; peak RSS {memory['peak_rss_mib']:,} MiB" if memory.get("peak_rss_mib") else "")
        + (f", GPU peak {memory['cuda_peak_mib']:,} MiB" if memory.get("cuda_peak_mib") else "")
    )


def render_readme(card: dict[str, Any]) -> str:
    """The model folder's README.md: the card for a reader, section by section."""
    lines = [*_use(card), *_base_and_data(card), *_parameters(card), *_training_run(card), *_heldout(card)]
    lines += ["## Versions", "", *[f"- {k} {v}" for k, v in sorted(card["versions"].items()) if v], ""]
    return "\n".join(lines)


def _use(card: dict[str, Any]) -> list[str]:
    """The title and how to use the model: the command, its queries, inputs and candidates."""
    bi = card.get("kind") == "bi-encoder"
    use = (
        f"`dsr run COLLECTION --ranker dense --param model=dsr:{card['name']} --query "
        f"{card['query']}{text_params(card)} --out RUN`"
        if bi
        else f"`dsr rerank COLLECTION --run RUN --model dsr:{card['name']} --out RUN`"
    )
    excluded = card.get("excluded_documents")
    return [
        f"# {card['name']}: a dialogue sentence " + ("ranker (bi-encoder)" if bi else "reranker (cross-encoder)"),
        "",
        f"Trained with `dsr train` (dsr {card['versions'].get('dialogue-sentence-retrieval')}) "
        f"on {card['created']}. Use it with " + use + f"; it reads queries built with the **`{card['query']}`** strategy "
        f"and inputs of at most {card['parameters']['max_length']} word pieces"
        + f"; candidates read as **`{card.get('text', 'body')}`**"
        + (f" with {card['context']} neighbouring sentence(s) on each side" if "context" in card else "")
        + ".",
        *([f"Documents left out of training: {', '.join(excluded)}."] if excluded else []),
        "",
    ]


def _base_and_data(card: dict[str, Any]) -> list[str]:
    base, data = card["base"], card["training_data"]
    return [
        "## Base model",
        f"- `{base['spec']}` = `{base['name']}` (from {base['source']}: {base['path']})",
        f"- weights sha256 `{base.get('weights_sha256')}`",
        f"- {base['head']}",
        "",
        "## Training data",
        f"- collection `{data['collection']}` (content hash `{data['hash']}`)"
        + (f", source split `{data['source_split']}`" if data.get("source_split") else "")
        + (f", selection: {data['selection']}" if data.get("selection") else ""),
        f"- {data['train_dialogues']} training dialogues, {data['heldout_dialogues']} held out",
        f"- {data['pairs']} pairs: {data['positives']} positives, {data['list_negatives']} negatives "
        f"from the same candidate lists, {data['random_negatives']} random negatives from other "
        f"dialogues; targets `{data['targets']}`",
        f"- {data['dialogues_without_positive']} dialogues had no relevant candidate and were not used",
        "",
    ]


def _parameters(card: dict[str, Any]) -> list[str]:
    rows = [f"| {k} | {v} |" for k, v in sorted(card["parameters"].items())]
    return ["## Parameters", "", "| parameter | value |", "|---|---|", *rows, ""]


def _training_run(card: dict[str, Any]) -> list[str]:
    run, recipe = card["training"], card.get("named_recipe")
    precision = run.get("precision")
    return [
        "## Training run",
        *(
            [f"- recipe `{recipe}` (`dsr train --recipe {recipe}`; settings given beside it are in the parameters above)"]
            if recipe
            else []
        ),
        f"- {run['steps']} steps ({run['epochs']} epochs), final mean loss {run['train_loss']:.4f}",
        f"- {describe_run(run)}",
        f"- machine: {card['machine'].get('platform')} ({card['machine'].get('cpus')} CPUs)",
        *([f"- precision {precision['used']} ({precision['why']}; asked: {precision['requested']})"] if precision else []),
        "",
    ]


def _heldout(card: dict[str, Any]) -> list[str]:
    held = card.get("heldout") or {}
    if not held.get("rankers"):
        return []
    measures = held["measures"]
    return [
        f"## Held-out dialogues ({held['dialogues']}, never trained on)",
        "",
        "Their own candidate lists reranked; labels as in the training data.",
        "",
        "| ranker | " + " | ".join(measures) + " |",
        "|---|" + "---|" * len(measures),
        *[f"| {name} | " + " | ".join(f"{scores[m]:.4f}" for m in measures) + " |" for name, scores in held["rankers"].items()],
        "",
    ]
