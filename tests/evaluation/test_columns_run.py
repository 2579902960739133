"""``dsr evaluate``'s large-file path (:mod:`dsr.evaluation.columns_run`: qrels and runs read as
arrays, measured by trec_eval's arrays) against the reference path (a Python object per line:
``collection_from_qrels``, ``load_run``, the evaluator's ranked labels and pytrec_eval): the
same tables, JSON, per-topic files and warnings on random graded files with float32 ties,
negative grades, unpooled documents, topics the run lacks or the qrels lack, ``-M``, ``-l``,
``--trec-eval 10.0``, measures with ``rel`` and ``judged_only``, a measure only ir_measures
computes; the same collection (dialogues and content hash) from a qrels file; a collection's
large run read as arrays."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import pytest

import dsr.cli.evaluation as evaluation_cli
from dsr.cli import main
from dsr.evaluation.columns_run import ColumnRun, collection_of, read_qrels_file
from dsr.evaluation.qrels import collection_from_qrels, read_qrels

MEASURES = "RR,nDCG@3,nDCG@5,P@1,P@5,AP,R@10,P(rel=2)@3,AP(judged_only=True),NumRet,NumRel(rel=2),nDCG,AP@3,RR(rel=2)"
#: -l 2 with measures that set no level of their own
LEVEL_2 = "RR,nDCG@5,P@5,AP,NumRel,AP@3,P(judged_only=True)@3"


def run_cli(argv: list[str], arrays: bool, monkeypatch) -> tuple[int, str, str]:
    if not arrays:
        monkeypatch.setattr(evaluation_cli, "_column_reader", lambda args, collection: None)
        monkeypatch.setattr(evaluation_cli, "read_qrels_file", lambda path: None)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    monkeypatch.undo()
    return code, out.getvalue(), err.getvalue()


def random_files(rng: random.Random, folder: Path) -> tuple[Path, Path]:
    qrels, run = [], []
    for t in range(rng.randint(1, 8)):
        docs = [f"d{j}" for j in range(rng.randint(1, 15))]
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            qrels.append(f"q{t} 0 {doc} {rng.choice([-1, 0, 0, 1, 1, 2, 3])}")
        if rng.random() < 0.85:
            for k, doc in enumerate(rng.sample(docs + ["u1", "u2"], rng.randint(1, len(docs) + 2))):
                score = rng.choice(["0.3", "0.30000001", "0.5", "2", repr(round(rng.random(), rng.choice([1, 3, 7])))])
                run.append(f"q{t} Q0 {doc} {k} {score} tag")
    run.append("stray Q0 d0 1 1 tag")  # a topic the qrels lack
    if rng.random() < 0.3:
        rng.shuffle(run)
    (folder / "qrels").write_text("\n".join(qrels) + "\n")
    (folder / "run").write_text("\n".join(run) + "\n")
    return folder / "qrels", folder / "run"


def test_the_arrays_print_what_the_reference_prints(tmp_path, monkeypatch):
    rng = random.Random(5)
    evaluated = 0
    for case in range(40):
        qrels, run = random_files(rng, tmp_path)
        assert ColumnRun.of_file(run, read_qrels_file(qrels)) is not None, "the arrays read these files themselves"
        argv = ["evaluate", "--qrels", str(qrels), str(run), "--measures", MEASURES, "--json"]
        argv += rng.choice([[], ["--trec-eval", "10.0"], ["-M", "3"], ["-M", "2", "--trec-eval", "10.0"]])
        argv += ["--per-topic", str(tmp_path / f"per_topic_{case}.tsv")]
        table = tmp_path / f"per_topic_{case}.tsv"
        arrays = run_cli(argv, True, monkeypatch)
        per_topic = table.read_text() if arrays[0] == 0 else None
        reference = run_cli(argv, False, monkeypatch)
        assert arrays == reference, (argv, qrels.read_text(), run.read_text())
        assert per_topic == (table.read_text() if reference[0] == 0 else None)
        evaluated += arrays[0] == 0
        level = ["evaluate", "--qrels", str(qrels), str(run), "--measures", LEVEL_2, "-l", "2", "--json"]
        assert run_cli(level, True, monkeypatch) == run_cli(level, False, monkeypatch)
        # measures only ir_measures computes: the run's lines read again, in the rules' order
        rules = rng.choice([["--trec-eval", "10.0"], ["-M", "2"], ["-M", "1", "--trec-eval", "10.0"]])
        other = ["evaluate", "--qrels", str(qrels), str(run), "--measures", "Bpref,Rprec,Success@1,nDCG@3", "--json", *rules]
        assert run_cli(other, True, monkeypatch) == run_cli(other, False, monkeypatch), (other, run.read_text())
    assert evaluated > 30  # (a run of no topic of the qrels is refused alike)
    # the table too, and a measure only ir_measures computes (the run's lines are then read again)
    argv = ["evaluate", "--qrels", str(qrels), str(run), "--measures", "nDCG@5,Bpref,Judged@5"]
    assert run_cli(argv, True, monkeypatch) == run_cli(argv, False, monkeypatch)


def test_a_qrels_file_makes_the_same_collection(tmp_path):
    (tmp_path / "qrels").write_text('q"1 0 a\\b 2\nq"1 0 "x" 0\nq2 0 d -1\nq0 0 z 1\nq2 0 e 3\n')
    made, reference = (
        collection_of(read_qrels_file(tmp_path / "qrels"), "n"),
        collection_from_qrels(read_qrels(tmp_path / "qrels"), "n"),
    )
    assert made.describe() == reference.describe()  # the content hash included
    assert [d.to_json() for d in made.dialogues] == [d.to_json() for d in reference.dialogues]
    assert made.ids == reference.ids == ['q"1', "q2", "q0"]


@pytest.mark.parametrize("text", ["q 0 d 1\nq 0 d 2\n", "# a comment\nq 0 d 1\n", "q 0 d 1.5\n"])
def test_qrels_the_reference_reads(tmp_path, text):
    """A document judged twice, a comment line, a grade that is not whole: the reference's
    (which refuses, or skips the comment)."""
    (tmp_path / "qrels").write_text(text)
    assert read_qrels_file(tmp_path / "qrels") is None


def test_a_large_run_of_a_collection_is_read_as_arrays(tmp_path, monkeypatch, capsys):
    """Above COLUMNS_FROM_BYTES, a collection's run file is a ColumnRun; the figures are those
    of the reference path."""
    from dsr.collections.synthetic import make_collection, make_run

    collection = make_collection(n=30, seed=1, grades=(0, 0, 1, 2))
    collection.meta.pop("path", None)
    from dsr.core.data import write_benchmark

    write_benchmark(collection, tmp_path / "coll.jsonl")
    make_run(collection, seed=2, quality=0.4).write(tmp_path / "a.run", sidecar=False)
    argv = ["evaluate", str(tmp_path / "coll.jsonl"), str(tmp_path / "a.run"), "--json", "--quiet"]
    reference = run_cli(argv, False, monkeypatch)
    monkeypatch.setattr(evaluation_cli, "COLUMNS_FROM_BYTES", 0)
    read = []
    original = ColumnRun.of_file
    monkeypatch.setattr(ColumnRun, "of_file", classmethod(lambda cls, *a, **k: read.append(1) or original(*a, **k)))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert read and (code, out.getvalue(), err.getvalue()) == reference
