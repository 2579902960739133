"""CCPE-M (Coached Conversational Preference Elicitation, movies): query points, no candidates.

Source: github.com/google-research-datasets/ccpe at commit
2c9cd30f33f3a154b5a27d015333679262ff36f5, file ``data.json`` (Radlinski,
Balog, Byrne and Krishnamoorthi, SIGDIAL 2019), CC BY 4.0. 502 dialogues in
which an ASSISTANT (a crowd worker) elicits a USER's movie preferences; spans
are annotated ENTITY_NAME / ENTITY_PREFERENCE / ENTITY_DESCRIPTION /
ENTITY_OTHER over MOVIE_GENRE_OR_CATEGORY / MOVIE_OR_SERIES / PERSON /
SOMETHING_ELSE.

How it becomes the task: the USER turns that state a preference are where
knowledge about movies helps most (the user explains what they like about a
film, a genre, an actor; the assistant mostly asks questions), so by default
a query point is each USER turn with at least one ENTITY_PREFERENCE
annotation and at least ``min_context`` (default 2) turns before it
(``targets=assistant`` makes every ASSISTANT turn after ``min_context`` turns
a query point instead). Context = the turns before it, target = that turn;
``author_id`` is the speaker (USER / ASSISTANT). There are no candidates and
no labels (``candidates`` = []): rank any sentence corpus for them, e.g. the
CMU_DoG documents. Subset = the entity type of the target's first preference
(``movie_or_series``, ``movie_genre_or_category``, ``person``,
``something_else``; ``assistant`` in assistant mode). Dialogue id =
``<conversationId>-<utterance index>``. ``meta`` keeps every turn's segments
in the upstream shape (``context_segments`` by utterance index,
``target_segments``).

The reader is strict: the file must be a JSON array of conversations with a
unique ``conversationId`` and ``utterances`` whose ``index`` runs 0, 1, 2...,
``speaker`` is USER or ASSISTANT, and every segment's ``text`` equals
``text[startIndex:endIndex]`` (character offsets, end exclusive) with known
annotation and entity types. ``segments`` may be absent (the upstream file
omits it on unannotated utterances). ``check_offsets=false`` skips only the
offset comparison, for a copy whose offsets were computed differently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsr.collections import SourceInfo
from dsr.collections.common import cached_build, check_params, params_note, resolve_source
from dsr.core.data import Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.core.jsonio import load_json
from dsr.core.params import Param, defaults

NAME = "ccpe"
REPOSITORY = "google-research-datasets/ccpe"
COMMIT = "2c9cd30f33f3a154b5a27d015333679262ff36f5"
DATA_FILE = "data.json"
#: bump when the conversion changes, so cached builds are rebuilt
BUILDER_VERSION = 1

SPEAKERS = ("USER", "ASSISTANT")
ANNOTATION_TYPES = ("ENTITY_NAME", "ENTITY_PREFERENCE", "ENTITY_DESCRIPTION", "ENTITY_OTHER")
ENTITY_TYPES = ("MOVIE_GENRE_OR_CATEGORY", "MOVIE_OR_SERIES", "PERSON", "SOMETHING_ELSE")
TARGETS = ("preference", "assistant")

#: ``build``'s parameters
PARAMS = (
    Param(
        "targets",
        "preference",
        "str",
        "preference: USER turns with an ENTITY_PREFERENCE annotation; assistant: every ASSISTANT turn",
        choices=TARGETS,
    ),
    Param("min_context", 2, "int", "turns required before the target", low=0),
    Param("check_offsets", True, "bool", "check each annotation's offsets against its text"),
)

SOURCE = SourceInfo(
    name=NAME,
    description="CCPE-M movie-preference elicitation dialogues with entity annotations; "
    "query points (USER turns stating a preference) without candidates, "
    "to be ranked against any sentence corpus",
    licence="CC BY 4.0",
    repository=REPOSITORY,
    commit=COMMIT,
    splits=(),
    default_split=None,
    has_candidates=False,
    notes=(
        "no candidates and no labels: use it with a sentence corpus of your choice",
        params_note(PARAMS),
    ),
)


def manifest_files(copy: Path) -> dict[str, Path | str]:
    """What this source's manifest lists (``tools/make_manifests.py``): each repository path ->
    its unchanged upstream copy in ``copy`` (the tool hashes it), or a published git blob id."""
    return {"README.md": copy / "README.md"}


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The query points from ``data.json`` (``source``: the file or its folder;
    default ``$DSR_HOME/data/ccpe``), built once and cached."""
    path = _data_path(resolve_source(NAME, source), split)
    return cached_build(NAME, None, path.parent, [path], defaults(PARAMS), BUILDER_VERSION, lambda: build(path))


def build(source: Path, split: str | None = None, **params: Any) -> Collection:
    """Convert ``data.json`` (``source``: the file or its folder) to query points.

    ``params``: :data:`PARAMS` (``targets``, ``min_context``, ``check_offsets``).
    CCPE-M has no splits: ``split`` must be None (or ``all``).
    """
    options = check_params(params, PARAMS, NAME)
    path = _data_path(Path(source), split)
    conversations = read_conversations(path, check_offsets=options["check_offsets"])
    dialogues = []
    for conv in conversations:
        utterances = conv["utterances"]
        turns = [Turn(u["speaker"], u["speaker"].lower(), u["text"]) for u in utterances]
        for i, u in enumerate(utterances):
            if i < options["min_context"]:
                continue
            if options["targets"] == "assistant":
                if u["speaker"] != "ASSISTANT":
                    continue
                subset = "assistant"
            else:
                preferences = [s for s in u["segments"] for a in s["annotations"] if a["annotationType"] == "ENTITY_PREFERENCE"]
                if u["speaker"] != "USER" or not preferences:
                    continue
                first = min(preferences, key=lambda s: (s["startIndex"], s["endIndex"]))
                subset = next(a["entityType"] for a in first["annotations"] if a["annotationType"] == "ENTITY_PREFERENCE").lower()
            dialogues.append(
                Dialogue(
                    id=f"{conv['conversationId']}-{i}",
                    title="",
                    context=turns[:i],
                    target=turns[i],
                    candidates=[],
                    subset=subset,
                    source=NAME,
                    meta={
                        "conversationId": conv["conversationId"],
                        "utterance": i,
                        "target_segments": u["segments"],
                        "context_segments": {str(k): utterances[k]["segments"] for k in range(i) if utterances[k]["segments"]},
                    },
                )
            )
    if not dialogues:
        raise InputError(f"no query point ({options['targets']} turns after {options['min_context']} turns)", path=path)
    counts = Counter(
        a["annotationType"] for c in conversations for u in c["utterances"] for s in u["segments"] for a in s["annotations"]
    )
    return Collection(
        NAME,
        dialogues,
        meta={
            "source": str(path),
            "params": options,
            "conversations": len(conversations),
            "utterances": sum(len(c["utterances"]) for c in conversations),
            "annotations": dict(sorted(counts.items())),
            "builder_version": BUILDER_VERSION,
        },
    )


def read_conversations(path: Path, check_offsets: bool = True) -> list[dict[str, Any]]:
    """``data.json`` checked against its documented schema; ``segments`` filled in as []."""
    raw = load_json(path)
    if not isinstance(raw, list):
        raise InputError(f"expected a JSON array of conversations, got {type(raw).__name__}", path=path)
    seen: set[str] = set()
    out = []
    for n, conv in enumerate(raw):
        record = f"#{n}"

        def error(message: str, field: str | None = None) -> InputError:
            return InputError(message, path=path, record=record, field=field)

        if not isinstance(conv, dict):
            raise error("expected an object")
        cid = conv.get("conversationId")
        if not isinstance(cid, str) or not cid.strip():
            raise error("missing or not text", "conversationId")
        record = cid
        if cid in seen:
            raise error(f"duplicate conversationId {cid!r}", "conversationId")
        seen.add(cid)
        utterances = conv.get("utterances")
        if not isinstance(utterances, list) or not utterances:
            raise error("missing or empty", "utterances")
        checked = []
        for i, u in enumerate(utterances):
            name = f"utterances[{i}]"
            if not isinstance(u, dict):
                raise error("expected an object", name)
            index = u.get("index")
            if isinstance(index, bool) or index != i:
                raise error(f"expected {i} (0-based, in order), got {index!r}", f"{name}.index")
            if u.get("speaker") not in SPEAKERS:
                raise error(f"expected USER or ASSISTANT, got {u.get('speaker')!r}", f"{name}.speaker")
            text = u.get("text")
            if not isinstance(text, str):
                raise error("missing or not text", f"{name}.text")
            segments = u.get("segments", [])
            if not isinstance(segments, list):
                raise error("expected a list", f"{name}.segments")
            for k, seg in enumerate(segments):
                _check_segment(seg, text, f"{name}.segments[{k}]", error, check_offsets)
            checked.append({"index": i, "speaker": u["speaker"], "text": text, "segments": segments})
        out.append({"conversationId": cid, "utterances": checked})
    if not out:
        raise InputError("no conversations", path=path)
    return out


def _check_segment(seg: Any, text: str, name: str, error: Callable[[str, str], InputError], check_offsets: bool) -> None:
    if not isinstance(seg, dict):
        raise error("expected an object", name)
    bounds: dict[str, int] = {}
    for key in ("startIndex", "endIndex"):
        value = seg.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise error(f"expected a whole number, got {value!r}", f"{name}.{key}")
        bounds[key] = value
    start, end = bounds["startIndex"], bounds["endIndex"]
    if not 0 <= start <= end <= len(text):
        bad = "startIndex" if start < 0 or start > min(end, len(text)) else "endIndex"
        raise error(f"span {start}:{end} is not inside the utterance text ({len(text)} characters)", f"{name}.{bad}")
    if not isinstance(seg.get("text"), str):
        raise error("missing or not text", f"{name}.text")
    if check_offsets and text[start:end] != seg["text"]:
        raise error(f"text[{start}:{end}] is {text[start:end]!r}, the segment says {seg['text']!r}", f"{name}.text")
    annotations = seg.get("annotations")
    if not isinstance(annotations, list) or not annotations:
        raise error("missing or empty", f"{name}.annotations")
    for j, a in enumerate(annotations):
        where = f"{name}.annotations[{j}]"
        if not isinstance(a, dict):
            raise error("expected an object", where)
        if a.get("annotationType") not in ANNOTATION_TYPES:
            raise error(
                f"unknown annotation type {a.get('annotationType')!r}; expected one of {', '.join(ANNOTATION_TYPES)}",
                f"{where}.annotationType",
            )
        if a.get("entityType") not in ENTITY_TYPES:
            raise error(
                f"unknown entity type {a.get('entityType')!r}; expected one of {', '.join(ENTITY_TYPES)}", f"{where}.entityType"
            )


def _data_path(source: Path, split: str | None) -> Path:
    if split not in (None, "all"):
        raise InputError(f"ccpe has no splits, got {split!r}", field="split")
    path = source / DATA_FILE if source.is_dir() else source
    if not path.is_file():
        raise InputError(
            f"missing {DATA_FILE}; `dsr data fetch ccpe` downloads it, or pass the file or its folder as `source`", path=path
        )
    return path
