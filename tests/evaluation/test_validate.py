"""dsr validate: every problem of a run file is reported with its line."""

from __future__ import annotations

import pytest

from dsr.cli import main
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.evaluation.validate import validate_run


@pytest.fixture(scope="module")
def collection():
    return make_collection(n=6, candidates=5, seed=2)


def good_lines(collection):
    lines = []
    for d in collection.dialogues:
        for rank, c in enumerate(d.candidates, start=1):
            lines.append(f"{d.id} Q0 {c.id} {rank} {10.0 - rank} tag")
    return lines


def test_a_valid_run_has_no_problems_and_a_summary(tmp_path, collection):
    path = tmp_path / "ok.run"
    make_run(collection, seed=1).write(path)
    result = validate_run(collection, path)
    assert result.valid and result.topics == 6 and result.lines == 30
    assert "valid run" in result.summary() and "6 of 6 topics" in result.summary()


def test_each_problem_is_reported_with_its_line(tmp_path, collection):
    lines = good_lines(collection)
    d0, d1 = collection.dialogues[0], collection.dialogues[1]
    bad = list(lines)
    bad[0] = f"{d0.id} Q0 {d0.candidates[0].id} 1 9.0"  # 5 columns
    bad[1] = f"nope Q0 {d0.candidates[1].id} 2 8.0 tag"  # unknown topic
    bad[2] = f"{d0.id} Q0 {d1.candidates[0].id} 3 7.0 tag"  # not a candidate of d0
    bad[3] = f"{d0.id} Q0 {d0.candidates[4].id} x 6.0 tag"  # rank not a number
    bad[4] = f"{d0.id} Q0 {d0.candidates[4].id} 5 5.0 tag"  # duplicate of line 4
    bad[5] = f"{d1.id} Q0 {d1.candidates[0].id} 1 nan tag"  # NaN score
    bad[6] = f"{d1.id} Q0 {d1.candidates[1].id} 2 inf tag"  # inf score
    bad[7] = f"{d1.id} Q0 {d1.candidates[2].id} 3 abc tag"  # non-numeric score
    bad[10] = f"{collection.ids[2]} Q0 {collection.dialogues[2].candidates[0].id} 1 1.0 tag"
    bad[11] = f"{collection.ids[2]} Q0 {collection.dialogues[2].candidates[1].id} 1 0.5 tag"  # rank repeats
    path = tmp_path / "bad.run"
    path.write_text("\n".join(bad) + "\n")
    result = validate_run(collection, path)
    found = {
        (p.line, key)
        for p in result.problems
        for key in ("6 columns", "not a dialogue", "not a candidate", "duplicate", "not finite", "score is not a number")
        if key in p.message
    }
    assert {
        (1, "6 columns"),
        (2, "not a dialogue"),
        (3, "not a candidate"),
        (5, "duplicate"),
        (6, "not finite"),
        (7, "not finite"),
        (8, "score is not a number"),
    } <= found
    # and nothing else: the other lines are fine
    assert sorted({p.line for p in result.problems}) == [1, 2, 3, 5, 6, 7, 8]
    # trec_eval ignores the rank column: rank problems are warnings (line 13: rank 3 scores above rank 1)
    said = {(w.line, key) for w in result.warnings for key in ("rank is not", "repeats", "higher score") if key in w.message}
    assert said == {(4, "rank is not"), (12, "repeats"), (13, "higher score")}
    assert not result.valid


def test_ranks_that_disagree_with_scores_and_ties_against_trec_eval_order(tmp_path, collection):
    d = collection.dialogues[0]
    c = sorted(x.id for x in d.candidates)
    lines = [
        f"{d.id} Q0 {c[0]} 1 5.0 t",
        f"{d.id} Q0 {c[1]} 2 6.0 t",  # line 2 outranks line 1
        f"{d.id} Q0 {c[2]} 3 4.0 t",
        f"{d.id} Q0 {c[3]} 4 4.0 t",  # tie, ascending ids: swapped
        f"{d.id} Q0 {c[4]} 5 3.0 t",
    ]
    path = tmp_path / "order.run"
    path.write_text("\n".join(lines) + "\n")
    result = validate_run(collection, path, allow_missing=True)
    assert result.valid  # trec_eval orders by score: a rank that disagrees is a warning
    # a tie is a warning (trec_eval and dsr evaluate order it by doc id), a problem with strict
    assert [(p.line, "higher score" in p.message, "tie" in p.message) for p in result.warnings] == [
        (2, True, False),
        (4, False, True),
    ]
    assert result.tied_topics == [d.id]
    strict = validate_run(collection, path, allow_missing=True, strict=True)
    assert [p.line for p in strict.problems] == [4] and [p.line for p in strict.warnings] == [2]
    assert result.missing == collection.ids[1:]


def test_missing_topics_are_counted(tmp_path, collection):
    path = tmp_path / "part.run"
    path.write_text("\n".join(good_lines(collection)[:10]) + "\n")
    result = validate_run(collection, path)
    assert [p.message for p in result.problems if p.line is None] == [
        f"4 of 6 topics have no lines (e.g. {collection.ids[2]!r}, {collection.ids[3]!r}, "
        f"{collection.ids[4]!r}); they would count 0"
    ]
    assert validate_run(collection, path, allow_missing=True).valid


def test_truncated_last_line(tmp_path, collection):
    lines = good_lines(collection)
    path = tmp_path / "cut.run"
    path.write_text("\n".join(lines)[:-9])  # the last line loses its score and tag
    result = validate_run(collection, path)
    assert [p.line for p in result.problems] == [30]
    assert "truncated" in result.problems[0].message
    path.write_text("\n".join(lines))  # six columns, no final newline (ranx): fine
    result = validate_run(collection, path)
    assert result.valid and result.lines == 30 and not result.warnings


def test_cli_exit_codes_and_capped_listing(tmp_path, collection, capsys):
    bench = tmp_path / "c.jsonl"
    write_benchmark(collection, bench)
    ok = tmp_path / "ok.run"
    make_run(collection, seed=1).write(ok)
    assert main(["validate", str(bench), str(ok)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "valid run" in out[0]
    bad = tmp_path / "bad.run"
    bad.write_text("".join(f"nope{i} Q0 x {i} 1.0 t\n" for i in range(1, 8)))
    assert main(["validate", str(bench), str(bad), "--max-problems", "3"]) == 2
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert lines[:3] == [f"{bad}:{i}: topic 'nope{i}' is not a dialogue of c" for i in (1, 2, 3)]
    assert "and 5 more problem(s) (8 in all" in lines[3]
    assert "not valid" in captured.err
    assert main(["validate", str(bench), str(tmp_path / "absent.run")]) == 2
