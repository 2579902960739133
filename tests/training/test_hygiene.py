"""Training hygiene (``dsr.training.hygiene``) on the real CMU_DoG files in ../shared/data/cmu_dog:
which training conversations are dropped, without training a model."""

from __future__ import annotations

import json
import shutil

import pytest

from dsr.collections import cmu_dog, cmu_dog_dev
from dsr.training.hygiene import drop_evaluation_conversations, message
from dsr.training.steps import conversation_of
from tests.support.data import REAL_CMU_DOG, SHARED_DATA, shared_data_home
from tests.support.tiers import slow_fixture

pytestmark = REAL_CMU_DOG


@pytest.fixture(scope="module")
@slow_fixture
def train(tmp_path_factory):
    with shared_data_home(tmp_path_factory):
        return cmu_dog.load(SHARED_DATA / "cmu_dog", "train")


def _same_file_same_turns() -> set[str]:
    """Independently of the rule: train files whose name and turn texts equal a valid file's."""
    folder = SHARED_DATA / "cmu_dog" / "Conversations"
    out = set()
    for path in (folder / "valid").glob("*.json"):
        twin = folder / "train" / path.name
        if twin.is_file():
            a, b = (json.loads(p.read_text()) for p in (path, twin))
            if [h["text"] for h in a["history"]] == [h["text"] for h in b["history"]]:
                out.add(path.name)
    return out


def test_cmu_dog_train_drops_the_valid_and_development_conversations(train):
    dialogues = list(train)
    kept, report = drop_evaluation_conversations(dialogues, train, None, conversation_of)
    shared = _same_file_same_turns()
    assert len(shared) == 45  # as the issue counts them
    with_points = {d.meta["conversation"] for d in dialogues}
    dev_train = cmu_dog_dev.dev_conversations()["train"]
    assert len(dev_train) == 280
    assert report["splits"] == ["valid"]  # train itself is not checked
    assert report["by_reason"] == {"valid": len(shared & with_points), "development set": 280}
    assert len(shared & with_points) == 29  # 16 of the 45 have no query point
    left = {d.meta["conversation"] for d in kept}
    assert not left & shared and not left & dev_train
    assert left == with_points - shared - dev_train
    assert report["dropped_dialogues"] == len(dialogues) - len(kept) == 1087
    assert "dropped 309 of 2443 training conversations (1087 dialogues)" in message(report)


def test_a_test_split_is_checked_too_and_a_near_copy_is_caught(train, tmp_path):
    folder = tmp_path / "cmu"
    for part in ("WikiData", "Conversations/train", "Conversations/valid"):
        (folder / part).parent.mkdir(parents=True, exist_ok=True)
        (folder / part).symlink_to(SHARED_DATA / "cmu_dog" / part)
    test = folder / "Conversations" / "test"
    test.mkdir()
    names = sorted(cmu_dog_dev.dev_conversations()["train"])
    clean = sorted({d.meta["conversation"] for d in train} - set(names) - _same_file_same_turns())
    # a copy under another name with one turn changed, and one sharing a single long turn
    copy = json.loads((folder / "Conversations" / "train" / clean[0]).read_text())
    copy["history"][3]["text"] = "something else entirely was said here instead"
    (test / "renamed.json").write_text(json.dumps(copy))
    single = json.loads((folder / "Conversations" / "train" / clean[1]).read_text())
    long_turn = max((h["text"] for h in single["history"]), key=len)
    (test / "one-turn.json").write_text(json.dumps({"history": [{"text": long_turn}, {"text": "and nothing more of it"}]}))
    shutil.copy(folder / "Conversations" / "train" / clean[2], test / clean[2])
    kept, report = drop_evaluation_conversations(list(train), train, str(folder), conversation_of)
    assert report["splits"] == ["valid", "test"] and report["by_reason"]["test"] == 2
    left = {d.meta["conversation"] for d in kept}
    assert clean[0] not in left and clean[2] not in left and clean[1] in left


def test_other_collections_are_left_alone():
    from dsr.collections import load_collection

    sample = load_collection("sample")
    kept, report = drop_evaluation_conversations(list(sample), sample, None, conversation_of)
    assert kept == list(sample) and report == {"checked": False, "reason": "not CMU_DoG dialogues"}
