"""Crowdsourcing batches: a CSV of tasks and an HTML template (Mechanical Turk's ``${column}``
substitution), and the batch results CSV read back.

``dsr judge export-tasks CAMPAIGN --format crowd --out DIR`` writes

* ``batch.csv``: one row per task (a HIT): ``task``, ``title``, ``turns_html`` (the dialogue,
  HTML-escaped), ``next_speaker``, ``n`` and, for each of the ``slots`` sentence places,
  ``item_N`` (the item's public key), ``doc_N`` and ``sentence_N`` (escaped); unused places
  are empty. Publish it with k assignments per HIT (Mechanical Turk makes them
  different workers);
* ``template.html``: the HIT layout (``<crowd-form>``): the dialogue, who speaks next, and
  per sentence radio buttons named ``grade_N`` with the scale's grades and ``unsure``. For
  Prolific, serve one page per row with the same substitution and the same field names.

``dsr judge import CAMPAIGN RESULTS.csv --format crowd`` reads the batch results: per
row the worker (``WorkerId``, else ``PROLIFIC_PID`` or ``participant_id``), the
``Input.item_N`` keys, and per place the answer, either as ``Answer.grade_N`` = a grade or
``unsure`` or as ``crowd-form``'s flattened radio groups (``Answer.grade_N.G`` = ``true``).
``WorkTimeInSeconds`` is spread evenly over the row's sentences. Assessors are
``crowd:WORKER``.
"""

from __future__ import annotations

import csv
import html
import io
from pathlib import Path
from typing import Any

from dsr.core.errors import InputError
from dsr.core.jsonio import read_text
from dsr.judging.guidelines import Guidelines
from dsr.judging.views import TaskContent

ORIGIN = "crowd"
FILES = ("batch.csv", "template.html")
WORKER_COLUMNS = ("WorkerId", "PROLIFIC_PID", "participant_id")
#: the longest worker id (the assessor's name is ``crowd:ID``, at most 200 characters)
MAX_WORKER = 150
UNSURE = "unsure"


def batch_rows(tasks: list[tuple[int, TaskContent]]) -> tuple[list[str], list[dict[str, str]]]:
    slots = max(len(task.items) for _, task in tasks)
    columns = ["task", "title", "turns_html", "next_speaker", "n"]
    for n in range(1, slots + 1):
        columns += [f"item_{n}", f"doc_{n}", f"sentence_{n}"]
    rows = []
    for seq, task in tasks:
        row = {
            "task": str(seq),
            "title": html.escape(task.title),
            "next_speaker": html.escape(task.next_speaker),
            "turns_html": "".join(f"<p><b>{html.escape(t['speaker'])}</b> {html.escape(t['text'])}</p>" for t in task.turns),
            "n": str(len(task.items)),
        }
        for n in range(1, slots + 1):
            item = task.items[n - 1] if n <= len(task.items) else None
            row[f"item_{n}"] = item["key"] if item else ""
            row[f"doc_{n}"] = html.escape(item["title"]) if item else ""
            row[f"sentence_{n}"] = html.escape(item["body"]) if item else ""
        rows.append(row)
    return columns, rows


def template(rules: Guidelines, slots: int) -> str:
    scale = "".join(f"<li><b>{g.grade} · {html.escape(g.name)}</b>: {html.escape(g.help)}</li>" for g in rules.scale)
    text = "".join(f"<p>{html.escape(p)}</p>" for p in rules.paragraphs)
    places = "\n".join(_place(rules, n) for n in range(1, slots + 1))
    return f"""<!-- dsr judge: one HIT = one task; the dollar-braced names are batch.csv columns -->
<script src="https://assets.crowd.aws/crowd-html-elements.js"></script>
<style>.s{{margin:.6em 0;padding:.4em;border:1px solid #ccc}}.s.empty{{display:none}}.doc{{color:#666;font-size:90%}}</style>
<crowd-form answer-format="flatten-objects">
  <details><summary>Guidelines</summary><h3>{html.escape(rules.question)}</h3>
    <ul>{scale}<li><b>unsure</b>: cannot decide</li></ul>{text}</details>
  <h2>${{title}}</h2>
  <div class="turns">${{turns_html}}</div>
  <p>Next to speak: <b>${{next_speaker}}</b></p>
  <p><b>{html.escape(rules.question)}</b></p>
{places}
  <input type="hidden" name="task" value="${{task}}">
</crowd-form>
<script>
  document.querySelectorAll(".s").forEach(function (s) {{
    if (!s.dataset.item) {{
      s.classList.add("empty");
      s.querySelectorAll("input").forEach(function (i) {{ i.required = false; i.disabled = true; }});
    }}
  }});
</script>
"""


def _place(rules: Guidelines, n: int) -> str:
    radios = " ".join(
        f'<label><input type="radio" name="grade_{n}" value="{g.grade}" required> {g.grade} · {html.escape(g.name)}</label>'
        for g in rules.scale
    )
    return (
        f'  <div class="s" data-item="${{item_{n}}}"><p><span class="doc">${{doc_{n}}}</span> ${{sentence_{n}}}</p>\n'
        f'    {radios} <label><input type="radio" name="grade_{n}" value="{UNSURE}"> unsure</label></div>'
    )


def write(folder: Path, tasks: list[tuple[int, TaskContent]], rules: Guidelines) -> None:
    columns, rows = batch_rows(tasks)
    with open(folder / "batch.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    (folder / "template.html").write_text(template(rules, (len(columns) - 5) // 3), encoding="utf-8")


def read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Grades from a batch results CSV (see the module docstring), strictly: (the grade rows,
    how many sentence places were left unanswered)."""

    text = read_text(path, encoding="utf-8-sig")
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))  # echoed inputs (a long dialogue's HTML) pass 128 KiB
    reader = csv.DictReader(io.StringIO(text), strict=True)
    try:
        return _read_records(reader, path)
    except csv.Error as err:
        raise InputError(f"not a readable CSV record ({err})", path=path, line=reader.reader.line_num or 1) from None
    finally:
        csv.field_size_limit(limit)


def _slots(columns: list[str], path: Path) -> list[int]:
    """The N of every ``Input.item_N`` column; any other ``Input.item_...`` column is refused."""
    slots = []
    for column in columns:
        if column and column.startswith("Input.item_"):
            number = column[len("Input.item_") :]
            if not (number.isascii() and number.isdigit()):
                raise InputError(
                    "expected Input.item_N with N a number (the batch's sentence places)", path=path, line=1, field=column
                )
            slots.append(int(number))
    if not slots:
        raise InputError("no Input.item_N columns: not the results of a dsr judge batch", path=path, line=1)
    return sorted(slots)


def _read_records(reader: csv.DictReader, path: Path) -> tuple[list[dict[str, Any]], int]:
    columns = reader.fieldnames or []
    worker = next((c for c in WORKER_COLUMNS if c in columns), None)
    if worker is None:
        raise InputError(f"no worker column (one of {', '.join(WORKER_COLUMNS)})", path=path, line=1)
    slots = _slots(list(columns), path)
    rows: list[dict[str, Any]] = []
    seen: dict[Any, Any] = {}
    left_out = 0
    for line, record in enumerate(reader, start=2):
        found = []
        for n in slots:
            key = (record.get(f"Input.item_{n}") or "").strip()
            if not key:
                continue
            answer = _answer(record, n, {"path": path, "line": line, "field": f"Answer.grade_{n}"})
            if answer is not False:
                found.append((key, answer))
            else:
                left_out += 1
        who = (record.get(worker) or "").strip()
        if not who:
            raise InputError("no worker id", path=path, line=line, field=worker)
        if not who.isprintable() or len(who) > MAX_WORKER:
            raise InputError(
                f"a worker id is 1 to {MAX_WORKER} printable characters (no control character, got {ascii(who)[:60]})",
                path=path,
                line=line,
                field=worker,
            )
        seconds = _seconds(record.get("WorkTimeInSeconds"), len(found), path, line)
        for key, grade in found:
            if (key, who) in seen:
                raise InputError(f"worker {who} graded item {key} twice (also on line {seen[key, who]})", path=path, line=line)
            seen[key, who] = line
            rows.append({"item": key, "assessor": who, "grade": grade, "seconds": seconds, "where": {"path": path, "line": line}})
    return rows, left_out


def _answer(record: dict[str, str], n: int, where: dict) -> int | None | bool:
    """The grade at place n: an int, None (unsure), or False when the place was not answered."""
    value = (record.get(f"Answer.grade_{n}") or "").strip()
    if not value:
        ticked = [
            c.rsplit(".", 1)[1]
            for c, v in record.items()
            if c and c.startswith(f"Answer.grade_{n}.") and (v or "").strip().lower() == "true"
        ]
        if len(ticked) > 1:
            raise InputError(f"several answers ticked: {ticked}", **where)
        value = ticked[0] if ticked else ""
    if not value:
        return False
    if value == UNSURE:
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(f"not a grade: {value!r}", **where) from None


def _seconds(value: str | None, count: int, path: Path, line: int) -> float | None:
    if not value or not count:
        return None
    try:
        return float(value) / count
    except ValueError:
        raise InputError(f"not a number: {value!r}", path=path, line=line, field="WorkTimeInSeconds") from None
