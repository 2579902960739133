"""The `initial` and `random` rankers."""

from __future__ import annotations

import pytest

from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.rankers import make_ranker


def collection(scores=((0.5, 0.9, 0.5, 0.1), (3, 1, 2, None))) -> Collection:
    dialogues = []
    for n, row in enumerate(scores):
        cands = [Candidate(f"d{n}c{i}", "", f"sentence {i}", s, 0) for i, s in enumerate(row)]
        dialogues.append(Dialogue(f"d{n}", "t", [Turn("a", "a", "hello")], None, cands))
    return Collection("toy", dialogues)


def test_initial_uses_candidate_scores_with_the_tie_rule():
    run = make_ranker("initial").rank(collection(scores=((0.5, 0.9, 0.5, 0.1),)))
    # c0 and c2 tie at 0.5: initial order decides, and c2's score is nudged just below
    assert run.top("d0") == ["d0c1", "d0c0", "d0c2", "d0c3"]
    scores = run.scores("d0")
    assert scores["d0c0"] == 0.5 and 0.49999 < scores["d0c2"] < 0.5
    assert run.tag == "initial" and run.config["collection"]["name"] == "toy"


def test_initial_without_scores_names_the_candidate():
    with pytest.raises(InputError) as err:
        make_ranker("initial").rank(collection())
    assert err.value.record == "d1" and err.value.field == "candidates[3].score"


def test_random_is_seeded_per_dialogue():
    full = collection(scores=((1, 2, 3, 4), (1, 2, 3, 4)))
    first = make_ranker("random").rank(full)
    assert first.rankings == make_ranker("random", seed=0).rank(full).rankings
    # a dialogue's order does not depend on the other dialogues
    alone = Collection("toy", [full["d1"]])
    assert make_ranker("random").rank(alone).rankings["d1"] == first.rankings["d1"]
    other = [make_ranker("random", seed=s).rank(full).top("d0") for s in range(1, 6)]
    assert any(order != first.top("d0") for order in other)
    assert make_ranker("random", seed=3).tag == "random-seed=3"


def test_random_bad_seed():
    with pytest.raises(InputError, match="seed"):
        make_ranker("random", seed="abc")
