"""``cmu_dog_judged``: CMU_DoG valid query points with JUDGED relevance (a development set).

115 query points of CMU_DoG **valid** (one per sampled conversation), with
exactly the dialogues and 50-candidate BM25 pools of ``dsr data build cmu_dog
--split valid``; only the labels differ: every candidate was graded 0/1/2 for
usefulness to the next turn by language-model assessors, one per packet of 15
points (see the README beside the file; the file is not public). It is read, never copied into the package: ``--source DIR`` is a
folder holding :data:`FILE_NAME` (or the file itself); the default folder is
``$DSR_HOME/data/cmu_dog_judged``. In this project's checkout the file lives
in ``../shared/data/judged``::

    dsr stats cmu_dog_judged --source ../shared/data/judged

**Never train on it.** ``dsr train`` refuses it by name, by file name, by
content hash and by its dialogues' content (:func:`is_judged`), so that judged
labels cannot leak into a model, even from a renamed copy stripped of
``meta``, reordered, or mixed into other data; selecting a checkpoint or
recipe on it is allowed when reported. The file has one split, ``valid``
(the default and the only one).

Recognised by content: :data:`FINGERPRINTS_FILE` (made by
``tools/judged_fingerprints.py``, committed; it holds hashes, not the data)
lists each judged point's :func:`point_fingerprint` (its context turns) and a
12-bit :func:`label_tag` of its judged relevant candidates, or null where the
silver labels of ``dsr data build cmu_dog --split valid`` are the same.
Training dialogues that are judged points are named in a warning (CMU_DoG
valid holds all 115: a model trained on it is not held out from the judged
set); two or more carrying their judged labels (tags that silver labels do
not give) is a refusal. The tag is short on purpose: it cannot be inverted to
the labels, and two chance matches in 4096 are needed for a false refusal.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from dsr.collections import SourceInfo
from dsr.collections.common import resolve_source
from dsr.core.data import Collection, Dialogue, canonical_json, read_benchmark
from dsr.core.errors import InputError
from dsr.core.home import data_dir

NAME = "cmu_dog_judged"
FILE_NAME = "cmu_dog-valid-judged.jsonl"
#: content hashes (dsr.core.data.Collection.content_hash) of the published judged files
KNOWN_HASHES: frozenset[str] = frozenset(
    {
        "896240b0fe42ae3a7bc539c341c12107c0c584f9ca72760eddf06cae7b9e47a8",  # the file of 115 points
    }
)
#: point fingerprint -> label tag (null: the silver labels are the same) of each judged point
FINGERPRINTS_FILE = Path(__file__).parent / "data" / "cmu_dog_judged.fingerprints.json"
#: this many training dialogues carrying judged labels make a refusal (one may be chance)
CARRYING_LIMIT = 2
#: no build parameters: the judged file is read as it is
PARAMS = ()
#: the folder of files it reads, as ../shared/data names it (the tests read it there)
DATA = "judged"

SOURCE = SourceInfo(
    name=NAME,
    description="115 CMU_DoG valid query points (the project's 50-candidate BM25 pools) with "
    "judged 0/1/2 relevance for the next turn: a development set, never trained on",
    licence="as CMU_DoG (none stated; documents CC BY-SA)",
    repository="",
    commit="",
    splits=("valid",),
    default_split="valid",
    has_candidates=True,
    notes=(
        f"read from --source DIR holding {FILE_NAME} (default $DSR_HOME/data/{NAME}); "
        "in this project: --source ../shared/data/judged",
        "never trained on: dsr train refuses it (exit 2)",
    ),
)


def default_folder() -> Path:
    return data_dir(NAME)


def is_available(folder: Path | None = None) -> bool:
    folder = Path(folder) if folder is not None else default_folder()
    return (folder / FILE_NAME).is_file() or (folder.is_file() and folder.suffix == ".jsonl")


def not_here_message(folder: Path) -> str:
    """What to do when the judged file is not in its default folder: it is not downloadable
    (``dsr data fetch`` has no plan for it), so it is copied there, or named with --source."""
    return (
        f"no {FILE_NAME} here, and `dsr data fetch` cannot download it (the judged set is "
        f"shared with the project, not published): copy it into this folder, e.g. "
        f"`mkdir -p {folder} && cp ../shared/data/judged/{FILE_NAME} {folder}/` (then "
        f"ir_datasets.load('dsr/{NAME}') and every dsr command find it), or give dsr commands "
        f"--source ../shared/data/judged"
    )


def data_file(source: Path | None) -> Path:
    """The judged file: ``source`` itself when it is a file, else ``source/FILE_NAME``."""
    if source is not None and Path(source).is_file():
        return Path(source)
    if source is None and not (default_folder() / FILE_NAME).is_file():
        raise InputError(not_here_message(default_folder()), path=default_folder())
    folder = resolve_source(NAME, source)
    path = folder / FILE_NAME
    if not path.is_file():
        raise InputError(
            f"no {FILE_NAME} in this folder; pass the folder that holds it as `source` (in this project: ../shared/data/judged)",
            path=folder,
            field="source",
        )
    return path


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The judged collection (split ``valid``, the only one), read from ``source``."""
    if split not in (None, "valid"):
        raise InputError(f"unknown split {split!r} for {NAME}; it has only 'valid'", field="split")
    path = data_file(source)
    collection = read_benchmark(path, name=NAME)
    collection.meta = {**collection.meta, "judged": True, "split": "valid"}
    return collection


def is_judged(collection: Collection, spec: str | None = None) -> bool:
    """True for the judged development set however it was named: the registered name, a
    file named like it, a known content hash, a collection marked ``judged``, or
    :data:`CARRYING_LIMIT` dialogues or more carrying judged labels (:func:`judged_points`)."""
    path = str(collection.meta.get("path") or spec or "")
    return (
        collection.name == NAME
        or bool(collection.meta.get("judged"))
        or Path(path).name == FILE_NAME
        or "judged" in Path(path).name.lower()
        or collection.content_hash in KNOWN_HASHES
        or len(judged_points(collection)[1]) >= CARRYING_LIMIT
    )


def point_fingerprint(dialogue: Dialogue) -> str:
    """Which query point a dialogue is: a hash of its context turns' texts (64 bits)."""
    turns = [turn.body for turn in dialogue.context]
    return hashlib.sha256(canonical_json(turns).encode("utf-8")).hexdigest()[:16]


def label_tag(dialogue: Dialogue) -> str:
    """12 bits of a hash of the point and its relevant candidates with their grades."""
    relevant = sorted([c.id, c.label] for c in dialogue.candidates if c.label > 0)
    data = canonical_json([point_fingerprint(dialogue), relevant]).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:3]


@lru_cache(maxsize=1)
def fingerprints() -> dict[str, str | None]:
    return json.loads(FINGERPRINTS_FILE.read_text(encoding="utf-8"))["points"]


def judged_points(collection: Collection) -> tuple[list[str], list[str]]:
    """Ids of the dialogues that are judged query points, and of those carrying judged labels."""
    known = fingerprints()
    points, carrying = [], []
    for dialogue in collection:
        fingerprint = point_fingerprint(dialogue)
        if fingerprint in known:
            points.append(dialogue.id)
            if known[fingerprint] is not None and label_tag(dialogue) == known[fingerprint]:
                carrying.append(dialogue.id)
    return points, carrying
