"""The cross-phase check on a board, attacked as a careless organiser's board would be read by a
participant, on SQLite and PostgreSQL.

A phase of any kind (public, hidden, final; created before or after) over a copy of a hidden
phase's file is refused, naming the phase it shares labels with: the copies of
tests/support/copies.py (re-exported with other whitespace, case or Unicode forms, renamed
with edited titles, turns dropped or reordered, candidates shuffled, a subset, one grade
changed, candidate ids kept through a rebuild) and the labels rewritten as the measures read
them. ``--allow-overlap`` takes two hidden phases (and says what it gives away), never a
public one beside a hidden one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dsr.board.phases import Season
from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.data import write_benchmark
from dsr.core.errors import InputError
from dsr.evaluation.qrels import read_qrels, write_qrels
from tests.support.board import make_board
from tests.support.copies import COPIES, labels_of, trailing_space

pytestmark = pytest.mark.slow

KINDS = ("public", "ladder", "final")


def sample_labels() -> dict[str, dict[str, int]]:
    """The labels of the bundled sample, every candidate (grade-0 lines included)."""
    return labels_of(load_collection("sample"))


def add(board, kind: str, name: str, collection: str = "sample", labels=None, **extra):
    """A phase of ``kind``: public (the collection's own labels) or hidden (``labels``, else
    the collection's own)."""
    if kind == "public":
        return board.phases.add_phase(collection, name, display="sample", **extra)
    return board.phases.add_phase(
        collection,
        name,
        hidden=True,
        labels=labels,
        display="sample",
        season=Season(final=kind == "final"),
        min_dialogues=5,
        **extra,
    )


def copy_files(folder: Path) -> dict[str, Path]:
    """Each copy of the sample written as a benchmark file (its labels in it)."""
    sample = load_collection("sample")
    out = {}
    for k, (name, make) in enumerate(COPIES.items()):
        out[name] = folder / f"copy{k}.jsonl"
        write_benchmark(make(sample), out[name])
    return out


def test_every_copy_of_a_hidden_phases_file_is_refused_in_either_order_and_names_it(db_url, tmp_path):
    """Each copy as a public, a hidden and a final phase, added after the hidden phase it copies
    and before it: refused (InputError naming allow_overlap and the other phase). The phase
    added first is replaced in place for each copy (it has no submission)."""
    board = make_board(db_url, tmp_path)
    files = copy_files(tmp_path)
    for kind in KINDS:
        for why, path in files.items():
            add(board, kind, "copy", collection=str(path))  # before: the original is refused
            with pytest.raises(InputError) as err:
                add(board, "ladder", "original")
            assert err.value.field == "allow_overlap" and "sample/copy" in str(err.value), (kind, why)
            assert "sample/original shares labels with sample/copy" in str(err.value), str(err.value)
    rng = np.random.default_rng(5)  # the copy's place taken by independent labels: no problem
    other = {q: {d: int(rng.integers(4)) for d in docs} for q, docs in sample_labels().items()}
    add(board, "ladder", "copy", labels=other)
    add(board, "ladder", "original")
    for kind in KINDS:
        for why, path in files.items():  # after
            with pytest.raises(InputError) as err:
                add(board, kind, "late", collection=str(path))
            assert err.value.field == "allow_overlap" and "sample/original" in str(err.value), (kind, why)
            assert "sample/copy" not in str(err.value), str(err.value)  # independent labels: not named
            said = str(err.value)
            assert "dialogue(s) and" in said and "judged pair(s)" in said and "same grade" in said
    assert sorted(p.name for p in board.phases.all()) == ["copy", "original"]
    board.close()


def test_labels_rewritten_as_the_measures_read_them_are_refused(db_url, tmp_path):
    """The hidden labels without their grade-0 lines, reordered, doubled, or grade 0 written -1,
    beside a public phase over the sample, in both orders."""
    labels = sample_labels()
    rng = np.random.default_rng(3)
    rewrites = {
        "without grade-0 lines": {q: {d: g for d, g in docs.items() if g > 0} for q, docs in labels.items()},
        "reordered": {q: dict(sorted(docs.items(), key=lambda _: rng.random())) for q, docs in labels.items()},
        "grades doubled": {q: {d: 2 * g for d, g in docs.items()} for q, docs in labels.items()},
        "grade 0 written -1": {q: {d: (g or -1) for d, g in docs.items()} for q, docs in labels.items()},
    }
    board = make_board(db_url, tmp_path)
    add(board, "public", "public")
    for why, qrels in rewrites.items():
        for kind in ("ladder", "final"):
            with pytest.raises(InputError, match="sample/public") as err:
                add(board, kind, "hidden", labels=qrels)
            assert "does not take a public phase" in str(err.value), why
    board.close()


def test_public_and_hidden_phases_over_other_dialogues_or_other_labels_are_taken(db_url, tmp_path, runs):
    """The check is not a blanket refusal: a public split and a hidden one share no dialogue;
    hidden labels that differ from the public ones in every dialogue share none either."""
    board = make_board(db_url, tmp_path)
    board.phases.add_phase("sample:plain", "dev", display="sample")
    board.phases.add_phase("sample:grounded", "test", hidden=True, min_dialogues=10, display="sample", season=Season(final=True))
    hidden = read_qrels(runs / "hidden.qrels")  # graded 0-3 at random: other labels
    board.phases.add_phase("sample", "other", hidden=True, labels=hidden, display="sample")
    assert {p.name for p in board.phases.all()} == {"dev", "test", "other"}
    assert all(board.phases.overlaps(p) == [] for p in board.phases.all())
    board.close()


def test_two_hidden_phases_share_labels_only_with_allow_overlap_and_final_is_checked_again(db_url, tmp_path):
    """Two hidden phases that share 10 of 20 dialogues' labels (the other 10 relabelled): the
    second is refused, and taken with allow_overlap (its problem says each team's quota counts
    twice); made final, it would publish those 10 dialogues' labels at its freeze: set-phase
    refuses it unless allow_overlap, and then says so."""
    labels = sample_labels()
    other = {q: ({d: 1 - min(g, 1) for d, g in docs.items()} if k % 2 else docs) for k, (q, docs) in enumerate(labels.items())}
    board = make_board(db_url, tmp_path)
    board.phases.add_phase("sample", "a", hidden=True, labels=labels, min_dialogues=5)
    with pytest.raises(InputError) as err:
        board.phases.add_phase("sample", "b", hidden=True, labels=other, min_dialogues=5)
    assert err.value.field == "allow_overlap" and "sample/b shares labels with sample/a" in str(err.value)
    b = board.phases.add_phase("sample", "b", hidden=True, labels=other, min_dialogues=5, allow_overlap=True)
    assert "quota counts twice" in board.phases.overlaps(b)[0]
    with pytest.raises(InputError) as err:
        board.phases.set_season(b, Season(final=True))
    assert err.value.field == "allow_overlap" and "sample/a" in str(err.value)
    assert not board.phases.get_phase("sample", "b").final
    assert board.phases.set_season(b, Season(final=True), allow_overlap=True).final
    assert "once it is frozen" in board.phases.overlaps(board.phases.get_phase("sample", "b"))[0]
    board.close()


def test_the_command_line_refuses_a_public_copy_even_with_allow_overlap(db_url, tmp_path, capsys):
    """The command line: a public phase over the hidden labels (the sample, and a re-exported
    copy with a space after every sentence) is exit 2 naming the hidden phase, with and without
    --allow-overlap, no traceback; a hidden copy is exit 2 without the flag and taken with it,
    with a warning that names the phase and what is given away."""
    labels = sample_labels()
    qrels = tmp_path / "hidden.qrels"
    write_qrels({q: {d: g for d, g in docs.items() if g > 0} for q, docs in labels.items()}, qrels)
    copy = tmp_path / "copy.jsonl"
    write_benchmark(trailing_space(load_collection("sample")), copy)
    db, store = ["--db", db_url], ["--store", str(tmp_path / "store")]
    assert main(["board", "add-phase", "sample", "--phase", "test", "--hidden", "--qrels", str(qrels), *db, *store]) == 0
    capsys.readouterr()
    for public in (["sample"], [str(copy), "--name", "sample"]):
        for flag in ([], ["--allow-overlap"]):
            assert main(["board", "add-phase", *public, "--phase", "dev", *flag, *db, *store]) == 2
            err = capsys.readouterr().err
            assert "--allow-overlap" in err and "sample/dev shares labels with sample/test" in err, err
            assert "Traceback" not in err and "is public" in err
    hidden = ["board", "add-phase", str(copy), "--name", "sample", "--phase", "again", "--hidden", "--min-dialogues", "5"]
    assert main([*hidden, *db, *store]) == 2
    assert "sample/test" in capsys.readouterr().err
    assert main([*hidden, "--allow-overlap", *db, *store]) == 0
    err = capsys.readouterr().err
    assert "WARNING" in err and "sample/again shares labels with sample/test" in err and "quota counts twice" in err
    board = make_board(db_url, tmp_path)
    assert sorted(p.name for p in board.phases.all()) == ["again", "test"]
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
    phase = board.phases.get_phase("sample-plain", "dev")
    assert len(json.loads(phase.topics_json)) == 10 and phase.collection_ref == "sample:plain"
    board.close()
