"""Files other tools write, read as they mean them: MS MARCO three-column runs (pyserini's
``--output-format msmarco``, the MS MARCO evaluation scripts' input) by detection or with
``--run-format msmarco``, and a UTF-8 byte order mark at the start of any input file (what
Windows Notepad, Excel's "CSV UTF-8" and Python's ``utf-8-sig`` codec write): runs, qrels,
benchmark JSON Lines, Label Studio exports, sidecars."""

from __future__ import annotations

import json

import pytest

import dsr
from dsr.cli import main
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.run import MSMARCO_TAG, load_run, read_trec_run
from dsr.evaluation.qrels import read_qrels

#: pyserini's MsMarcoWriter (pyserini/output_writer.py): f'{topic}\t{docid}\t{rank}\n', ranks from 1
PYSERINI_MSMARCO = "{topic}\t{docid}\t{rank}\n"


def msmarco_file(path, rankings):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for topic, docs in rankings.items():
            for rank, docid in enumerate(docs, start=1):
                f.write(PYSERINI_MSMARCO.format(topic=topic, docid=docid, rank=rank))
    return path


def test_an_msmarco_run_is_detected_and_scored_as_its_ranks(tmp_path):
    """Three columns, the last a rank: each score is minus the rank, so the run scores as the
    TREC run of the same ranking (a plain computation of RR and P@2 on those ranks)."""
    rankings = {"q1": ["d3", "d1", "d2"], "q2": ["d9", "d8"]}
    path = msmarco_file(tmp_path / "run.msmarco.tsv", rankings)
    run = load_run(path)
    assert run.tag == MSMARCO_TAG
    assert {q: [d for d, _ in r] for q, r in run.rankings.items()} == rankings
    assert run.rankings["q1"][0][1] == -1.0
    assert load_run(path, "msmarco").rankings == run.rankings
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d8 1\n")
    out = tmp_path / "pt.tsv"
    assert main(["evaluate", "--qrels", str(qrels), str(path), "--measures", "RR,P@2", "--per-topic", str(out)]) == 0
    rows = {line.split("\t")[2]: line.split("\t")[4:] for line in out.read_text().splitlines()[1:]}
    assert rows == {"q1": ["0.5", "0.5"], "q2": ["0.5", "0.5"]}


def test_msmarco_ties_in_rank_go_to_the_doc_id_descending_and_validate_says_so(tmp_path, capsys):
    path = tmp_path / "tied.tsv"
    path.write_text("q1\ta\t1\nq1\tb\t1\nq1\tc\t3\n")
    run = read_trec_run(path)
    assert [d for d, _ in run.rankings["q1"]] == ["b", "a", "c"]
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\n")
    assert main(["validate", "--qrels", str(qrels), str(path)]) == 0
    err = capsys.readouterr().err
    assert "MS MARCO run" in err and "minus its rank" in err and "tie as 32-bit floats" in err


def test_a_wrong_or_forced_format_is_an_error_naming_the_line(tmp_path, capsys):
    path = tmp_path / "run.tsv"
    path.write_text("q1\ta\t1\nq1\tb\tsecond\n")
    with pytest.raises(ValueError, match=r"run.tsv:2: field 'rank': rank is not a whole number"):
        read_trec_run(path)
    trec = tmp_path / "trec.run"
    trec.write_text("q1 Q0 a 1 2.5 x\n")
    with pytest.raises(ValueError, match="expected 3 columns"):
        read_trec_run(trec, "msmarco")
    with pytest.raises(ValueError, match="expected 6 columns"):
        read_trec_run(msmarco_file(tmp_path / "m.tsv", {"q": ["a"]}), "trec")
    assert (
        main(["fuse", str(trec), str(trec), "--method", "rrf", "--run-format", "msmarco", "--out", str(tmp_path / "f.run")]) == 2
    )
    assert "expected 3 columns" in capsys.readouterr().err


def test_dsr_fuse_reads_msmarco_runs(tmp_path):
    a = msmarco_file(tmp_path / "a.tsv", {"q1": ["d1", "d2", "d3"]})
    b = msmarco_file(tmp_path / "b.tsv", {"q1": ["d3", "d1"]})
    out = tmp_path / "f.run"
    assert main(["fuse", str(a), str(b), "--method", "rrf", "--out", str(out)]) == 0
    assert [d for d, _ in load_run(out).rankings["q1"]] == ["d1", "d3", "d2"]


def bom(path, text: str):
    """The text as Python's utf-8-sig codec (and Notepad, Excel's CSV UTF-8) writes it."""
    path.write_text(text, encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    return path


def test_a_byte_order_mark_is_read_as_no_mark_in_runs_qrels_and_validate(tmp_path, capsys):
    run_text = "q1 Q0 d1 1 2.5 x\nq1 Q0 d2 2 1.5 x\n"
    plain, marked = tmp_path / "plain.run", bom(tmp_path / "marked.run", run_text)
    plain.write_text(run_text)
    assert load_run(marked).rankings == load_run(plain).rankings
    assert list(load_run(marked).rankings) == ["q1"]  # not "\ufeffq1"
    qrels = bom(tmp_path / "qrels", "q1 0 d1 1\n")
    assert read_qrels(qrels) == {"q1": {"d1": 1}}
    assert main(["validate", "--qrels", str(qrels), str(marked)]) == 0
    assert "valid run" in capsys.readouterr().out
    assert main(["trec_eval", "-m", "recip_rank", str(qrels), str(marked)]) == 0
    assert capsys.readouterr().out == "recip_rank            \tall\t1.0000\n"
    msmarco = bom(tmp_path / "m.tsv", "q1\td1\t1\n")
    assert load_run(msmarco).tag == MSMARCO_TAG


def test_a_byte_order_mark_in_a_benchmark_file_and_a_label_studio_export(tmp_path):
    sample = dsr.load_collection("sample")
    plain = tmp_path / "plain.jsonl"
    write_benchmark(sample, plain)
    marked = bom(tmp_path / "marked.jsonl", plain.read_text(encoding="utf-8"))
    assert read_benchmark(marked).content_hash == read_benchmark(plain).content_hash
    from dsr.judging import labelstudio

    export = [{"id": 1, "data": {}, "annotations": []}]
    a, b = tmp_path / "a.json", bom(tmp_path / "b.json", json.dumps(export))
    a.write_text(json.dumps(export))
    try:
        expected = labelstudio.read(a)
    except ValueError as err:  # the export's own checks: the same with and without the mark
        with pytest.raises(ValueError) as caught:
            labelstudio.read(b)
        assert str(caught.value).replace(str(b), "F") == str(err).replace(str(a), "F")
    else:
        assert labelstudio.read(b) == expected
