"""Val/test split files: one module for the loaders that ship them (SIGIR 2022's
official 50 splits) and the evaluator's split protocol (``dsr.evaluation.protocol``).

A split file is JSON Lines, one ``{"val": [ids], "test": [ids]}`` per split (a
JSON array of such objects is read too). :func:`read_split_file` checks each
line on its own; :func:`check_splits` checks that every split partitions a
collection's dialogue ids. Errors name the file, the line and the field.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dsr.core import jsonio
from dsr.core.errors import InputError
from dsr.core.jsonio import iter_json_lines, read_text


def read_split_file(path: str | Path) -> list[tuple[list[str], list[str]]]:
    """The val/test splits of a split file: one ``{"val": [...], "test": [...]}`` per line.

    A JSON array of such objects is accepted too. Raises InputError naming the
    line and field for malformed JSON, a missing or non-list ``val``/``test``,
    an id that is not text, an id repeated inside a list, or an id in both.
    Whether the lines partition a collection is ``check_splits``' job.
    """
    path = Path(path)
    text = read_text(path, "utf-8-sig")
    items: list[tuple[int, Any]] = []
    try:
        whole = jsonio.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        items = list(enumerate(whole, start=1))
    else:
        items.extend(iter_json_lines(text, path))
    if not items:
        raise InputError("no splits in the file", path=path)
    splits = []
    for lineno, obj in items:
        if not isinstance(obj, dict):
            raise InputError(f'expected {{"val": [...], "test": [...]}}, got {type(obj).__name__}', path=path, line=lineno)
        parts = []
        for part in ("val", "test"):
            ids = obj.get(part)
            if not isinstance(ids, list):
                raise InputError("missing or not a list of dialogue ids", path=path, line=lineno, field=part)
            bad = [i for i in ids if not isinstance(i, str) or not i]
            if bad:
                raise InputError(f"dialogue ids must be text, got {bad[0]!r}", path=path, line=lineno, field=part)
            repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
            if repeated:
                raise InputError(f"{len(repeated)} id(s) listed twice: {_few(repeated)}", path=path, line=lineno, field=part)
            parts.append([str(i) for i in ids])
        both = sorted(set(parts[0]) & set(parts[1]))
        if both:
            raise InputError(f"{len(both)} id(s) in both val and test: {_few(both)}", path=path, line=lineno, field="test")
        splits.append((parts[0], parts[1]))
    return splits


def check_splits(splits: list[tuple[list[str], list[str]]], ids: Iterable[str], path: str | Path | None) -> None:
    """Check that every split's val + test is exactly ``ids`` (no id missing, none unknown).

    The error names the split file, the line (1-based split number) and the
    offending ids, so the evaluator can reuse it for any collection.
    """
    expected = set(ids)
    for lineno, (val, test) in enumerate(splits, start=1):
        both = set(val) & set(test)
        if both:
            raise InputError(
                f"{len(both)} id(s) in both val and test: {_few(sorted(both))}", path=path, line=lineno, field="test"
            )
        got = set(val) | set(test)
        unknown = sorted(got - expected)
        missing = sorted(expected - got)
        if unknown:
            raise InputError(
                f"{len(unknown)} id(s) not in the collection: {_few(unknown)}",
                path=path,
                line=lineno,
                field="val" if unknown[0] in val else "test",
            )
        if missing:
            raise InputError(
                f"{len(missing)} dialogue(s) of the collection in neither val nor test: {_few(missing)}",
                path=path,
                line=lineno,
                field="val",
            )


def _few(ids: list[str], n: int = 5) -> str:
    shown = ", ".join(ids[:n])
    return shown + (f" ... (+{len(ids) - n} more)" if len(ids) > n else "")
