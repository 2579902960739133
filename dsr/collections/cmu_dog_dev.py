"""``cmu_dog_dev``: the judged CMU_DoG development set, shipped as ids and grades only.

**Which points.** One query point per conversation:

* every CMU_DoG **valid** conversation that appears in no other split (45 of the 229
  also appear in train, with identical turns: :func:`shared_conversations`), and
* a fixed slice of :data:`TRAIN_SLICE` **train** conversations (appearing in no other
  split), drawn with :data:`SEED`; ``dsr train`` never trains on them, nor on any other
  conversation of this set (:func:`dev_conversations`, ``dsr/training/hygiene.py``).

A conversation's point is its point in the 115-point judged set
(``cmu_dog-valid-judged.jsonl``, which thereby folds in: its grades are this set's), else one
of its query points of ``dsr data build cmu_dog`` drawn with the seed.

**The file** :data:`POINTS_FILE` (made by ``tools/make_cmu_dog_dev.py``) holds, per point,
its id (``<conversation>-<turn>``, as ``dsr data build cmu_dog`` names it), split,
conversation and turn, where it came from, the sentence ids pooled for judging and the
grades given so far (sentence id -> 0/1/2); no text of a conversation or document (their
licence is unstated).

**The builder** joins them to the CMU_DoG files as ir_datasets does for collections whose
text it may not redistribute: :func:`build` reads ``--source`` (a CMU_DoG folder, default
``$DSR_HOME/data/cmu_dog``) and builds the listed points of CMU_DoG valid and train with ``dsr
data build cmu_dog``'s conversion (:func:`dsr.collections.cmu_dog.build_points`: each point as
the whole split's build makes it, its 50 candidates and its context; only those points' turns are
labelled and pooled).
Labels are the grades; a candidate without a grade is 0. ``points``:

* ``judged`` (the default, what ``dsr evaluate cmu_dog_dev`` measures): the graded points with
  at least one relevant sentence (as the SIGIR 2022 set keeps only such dialogues: a point
  without one ranks every system 0), all 50 candidates (an ungraded one, below every pooled
  run's depth, counts 0);
* ``all``: every point, labels 0 where not graded (to rank and pool);
* ``pool``: the points still to grade, each with only its pooled sentences, labels 0 and
  ``meta.judged`` false: the input of ``dsr judge create``.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from dsr.collections import SourceInfo, cmu_dog
from dsr.collections.common import check_params, resolve_source
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.home import data_dir
from dsr.core.jsonio import load_json
from dsr.core.params import Param
from dsr.core.text import content_words

NAME = "cmu_dog_dev"
POINTS_FILE = Path(__file__).parent / "data" / "cmu_dog_dev.points.jsonl"
#: the seed of the train slice and of each conversation's point
SEED = 31
#: train conversations in the slice (with the 125 valid ones: 405 points, the issue asks >= 400)
TRAIN_SLICE = 280
#: a turn counts for overlap when it has this many content words ("hi!", "lol" do not)
MIN_CONTENT_WORDS = 3
#: a conversation is shared when this many of its turns, and at least half of them, are
#: turns of one conversation of another split
MIN_SHARED_TURNS = 2
POINT_SETS = ("judged", "all", "pool")

#: it reads CMU_DoG's files (``dsr data fetch cmu_dog``; the tests: ../shared/data/cmu_dog)
DATA = "cmu_dog"
PARAMS = (
    Param(
        "points",
        "judged",
        "str",
        "judged: the graded points, all 50 candidates; all: every "
        "point (labels 0 where not graded); pool: the points to grade, pooled sentences only",
        choices=POINT_SETS,
    ),
)

SOURCE = SourceInfo(
    name=NAME,
    description="the judged CMU_DoG development set: one point per conversation of CMU_DoG valid "
    "(those in no other split) and of a fixed train slice that training never sees; "
    "shipped as ids and grades, joined to the CMU_DoG files by the builder",
    licence="ids and grades: MIT (the project's); the text: as CMU_DoG (none stated; documents CC BY-SA), read from --source",
    repository=cmu_dog.REPOSITORY,
    commit=cmu_dog.COMMIT,
    splits=("dev",),
    default_split="dev",
    has_candidates=True,
    notes=(
        "--source is a CMU_DoG folder (Conversations/train, Conversations/valid, WikiData)",
        "never trained on: dsr train drops these conversations",
    ),
)


def default_folder() -> Path:
    """Where the CMU_DoG files are read from without --source (``dsr data fetch cmu_dog``)."""
    return data_dir("cmu_dog")


def is_available(folder: Path | None = None) -> bool:
    """The points are made and the CMU_DoG files are in ``folder`` (default :func:`default_folder`)."""
    folder = Path(folder) if folder is not None else default_folder()
    return (
        bool(points())
        and (folder / "WikiData").is_dir()
        and all((folder / "Conversations" / split).is_dir() for split in ("train", "valid"))
    )


# --- the shipped points ------------------------------------------------------------


@lru_cache(maxsize=1)
def points() -> tuple[dict[str, Any], ...]:
    """The records of :data:`POINTS_FILE` (empty when it is not made yet)."""
    if not POINTS_FILE.is_file():
        return ()
    out = []
    for line_no, line in enumerate(POINTS_FILE.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            record = json.loads(line)
            for key in ("id", "split", "conversation", "turn", "pool", "grades"):
                if key not in record:
                    raise InputError("missing field", path=POINTS_FILE, line=line_no, field=key)
            out.append(record)
    return tuple(out)


def dev_conversations() -> dict[str, frozenset[str]]:
    """Split -> the conversation file names (``<stem>.json``) of the development set."""
    by_split: dict[str, set[str]] = defaultdict(set)
    for record in points():
        by_split[record["split"]].add(record["conversation"])
    return {split: frozenset(names) for split, names in by_split.items()}


# --- conversations shared between splits -------------------------------------------


def turn_key(text: str) -> str | None:
    """The turn as compared across conversations (case and spacing ignored), or None for a
    turn too short to tell conversations apart."""
    if len(content_words(text)) < MIN_CONTENT_WORDS:
        return None
    return " ".join(text.lower().split())


def turn_keys(texts: Iterable[str]) -> set[str]:
    return {key for key in map(turn_key, texts) if key}


def read_split_turns(folder: Path, split: str) -> dict[str, set[str]]:
    """Conversation file name -> its turn keys, for ``Conversations/<split>`` (empty if absent)."""
    out = {}
    for path in sorted((Path(folder) / "Conversations" / split).glob("*.json")):
        raw = load_json(path)
        history = raw.get("history") if isinstance(raw, dict) else None
        if not isinstance(history, list):
            raise InputError("expected a list", path=path, field="history")
        out[path.name] = turn_keys(h.get("text", "") for h in history if isinstance(h, dict))
    return out


def shared_conversations(conversations: Mapping[str, set[str]], others: Mapping[Any, set[str]]) -> dict[str, Any]:
    """Which of ``conversations`` (name -> turn keys) also appear among ``others``: name -> the
    other conversation holding at least :data:`MIN_SHARED_TURNS` of its turns and at least half
    of them. On CMU_DoG: 45 train conversations share all their turns with a valid one, and no
    other pair shares more than one turn."""
    index: dict[str, list] = defaultdict(list)
    for other, keys in others.items():
        for key in keys:
            index[key].append(other)
    found = {}
    for name, keys in conversations.items():
        counts = Counter(o for key in keys for o in index.get(key, ()))
        if counts:
            other, n = counts.most_common(1)[0]
            if n >= MIN_SHARED_TURNS and 2 * n >= len(keys):
                found[name] = other
    return found


# --- the definition (tools/make_cmu_dog_dev.py) ------------------------------------------


def choose_points(valid: Collection, train: Collection, folder: Path, judged: Collection | None = None) -> list[dict[str, Any]]:
    """The development points (records without pools), by the definition above."""
    splits = {split: read_split_turns(folder, split) for split in ("train", "valid", "test")}
    shared = set()
    for split, turns in splits.items():
        for other_split, other in splits.items():
            if other_split != split:
                shared |= {(split, n) for n in shared_conversations(turns, other)}
    judged_by_conv: dict[str, Dialogue] = {}
    for dialogue in judged or ():
        judged_by_conv[dialogue.meta.get("conversation") or dialogue.id.rsplit("-", 1)[0] + ".json"] = dialogue
    records = []
    for split, collection in (("valid", valid), ("train", train)):
        by_conv: dict[str, list[Dialogue]] = defaultdict(list)
        for dialogue in collection:
            by_conv[dialogue.meta["conversation"]].append(dialogue)
        names = sorted(n for n in by_conv if (split, n) not in shared)
        if split == "train":
            names = sorted(random.Random(SEED).sample(names, TRAIN_SLICE))
        for name in names:
            fold_in = judged_by_conv.get(name) if split == "valid" else None
            if fold_in is not None:
                point = next(d for d in by_conv[name] if d.id == fold_in.id)
                grades = {c.id: c.label for c in fold_in.candidates}
                origin = "judged-115"
            else:
                point = random.Random(f"{SEED}:{name}").choice(sorted(by_conv[name], key=lambda d: d.id))
                grades, origin = {}, "new"
            records.append(
                {
                    "id": point.id,
                    "split": split,
                    "conversation": name,
                    "turn": point.meta["turn"],
                    "origin": origin,
                    "pool": [],
                    "grades": grades,
                }
            )
    return records


def depth_pool(runs: Iterable[Mapping[str, list]], depth: int = 10) -> dict[str, list[str]]:
    """Topic -> the union of the runs' top ``depth`` sentence ids (in first-seen order)."""
    pools: dict[str, list[str]] = defaultdict(list)
    for rankings in runs:
        for topic, ranked in rankings.items():
            seen = set(pools[topic])
            for doc, _ in ranked[:depth]:
                if doc not in seen:
                    pools[topic].append(doc)
                    seen.add(doc)
    return dict(pools)


# --- the builder --------------------------------------------------------------------------


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The graded development points (``points="judged"``), built from ``source``."""
    return build(resolve_source("cmu_dog", source), split)


def build(source: Path, split: str | None = None, **params: Any) -> Collection:
    """The listed points joined to the CMU_DoG files in ``source`` (see the module docstring)."""
    if split not in (None, "dev"):
        raise InputError(f"unknown split {split!r} for {NAME}; it has only 'dev'", field="split")
    which = check_params(params, PARAMS, NAME)["points"]
    records = points()
    if not records:
        raise InputError(
            f"no development points: {POINTS_FILE.name} is missing from the installed package (reinstall dsr)", path=POINTS_FILE
        )
    # only the listed points are built (each exactly as CMU_DoG's build makes it), a small part of
    # building and reading the whole of train and valid
    built = cmu_dog.build_points(
        Path(source), {split: [r["id"] for r in records if r["split"] == split] for split in ("valid", "train")}
    )
    dialogues = []
    for record in records:
        dialogue = built[record["split"]].get(record["id"])
        if dialogue is None:
            raise InputError(
                f"point {record['id']!r} is not a query point of CMU_DoG {record['split']} in this folder (other CMU_DoG files?)",
                path=source,
                record=record["id"],
            )
        graded = bool(record["grades"])
        if (which == "judged" and not any(record["grades"].values())) or (which == "pool" and graded):
            continue
        dialogues.append(_point(dialogue, record, which))
    return Collection(NAME, dialogues, meta={"source": str(source), "split": "dev", "points": which, "judged": which == "judged"})


def _point(dialogue: Dialogue, record: Mapping[str, Any], which: str) -> Dialogue:
    grades = record["grades"]
    candidates = [c for c in dialogue.candidates if which != "pool" or c.id in set(record["pool"])]
    labelled = [type(c)(c.id, c.title, c.body, c.score, int(grades.get(c.id, 0))) for c in candidates]
    meta = {
        **dialogue.meta,
        "split": record["split"],
        "origin": record.get("origin"),
        "judged": bool(grades),
        "pool": len(record["pool"]),
    }
    return Dialogue(
        id=dialogue.id,
        title=dialogue.title,
        context=dialogue.context,
        target=dialogue.target,
        candidates=labelled,
        subset=dialogue.subset,
        source=NAME,
        meta=meta,
    )
