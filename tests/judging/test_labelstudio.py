"""The Label Studio round trip against a real Label Studio 1.23 server started here on loopback
(from its own virtual environment: tools/labelstudio_venv.sh makes it; the test is skipped,
saying so, only when that environment is absent). The server starts in a data folder of its
own, on a copy of the empty, migrated database that script leaves beside the environment (a
start on a new database first applies Label Studio's ~300 migrations, which is slow).

``dsr judge export-tasks --format label-studio`` (one task per dialogue) -> a project made with the exported labelling
config (Label Studio validates it) and instructions -> the tasks imported -> three annotators'
grades posted through Label Studio's API, one annotation per dialogue with a choice per sentence
(one unsure, one sentence left ungraded, one annotation skipped) -> the project exported as JSON
by Label Studio -> ``dsr judge import``: every grade comes back to its sentence and annotator, the
skipped and ungraded ones do not, and importing again stores nothing and says "0 new"."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from dsr.cli import main
from tests.support.board import free_port
from tests.support.judging import sample_campaign, true_grade
from tests.support.tiers import slow_fixture

VENV = Path(
    os.environ.get(
        "DSR_LABEL_STUDIO_VENV", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dsr" / "label-studio-venv"
    )
)
STARTUP_SECONDS = 300
#: an empty Label Studio database with its migrations applied (tools/labelstudio_venv.sh)
MIGRATED = VENV / "migrated" / "label_studio.sqlite3"


@pytest.fixture(scope="module")
@slow_fixture
def label_studio(tmp_path_factory):
    executable = VENV / "bin" / "label-studio"
    if not executable.is_file():
        pytest.skip(f"no Label Studio environment at {VENV}: run tools/labelstudio_venv.sh to make it")
    data = tmp_path_factory.mktemp("label-studio")
    if MIGRATED.is_file():  # else the start migrates a new one
        shutil.copyfile(MIGRATED, data / MIGRATED.name)
    port, token = free_port(), secrets.token_hex(20)
    env = {
        **os.environ,
        "LABEL_STUDIO_BASE_DATA_DIR": str(data),
        "LATEST_VERSION_CHECK": "false",
        "COLLECT_ANALYTICS": "false",
        "HOME": str(data),
    }
    process = subprocess.Popen(
        [
            str(executable),
            "start",
            "--no-browser",
            "--internal-host",
            "127.0.0.1",
            "--port",
            str(port),
            "--data-dir",
            str(data),
            "--username",
            "organiser@example.com",
            "--password",
            secrets.token_hex(12),
            "--user-token",
            token,
            "--enable-legacy-api-token",
            "--log-level",
            "ERROR",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(data / "server.log", "wb"),
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"Label Studio exited: {(data / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"Label Studio did not answer in {STARTUP_SECONDS} s")
            time.sleep(0.5)
        with httpx.Client(base_url=url, headers={"Authorization": f"Token {token}"}, timeout=120) as client:
            yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def test_label_studio_round_trip(label_studio, tmp_path, capsys):
    from dsr.judging.campaigns import Judging

    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    judging = Judging.open(db)
    truth, _ = sample_campaign(judging, assign=False)
    assert main(["judge", "export-tasks", "s1", "--format", "label-studio", "--out", str(tmp_path / "ls"), "--db", db]) == 0
    assert "(20 Label Studio tasks, one per dialogue, from 64 tasks, 551 sentences)" in capsys.readouterr().out
    folder = tmp_path / "ls"
    project = label_studio.post(
        "/api/projects",
        json={
            "title": "dsr s1",
            "label_config": (folder / "config.xml").read_text(),
            "expert_instruction": (folder / "instructions.html").read_text(),
            "show_instruction": True,
        },
    )
    assert project.status_code == 201, project.text  # the config is valid
    pid = project.json()["id"]
    tasks = json.loads((folder / "tasks.json").read_text())
    items = judging.items_frame(judging.campaign("s1")).set_index("key")
    assert len(tasks) == items["dialogue"].nunique() == 20  # one task per dialogue
    assert [s["dsr_item"] for t in tasks for s in t["data"]["sentences"]] == items.index.tolist()
    for task in tasks:  # each with all its sentences, once
        dialogues = {items.loc[s["dsr_item"], "dialogue"] for s in task["data"]["sentences"]}
        assert len(dialogues) == 1 and len(task["data"]["sentences"]) == (items["dialogue"] == dialogues.pop()).sum()
    assert label_studio.post(f"/api/projects/{pid}/import", json=tasks).json()["task_count"] == len(tasks)
    users = [
        label_studio.post("/api/users", json={"email": f"a{i}@example.com", "username": f"a{i}"}).json()["id"] for i in range(3)
    ]
    listed = label_studio.get("/api/tasks", params={"project": pid, "page_size": 3}).json()["tasks"]
    rng = np.random.default_rng(2)
    posted, left_out = {}, 0
    for n, task in enumerate(listed):
        sentences = task["data"]["sentences"]
        for user in users:
            cancelled = (n, user) == (1, users[2])
            result, chosen = [], {}
            for place, sentence in enumerate(sentences):
                if (n, user, place) == (0, users[0], 4):  # one sentence left without a grade
                    continue
                row = items.loc[sentence["dsr_item"]]
                true = true_grade({"candidate": row["candidate"], "gold": row["gold"], "dialogue": row["dialogue"]}, truth)
                choice = (
                    "unsure"
                    if (n, user, place) == (2, users[1], 3)
                    else str(true if rng.random() > 0.2 else int(rng.integers(3)))
                )
                result.append(
                    {
                        "from_name": f"grade_{place}",
                        "to_name": f"sentence_{place}",
                        "type": "choices",
                        "value": {"choices": [choice]},
                    }
                )
                chosen[sentence["dsr_item"]] = None if choice == "unsure" else int(choice)
            body = {
                "result": result,
                "completed_by": user,
                "lead_time": round(float(rng.uniform(20, 200)), 3),
                "was_cancelled": cancelled,
            }
            answer = label_studio.post(f"/api/tasks/{task['id']}/annotations", json=body)
            assert answer.status_code == 201, answer.text
            if cancelled:
                left_out += len(sentences)
                continue
            left_out += len(sentences) - len(chosen)
            for key, grade in chosen.items():
                posted[key, f"label-studio:{user}"] = (grade, body["lead_time"] / len(chosen))
    exported = label_studio.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"})
    assert exported.status_code == 200
    (tmp_path / "export.json").write_bytes(exported.content)
    capsys.readouterr()
    assert main(["judge", "import", "s1", str(tmp_path / "export.json"), "--format", "label-studio", "--db", db]) == 0
    said = capsys.readouterr().out
    assert f": {len(posted)} new, 0 already present, 0 changed" in said and f"; {left_out} sentence place" in said
    frame = judging.grades_frame(judging.campaign("s1"))
    keys = judging.items_frame(judging.campaign("s1")).set_index("item")["key"]
    back = {
        (keys[i], a): (None if g != g else int(g), s)
        for i, a, g, s in zip(frame["item"], frame["assessor"], frame["grade"], frame["seconds"])
    }
    assert back.keys() == posted.keys() and len(back) == sum(3 * len(t["data"]["sentences"]) for t in listed) - left_out
    assert all(back[k][0] == posted[k][0] and abs(back[k][1] - posted[k][1]) < 1e-9 for k in back)
    assert main(["judge", "import", "s1", str(tmp_path / "export.json"), "--format", "label-studio", "--db", db]) == 0
    assert f": 0 new, {len(posted)} already present, 0 changed" in capsys.readouterr().out
    assert len(judging.grades_frame(judging.campaign("s1"))) == len(posted)
