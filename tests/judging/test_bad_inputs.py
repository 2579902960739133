"""Every bad input of judging, one test each, attacked as a careless or hostile user would:
``dsr judge import`` on crowd results and Label Studio exports that are not what dsr wrote,
``POST /judge/api/grades`` with a lone surrogate or a body nested 100,000 deep, ``dsr judge``
on a read-only DSR_HOME and ``dsr kfold --folds 0``. Each is exit 2 (or a 4xx) naming the file,
record and field, without a traceback, and stores nothing (the good rows before the bad one
included)."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from dsr.cli import main
from dsr.judging.campaigns import Judging
from tests.support.judging import sample_campaign

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def campaign(tmp_path):
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    judging = Judging.open(db)
    sample_campaign(judging, assign=False, chunk=8)
    keys = judging.items_frame(judging.campaign("s1"))["key"].tolist()
    return judging, db, keys


def stored(judging: Judging) -> int:
    return len(judging.grades_frame(judging.campaign("s1")))


def refused(capsys, *argv) -> str:
    """Run ``dsr`` expecting exit 2 without a traceback; the error line."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "internal error" not in err, err
    return err


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


# --- dsr judge import --format crowd -----------------------------------------------------------


def test_crowd_results_with_a_column_input_item_underscore_alone(campaign, tmp_path, capsys):
    judging, db, keys = campaign
    path = write_csv(
        tmp_path / "results.csv", [{"WorkerId": "W1", "Input.item_1": keys[0], "Answer.grade_1": "2", "Input.item_": "x"}]
    )
    err = refused(capsys, "judge", "import", "s1", str(path), "--format", "crowd", "--db", db)
    assert f"{path}:1" in err and "Input.item_'" in err and "Input.item_N" in err
    assert stored(judging) == 0


def test_a_crowd_field_over_131072_characters_is_read(campaign, tmp_path, capsys):
    """A long dialogue's echoed HTML passes Python's csv default limit (128 KiB): such a file is
    the batch's own results, so it is read, not refused."""
    judging, db, keys = campaign
    echoed = "<p><b>user1</b> " + "a long turn " * 20_000 + "</p>"
    assert len(echoed) > 131_072
    path = write_csv(
        tmp_path / "results.csv",
        [
            {
                "WorkerId": "W1",
                "Input.turns_html": echoed,
                "Input.item_1": keys[0],
                "Answer.grade_1": "2",
                "Input.item_2": keys[1],
                "Answer.grade_2": "0",
            }
        ],
    )
    assert main(["judge", "import", "s1", str(path), "--format", "crowd", "--db", db]) == 0
    assert "2 new, 0 already present" in capsys.readouterr().out
    assert stored(judging) == 2
    path.write_text(path.read_text().replace("<p><b>", '"<p>"x<b>', 1))  # a broken quote: not a CSV record
    err = refused(capsys, "judge", "import", "s1", str(path), "--format", "crowd", "--db", db)
    assert f"{path}:2" in err and "CSV" in err


# --- dsr judge import --format label-studio ----------------------------------------------------


def label_studio_export(keys: list[str], **broken) -> list[dict]:
    """A two-task export in Label Studio's JSON layout; ``broken`` replaces parts of the second."""
    tasks = []
    for n, chunk in enumerate((keys[:3], keys[3:6])):
        result = [
            {"from_name": f"grade_{p}", "to_name": f"sentence_{p}", "type": "choices", "value": {"choices": ["1"]}}
            for p in range(len(chunk))
        ]
        tasks.append(
            {
                "id": 101 + n,
                "data": {"title": "t", "sentences": [{"dsr_item": k, "title": "d", "text": "s"} for k in chunk]},
                "annotations": [{"id": 7 + n, "completed_by": 3, "result": result, "lead_time": 9.0, "was_cancelled": False}],
            }
        )
    last = tasks[1]
    if "data" in broken:
        last["data"] = broken["data"]
    if "result" in broken:
        last["annotations"][0]["result"] = broken["result"]
    if "value" in broken:
        last["annotations"][0]["result"][1]["value"] = broken["value"]
    return tasks


@pytest.mark.parametrize(
    "broken, field",
    [
        ({"value": "1"}, "annotations[0].result[1].value"),
        ({"data": "<p>a dialogue</p>"}, "data"),
        ({"result": "grade_0: 2"}, "annotations[0].result"),
    ],
    ids=["value-a-string", "data-a-string", "result-a-string"],
)
def test_label_studio_parts_that_are_strings_are_refused_by_name(campaign, tmp_path, capsys, broken, field):
    judging, db, keys = campaign
    path = tmp_path / "export.json"
    path.write_text(json.dumps(label_studio_export(keys, **broken)))
    err = refused(capsys, "judge", "import", "s1", str(path), "--format", "label-studio", "--db", db)
    assert str(path) in err and "record task 102" in err and f"field '{field}'" in err, err
    assert stored(judging) == 0  # task 101's grades neither
    path.write_text(json.dumps(label_studio_export(keys)))  # the same export, whole
    assert main(["judge", "import", "s1", str(path), "--format", "label-studio", "--db", db]) == 0
    assert "6 new, 0 already present" in capsys.readouterr().out and stored(judging) == 6


def test_label_studio_grades_of_another_layout_are_refused_not_skipped(campaign, tmp_path, capsys):
    """The old one-sentence layout (``from_name`` "grade"), a choice list with two answers, a grade
    off the scale: refused naming the result, never skipped without a word."""
    judging, db, keys = campaign
    path = tmp_path / "export.json"
    for change, field, words in (
        (("from_name", "grade"), "result[0].from_name", "grade_0 to grade_2"),
        (("value", {"choices": ["1", "2"]}), "result[0].value.choices", "one choice"),
        (("value", {"choices": ["7"]}), "result[0].value.choices", "grade must be one of"),
    ):
        tasks = label_studio_export(keys)
        tasks[1]["annotations"][0]["result"][0][change[0]] = change[1]
        path.write_text(json.dumps(tasks))
        err = refused(capsys, "judge", "import", "s1", str(path), "--format", "label-studio", "--db", db)
        assert words in err and "record task 102" in err and (field is None or field in err), err
    assert stored(judging) == 0


# --- POST /judge/api/grades -------------------------------------------------------------------


@pytest.fixture
def api(served_campaign):
    server, judging, tokens = served_campaign
    with httpx.Client(
        base_url=server.url,
        timeout=60,
        headers={"Authorization": f"Bearer {tokens['alice']}", "Content-Type": "application/json"},
    ) as client:
        yield client, judging


def test_a_lone_surrogate_in_item_is_a_400(api):
    client, judging = api
    for body in (b'{"item": "\\ud800", "grade": 1}', b'{"item": "ab\\udfffcd", "grade": 1}'):
        answer = client.post("/judge/api/grades", content=body)
        assert answer.status_code == 400 and "item" in answer.json()["error"], answer.text
    assert client.post("/judge/api/grades", content=b'{"item": "0123456789abcdef", "grade": 1}').status_code == 404
    assert stored(judging) == 0


def test_a_body_nested_100000_deep_is_a_400(api):
    client, judging = api
    for body in ("[" * 100_000 + "]" * 100_000, '{"item": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001):
        answer = client.post("/judge/api/grades", content=body.encode())
        assert answer.status_code == 400 and "nested too deep" in answer.json()["error"], answer.text
    assert stored(judging) == 0


# --- dsr judge on a read-only DSR_HOME; dsr kfold --folds --------------------------------------


def test_dsr_judge_on_a_read_only_dsr_home_is_exit_2_naming_the_folder(tmp_path):
    home = tmp_path / "ro-home"
    home.mkdir()
    command = [sys.executable, "-m", "dsr.cli", "judge", "list"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DSR_HOME": str(home)}
    if os.geteuid() != 0:
        home.chmod(0o555)
    elif shutil.which("unshare") and shutil.which("mount"):
        # root writes through permissions: a read-only tmpfs in a private mount namespace
        command = ["unshare", "-m", "sh", "-c", f'mount -t tmpfs -o ro,size=64k tmpfs "{home}" && exec "$0" "$@"', *command]
    else:
        pytest.skip("running as root without unshare/mount: no way to make a read-only folder")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    if "mount:" in done.stderr:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.strip()[:200]}")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert f"{home / 'board'}" in done.stderr and "DSR_HOME" in done.stderr and "--db" in done.stderr


@pytest.mark.parametrize("folds", ["0", "-3", "1"])
def test_kfold_with_fewer_than_two_folds_is_exit_2_naming_folds(folds, tmp_path, capsys):
    err = refused(capsys, "kfold", "sample", "--eval", "sample", "--name", "x", "--out", str(tmp_path / "k"), "--folds", folds)
    assert re.search(r"--folds.*>= 2.*got " + re.escape(folds), err), err
    assert not (tmp_path / "k").exists()


@pytest.mark.slow
def test_worker_ids_with_control_characters_or_too_long_are_refused(db_url, tmp_path, capsys):
    """Issue 40: a crowd worker id with a control character was stored and printed raw (an ESC
    sequence reaches the organiser's terminal; a NUL, PostgreSQL refuses with a traceback),
    and one over 194 characters failed on PostgreSQL only; a Label Studio annotator id over
    2**63 made a name PostgreSQL refused. Each is exit 2 naming the line and field, nothing
    stored, on both databases."""
    judging = Judging.open(db_url)
    sample_campaign(judging, assign=False, chunk=8)
    key = judging.items_frame(judging.campaign("s1"))["key"].tolist()[0]
    for bad in ("W\x1b[31mred", "W\x00nul", "W\u2028x", "W" * 151):
        path = write_csv(
            tmp_path / "results.csv",
            [
                {"WorkerId": "W-good", "Input.item_1": key, "Answer.grade_1": "2"},
                {"WorkerId": bad, "Input.item_1": key, "Answer.grade_1": "1"},
            ],
        )
        err = refused(capsys, "judge", "import", "s1", str(path), "--format", "crowd", "--db", db_url)
        assert f"{path}:3" in err and "'WorkerId'" in err and "\x1b" not in err and "\x00" not in err, err
        assert stored(judging) == 0
    export = [
        {
            "id": 1,
            "data": {"sentences": [{"dsr_item": key}]},
            "annotations": [
                {"completed_by": 10**30, "result": [{"from_name": "grade_0", "type": "choices", "value": {"choices": ["2"]}}]}
            ],
        }
    ]
    path = tmp_path / "ls.json"
    path.write_text(json.dumps(export))
    err = refused(capsys, "judge", "import", "s1", str(path), "--format", "label-studio", "--db", db_url)
    assert "completed_by" in err and stored(judging) == 0
    judging.engine.dispose()
