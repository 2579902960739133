"""The cross-phase check against copies of a hidden phase's file (``dsr.board.overlap``), on the
library's own objects (no database: the board-level path is tests/board/test_board_overlap.py).

Every copy a careless organiser makes (tests/support/copies.py: whitespace, case, Unicode
forms, renamed ids with edited titles, a dropped first turn, reordered turns, shuffled
candidates, a subset, one grade changed, candidate ids kept through a rebuild) shares labels
with the file it copies, in either order, as a public, a hidden or a final phase: the
problem names the other phase and how much they share, and only two hidden phases can be
taken with ``allow_overlap``. What does not share labels passes: other dialogues, the same
pairs graded independently, dialogues that meet the same sentences."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsr.board import overlap
from dsr.collections import load_collection
from dsr.core.data import Collection
from dsr.core.errors import InputError
from tests.support.copies import COPIES, labels_of

KINDS = ("public", "ladder", "final")


@pytest.fixture(scope="module")
def sample() -> Collection:
    return load_collection("sample")


def phase(name: str, kind: str, collection: Collection, labels=None) -> overlap.PhaseLabels:
    return overlap.phase_labels(name, kind, collection, labels if labels is not None else labels_of(collection))


@pytest.mark.parametrize("copy", COPIES)
@pytest.mark.parametrize("original", ["ladder", "final"])
@pytest.mark.parametrize("kind", KINDS)
def test_every_copy_shares_labels_in_either_order_and_is_named(sample, copy, original, kind):
    hidden = phase("sample/hidden", original, sample)
    copied = phase("copy/p", kind, COPIES[copy](sample))
    for new, other in ((copied, hidden), (hidden, copied)):
        found = overlap.problems(new, [other])
        assert len(found) == 1, (copy, kind, new.name)
        problem = found[0]
        assert f"{new.name} shares labels with {other.name}" in problem.text
        assert "dialogue(s) and" in problem.text and "judged pair(s)" in problem.text
        assert problem.overridable == (kind != "public")
        with pytest.raises(InputError) as err:
            overlap.refuse(found)
        assert err.value.field == "allow_overlap" and other.name in str(err.value)
        if kind == "public":  # never, whatever allow_overlap says
            with pytest.raises(InputError, match="does not take a public phase"):
                overlap.refuse(found, allow_overlap=True)
        else:
            overlap.refuse(found, allow_overlap=True)


def test_what_a_copy_shares_is_counted(sample):
    """The counts of the message: the subset holds 10 dialogues with 25 pairs each; one grade
    changed leaves all but one pair with the same grade."""
    hidden = phase("h", "ladder", sample)
    part = overlap.shared(phase("c", "public", COPIES["subset"](sample)), hidden)
    pairs = sum(len(d.candidates) // 2 for d in sample.dialogues[::2])
    assert (part.dialogues, part.pairs, part.same_grade) == (10, pairs, pairs) and part.labels()
    fixed = overlap.shared(phase("c", "public", COPIES["one grade changed"](sample)), hidden)
    total = sum(len(d.candidates) for d in sample.dialogues)
    assert (fixed.dialogues, fixed.pairs, fixed.same_grade) == (20, total, total - 1) and fixed.labels()
    renamed = overlap.shared(phase("c", "public", COPIES["renamed ids, edited titles"](sample)), hidden)
    assert {h for m in renamed.matches for h in m.how} == {"text"} and renamed.dialogues == 20


def test_the_same_pairs_graded_independently_share_no_labels(sample):
    """A hidden phase over the sample's pairs with grades drawn at random (the board tests'
    hidden.qrels) shares the pairs, not the labels: nothing a measure reads of one tells the
    other. Ten seeds: the pooled agreement stays below the bound and no dialogue's relevant
    set is the same."""
    public = phase("public", "public", sample)
    for seed in range(10):
        rng = np.random.default_rng(seed)
        labels = {d.id: {c.id: int(rng.choice([0, 0, 0, 1, 2, 3])) for c in d.candidates} for d in sample.dialogues}
        found = overlap.shared(phase("hidden", "ladder", sample, labels), public)
        assert found.dialogues == 20 and not found.labels(), (seed, found.describe())


def test_labels_rewritten_as_the_measures_see_them_are_the_same_labels(sample):
    """Grades doubled, grade 0 written -1, grade-0 lines dropped: the relevant sets are the same."""
    labels = labels_of(sample)
    public = phase("public", "public", sample)
    rewritten = {
        "doubled": {q: {d: 2 * g for d, g in docs.items()} for q, docs in labels.items()},
        "0 as -1": {q: {d: g or -1 for d, g in docs.items()} for q, docs in labels.items()},
        "no grade-0 lines": {q: {d: g for d, g in docs.items() if g > 0} for q, docs in labels.items()},
    }
    for why, qrels in rewritten.items():
        assert overlap.shared(phase("hidden", "ladder", sample, qrels), public).labels(), why


def test_other_dialogues_meeting_the_same_sentences_share_nothing(sample):
    """Each dialogue given another's conversation (title, turns, next turn) keeps its own
    candidates: the sentences meet again in new dialogues, and no pair is shared. Two cuts of
    one conversation far apart (the first turn alone against the whole) are two dialogues."""
    dialogues = sample.dialogues
    moved = Collection(
        "moved",
        [
            replace(
                d,
                id=f"m{k}",
                title=o.title,
                context=o.context,
                target=o.target,
                candidates=[replace(c, id=f"m{k}-{c.id}") for c in d.candidates],
            )
            for k, (d, o) in enumerate(zip(dialogues, dialogues[1:] + dialogues[:1]))
        ],
    )
    found = overlap.shared(phase("moved", "public", moved), phase("hidden", "ladder", sample))
    assert found.pairs == sum(
        len({c.body for c in d.candidates} & {c.body for c in o.candidates})
        for d, o in zip(dialogues[1:] + dialogues[:1], dialogues)
    )
    assert not found.labels()
    cut = Collection(
        "cut",
        [
            replace(
                d,
                id=f"cut{k}",
                context=d.context[:1],
                target=None,
                candidates=[replace(c, id=f"c{k}-{c.id}") for c in d.candidates],
            )
            for k, d in enumerate(dialogues)
        ],
    )
    early = overlap.shared(phase("cut", "public", cut), phase("hidden", "ladder", sample))
    assert early.matches == [], early.describe()


def test_two_public_phases_are_never_compared(sample):
    assert overlap.problems(phase("a", "public", sample), [phase("b", "public", sample)]) == []


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_fold_is_the_same_for_every_form_case_and_spacing(text):
    """NFC, NFD, NFKC and NFKD, upper and lower case, format characters and whitespace added:
    one folded text."""
    folded = overlap.fold(text)
    assert folded == overlap.fold(folded)
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert overlap.fold(unicodedata.normalize(form, text)) == folded
    assert overlap.fold(f" \u200b{text.upper()}\t\n") == overlap.fold(text.upper())
    assert overlap.fold(text.replace(" ", "  ")) == folded
