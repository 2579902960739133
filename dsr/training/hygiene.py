"""Training hygiene: never train on a conversation that is also evaluated on.

CMU_DoG's splits share conversations: 45 of the 229 valid conversations are also in train,
with identical turns (the test split shares some with train too). A model trained on them is
graded on its own training data. So before any recipe builds examples,
:func:`drop_evaluation_conversations` removes every training conversation that

* is a conversation of the judged development set (``cmu_dog_dev``: its valid conversations
  and its fixed slice of train conversations), by name, or
* appears in an evaluation split of the CMU_DoG folder (``valid`` and ``test`` where present,
  but not the split being trained on), by its turns
  (:func:`dsr.collections.cmu_dog_dev.shared_conversations`: at least two turns, and at
  least half of the training conversation's, found in one evaluation conversation).

The CMU_DoG folder is ``eval_source``, else the collection's own source, else
``$DSR_HOME/data/cmu_dog``. Collections that are not CMU_DoG's are left alone. The counts
are printed and recorded in the model card (``training_data.selection.evaluation_overlap``).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsr.collections.cmu_dog_dev import dev_conversations, read_split_turns, shared_conversations, turn_keys
from dsr.core.data import Collection, Dialogue
from dsr.core.errors import InputError
from dsr.core.home import data_dir

#: the CMU_DoG splits that are evaluated on
EVALUATION_SPLITS = ("valid", "test")
CMU_DOG_SOURCES = ("cmu_dog", "cmu_dog_dev", "cmu_dog_judged")


def cmu_dog_folder(collection: Collection, eval_source: str | None) -> Path | None:
    """The CMU_DoG folder whose evaluation splits are checked (None when there is none)."""
    if eval_source:
        folder = Path(eval_source)
        if not (folder / "Conversations").is_dir():
            raise InputError("not a CMU_DoG folder (no Conversations/ in it)", path=folder, field="eval_source")
        return folder
    for candidate in (collection.meta.get("source"), data_dir("cmu_dog")):
        if candidate and (Path(candidate) / "Conversations").is_dir():
            return Path(candidate)
    return None


def drop_evaluation_conversations(
    dialogues: list[Dialogue], collection: Collection, eval_source: str | None, group: Callable[[Dialogue], str]
) -> tuple[list[Dialogue], dict[str, Any]]:
    """(the dialogues kept, the report for the card and the message)."""
    if not any(d.source in CMU_DOG_SOURCES for d in dialogues):
        return dialogues, {"checked": False, "reason": "not CMU_DoG dialogues"}
    by_conv: dict[str, list[Dialogue]] = defaultdict(list)
    for d in dialogues:
        by_conv[group(d)].append(d)
    dropped: dict[str, str] = {}  # conversation -> why
    dev = set().union(*dev_conversations().values()) if dev_conversations() else set()
    for name in by_conv:
        if name in dev:
            dropped[name] = "development set"
    report: dict[str, Any] = {"checked": True, "splits": []}
    folder = cmu_dog_folder(collection, eval_source)
    if folder is None:
        report["note"] = (
            "no CMU_DoG folder to read valid/test from (pass eval_source): only the development set's conversations were checked"
        )
    else:
        turns = {
            name: turn_keys(t.body for d in ds for t in [*d.context, *([d.target] if d.target else [])])
            for name, ds in by_conv.items()
            if name not in dropped
        }
        own = collection.meta.get("split")
        for split in EVALUATION_SPLITS:
            if split == own or not (folder / "Conversations" / split).is_dir():
                continue
            report["splits"].append(split)
            for name in shared_conversations(turns, read_split_turns(folder, split)):
                dropped.setdefault(name, split)
    kept = [d for d in dialogues if group(d) not in dropped]
    by_reason: dict[str, int] = defaultdict(int)
    for why in dropped.values():
        by_reason[why] += 1
    report.update(
        conversations=len(by_conv),
        dropped_conversations=len(dropped),
        dropped_dialogues=len(dialogues) - len(kept),
        by_reason=dict(sorted(by_reason.items())),
    )
    return kept, report


def message(report: dict[str, Any]) -> str:
    """The line ``dsr train`` prints about what hygiene dropped."""
    if not report.get("checked"):
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in report["by_reason"].items()) or "none"
    checked = " and ".join(["the development set", *report["splits"]])
    line = (
        f"dsr train: dropped {report['dropped_conversations']} of {report['conversations']} "
        f"training conversations ({report['dropped_dialogues']} dialogues) that also appear in "
        f"an evaluation split ({checked}): {why}"
    )
    return line + (f"; {report['note']}" if report.get("note") else "")


def apply(
    dialogues: list[Dialogue], collection: Collection, eval_source: str | None, group: Callable[[Dialogue], str]
) -> tuple[list[Dialogue], dict[str, Any]]:
    """:func:`drop_evaluation_conversations`, its line printed on stderr."""
    kept, report = drop_evaluation_conversations(dialogues, collection, eval_source, group)
    line = message(report)
    if line:
        print(line, file=sys.stderr)
    if not kept:
        raise InputError(
            "every training conversation is also evaluated on (CMU_DoG valid/test or "
            "the development set): nothing left to train on; train on CMU_DoG train",
            field="collection",
        )
    return kept, report
