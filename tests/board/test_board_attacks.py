"""Issue 40 item 3: the accumulate-until-pass attack with the next turn as its prior, through a
board's API on SQLite and PostgreSQL, read exactly (``tools/release_attack.py``).

The attacker knows every dialogue's next turn (what leaked before ``dsr board
participant-file``), starts from the run its prior thinks worst (a first run is always
published), switches its surest dialogues to the prior's order a few more at a time until a
value moves, and reads every moved value as a constraint on the labels; an integer program
then finds every label that takes one value in all assignments consistent with what was
published. On the rule before issue 40 (0.01 grid, no noise) the same attack fixes over 200
labels of the judged set (37 relevant) within the default quota; on the board's rule (each
group's grid holds at least two counts, plus Laplace noise of one dialogue's weight) it fixes
none, even for an attacker that trusts every noise draw to stay within its 99.9% interval.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dsr.board import release
from dsr.board.app import create_app
from dsr.core.data import read_benchmark
from tests.support.board import Attacker, make_board
from tools.release_attack import Deduction, accumulate_until_pass, measure, trec

JUDGED = "judged/cmu_dog-valid-judged.jsonl"


def test_the_deduction_reads_exact_counts_and_nothing_more():
    """Three dialogues, one published P@1 on the old rule (an exact count): 3 of 3 means every
    top sentence is relevant, 1 of 3 fixes nothing; on a grid whose cells hold two counts and
    more, 3 of 3 fixes nothing either."""
    groups = {"all": ["a", "b", "c"]}
    ranking = {"a": ["a1", "a2"], "b": ["b1", "b2"], "c": ["c1", "c2"]}
    old = Deduction(groups, {"all": 0.01}, min_counts=0, noise=0.0)
    old.add(ranking, "all", "P@1", 1.0)
    assert old.fixed() == {("a", "a1"): 1, ("b", "b1"): 1, ("c", "c1"): 1}
    some = Deduction(groups, {"all": 0.01}, min_counts=0, noise=0.0)
    some.add(ranking, "all", "P@1", 0.33)
    assert some.fixed() == {}
    grid = Deduction(groups, {"all": release.group_step(3)}, noise=0.0)
    grid.add(ranking, "all", "P@1", release.published(1.0, release.group_step(3)))
    assert release.group_step(3) == 1.0 and grid.fixed() == {}
    # two runs whose exact counts differ by the dialogues they differ in: those labels are fixed
    both = Deduction(groups, {"all": 0.01}, min_counts=0, noise=0.0)
    both.add(ranking, "all", "P@1", 0.33)
    both.add({**ranking, "a": ["a2", "a1"]}, "all", "P@1", 0.67)
    assert both.fixed() == {("a", "a1"): 0, ("a", "a2"): 1}


@pytest.mark.slow
def test_a_rule_without_grids_and_noise_gives_labels_away_and_the_grids_alone_some(shared_data):
    """The measured figures the docs quote: the old rule (0.01 grid, no noise) lets the attack
    fix over 200 labels exactly; the group grids without noise still let one variant fix some
    (where two groups' cells meet at their edges); the board's rule none."""
    collection = read_benchmark(shared_data / JUDGED)
    old = measure(collection, min_counts=0, noise=0.0)
    assert old.fixed >= 200 and old.fixed_relevant >= 19 and old.wrong == 0, old.line()
    grids = measure(collection, min_counts=release.MIN_COUNTS, noise=0.0, start=4, grow=8)
    assert grids.fixed > 0 and grids.wrong == 0, grids.line()
    board = measure(collection, min_counts=release.MIN_COUNTS, noise=release.NOISE, start=4, grow=8)
    assert board.fixed == 0, board.line()


def groups_of(client, collection: str, phase: str) -> tuple[dict[str, list[str]], dict, list[str]]:
    """What a participant reads of a hidden phase: its published groups (a merged group
    ``a+b`` holds the dialogues of both), their steps and the rule, and the dialogue ids."""
    topics = client.get(f"/api/boards/{collection}/{phase}/topics").json()["topics"]
    rule = client.get(f"/api/boards/{collection}/{phase}").json()["release"]
    groups = {g: [t["id"] for t in topics if g == "all" or t["subset"] in g.split("+")] for g in rule["steps"]}
    return groups, rule, [t["id"] for t in topics]


@pytest.mark.slow
@pytest.mark.parametrize("start, grow", [(8, 4), (4, 8)])
def test_accumulate_until_pass_with_a_next_turn_prior_fixes_no_label(db_url, tmp_path, shared_data, start, grow, capsys):
    """The issue's attack on the judged CMU_DoG set (its judged labels hidden, default
    settings and quota): values move (the attack does improve), and no label is fixed."""
    collection = read_benchmark(shared_data / JUDGED)
    labels = {d.id: {c.id: c.label for c in d.candidates} for d in collection.dialogues}
    board = make_board(db_url, tmp_path)
    board.phases.add_phase(str(shared_data / JUDGED), "test", hidden=True, display="judged")
    client = TestClient(create_app(board))
    attacker = Attacker(board, client, "mallory", collection="judged")
    groups, rule, topics = groups_of(client, "judged", "test")
    # its sections (the withheld meta.docIdx) are published under neutral names
    assert rule["steps"] == {"all": 0.02, **{f"group {n}": 0.1 for n in range(1, 5)}}
    assert topics == collection.ids and rule["noise"] == release.NOISE and rule["min_counts"] == release.MIN_COUNTS

    def submit(ranking, tag):
        return attacker.submit(trec(ranking, tag), tag)["means"]

    outcome = accumulate_until_pass(
        collection,
        labels,
        submit,
        groups,
        rule["steps"],
        attacker.total,
        len(board.phase_data(board.phases.get_phase("judged", "test")).measures),
        rule["min_counts"],
        rule["noise"],
        start=start,
        grow=grow,
    )
    with capsys.disabled():
        print(f"\n[{db_url.split(':')[0]}] start {start}, grow {grow}: {outcome.line()}")
    assert outcome.released_runs >= 5 and outcome.moved >= 50, outcome.line()
    assert outcome.fixed == 0 and outcome.wrong == 0, outcome.line()
    assert round(outcome.bound_bits) == 1347
    client.close()
    board.close()
