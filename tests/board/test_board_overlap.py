"""Issue 40 item 1: one check over every phase kind, attacked as a careless organiser's board
would be read by a participant, on SQLite and PostgreSQL.

A phase of any kind (public, hidden, final; created before or after) whose labels are a hidden
phase's labels, as the measures see them, is refused unless ``--allow-overlap``: the same
file, the labels without their grade-0 lines, in another order, with grades rescaled or
merged, or a copy of the file with the dialogues and sentences renamed and reordered. With
``--allow-overlap`` the phase is added, the warning says what it gives away, and the public
phase's per-dialogue values are then exactly the hidden labels' values (what the check
prevents)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from dsr.board.app import create_app
from dsr.board.phases import Season
from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.data import Collection, write_benchmark
from dsr.core.errors import InputError
from dsr.evaluation.qrels import read_qrels, write_qrels
from tests.support.board import make_board

pytestmark = pytest.mark.slow

KINDS = ("public", "ladder", "final")


def sample_labels() -> dict[str, dict[str, int]]:
    """The labels of the bundled sample, every candidate (grade-0 lines included)."""
    return {d.id: {c.id: c.label for c in d.candidates} for d in load_collection("sample")}


def rewrites(labels: dict[str, dict[str, int]]) -> dict[str, dict[str, dict[str, int]]]:
    """The same labels written otherwise: what a measure sees of each is the same."""
    rng = np.random.default_rng(3)
    reordered = {
        q: dict(sorted(docs.items(), key=lambda _: rng.random()))
        for q, docs in sorted(labels.items(), key=lambda _: rng.random())
    }
    return {
        "as they are": labels,
        "without grade-0 lines": {q: {d: g for d, g in docs.items() if g > 0} for q, docs in labels.items()},
        "reordered": reordered,
        "grades doubled": {q: {d: 2 * g for d, g in docs.items()} for q, docs in labels.items()},
        "grade 0 written -1": {q: {d: (g or -1) for d, g in docs.items()} for q, docs in labels.items()},
    }


def renamed_copy(path: Path, labels: dict[str, dict[str, int]]) -> Path:
    """The sample with these labels, every dialogue and sentence renamed, the candidates
    reversed and the dialogues in another order: the same dialogues and labels to a measure."""
    collection = load_collection("sample")
    dialogues = []
    for k, d in enumerate(collection.dialogues):
        candidates = [
            replace(c, id=f"s{k}_{j}", label=max(0, labels[d.id].get(c.id, 0))) for j, c in enumerate(reversed(d.candidates))
        ]
        dialogues.append(replace(d, id=f"copy-{k:02d}", candidates=candidates))
    write_benchmark(Collection("copy", dialogues[::-1]), path)
    return path


def with_labels(path: Path, labels: dict[str, dict[str, int]]) -> Path:
    """The sample file with these labels (as a public phase's own)."""
    collection = load_collection("sample")
    dialogues = [
        replace(d, candidates=[replace(c, label=max(0, labels[d.id].get(c.id, 0))) for c in d.candidates])
        for d in collection.dialogues
    ]
    write_benchmark(Collection("sample", dialogues), path)
    return path


def add(board, kind: str, name: str, collection: str = "sample", labels=None, **extra):
    """A phase of ``kind``: public (the collection's own labels) or hidden (``labels``)."""
    if kind == "public":
        return board.add_phase(collection, name, display="sample", **extra)
    return board.add_phase(
        collection, name, hidden=True, labels=labels, display="sample", season=Season(final=kind == "final"), **extra
    )


@pytest.mark.parametrize("first", KINDS)
@pytest.mark.parametrize("second", KINDS)
def test_a_phase_of_any_kind_over_a_hidden_phases_labels_is_refused_in_either_order(db_url, tmp_path, first, second):
    """Every pair of kinds with a hidden one, in both orders, over the sample's labels written
    five ways (and a renamed copy for the public side): refused, naming --allow-overlap."""
    if first == second == "public":
        pytest.skip("two public phases hide nothing")
    labels = sample_labels()
    board = make_board(db_url, tmp_path)
    add(
        board,
        first,
        "one",
        labels=labels if first != "public" else None,
        collection="sample" if first != "public" else str(with_labels(tmp_path / "one.jsonl", labels)),
    )
    for why, rewritten in rewrites(labels).items():
        if second == "public":  # a public phase: the labels are its collection file's
            files = {
                "": with_labels(tmp_path / "two.jsonl", rewritten),
                ", renamed copy": renamed_copy(tmp_path / "copy.jsonl", rewritten),
            }
            for note, path in files.items():
                with pytest.raises(InputError) as err:
                    add(board, "public", "two", collection=str(path))
                assert err.value.field == "allow_overlap" and "sample/one" in str(err.value), why + note
                assert "share 20 dialogue(s)" in str(err.value), str(err.value)
        else:
            with pytest.raises(InputError) as err:
                add(board, second, "two", labels=rewritten)
            assert err.value.field == "allow_overlap" and "sample/one" in str(err.value), why
    assert [p.name for p in board.phases()] == ["one"]
    board.close()


def test_public_and_hidden_phases_over_other_dialogues_or_other_labels_are_taken(db_url, tmp_path, runs):
    """The check is not a blanket refusal: a public split and a hidden one share no dialogue;
    hidden labels that differ from the public ones in every dialogue share none either."""
    board = make_board(db_url, tmp_path)
    board.add_phase("sample:plain", "dev", display="sample")
    board.add_phase("sample:grounded", "test", hidden=True, min_dialogues=10, display="sample", season=Season(final=True))
    hidden = read_qrels(runs / "hidden.qrels")  # graded 0-3 at random: other labels
    board.add_phase("sample", "other", hidden=True, labels=hidden, display="sample")
    assert {p.name for p in board.phases()} == {"dev", "test", "other"}
    assert all(board.overlaps(p) == [] for p in board.phases())
    board.close()


def test_making_a_hidden_phase_final_is_checked_again(db_url, tmp_path):
    """Two hidden phases that share 10 of 20 dialogues pass as ladder phases (each pair of
    published groups differs in at least --min-dialogues 5); made final, one would publish those 10 dialogues' labels at its
    freeze: set-phase refuses it unless --allow-overlap."""
    labels = sample_labels()
    ids = list(labels)
    other = {q: ({d: 1 - g for d, g in docs.items()} if k % 2 else docs) for k, (q, docs) in enumerate(labels.items())}
    board = make_board(db_url, tmp_path)
    board.add_phase("sample", "a", hidden=True, labels=labels, min_dialogues=5)
    b = board.add_phase("sample", "b", hidden=True, labels=other, min_dialogues=5)
    assert len(ids) == 20 and board.overlaps(b) == []
    with pytest.raises(InputError) as err:
        board.set_season(b, Season(final=True))
    assert err.value.field == "allow_overlap" and "share 10 dialogue(s)" in str(err.value)
    assert not board.get_phase("sample", "b").final
    assert board.set_season(b, Season(final=True), allow_overlap=True).final
    assert "once it is frozen" in board.overlaps(board.get_phase("sample", "b"))[0]
    board.close()


def test_allow_overlap_says_what_it_gives_away_and_it_is_given_away(db_url, tmp_path, capsys):
    """The command line: exit 2 without the flag (no traceback), the flag adds the phase and a
    warning that the hidden labels can be read from the public phase; and they can: every
    per-dialogue value of the public phase is that dialogue's value under the hidden labels."""
    labels = sample_labels()
    qrels = tmp_path / "hidden.qrels"
    write_qrels({q: {d: g for d, g in docs.items() if g > 0} for q, docs in labels.items()}, qrels)
    db, store = ["--db", db_url], ["--store", str(tmp_path / "store")]
    assert main(["board", "add-phase", "sample", "--phase", "test", "--hidden", "--qrels", str(qrels), *db, *store]) == 0
    capsys.readouterr()
    assert main(["board", "add-phase", "sample", "--phase", "dev", *db, *store]) == 2
    err = capsys.readouterr().err
    assert "--allow-overlap" in err and "sample/test" in err and "Traceback" not in err
    assert main(["board", "add-phase", "sample", "--phase", "dev", "--allow-overlap", *db, *store]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "sample/test labels of those dialogues can be read" in err
    # what the check prevents: the public phase's run page gives each dialogue's hidden value
    board = make_board(db_url, tmp_path)
    client = TestClient(create_app(board))
    token = board.add_team("reader")
    run = load_collection("sample")
    data = "".join(
        f"{d.id} Q0 {c.id} {r + 1} {len(d.candidates) - r} x\n" for d in run.dialogues for r, c in enumerate(d.candidates)
    ).encode()
    answer = client.post(
        "/api/submissions",
        data={"collection": "sample", "phase": "dev", "system": "x"},
        files={"run": ("x.run", data)},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 201, answer.text
    page = client.get(f"/api/runs/{answer.json()['id']}").json()
    per_topic = page["per_topic"]
    first = {d.id: float(next((1.0 for c in d.candidates[:1] if labels[d.id][c.id] > 0), 0.0)) for d in run.dialogues}
    assert {q: v["P@1"] for q, v in per_topic.items()} == first
    client.close()
    board.close()


def test_a_split_of_a_registered_collection_is_a_phase_of_its_own(tmp_path, capsys):
    """``add-phase --split``: the phase holds that split's dialogues; an unknown split, or a
    split of a file, is exit 2 naming the flag."""
    db, store = ["--db", f"sqlite:///{tmp_path / 'b.sqlite'}"], ["--store", str(tmp_path / "store")]
    assert main(["board", "add-phase", "sample", "--split", "plain", "--phase", "dev", *db, *store]) == 0
    assert "10 dialogues" in capsys.readouterr().out
    assert main(["board", "add-phase", "sample", "--split", "nope", "--phase", "x", *db, *store]) == 2
    assert "--split" in capsys.readouterr().err
    path = tmp_path / "s.jsonl"
    write_benchmark(load_collection("sample"), path)
    assert main(["board", "add-phase", str(path), "--split", "plain", "--phase", "y", *db, *store]) == 2
    assert "--split" in capsys.readouterr().err
    board = make_board(f"sqlite:///{tmp_path / 'b.sqlite'}", tmp_path)
    phase = board.get_phase("sample-plain", "dev")
    assert len(json.loads(phase.topics_json)) == 10 and phase.collection_ref == "sample:plain"
    board.close()
