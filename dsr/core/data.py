"""Records of the task: Turn, Candidate, Dialogue, Collection, and the benchmark file.

The benchmark file is JSON Lines, one dialogue per line, in the SIGIR 2022
schema (``id``, ``subreddit``, ``title``, ``context`` [turns], ``target``,
``candidates`` [{``id``, ``title``, ``body``, ``score``, ``label``}]) plus the
optional ``subset``, ``source`` and ``meta``. Every collection converts to it
and back without loss, so converted collections and users' own files are
handled by the same code.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, overload

from dsr.core.atomic import atomic_write
from dsr.core.errors import InputError
from dsr.core.jsonio import gc_paused, iter_json_lines, read_text
from dsr.core.run import parse_run_line
from dsr.core.text import natural_order, unprintable


@dataclass
class Turn:
    """One message of a dialogue."""

    author_id: str
    author_name: str
    body: str
    score: int | float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"author_id": self.author_id, "author_name": self.author_name, "body": self.body, "score": self.score}


@dataclass
class Candidate:
    """A sentence that may help write the next turn.

    ``score`` is the collection's initial ranker score (None when there is
    none); ``label`` is the relevance grade (0 = not relevant; 1, 2, ... graded).
    """

    id: str
    title: str
    body: str
    score: float | None
    label: int

    def __post_init__(self) -> None:
        # every builder goes through here: an id a run file cannot carry never gets in
        check_id(self.id, _Where(None), "candidate id")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "body": self.body, "score": self.score, "label": self.label}


@dataclass
class Dialogue:
    """A query point: the conversation so far, the turn to be written, and candidates."""

    id: str
    title: str
    context: list[Turn]
    target: Turn | None
    candidates: list[Candidate]
    subset: str = "all"
    subreddit: str = ""
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_id(self.id, _Where(None), "id")
        for i, c in enumerate(self.candidates):
            # a Candidate's own check has no dialogue to name: name it here
            check_id(c.id, _Where(None, record=self.id), f"candidates[{i}].id")

    @property
    def relevant(self) -> list[Candidate]:
        return [c for c in self.candidates if c.label > 0]

    def __repr__(self) -> str:
        """One line: id, title (cut at 60 characters), turns, candidates, relevant ones."""
        title = self.title if len(self.title) <= 60 else self.title[:57] + "..."
        return (
            f"Dialogue({self.id!r}, {title!r}: {len(self.context)} turns, {len(self.candidates)} "
            f"candidates, {len(self.relevant)} relevant, subset {self.subset!r})"
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "subreddit": self.subreddit,
            "title": self.title,
            "context": [t.to_json() for t in self.context],
            "target": self.target.to_json() if self.target is not None else None,
            "candidates": [c.to_json() for c in self.candidates],
            "subset": self.subset,
            "source": self.source,
        }
        if self.meta:
            out["meta"] = self.meta
        return out


class Collection:
    """Dialogues in a fixed order, with lookups and a content hash.

    ``splits`` holds the val/test protocol when the collection has one: a list
    of ``(val_ids, test_ids)`` pairs (the SIGIR 2022 official 50 splits).
    """

    def __init__(
        self,
        name: str,
        dialogues: Iterable[Dialogue],
        *,
        splits: list[tuple[list[str], list[str]]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.dialogues = list(dialogues)
        self.splits = splits
        self.meta = dict(meta or {})
        self._by_id: dict[str, Dialogue] = {}
        for d in self.dialogues:
            if d.id in self._by_id:
                raise InputError(f"duplicate dialogue id {d.id!r}", record=d.id, field="id")
            self._by_id[d.id] = d

    def __len__(self) -> int:
        return len(self.dialogues)

    def __repr__(self) -> str:
        """One line, whatever the size: name, dialogues, candidates, subsets, splits, hash."""
        candidates = sum(len(d.candidates) for d in self.dialogues)
        splits = f", {len(self.splits)} splits" if self.splits else ""
        return (
            f"Collection({self.name!r}: {len(self)} dialogues, {candidates} candidates, subsets "
            f"{', '.join(self.subsets) or '-'}{splits}, hash {self.content_hash[:12]})"
        )

    def __iter__(self) -> Iterator[Dialogue]:
        return iter(self.dialogues)

    def __getitem__(self, dialogue_id: str) -> Dialogue:
        return self._by_id[dialogue_id]

    def __contains__(self, dialogue_id: object) -> bool:
        return dialogue_id in self._by_id

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.dialogues]

    @property
    def subsets(self) -> list[str]:
        """Subset names in a reader's order (:func:`natural_order`), not the file's."""
        return natural_order(dict.fromkeys(d.subset for d in self.dialogues))

    def subset(self, name: str) -> list[Dialogue]:
        return [d for d in self.dialogues if d.subset == name]

    def candidate_ids(self, dialogue_id: str) -> list[str]:
        return [c.id for c in self._by_id[dialogue_id].candidates]

    def initial_order(self) -> dict[str, list[str]]:
        """Topic -> its candidate ids in the collection's order: the run tie rule's initial rank
        (``Run.from_scores(..., initial_order=collection.initial_order())``)."""
        return initial_order(self.dialogues)

    def sentences(self) -> dict[str, Candidate]:
        """Every distinct candidate id across dialogues (first wins): only for lookups of a
        sentence by id alone (open retrieval), where :meth:`unique_sentences` is the safe form.

        A candidate is identified by (dialogue id, candidate id): files may reuse
        local ids (c0, c1...) in every dialogue, so ranking and scoring use
        :meth:`sentence_rows` or the dialogue's own candidates, never this map.
        """
        pool: dict[str, Candidate] = {}
        for d in self.dialogues:
            for c in d.candidates:
                pool.setdefault(c.id, c)
        return pool

    def unique_sentences(self) -> dict[str, Candidate]:
        """:meth:`sentences`, or InputError naming both dialogues when one id carries two texts
        (then an id alone does not say which sentence is meant)."""
        pool: dict[str, Candidate] = {}
        where: dict[str, str] = {}
        for d in self.dialogues:
            for i, c in enumerate(d.candidates):
                first = pool.get(c.id)
                if first is None:
                    pool[c.id], where[c.id] = c, d.id
                elif (first.title, first.body) != (c.title, c.body):
                    raise InputError(
                        f"sentence id {c.id!r} carries different texts in dialogues {where[c.id]!r} "
                        f"and {d.id!r}: a whole-pool search needs globally unique sentence ids",
                        record=d.id,
                        field=f"candidates[{i}].id",
                    )
        return pool

    def sentence_rows(self) -> tuple[list[Candidate], dict[tuple[str, str], int]]:
        """The sentence pool for corpus statistics (BM25's IDF and average length), and the
        row of each candidate in it, as ``{(dialogue id, candidate id): row}``.

        When every candidate id carries one text across the collection (the
        SIGIR 2022 files, CMU_DoG, ReDial...), ids are global and a sentence is
        an id: the pool is the distinct ids, as it always was. When some id
        carries different texts in different dialogues, ids are local to their
        dialogue (c0, c1... reused) and a sentence is its text: the same text in
        several dialogues is one sentence, two candidates of one dialogue with
        the same text are two. A file with global ids and the same file with
        its ids renamed per dialogue then give the same pool, so the same scores.
        Rows are in order of first appearance.
        """
        texts: dict[str, str] = {}
        local = False
        for d in self.dialogues:
            for c in d.candidates:
                if texts.setdefault(c.id, c.body) != c.body:
                    local = True
        rows: list[Candidate] = []
        row_of_key: dict[tuple[str, Any], int] = {}
        row_of: dict[tuple[str, str], int] = {}
        for d in self.dialogues:
            seen_here: dict[str, int] = {}
            for c in d.candidates:
                if local:
                    copy = seen_here[c.body] = seen_here.get(c.body, -1) + 1
                    key: tuple[str, Any] = (c.body, copy)
                else:
                    key = (c.id, None)
                row = row_of_key.get(key)
                if row is None:
                    row = row_of_key[key] = len(rows)
                    rows.append(c)
                row_of[d.id, c.id] = row
        return rows, row_of

    @cached_property
    def content_hash(self) -> str:
        """sha256 over the canonical JSON of every dialogue, in order.

        Changes when any text, label, score, id, subset or order changes; it
        does not depend on the file the collection was read from.
        """
        digest = hashlib.sha256()
        for d in self.dialogues:
            digest.update(canonical_json(d.to_json()).encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()

    def describe(self) -> dict[str, Any]:
        """Identity of the collection as recorded in sidecars and reports: a file or folder of
        this machine in ``meta`` (``path``, ``source``, ``cache``) by its name only."""
        meta = {k: PurePath(v).name if k in MACHINE_KEYS and isinstance(v, str) else v for k, v in self.meta.items()}
        return {
            "name": self.name,
            "hash": self.content_hash,
            "dialogues": len(self),
            "subsets": self.subsets,
            **({"meta": meta} if meta else {}),
        }


#: collection ``meta`` keys that name files or folders of the machine
MACHINE_KEYS = ("path", "source", "cache")


# --- the text a model sees for a candidate ------------------------------------


def initial_order(dialogues: Iterable[Dialogue]) -> dict[str, list[str]]:
    """Dialogue id -> its candidate ids in order (see :meth:`Collection.initial_order`)."""
    return {d.id: [c.id for c in d.candidates] for d in dialogues}


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --- benchmark file -------------------------------------------------------


def write_benchmark(collection: Collection, path: str | Path) -> None:
    """Write the collection as a benchmark file (JSON Lines), atomically."""
    with atomic_write(path) as handle:
        for d in collection.dialogues:
            handle.write(json.dumps(d.to_json(), ensure_ascii=False))
            handle.write("\n")


def read_benchmark(path: str | Path, name: str | None = None) -> Collection:
    """Read a benchmark file; every problem names the file, line and field."""

    path = Path(path)
    dialogues = []
    seen: dict[str, int] = {}
    text = read_text(path)
    with gc_paused():
        for lineno, obj in _benchmark_lines(text, path):
            where = _Where(path, lineno)
            dialogue = dialogue_from_json(obj, where)
            if dialogue.id in seen:
                raise InputError(
                    f"duplicate dialogue id {dialogue.id!r} (first on line {seen[dialogue.id]})",
                    path=path,
                    line=lineno,
                    record=dialogue.id,
                    field="id",
                )
            seen[dialogue.id] = lineno
            dialogues.append(dialogue)
    if not dialogues:
        raise InputError("no dialogues in the file", path=path)
    return Collection(name or path.stem, dialogues, meta={"path": str(path)})


def _benchmark_lines(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """The JSON Lines of a benchmark file; where its first line is not JSON but a TREC run's or
    qrels' line (a run given where the collection goes: ``dsr validate my.run``), the error
    says so."""
    try:
        yield from iter_json_lines(text, path)
    except InputError as err:
        lineno, line = _first_line(text)
        kind = _trec_kind(line)
        if kind is None or err.line != lineno or not err.message.startswith("malformed JSON"):
            raise
        raise InputError(
            f"{err.message}; this looks like a {kind}, not a benchmark file (JSON Lines, one dialogue "
            "a line); where a command takes a collection and a run, the collection (a registered name "
            "or a benchmark file) comes first",
            path=path,
            line=err.line,
        ) from None


def _first_line(text: str) -> tuple[int | None, str]:
    """(number, text) of the first line that is not blank (read lazily: the file may be large)."""
    for number, line in enumerate(io.StringIO(text), start=1):
        if line.strip():
            return number, line
    return None, ""


def _trec_kind(line: str) -> str | None:
    """What a TREC run's or qrels' line (its shape) says the file is, else None: a line the run
    reader takes (:func:`dsr.core.run.parse_run_line`), or four columns ending in a whole number."""
    fields = line.split()
    if parse_run_line(fields)[0] is not None:
        return "TREC run file (qid Q0 docid rank score tag)"
    if len(fields) == 4 and _WHOLE.fullmatch(fields[3]) and not fields[0].startswith(("{", "[")):
        return "TREC qrels file (qid 0 docid grade)"
    return None


_WHOLE = re.compile(r"[+-]?\d+")


@dataclass
class _Where:
    path: Path | str | None
    line: int | None = None
    record: str | None = None

    def error(self, message: str, field: str | None = None) -> InputError:
        return InputError(message, path=self.path, line=self.line, record=self.record, field=field)


#: ``Dialogue.meta`` of a dialogue read without any label (a participant file): evaluating on it
#: is refused (``dsr.evaluation.qrels.qrels_from_collection``)
WITHHELD_KEY = "labels"


def labels_withheld(dialogue: Dialogue) -> bool:
    """Whether the dialogue was read without labels (every candidate's is 0 by default)."""
    return dialogue.meta.get(WITHHELD_KEY) == "withheld"


def dialogue_from_json(obj: Any, where: _Where | None = None) -> Dialogue:
    """Parse one benchmark-file dialogue, strictly (labels must be whole numbers >= 0; a dialogue
    none of whose candidates has a ``label`` is read with labels 0 and marked
    :func:`labels_withheld`)."""
    where = where or _Where(None)
    if not isinstance(obj, dict):
        raise where.error(f"expected a JSON object, got {type(obj).__name__}")
    did = check_id(_text(obj, "id", where, required=True), where, "id")
    where = _Where(where.path, where.line, did)
    context = obj.get("context")
    if not isinstance(context, list):
        raise where.error("missing or not a list", "context")
    turns = [_turn(t, where, f"context[{i}]") for i, t in enumerate(context)]
    target = obj.get("target")
    target_turn = None if target is None else _turn(target, where, "target")
    cands_raw = obj.get("candidates")
    if not isinstance(cands_raw, list):
        raise where.error("missing or not a list", "candidates")
    withheld = bool(cands_raw) and all(isinstance(c, dict) and "label" not in c for c in cands_raw)
    if withheld:  # a participant file (dsr board participant-file): no candidate has a label
        cands_raw = [{**c, "label": 0} for c in cands_raw]
    candidates = _plain_candidates(cands_raw)
    if candidates is None:
        candidates = _candidates(cands_raw, where)
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise where.error("must be an object", "meta")
    if withheld:
        meta = {**meta, WITHHELD_KEY: "withheld"}
    return _trusted(
        Dialogue,
        id=did,
        title=_text(obj, "title", where),
        context=turns,
        target=target_turn,
        candidates=candidates,
        subset=_text(obj, "subset", where) or "all",
        subreddit=_text(obj, "subreddit", where),
        source=_text(obj, "source", where),
        meta=meta,
    )


def _candidates(cands_raw: list[Any], where: _Where) -> list[Candidate]:
    """Candidates checked one field at a time: the first problem names its field."""
    candidates = []
    seen: set[str] = set()
    for i, c in enumerate(cands_raw):
        cand = candidate_from_json(c, where, f"candidates[{i}]")
        if cand.id in seen:
            raise where.error(f"duplicate candidate id {cand.id!r}", f"candidates[{i}].id")
        seen.add(cand.id)
        candidates.append(cand)
    return candidates


def _plain_candidates(cands_raw: list[Any]) -> list[Candidate] | None:
    """The common case checked in bulk, or None when any candidate needs the field-by-field
    path (which then accepts it as it always did, or names the field at fault).

    Plain means: an object whose id is non-empty text, whose body is text that is not
    blank, whose title is text or absent, whose score is absent or a finite int or float
    and whose label an int from 0 to ``MAX_LABEL``; the ids, joined, hold no whitespace
    or control character, are printable, and no two are equal. What this accepts,
    :func:`candidate_from_json` accepts with the same values (tested); anything else
    (numbers as strings, a numeric id, a float label...) goes that way.
    """
    rows = []
    for c in cands_raw:
        if type(c) is not dict:
            return None
        cid, body, title, score, label = (c.get("id"), c.get("body"), c.get("title"), c.get("score"), c.get("label"))
        if (
            type(cid) is not str
            or not cid
            or type(body) is not str
            or not body.strip()
            or type(label) is not int
            or not 0 <= label <= MAX_LABEL
        ):
            return None
        if title is None:
            title = ""
        elif type(title) is not str:
            return None
        if score is not None and not (type(score) is int or (type(score) is float and math.isfinite(score))):
            return None
        rows.append((cid, title, body, score, label))
    ids = [row[0] for row in rows]
    joined = "".join(ids)
    if len(set(ids)) != len(ids) or _BAD_ID_CHAR.search(joined) is not None or not joined.isprintable():
        return None
    return [
        _trusted(Candidate, id=cid, title=title, body=body, score=score, label=label) for cid, title, body, score, label in rows
    ]


_Record = TypeVar("_Record")


def _trusted(cls: type[_Record], **fields: Any) -> _Record:
    """A record built from fields the reader has already checked, without the
    ``__post_init__`` checks that would repeat them (a builder's records go through those)."""
    record = object.__new__(cls)
    record.__dict__.update(fields)
    return record


def candidate_from_json(obj: Any, where: _Where, name: str = "candidate") -> Candidate:
    if not isinstance(obj, dict):
        raise where.error("expected an object", name)
    cid = check_id(_text(obj, "id", where, required=True, prefix=name), where, f"{name}.id")
    body = obj.get("body")
    if not isinstance(body, str) or not body.strip():
        raise where.error("missing or empty sentence text", f"{name}.body")
    return Candidate(
        id=cid,
        title=_text(obj, "title", where, prefix=name),
        body=body,
        score=parse_number(obj.get("score"), where, f"{name}.score", allow_none=True),
        label=parse_label(obj.get("label"), where, f"{name}.label"),
    )


#: whitespace of any kind (what str.split splits on) and control characters (category Cc)
_BAD_ID_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")


def check_id(value: object, where: _Where, name: str) -> str:
    """A dialogue or candidate id that a TREC run or qrels file can carry: not empty, without
    whitespace of any kind (run files are split on it) and printable (no format character:
    a bidi control shows an id other than it is; ``dsr.core.text.unprintable``, the check of
    names elsewhere), else InputError."""
    if not isinstance(value, str) or not value:
        raise where.error("missing or empty id", name)
    bad = _BAD_ID_CHAR.search(value)
    if bad is not None:
        raise where.error(
            f"id {value!r} contains {bad.group()!r}: TREC run and qrels files split on "
            "whitespace, so ids must not contain any (nor control characters)",
            name,
        )
    hidden = unprintable(value)
    if hidden is not None:
        raise where.error(
            f"id {value!r} holds {hidden}, which is not printable: an id is shown on pages, "
            "in files and in reports, and a format character (a bidi control, a zero-width "
            "space) would show it as another",
            name,
        )
    return value


@overload
def parse_number(value: Any, where: _Where, name: str, allow_none: Literal[False] = False) -> float | int: ...
@overload
def parse_number(value: Any, where: _Where, name: str, allow_none: bool) -> float | int | None: ...
def parse_number(value: Any, where: _Where, name: str, allow_none: bool = False) -> float | int | None:
    """A finite number, also when stored as a string ("3", "0.25")."""
    if value is None or value == "":
        if allow_none:
            return None
        raise where.error("missing number", name)
    if isinstance(value, bool):
        raise where.error(f"expected a number, got {value!r}", name)
    if isinstance(value, (int, float)):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value)
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                raise where.error(f"expected a number, got {value!r}", name) from None
    else:
        raise where.error(f"expected a number, got {type(value).__name__}", name)
    if isinstance(number, float) and not math.isfinite(number):
        raise where.error(f"not a finite number: {value!r}", name)
    return number


#: the largest relevance grade: trec_eval and pytrec_eval keep grades as C ints
MAX_LABEL = 2**31 - 1


def parse_label(value: Any, where: _Where, name: str, allowed: tuple[int, ...] | None = None) -> int:
    """A relevance grade: a whole number >= 0 (or in ``allowed``), strings like "1" accepted."""
    if value is None:
        raise where.error("missing relevance label", name)
    number = parse_number(value, where, name)
    if isinstance(number, float):
        if not number.is_integer():
            raise where.error(f"label must be a whole number, got {value!r}", name)
        number = int(number)
    if number < 0 or number > MAX_LABEL or (allowed is not None and number not in allowed):
        expected = "/".join(map(str, allowed)) if allowed else f"a whole number from 0 to {MAX_LABEL}"
        raise where.error(f"label must be {expected}, got {value!r}", name)
    return number


def _text(obj: dict[str, Any], key: str, where: _Where, required: bool = False, prefix: str | None = None) -> str:
    name = f"{prefix}.{key}" if prefix else key
    value = obj.get(key)
    if value is None or value == "":
        if required:
            raise where.error("missing", name)
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and not math.isfinite(value):
            raise where.error(f"expected text, got the number {value!r}", name)
        return str(value)
    if not isinstance(value, str):
        raise where.error(f"expected text, got {type(value).__name__}", name)
    return value


def _turn(obj: Any, where: _Where, name: str) -> Turn:
    if not isinstance(obj, dict):
        raise where.error("expected an object", name)
    body = obj.get("body")
    if not isinstance(body, str):
        raise where.error("missing turn text", f"{name}.body")
    return Turn(
        author_id=_text(obj, "author_id", where, prefix=name),
        author_name=_text(obj, "author_name", where, prefix=name),
        body=body,
        score=parse_number(obj.get("score"), where, f"{name}.score", allow_none=True),
    )
