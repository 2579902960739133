"""Qrels: topic id -> {doc id: relevance grade}, from a collection or a TREC qrels file.

The TREC qrels format is ``qid iteration docid grade`` (four columns, the
iteration is ignored, ``0`` when written). Graded labels are kept as they are:
nDCG uses the grade as its gain (trec_eval's rule), the binary measures count
a document as relevant when its grade is >= ``rel`` (1 unless a measure says
otherwise, e.g. ``RR(rel=2)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dsr.core.data import Candidate, Collection, Dialogue, labels_withheld
from dsr.core.errors import InputError
from dsr.core.textfiles import atomic_write_text, read_lines

Qrels = dict[str, dict[str, int]]


def qrels_from_collection(collection: Collection) -> Qrels:
    """Every candidate of every dialogue with its label (0 kept: judged not relevant).

    Judged non-relevant candidates are kept so the qrels say exactly what was
    judged; the measures of the default set do not depend on them, but
    judged-only measures (e.g. ``P(judged_only=True)@5``) do.
    """
    withheld = next((d for d in collection.dialogues if labels_withheld(d)), None)
    if withheld is not None:
        raise InputError(
            f"{collection.name} holds no labels (dialogue {withheld.id!r} and the others of "
            "a participant file): it can be ranked, not evaluated",
            record=withheld.id,
            field="label",
        )
    held = collection.__dict__.get(HELD_QRELS)
    if held is not None:  # made with the collection from the same arrays: a copy of it
        return {q: dict(docs) for q, docs in held.items()}
    return {d.id: {c.id: int(c.label) for c in d.candidates} for d in collection.dialogues}


#: where a collection made from a qrels file's arrays keeps its qrels (``columns_run.collection_of``)
HELD_QRELS = "_held_qrels"


def write_qrels(qrels: Qrels, path: str | Path) -> None:
    """Write TREC qrels (``qid 0 docid grade``), atomically, topics in the given order
    (gzipped when ``path`` ends in ``.gz``)."""
    with atomic_write_text(path) as handle:
        for qid, docs in qrels.items():
            for doc, grade in docs.items():
                handle.write(f"{qid} 0 {doc} {int(grade)}\n")


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels strictly: the first problem raises an InputError naming its line.

    Four columns per line, an integer grade (negative grades, which some TREC
    tracks use for "junk", are kept as they are; they count as not relevant),
    no (topic, doc) pair twice. Blank lines and ``#`` comment lines are skipped.
    """
    qrels, _, _ = _read(path, strict=True)
    return qrels


def read_qrels_as_trec_eval(path: str | Path) -> tuple[Qrels, dict[str, str], int]:
    """Qrels as ``dsr trec_eval`` reads them: as :func:`read_qrels`, but a document judged twice
    is not an error here (trec_eval stops on it only when it evaluates that topic): (the qrels,
    each grade the first given; {topic: its smallest document id judged twice}; the lines
    graded above 0, which trec_eval -c counts as num_rel)."""
    return _read(path, strict=False)


def _read(path: str | Path, strict: bool) -> tuple[Qrels, dict[str, str], int]:
    path = Path(path)
    if not path.exists():
        raise InputError("no such qrels file", path=path)
    qrels: Qrels = {}
    twice: dict[str, str] = {}
    relevant = 0
    lines = read_lines(path)  # plain or gzip
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue  # comment lines, as trec_eval 10.0 reads them (9.0.8 refuses them)
        parts = line.split()
        if len(parts) != 4:
            raise InputError(f"expected 4 columns (qid iteration docid grade), got {len(parts)}", path=path, line=lineno)
        qid, _, doc, grade_text = parts
        grade = _grade(grade_text)
        if grade is None:
            raise InputError(
                f"grade is not a whole number from -2147483648 to 2147483647 (as trec_eval reads it): {grade_text!r}",
                path=path,
                line=lineno,
                field="grade",
            )
        relevant += grade > 0
        docs = qrels.setdefault(qid, {})
        if doc in docs:
            if strict:
                raise InputError(f"duplicate judgement for topic {qid!r} and doc {doc!r}", path=path, line=lineno, field="docid")
            if qid not in twice or doc.encode() < twice[qid].encode():
                twice[qid] = doc
            continue
        docs[doc] = grade
    if not qrels:
        raise InputError("the qrels file is empty", path=path)
    return qrels, twice, relevant


#: the grades trec_eval (pytrec_eval) holds: a C int. A larger grade wrapped round (4294967297
#: read as 1, 3000000000 as a negative number whose arrays took the machine's memory)
GRADE_RANGE = (-(2**31), 2**31 - 1)


def _grade(text: str) -> int | None:
    """A whole number as C reads it (optional sign, ASCII digits, no ``_``) that fits a C int."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        return None
    grade = int(text)
    return grade if GRADE_RANGE[0] <= grade <= GRADE_RANGE[1] else None


def as_qrels(value: Any) -> Qrels:
    """Qrels from what a notebook holds: a TREC qrels path, a ``ranx.Qrels``, a pandas
    DataFrame (PyTerrier's ``qid``, ``docno``, ``label``) or ``{qid: {docno: grade}}``."""
    if isinstance(value, (str, Path)):
        return read_qrels(value)
    if type(value).__module__.split(".")[0] == "ranx":
        value = value.to_dict()
    if hasattr(value, "columns") and hasattr(value, "iloc"):
        missing = [c for c in ("qid", "docno", "label") if c not in value.columns]
        if missing:
            raise InputError(
                f"a qrels frame needs columns qid, docno and label; it has {', '.join(map(str, value.columns))}", field=missing[0]
            )
        out: Qrels = {}
        for qid, doc, label in zip(value["qid"].astype(str), value["docno"].astype(str), value["label"]):
            out.setdefault(qid, {})[doc] = int(label)
        return out
    if isinstance(value, dict):
        return {str(q): {str(d): int(g) for d, g in docs.items()} for q, docs in value.items()}
    raise InputError(
        f"cannot read qrels from a {type(value).__name__}: give a path, a ranx.Qrels, "
        "a DataFrame (qid, docno, label) or a dict {qid: {docno: grade}}",
        field="qrels",
    )


def collection_from_qrels(qrels: Qrels, name: str = "qrels") -> Collection:
    """A collection holding only judgements: one dialogue per topic (in the qrels' order,
    no text), its judged documents as candidates. What ``dsr.evaluate(qrels=...)`` scores
    runs against when there is no collection: every topic of the qrels counts (missing
    ones score 0), exactly as trec_eval -c over that qrels file."""
    dialogues = [
        Dialogue(
            id=qid,
            title="",
            context=[],
            target=None,
            candidates=[Candidate(doc, "", "", None, int(grade)) for doc, grade in docs.items()],
        )
        for qid, docs in qrels.items()
    ]
    return Collection(name, dialogues, meta={"from": "qrels"})
