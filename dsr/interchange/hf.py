"""A Hugging Face ``datasets`` folder: MTEB's retrieval layout plus the dialogues.

The folder is a dataset repository: its ``README.md`` names the configs in its
YAML header, so ``datasets.load_dataset(DIR, CONFIG)`` loads each one
(locally, or after ``huggingface-cli upload``):

============  =========  ====================================================
config        split      rows
============  =========  ====================================================
``default``   ``test``   qrels: ``query-id``, ``corpus-id``, ``score`` (grade)
``corpus``    ``corpus`` ``_id``, ``title``, ``text``
``queries``   ``queries`` ``_id``, ``text`` (the export's strategy), ``subset``
``candidates`` ``test``  ``query-id``, ``corpus-ids``, ``scores`` (initial order)
``dialogues`` ``test``   the benchmark record: ``id``, ``title``, ``subset``,
                         ``subreddit``, ``source``, ``context`` [turns],
                         ``target``, ``candidates`` [with ``corpus_id``],
                         ``meta`` (JSON text)
============  =========  ====================================================

The first three are the layout of MTEB's retrieval datasets on the hub
(``mteb/...``: configs ``default``/``corpus``/``queries``); ``dialogues``
keeps everything a dialogue model needs. Files are JSON Lines; numbers that
may be whole or not (turn and candidate scores) are written as floats so
Arrow infers one type per column.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsr.core.data import Turn
from dsr.interchange.beir import candidate_rows, corpus_rows
from dsr.interchange.corpus import TestCollection
from dsr.interchange.folder import write_jsonl, write_lines

CONFIGS = (  # (config, split, file)
    ("default", "test", "qrels/test.jsonl"),
    ("corpus", "corpus", "corpus.jsonl"),
    ("queries", "queries", "queries.jsonl"),
    ("candidates", "test", "candidates.jsonl"),
    ("dialogues", "test", "dialogues.jsonl"),
)


#: the format's name (``dsr export --format hf``)
NAME = "hf"


def write(view: TestCollection, folder: Path) -> list[str]:
    write_jsonl(
        folder / "qrels" / "test.jsonl",
        (
            {"query-id": qid, "corpus-id": doc, "score": grade}
            for qid, docs in view.qrels().items()
            for doc, grade in docs.items()
        ),
    )
    write_jsonl(folder / "corpus.jsonl", corpus_rows(view))
    write_jsonl(
        folder / "queries.jsonl", ({"_id": d.id, "text": view.query_text(d.id), "subset": d.subset} for d in view.collection)
    )
    write_jsonl(folder / "candidates.jsonl", candidate_rows(view))
    write_jsonl(folder / "dialogues.jsonl", dialogue_rows(view))
    write_lines(folder / "README.md", card(view))
    return [path for _, _, path in CONFIGS] + ["README.md"]


def _float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _turn(t: Turn) -> dict[str, Any]:
    return {"author_id": t.author_id, "author_name": t.author_name, "body": t.body, "score": _float(t.score)}


def dialogue_rows(view: TestCollection) -> Iterator[dict[str, Any]]:
    for dialogue in view.collection:
        yield {
            "id": dialogue.id,
            "title": dialogue.title,
            "subset": dialogue.subset,
            "subreddit": dialogue.subreddit,
            "source": dialogue.source,
            "context": [_turn(t) for t in dialogue.context],
            "target": _turn(dialogue.target) if dialogue.target is not None else None,
            "candidates": [
                {"id": c.id, "corpus_id": doc, "title": c.title, "body": c.body, "score": _float(c.score), "label": c.label}
                for c, (doc, *_rest) in zip(dialogue.candidates, view.candidates[dialogue.id])
            ],
            "meta": json.dumps(dialogue.meta, ensure_ascii=False, sort_keys=True),
        }


def card(view: TestCollection) -> list[str]:
    """README.md: the YAML header with the configs, then a short description."""
    described = view.collection.describe()
    lines = ["---", "configs:"]
    for config, split, path in CONFIGS:
        lines += [f"- config_name: {config}", "  data_files:", f"  - split: {split}", f"    path: {path}"]
    lines += [
        "---",
        "",
        f"# {view.collection.name} (exported by dsr)",
        "",
        f"Sentence retrieval in dialogue: {described['dialogues']} dialogues "
        f"(subsets: {', '.join(described['subsets'])}), {len(view.documents)} candidate "
        f"sentences, graded labels. Collection hash `{described['hash']}`; queries use the "
        f"`{view.query}` strategy. See dsr_export.json for the id rule and file checksums.",
        "",
        "```python",
        "from datasets import load_dataset",
        'corpus = load_dataset("DIR", "corpus", split="corpus")',
        'qrels = load_dataset("DIR", "default", split="test")',
        "```",
    ]
    return lines
