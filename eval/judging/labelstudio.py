"""Label Studio: the campaign's tasks as a project to import, and its JSON export read back.

``dsr judge export-tasks CAMPAIGN --format label-studio --out DIR`` writes

* ``tasks.json``: one Label Studio task per sentence (honeypots included, unmarked), with
  the dialogue as ``turns`` (``[{"speaker", "text"}]`` for a ``<Paragraphs>`` tag), the
  title, who speaks next, the sentence and its document title, and ``dsr_item`` (the
  item's public key, which brings the grade home). Tasks are in campaign order, so a
  dialogue's sentences follow each other with Label Studio's sequential sampling;
* ``config.xml``: the labelling config: the dialogue, the sentence and one
  ``<Choices name="grade">`` with the scale's grades (hotkeys from the scale) and "unsure";
* ``instructions.html``: the guidelines, for the project's instructions.

Give each task to k annotators (Label Studio's "overlap"), then export the project
as JSON ("JSON", not "JSON_MIN") and read it back with ``dsr judge import CAMPAIGN
FILE --format label-studio``: each annotation becomes a grade of assessor
``label-studio:ID`` (ID = the annotator's numeric id); cancelled (skipped) annotations
are left out, ``lead_time`` becomes the seconds the grade took.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from eval.judging.guidelines import Guidelines
from eval.judging.views import TaskContent
from retrieval.errors import InputError
from retrieval.jsonio import load_json

ORIGIN = "label-studio"
FILES = ("tasks.json", "config.xml", "instructions.html")
UNSURE = "unsure"


def label_config(rules: Guidelines) -> str:
    choices = "\n".join(f"    <Choice value={quoteattr(f'{g.grade} · {g.name}')} alias={quoteattr(str(g.grade))} "
                        f"hotkey={quoteattr(g.key)} hint={quoteattr(g.help)}/>" for g in rules.scale)
    return f"""<View>
  <Header value="$title"/>
  <Paragraphs name="dialogue" value="$turns" layout="dialogue" nameKey="speaker" textKey="text"/>
  <Header value="$next_line" size="5"/>
  <Header value={quoteattr(rules.question)} size="5"/>
  <Text name="sentence_title" value="$sentence_title"/>
  <Text name="sentence" value="$sentence"/>
  <Choices name="grade" toName="sentence" choice="single-radio" showInline="true" required="true">
{choices}
    <Choice value="{UNSURE}" alias="{UNSURE}" hotkey="u" hint="cannot decide; not counted"/>
  </Choices>
</View>
"""


def instructions(rules: Guidelines) -> str:
    scale = "".join(f"<li><b>{g.grade} · {html.escape(g.name)}</b> (key {html.escape(g.key)}): "
                    f"{html.escape(g.help)}</li>" for g in rules.scale)
    text = "".join(f"<p>{html.escape(p)}</p>" for p in rules.paragraphs)
    return f"<h3>{html.escape(rules.question)}</h3><ul>{scale}<li><b>unsure</b> (key u)</li></ul>{text}\n"


def tasks_json(tasks: list[tuple[int, TaskContent]]) -> list[dict[str, Any]]:
    return [{"data": {"dsr_item": item["key"], "dsr_task": seq, "title": task.title, "turns": task.turns,
                      "next_line": f"Next to speak: {task.next_speaker}",
                      "sentence_title": item["title"], "sentence": item["body"]}}
            for seq, task in tasks for item in task.items]


def write(folder: Path, tasks: list[tuple[int, TaskContent]], rules: Guidelines) -> None:
    """The three files into ``folder`` (an empty staging folder of ``atomic_dir``)."""
    (folder / "tasks.json").write_text(json.dumps(tasks_json(tasks), ensure_ascii=False, indent=1) + "\n",
                                       encoding="utf-8")
    (folder / "config.xml").write_text(label_config(rules), encoding="utf-8")
    (folder / "instructions.html").write_text(instructions(rules), encoding="utf-8")


def read(path: Path) -> list[dict[str, Any]]:
    """Grades from a Label Studio JSON export (see the module docstring), strictly."""

    exported = load_json(path)
    if not isinstance(exported, list):
        raise InputError("expected Label Studio's JSON export: a list of tasks", path=path)
    rows, seen = [], {}
    for i, task in enumerate(exported):
        where = {"path": path, "record": f"task {task.get('id', i) if isinstance(task, dict) else i}"}
        item = (task.get("data") or {}).get("dsr_item") if isinstance(task, dict) else None
        if not isinstance(item, str):
            raise InputError("no data.dsr_item: not a task exported by dsr judge", field="data.dsr_item", **where)
        for j, annotation in enumerate(task.get("annotations") or []):
            row = _annotation(annotation, item, {**where, "field": f"annotations[{j}]"})
            if row is None:
                continue
            pair = (item, row["assessor"])
            if pair in seen:
                raise InputError(f"annotator {row['assessor']} graded this sentence twice "
                                 f"(also in {seen[pair]})", **row["where"])
            seen[pair] = where["record"]
            rows.append(row)
    return rows


def _annotation(annotation: Any, item: str, where: dict) -> dict[str, Any] | None:
    if not isinstance(annotation, dict):
        raise InputError("expected an annotation object", **where)
    if annotation.get("was_cancelled"):
        return None
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id")
    if not isinstance(who, int) or isinstance(who, bool):
        raise InputError("completed_by is not an annotator id", **{**where, "field": where["field"] + ".completed_by"})
    choices = [r for r in annotation.get("result") or []
               if isinstance(r, dict) and r.get("from_name") == "grade"]
    if not choices:
        return None                      # submitted without a grade: nothing to count
    picked = (choices[0].get("value") or {}).get("choices") or []
    if len(picked) != 1 or not isinstance(picked[0], str):
        raise InputError(f"expected one choice, got {picked!r}", **{**where, "field": where["field"] + ".result"})
    grade = None
    if picked[0] != UNSURE:
        try:
            grade = int(picked[0])
        except ValueError:
            raise InputError(f"not a grade of the scale: {picked[0]!r}",
                             **{**where, "field": where["field"] + ".result"}) from None
    seconds = annotation.get("lead_time")
    return {"item": item, "assessor": str(who), "grade": grade,
            "seconds": float(seconds) if isinstance(seconds, (int, float)) else None, "where": where}
