"""Crowdsourcing batches: ``dsr judge export-tasks --format crowd`` writes a batch CSV and an HTML
template whose ``${column}`` places are all filled by the CSV (as Mechanical Turk substitutes
them), with one radio group per sentence; a batch results CSV in Mechanical Turk's layout (both
answer styles: ``Answer.grade_N`` and crowd-form's ``Answer.grade_N.G``) comes back as the grades
given; bad results files are refused naming the line."""

from __future__ import annotations

import csv
import html
import re
from html.parser import HTMLParser

import pytest

from dsr.cli import main
from dsr.judging import crowdsourcing
from dsr.judging.campaigns import Judging
from tests.support.judging import sample_campaign, true_grade


class Radios(HTMLParser):
    def __init__(self):
        super().__init__()
        self.groups: dict[str, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("type") == "radio":
            self.groups.setdefault(attrs["name"], []).append(attrs["value"])


@pytest.fixture
def exported(tmp_path):
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    judging = Judging.open(db)
    truth, _ = sample_campaign(judging, assign=False, chunk=8)
    assert main(["judge", "export-tasks", "s1", "--format", "crowd", "--out", str(tmp_path / "crowd"), "--db", db]) == 0
    return judging, truth, db, tmp_path / "crowd"


def test_the_template_takes_every_row_and_names_a_radio_group_per_sentence(exported):
    judging, _, _, folder = exported
    rows = list(csv.DictReader(open(folder / "batch.csv", encoding="utf-8")))
    template = (folder / "template.html").read_text()
    items = judging.items_frame(judging.campaign("s1"))
    assert len(rows) == items["task"].nunique()
    assert [k for r in rows for n in range(1, int(r["n"]) + 1) for k in [r[f"item_{n}"]]] == items["key"].tolist()
    slots = len([c for c in rows[0] if c.startswith("item_")])
    for row in rows[:5]:
        page = re.sub(r"\$\{(\w+)\}", lambda m: row[m.group(1)], template)  # Mechanical Turk's substitution
        assert "${" not in page and html.unescape(row["title"]) in html.unescape(page)
        parser = Radios()
        parser.feed(page)
        assert set(parser.groups) == {f"grade_{n}" for n in range(1, slots + 1)}
        assert all(values == ["0", "1", "2", "unsure"] for values in parser.groups.values())
        assert "gold" not in page.lower() and "honeypot" not in page.lower()


def test_batch_results_come_back_as_the_grades_given(exported, tmp_path, capsys):
    judging, truth, db, folder = exported
    rows = list(csv.DictReader(open(folder / "batch.csv", encoding="utf-8")))[:6]
    items = judging.items_frame(judging.campaign("s1")).set_index("key")
    given, results = {}, []
    for w, worker in enumerate(("A1WORKER", "A2WORKER")):
        for row in rows:
            out = {
                "HITId": f"H{row['task']}",
                "WorkerId": worker,
                "WorkTimeInSeconds": "60",
                **{f"Input.{k}": v for k, v in row.items()},
            }
            n = int(row["n"])
            for i in range(1, n + 1):
                key = row[f"item_{i}"]
                r = items.loc[key]
                grade = (
                    "unsure"
                    if (i, w) == (2, 1)
                    else str(true_grade({"candidate": r["candidate"], "gold": r["gold"], "dialogue": r["dialogue"]}, truth))
                )
                if w == 0:
                    out[f"Answer.grade_{i}"] = grade  # plain field values
                else:
                    for g in ("0", "1", "2", "unsure"):  # crowd-form's radio objects
                        out[f"Answer.grade_{i}.{g}"] = "true" if g == grade else "false"
                given[key, f"crowd:{worker}"] = (None if grade == "unsure" else int(grade), 60 / n)
            results.append(out)
    columns = sorted({c for r in results for c in r})
    with open(tmp_path / "results.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(results)
    assert main(["judge", "import", "s1", str(tmp_path / "results.csv"), "--format", "crowd", "--db", db]) == 0
    frame = judging.grades_frame(judging.campaign("s1"))
    keys = judging.items_frame(judging.campaign("s1")).set_index("item")["key"]
    back = {
        (keys[i], a): (None if g != g else int(g), s)
        for i, a, g, s in zip(frame["item"], frame["assessor"], frame["grade"], frame["seconds"])
    }
    assert back == given
    capsys.readouterr()
    assert main(["judge", "import", "s1", str(tmp_path / "results.csv"), "--format", "crowd", "--db", db]) == 0
    assert f": 0 new, {len(given)} already present, 0 changed" in capsys.readouterr().out  # again: nothing new
    assert len(judging.grades_frame(judging.campaign("s1"))) == len(given)


def test_bad_results_are_refused_naming_the_line(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("WorkerId,Input.item_1,Answer.grade_1\nW1,abc,2\nW1,abd,7x\n")
    with pytest.raises(Exception) as err:
        crowdsourcing.read(path)
    assert err.value.line == 3 and err.value.field == "Answer.grade_1"
    path.write_text("Input.item_1,Answer.grade_1\nabc,2\n")
    with pytest.raises(Exception, match="no worker column"):
        crowdsourcing.read(path)
    path.write_text("WorkerId,Input.item_1,Answer.grade_1\nW1,abc,2\nW1,abc,1\n")
    with pytest.raises(Exception, match="twice"):
        crowdsourcing.read(path)
