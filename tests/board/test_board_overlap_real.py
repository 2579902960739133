"""The cross-phase check on the real CMU_DoG files (../shared/data; the judged set is graded by
language-model assessors and never leaves the machine): the public ``cmu_dog_dev`` set, which
folds in 93 dialogues of the judged set with their grades, shares labels with it; CMU_DoG's
train split, once its conversations that the valid split holds too are left out, meets the
same Wikipedia sentences in other conversations and shares no dialogue."""

from __future__ import annotations

import pytest

from dsr.board import overlap
from dsr.collections import cmu_dog, cmu_dog_judged, load_collection
from dsr.core.data import Collection
from dsr.evaluation.qrels import qrels_from_collection
from tests.support.data import REAL_CMU_DOG, SHARED_DATA, shared_data_home

pytestmark = [pytest.mark.slow, REAL_CMU_DOG]


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    with shared_data_home(tmp_path_factory):
        hidden = cmu_dog_judged.load(SHARED_DATA / "judged")
        yield overlap.phase_labels("cmu_dog_judged/test", "ladder", hidden, qrels_from_collection(hidden))


def conversation(dialogue_id: str) -> str:
    return dialogue_id.rsplit("-", 1)[0]


def test_the_public_dev_set_shares_the_judged_labels(judged, tmp_path_factory):
    with shared_data_home(tmp_path_factory):
        dev = load_collection("cmu_dog_dev", SHARED_DATA / "cmu_dog")
    public = overlap.phase_labels("cmu_dog_dev/dev", "public", dev, qrels_from_collection(dev))
    found = overlap.problems(public, [judged])
    assert len(found) == 1 and not found[0].overridable
    assert "cmu_dog_dev/dev shares labels with cmu_dog_judged/test: 97 dialogue(s)" in found[0].text, found[0].text


def test_the_judged_set_beside_cmu_dog_train_from_other_conversations(judged, tmp_path_factory):
    with shared_data_home(tmp_path_factory):
        train = cmu_dog.load(SHARED_DATA / "cmu_dog", "train")
    held = {conversation(d) for d in judged.dialogues}
    again = [d for d in train.dialogues if conversation(d.id) in held]  # CMU_DoG holds some twice
    others = Collection("train", [d for d in train.dialogues if conversation(d.id) not in held])
    public = overlap.phase_labels("cmu_dog/train", "public", others, qrels_from_collection(others))
    sentences = {b for d in public.dialogues.values() for b in d.bodies.values()}
    shared_sentences = sentences & {b for d in judged.dialogues.values() for b in d.bodies.values()}
    assert len(again) > 0 and len(others) > 8000 and len(shared_sentences) > 500
    assert overlap.shared(public, judged).matches == [] and overlap.problems(public, [judged]) == []
    twice = Collection("again", again)  # the conversations held twice: the same dialogues, refused
    assert overlap.problems(overlap.phase_labels("cmu_dog/again", "public", twice, qrels_from_collection(twice)), [judged])
