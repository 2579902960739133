"""The SIGIR 2022 Reddit/Wikipedia collection: sentence retrieval for open-ended dialogue.

Source: github.com/SIGIR-2022/A-Dataset-for-Sentence-Retrieval-for-Open-Ended-Dialogues
at commit bc72a50686642cc25bd4f98fa6c12045b159c530 (MIT). 846 Reddit dialogues,
each with the 50 Wikipedia sentences of an initial ranker labelled relevant (1)
or not (0) by Mechanical Turk workers:

- ``datasets/dialogues.json``: 400 dialogues, subset ``plain``;
- ``datasets/wikipedia_grounded_dialogues.json``: 446 dialogues whose target
  links to Wikipedia, subset ``grounded``;
- ``evaluation/val_test_splits.json``: the official protocol, 50 lines of
  ``{"val": [423 ids], "test": [423 ids]}``.

Two schema versions are read:

- current: ``candidates`` is the ranked list, each ``{id, title, body, score, label}``;
  the candidate order is the file's order (the initial ranking).
- older (commit b351828): ``candidates`` is ``{"pos": [...], "neg": [...]}`` and
  candidates carry no ``label``. Labels come from the group (pos = 1, neg = 0).
  The initial ranking is rebuilt by ordering pos + neg (in that order) by
  initial ``score``, descending, with a stable sort, so equal scores keep pos
  before neg and the file order inside each group. Every candidate must then
  have a score: without one the only order left is "relevant first", which
  would hand the initial ranker the labels, so a missing score is an error.

Sentence ids: upstream ids embed titles with spaces; they are read with each
whitespace character replaced by ``_`` (:func:`trec_id`), so that run and
qrels files can carry them.

The reader is strict about whatever would change results: a candidate without
id or body, a label other than 0/1, duplicate candidate ids in a dialogue,
duplicate dialogue ids (also across the two files), a dialogue without a
relevant candidate, a missing context or target. Each error names the file,
the record (dialogue id, or its index when the id is missing) and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dsr.collections import SourceInfo
from dsr.collections.common import check_params
from dsr.collections.transfer import git_blob_file
from dsr.core import jsonio
from dsr.core.data import Candidate, Collection, Dialogue, Turn, _Where, check_id, parse_label, parse_number
from dsr.core.errors import InputError
from dsr.core.home import data_dir
from dsr.core.jsonio import iter_json_lines, read_text
from dsr.core.splits import check_splits, read_split_file

REPOSITORY = "SIGIR-2022/A-Dataset-for-Sentence-Retrieval-for-Open-Ended-Dialogues"
COMMIT = "bc72a50686642cc25bd4f98fa6c12045b159c530"
OLD_COMMIT = "b351828"

#: subset name -> file name, in load order
FILES = {"plain": "dialogues.json", "grounded": "wikipedia_grounded_dialogues.json"}
SPLIT_FILE = "val_test_splits.json"

#: git blob ids of the upstream files (../shared/data/SOURCES.md); a blob id is
#: sha1(b"blob <size>\0" + data), so a copy is checked without having seen it.
BLOBS = {
    "current": {
        "dialogues.json": "e46fc85a976baec61b7ad6ff2e70a8e60eecf6c6",
        "wikipedia_grounded_dialogues.json": "4f69311245134f125f3844bc7e79b5a41dab6571",
    },
    "old": {
        "dialogues.json": "96f952aac0bf57e8709ae32d09a019d1b5d52d99",
        "wikipedia_grounded_dialogues.json": "23521f29eee94fef90d16fc2fe8a2a8479c3c4c4",
    },
}
SPLIT_BLOB = "b832c178d530d366884ff7258a3310457578ba12"

NAME = "sigir2022"
#: ``build``'s parameters: none (the files are the collection)
PARAMS = ()

SOURCE = SourceInfo(
    name=NAME,
    description="SIGIR 2022 Reddit dialogues with 50 Wikipedia candidate sentences each, "
    "labelled by Mechanical Turk workers (400 plain + 446 Wikipedia-grounded); "
    "official protocol: 50 random 423/423 val/test splits",
    licence="MIT",
    repository=REPOSITORY,
    commit=COMMIT,
    splits=("plain", "grounded"),
    default_split=None,
    has_candidates=True,
    notes=(
        "--split plain|grounded keeps one subset (the official splits are restricted to it)",
        f"the older schema (commit {OLD_COMMIT}, candidates as pos/neg) is read too; "
        "its candidates are ordered by initial score, descending, stable",
    ),
)


# --- locating the files -----------------------------------------------------


def _find(source: Path, name: str, subfolder: str) -> Path | None:
    """``source/name`` or, as upstream lays it out, ``source/subfolder/name``."""
    for candidate in (source / name, source / subfolder / name):
        if candidate.is_file():
            return candidate
    return None


def _missing_message(source: Path, default: bool) -> str:
    where = f"no SIGIR 2022 dialogue files ({', '.join(FILES.values())}) here"
    if default:
        return (
            f"{where}. Fetch them with `dsr data fetch sigir2022`, or pass a folder that "
            "holds them with `--source DIR` (at its root or under datasets/), or try the "
            "bundled `sample` collection"
        )
    return (
        f"{where} (looked at the folder's root and under datasets/). Fetch them with "
        "`dsr data fetch sigir2022 --dest DIR`, or use the bundled `sample` collection"
    )


# --- reading ----------------------------------------------------------------


def _read_dialogue_file(path: Path, subset: str) -> tuple[list[Dialogue], set[str]]:
    """One dialogue file (either schema; JSON array, object keyed by id, or JSON Lines) and the
    schemas it used."""
    dialogues = []
    schemas: set[str] = set()
    seen: dict[str, str] = {}
    for index, line, key, obj in _records(path):
        where = _Where(path, line, key if key is not None else f"#{index}")
        dialogue, schema = _parse_dialogue(obj, where, subset, key)
        schemas.add(schema)
        if dialogue.id in seen:
            raise InputError(
                f"duplicate dialogue id {dialogue.id!r} (also {seen[dialogue.id]})",
                path=path,
                line=line,
                record=dialogue.id,
                field="id",
            )
        seen[dialogue.id] = f"line {line}" if line else f"record #{index}"
        dialogues.append(dialogue)
    if not dialogues:
        raise InputError("no dialogues in the file", path=path)
    return dialogues, schemas


def _records(path: Path) -> Iterator[tuple[int, int | None, str | None, Any]]:
    """(index, line or None, key or None, object) for each record of the file."""
    text = read_text(path, "utf-8-sig")
    try:
        whole = jsonio.loads(text)
    except json.JSONDecodeError as err:
        if err.msg != "Extra data":
            raise InputError(jsonio.json_error(err), path=path, line=err.lineno) from None
        whole = None  # more than one value: JSON Lines
    if isinstance(whole, list):
        for index, obj in enumerate(whole):
            yield index, None, None, obj
        return
    if isinstance(whole, dict):
        if "candidates" in whole and "context" in whole:  # JSON Lines with one dialogue
            yield 0, 1, None, whole
            return
        for index, (key, obj) in enumerate(whole.items()):
            yield index, None, str(key), obj
        return
    if whole is not None:
        raise InputError(
            f"expected a JSON array, an object keyed by dialogue id, or JSON Lines; got a {type(whole).__name__}", path=path
        )
    for index, (lineno, obj) in enumerate(iter_json_lines(text, path)):
        yield index, lineno, None, obj


def _parse_dialogue(obj: Any, where: _Where, subset: str, key: str | None) -> tuple[Dialogue, str]:
    """One dialogue in either SIGIR 2022 schema (see the module docstring) and which one."""
    if not isinstance(obj, dict):
        raise where.error(f"expected a dialogue object, got {type(obj).__name__}")
    did = _dialogue_id(obj, where, key)
    where = _Where(where.path, where.line, did)
    context = obj.get("context")
    if not isinstance(context, list) or not context:
        raise where.error("missing or empty (expected the list of turns before the target)", "context")
    turns = [_turn(t, where, f"context[{i}]") for i, t in enumerate(context)]
    if obj.get("target") is None:
        raise where.error("missing (expected the turn to be written)", "target")
    target = _turn(obj["target"], where, "target")
    candidates, schema = _candidates(obj.get("candidates"), where)
    if not any(c.label > 0 for c in candidates):
        raise where.error("no relevant candidate (label 1); the collection keeps only dialogues with at least one", "candidates")
    return Dialogue(
        id=did,
        title=_str(obj.get("title")),
        context=turns,
        target=target,
        candidates=candidates,
        subset=subset,
        subreddit=_str(obj.get("subreddit")),
        source="sigir2022",
    ), schema


def _dialogue_id(obj: dict, where: _Where, key: str | None) -> str:
    """The dialogue's ``id``, or the key it is filed under (they must agree when both are there)."""
    did = _str(obj.get("id"))
    if key is not None:
        if did and did != key:
            raise where.error(f"id {did!r} differs from its key {key!r}", "id")
        did = did or key
    if not did:
        raise where.error("missing dialogue id", "id")
    check_id(did, where, "id")
    return did


def _candidates(raw: Any, where: _Where) -> tuple[list[Candidate], str]:
    """The candidates in either schema, in ranking order, and which schema they came in: a list
    (``current``), or ``{"pos": [...], "neg": [...]}`` (``old``: sorted by initial score)."""
    named: list[tuple[str, Candidate]] = []  # (field name, candidate) in file order
    if isinstance(raw, list):
        schema = "current"
        named = [(f"candidates[{i}]", _candidate(c, where, f"candidates[{i}]", None)) for i, c in enumerate(raw)]
    elif isinstance(raw, dict) and raw and set(raw) <= {"pos", "neg"}:
        schema = "old"
        named = _old_candidates(raw, where)
    else:
        raise where.error('expected a list of candidates, or {"pos": [...], "neg": [...]}', "candidates")
    if not named:
        raise where.error("no candidates", "candidates")
    first: dict[str, str] = {}
    for name, c in named:
        if c.id in first:
            raise where.error(f"duplicate candidate id {c.id!r} (also {first[c.id]})", f"{name}.id")
        first[c.id] = name
    candidates = [c for _, c in named]
    if schema == "old":
        # the initial ranking: by score, descending; stable, so ties keep pos
        # before neg and the file order inside a group
        candidates.sort(key=lambda c: -(c.score or 0.0))  # every score is there (_old_candidates)
    return candidates, schema


def _old_candidates(raw: dict, where: _Where) -> list[tuple[str, Candidate]]:
    """The older schema's ``pos`` (label 1) then ``neg`` (label 0) candidates, each with the
    initial score that rebuilds the initial ranking."""
    named = []
    for group, label in (("pos", 1), ("neg", 0)):
        items = raw.get(group, [])
        if not isinstance(items, list):
            raise where.error("expected a list", f"candidates.{group}")
        for i, c in enumerate(items):
            name = f"candidates.{group}[{i}]"
            named.append((name, _candidate(c, where, name, label)))
    for name, c in named:
        if c.score is None:
            raise where.error(
                "the older pos/neg schema needs every candidate's initial score to rebuild the initial ranking", f"{name}.score"
            )
    return named


def trec_id(sentence_id: str) -> str:
    """The sentence id as runs and qrels carry it: each whitespace character becomes ``_``.

    Upstream sentence ids embed Wikipedia titles with spaces
    (``Great Pyramid of Giza.12138.0.0.1.Great Pyramid of Giza``), which a TREC
    file (split on whitespace) cannot carry; ``Great_Pyramid_of_Giza.12138...``
    can, and keeps ids distinct (a clash inside a dialogue is reported as a
    duplicate id).
    """
    return re.sub(r"\s", "_", sentence_id)


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) else ""


def _text_field(obj: dict, key: str, where: _Where, name: str) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise where.error(f"expected text, got {type(value).__name__}", f"{name}.{key}")
    return str(value)


def _turn(obj: Any, where: _Where, name: str) -> Turn:
    if not isinstance(obj, dict):
        raise where.error("expected a turn object", name)
    body = obj.get("body")
    if not isinstance(body, str) or not body.strip():
        raise where.error("missing or empty turn text", f"{name}.body")
    return Turn(
        author_id=_text_field(obj, "author_id", where, name),
        author_name=_text_field(obj, "author_name", where, name),
        body=body,
        score=parse_number(obj.get("score"), where, f"{name}.score", allow_none=True),
    )


def _candidate(obj: Any, where: _Where, name: str, group_label: int | None) -> Candidate:
    if not isinstance(obj, dict):
        raise where.error("expected a candidate object", name)
    cid = _text_field(obj, "id", where, name)
    if not cid.strip():
        raise where.error("missing candidate id", f"{name}.id")
    cid = check_id(trec_id(cid), where, f"{name}.id")
    body = obj.get("body")
    if not isinstance(body, str) or not body.strip():
        raise where.error("missing or empty sentence text", f"{name}.body")
    if group_label is None:
        label = parse_label(obj.get("label"), where, f"{name}.label", allowed=(0, 1))
    else:
        label = group_label
        if obj.get("label") is not None:  # tolerated when it agrees with its group
            stated = parse_label(obj["label"], where, f"{name}.label", allowed=(0, 1))
            if stated != group_label:
                raise where.error(f"label {stated} contradicts its group ({'pos' if group_label else 'neg'})", f"{name}.label")
    return Candidate(
        id=cid,
        title=_text_field(obj, "title", where, name),
        body=body,
        score=parse_number(obj.get("score"), where, f"{name}.score", allow_none=True),
        label=label,
    )


# --- the collection -----------------------------------------------------------


def manifest_files(copy: Path) -> dict[str, Path | str]:
    """What this source's manifest lists (``tools/make_manifests.py``): each repository path ->
    its unchanged upstream copy in ``copy`` (the tool hashes it), or a published git blob id.
    The dialogue files are not on these machines: their ids are the published ones
    (:data:`BLOBS`), and the copy of the split file must match its published id."""
    split_copy = copy / SPLIT_FILE
    if git_blob_file(split_copy) != SPLIT_BLOB:
        raise InputError("the split file copy does not match SOURCES.md's blob id", path=split_copy)
    files: dict[str, Path | str] = {
        "README.md": copy / "README.md",
        "LICENSE.md": copy / "LICENSE.md",
        f"evaluation/{SPLIT_FILE}": split_copy,
    }
    for revision, blobs in BLOBS.items():
        for file_name, blob in blobs.items():
            files[f"datasets/{file_name}" if revision == "current" else f"{OLD_COMMIT}:datasets/{file_name}"] = blob
    return files


def _dialogue_files(source: Path, default: bool) -> dict[str, Path | None]:
    """Each subset's dialogue file in ``source``; both, or an InputError saying what is missing."""
    if source.is_file():
        raise InputError(
            "expected a folder with the SIGIR 2022 files, got a file "
            "(a benchmark .jsonl file is passed as the COLLECTION itself)",
            path=source,
        )
    paths = {subset: _find(source, name, "datasets") for subset, name in FILES.items()}
    if not any(paths.values()):
        raise InputError(_missing_message(source, default), path=source)
    for subset, path in paths.items():
        if path is None:
            raise InputError(
                f"{FILES[subset]} is missing (found the other file); fetch both with `dsr data fetch sigir2022`", path=source
            )
    return paths


def load(source: Path | None = None, split: str | None = None) -> Collection:
    """The SIGIR 2022 collection from a folder (default ``$DSR_HOME/data/sigir2022``).

    The folder holds ``dialogues.json`` and ``wikipedia_grounded_dialogues.json``
    (at its root or under ``datasets/``) and, optionally, ``val_test_splits.json``
    (root or ``evaluation/``), which becomes ``Collection.splits`` after it is
    checked to partition exactly the loaded ids. ``split``: None/"all" for both
    subsets, "plain" or "grounded" for one (the splits are then restricted to it).
    ``meta`` records each file's git blob id and whether it is the official one.
    """
    default = source is None
    source = Path(source) if source is not None else data_dir("sigir2022")
    if split not in (None, "all", *FILES):
        raise InputError(
            f"unknown split {split!r} for sigir2022; use plain or grounded (or leave it out for both)", field="split"
        )
    paths = _dialogue_files(source, default)

    found = {subset: path for subset, path in paths.items() if path is not None}
    dialogues: list[Dialogue] = []
    origin: dict[str, Path] = {}
    files_meta: dict[str, Any] = {}
    schemas: set[str] = set()
    for subset, path in found.items():
        file_dialogues, file_schemas = _read_dialogue_file(path, subset)
        schemas |= file_schemas
        for d in file_dialogues:
            if d.id in origin:
                raise InputError(f"duplicate dialogue id {d.id!r}: also in {origin[d.id]}", path=path, record=d.id, field="id")
            origin[d.id] = path
            dialogues.append(d)
        files_meta[path.name] = _file_meta(path)

    splits = None
    split_path = _find(source, SPLIT_FILE, "evaluation")
    if split_path is not None:
        splits = read_split_file(split_path)
        check_splits(splits, origin, split_path)
        files_meta[SPLIT_FILE] = _file_meta(split_path)

    if split in FILES:
        dialogues = [d for d in dialogues if d.subset == split]
        keep = {d.id for d in dialogues}
        if splits is not None:
            splits = [([i for i in v if i in keep], [i for i in t if i in keep]) for v, t in splits]
    return Collection(
        "sigir2022",
        dialogues,
        splits=splits,
        meta={"source": str(source), "split": split or "all", "schema": "+".join(sorted(schemas)), "files": files_meta},
    )


def build(source: Path, split: str | None = None, **params: Any) -> Collection:
    """``dsr data build sigir2022``: the collection as loaded (:data:`PARAMS` is empty)."""
    check_params(params, PARAMS, NAME)
    return load(Path(source), split)


def _file_meta(path: Path) -> dict[str, Any]:
    blob = git_blob_file(path)
    official = None
    for revision, blobs in BLOBS.items():
        if blob == blobs.get(path.name):
            official = COMMIT if revision == "current" else OLD_COMMIT
    if path.name == SPLIT_FILE and blob == SPLIT_BLOB:
        official = COMMIT
    return {"path": str(path), "git_blob": blob, "official_commit": official}
