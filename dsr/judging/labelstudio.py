"""Label Studio: the campaign's dialogues as a project to import, and its JSON export read back.

``dsr judge export-tasks CAMPAIGN --format label-studio --out DIR`` writes

* ``tasks.json``: one Label Studio task per dialogue with all its sentences (the campaign's
  tasks of that dialogue put together, honeypots included, unmarked): the dialogue as
  ``turns`` (``[{"speaker", "text"}]`` for a ``<Paragraphs>`` tag), the title, who speaks
  next, and ``sentences`` (``[{"dsr_item", "title", "text"}]``: ``dsr_item`` is the item's
  public key, which brings the grade home), and ``dsr_tasks`` (the campaign's task numbers);
* ``config.xml``: the labelling config: the dialogue, then a ``<Repeater>`` over the
  sentences giving each its text and its own ``<Choices name="grade_N">`` (N = the
  sentence's place, from 0) with the scale's grades, named, and "unsure". The choices
  carry none of the scale's keys, which would be the same for every sentence (Label Studio
  numbers the choices itself);
* ``instructions.html``: the guidelines, for the project's instructions.

Give each task to k annotators (Label Studio's "overlap"), then export the project
as JSON ("JSON", not "JSON_MIN") and read it back with ``dsr judge import CAMPAIGN
FILE --format label-studio``: each sentence's choice in an annotation becomes a grade of
assessor ``label-studio:ID`` (ID = the annotator's numeric id), ``lead_time`` spread evenly
over the annotation's graded sentences; cancelled (skipped) annotations and sentences left
without a choice are counted as left out. Anything else that is not the shape above (a
``data``, ``result`` or ``value`` that is not an object or list, a choice off the scale, an
unknown tag) refuses the whole file, naming the task, the annotation and the field.
"""

from __future__ import annotations

import html
import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from dsr.core.errors import InputError
from dsr.core.jsonio import load_json
from dsr.judging.guidelines import Guidelines
from dsr.judging.views import TaskContent

ORIGIN = "label-studio"
FILES = ("tasks.json", "config.xml", "instructions.html")
UNSURE = "unsure"
GRADE = "grade_"  # the Choices of sentence N are grade_N


def label_config(rules: Guidelines) -> str:
    choices = "\n".join(
        f"      <Choice value={quoteattr(str(g.grade))} alias={quoteattr(str(g.grade))} "
        f"html={quoteattr(f'<b>{g.grade}</b> {html.escape(g.name)}')} hint={quoteattr(g.help)}/>"
        for g in rules.scale
    )
    return f"""<View>
  <Header value="$title"/>
  <Paragraphs name="dialogue" value="$turns" layout="dialogue" nameKey="speaker" textKey="text"/>
  <Header value="$next_line" size="5"/>
  <Header value={quoteattr(rules.question)} size="5"/>
  <Repeater on="$sentences" indexFlag="{{{{idx}}}}">
    <Text name="sentence_title_{{{{idx}}}}" value="$sentences[{{{{idx}}}}].title"/>
    <Text name="sentence_{{{{idx}}}}" value="$sentences[{{{{idx}}}}].text"/>
    <Choices name="{GRADE}{{{{idx}}}}" toName="sentence_{{{{idx}}}}" choice="single-radio" showInline="true" required="true">
{choices}
      <Choice value="{UNSURE}" alias="{UNSURE}" hint="cannot decide; not counted"/>
    </Choices>
  </Repeater>
</View>
"""


def instructions(rules: Guidelines) -> str:
    scale = "".join(
        f"<li><b>{g.grade} · {html.escape(g.name)}</b> (key {html.escape(g.key)}): {html.escape(g.help)}</li>"
        for g in rules.scale
    )
    text = "".join(f"<p>{html.escape(p)}</p>" for p in rules.paragraphs)
    return f"<h3>{html.escape(rules.question)}</h3><ul>{scale}<li><b>unsure</b> (key u)</li></ul>{text}\n"


def tasks_json(dialogues: list[tuple[list[int], TaskContent]]) -> list[dict[str, Any]]:
    return [
        {
            "data": {
                "dsr_tasks": seqs,
                "title": task.title,
                "turns": task.turns,
                "next_line": f"Next to speak: {task.next_speaker}",
                "sentences": [{"dsr_item": item["key"], "title": item["title"], "text": item["body"]} for item in task.items],
            }
        }
        for seqs, task in dialogues
    ]


def write(folder: Path, tasks: list[tuple[int, TaskContent]], rules: Guidelines) -> None:
    """The three files into ``folder`` (an empty staging folder of ``atomic_dir``)."""
    (folder / "tasks.json").write_text(
        json.dumps(tasks_json(by_dialogue(tasks)), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    (folder / "config.xml").write_text(label_config(rules), encoding="utf-8")
    (folder / "instructions.html").write_text(instructions(rules), encoding="utf-8")


def by_dialogue(tasks: list[tuple[int, TaskContent]]) -> list[tuple[list[int], TaskContent]]:
    """The campaign's tasks put together per dialogue (a dialogue's tasks follow each other and
    share its title and turns): (task numbers, the dialogue with all its sentences)."""
    out: list[tuple[list[int], TaskContent]] = []
    for seq, task in tasks:
        last = out[-1][1] if out else None
        if last is not None and (last.title, last.turns, last.next_speaker) == (task.title, task.turns, task.next_speaker):
            out[-1] = (out[-1][0] + [seq], replace(last, items=last.items + task.items))
        else:
            out.append(([seq], task))
    return out


def read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Grades from a Label Studio JSON export (see the module docstring), strictly:
    (the grade rows, how many sentence places were left out: cancelled or not graded)."""

    exported = load_json(path)
    if not isinstance(exported, list):
        raise InputError("expected Label Studio's JSON export: a list of tasks", path=path)
    rows: list[dict[str, Any]] = []
    seen: dict[Any, Any] = {}
    left_out = 0
    for i, task in enumerate(exported):
        if not isinstance(task, dict):
            raise InputError("expected a task object", path=path, record=f"task {i}")
        where: dict[str, Any] = {"path": path, "record": f"task {task.get('id', i)}"}
        items = _sentences(task.get("data"), where)
        annotations = task.get("annotations") or []
        if not isinstance(annotations, list):
            raise InputError("expected a list of annotations", field="annotations", **where)
        for j, annotation in enumerate(annotations):
            grades = _annotation(annotation, items, {**where, "field": f"annotations[{j}]"})
            left_out += len(items) - len(grades)
            for row in grades:
                pair = (row["item"], row["assessor"])
                if pair in seen:
                    raise InputError(
                        f"annotator {row['assessor']} graded sentence {row['item']} twice (also in {seen[pair]})", **row["where"]
                    )
                seen[pair] = where["record"]
                rows.append(row)
    return rows, left_out


def _sentences(data: Any, where: dict) -> list[str]:
    """The item keys of a task's sentences, in place order."""
    if not isinstance(data, dict):
        raise InputError(f"expected an object, got {type(data).__name__}", field="data", **where)
    sentences = data.get("sentences")
    if not isinstance(sentences, list) or not sentences:
        why = (
            "a task of the one-sentence layout of an earlier dsr: export the tasks again"
            if "dsr_item" in data
            else "not a task exported by dsr judge"
        )
        raise InputError(f"no data.sentences: {why}", field="data.sentences", **where)
    keys = []
    for n, sentence in enumerate(sentences):
        key = sentence.get("dsr_item") if isinstance(sentence, dict) else None
        if not isinstance(key, str) or not key:
            raise InputError("expected an object with the sentence's dsr_item", field=f"data.sentences[{n}].dsr_item", **where)
        keys.append(key)
    return keys


def _annotation(annotation: Any, items: list[str], where: dict) -> list[dict[str, Any]]:
    """The grades one annotation gives (none when it was cancelled)."""
    if not isinstance(annotation, dict):
        raise InputError("expected an annotation object", **where)
    if annotation.get("was_cancelled"):
        return []
    field = where["field"]
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("id")
    if not isinstance(who, int) or isinstance(who, bool) or not 0 <= who < 2**63:
        raise InputError("completed_by is not an annotator id", **{**where, "field": field + ".completed_by"})
    result = annotation.get("result")
    if result is None:
        result = []
    if not isinstance(result, list):
        raise InputError(f"expected a list of results, got {type(result).__name__}", **{**where, "field": field + ".result"})
    picked: dict[int, tuple[int | None, dict]] = {}
    for k, entry in enumerate(result):
        at = {**where, "field": f"{field}.result[{k}]"}
        place, grade = _choice(entry, len(items), at)
        if place in picked:
            raise InputError(f"sentence {place} chosen twice in one annotation", **at)
        picked[place] = (grade, {**at, "field": at["field"] + ".value.choices"})
    seconds = annotation.get("lead_time")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not picked:
        seconds = None
    return [
        {
            "item": items[place],
            "assessor": str(who),
            "grade": grade,
            "seconds": None if seconds is None else float(seconds) / len(picked),
            "where": at,
        }
        for place, (grade, at) in sorted(picked.items())
    ]


def _choice(entry: Any, places: int, where: dict) -> tuple[int, int | None]:
    """(sentence place, grade or None for unsure) of one result entry."""
    if not isinstance(entry, dict):
        raise InputError(f"expected a result object, got {type(entry).__name__}", **where)
    name = entry.get("from_name")
    number = name[len(GRADE) :] if isinstance(name, str) and name.startswith(GRADE) else ""
    if not (number.isascii() and number.isdigit()) or int(number) >= places:
        raise InputError(
            f"from_name {name!r} is not the grade of one of the task's {places} sentences ({GRADE}0 to {GRADE}{places - 1})",
            **{**where, "field": where["field"] + ".from_name"},
        )
    value = entry.get("value")
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", **{**where, "field": where["field"] + ".value"})
    picked = value.get("choices")
    if not isinstance(picked, list) or len(picked) != 1 or not isinstance(picked[0], str):
        raise InputError(f"expected one choice, got {picked!r}", **{**where, "field": where["field"] + ".value.choices"})
    if picked[0] == UNSURE:
        return int(number), None
    try:
        return int(number), int(picked[0])
    except ValueError:
        raise InputError(
            f"not a grade of the scale: {picked[0]!r}", **{**where, "field": where["field"] + ".value.choices"}
        ) from None
