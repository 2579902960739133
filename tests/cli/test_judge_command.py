"""``dsr judge`` end to end on the bundled sample made a pool: guidelines out, campaign, assessors,
assignment, grades, report, export; the judged file then goes through ``dsr stats``, ``dsr run``,
``dsr evaluate``, ``dsr agreement`` and ``dsr board add-phase`` like any collection. Bad input
exits 2 naming the file, record or field, and writes nothing."""

from __future__ import annotations

import json

import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark, write_benchmark
from dsr.evaluation.qrels import qrels_from_collection, read_qrels
from dsr.judging import guidelines
from dsr.judging.campaigns import Judging
from tests.support.judging import ASSESSORS, as_pool, assignments, simulate, truth_of


@pytest.fixture
def pool_file(tmp_path):
    from dsr.collections import load_collection

    sample = load_collection("sample")
    pool = as_pool(sample)
    for d in pool:  # what dsr pool records: the corpus folder it searched
        d.meta["pool"] = {"corpus": str(tmp_path / "corpora" / "wiki"), "depth": 50}
    write_benchmark(pool, tmp_path / "pool.jsonl")
    return tmp_path / "pool.jsonl", truth_of(sample)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_whole_campaign_from_the_command_line(tmp_path, pool_file, capsys):
    pool, truth = pool_file
    db = ["--db", f"sqlite:///{tmp_path / 'board.sqlite'}"]
    assert run(capsys, "judge", "guidelines", "--out", str(tmp_path / "g.yaml"))[0] == 0
    assert (tmp_path / "g.yaml").read_text() == guidelines.default_text()
    code, out, _ = run(
        capsys,
        "judge",
        "create",
        "s1",
        str(pool),
        "--guidelines",
        str(tmp_path / "g.yaml"),
        "--auto-honeypots",
        "--chunk",
        "10",
        *db,
    )
    assert code == 0 and "20 dialogues, 64 tasks, 508 sentences, 68 honeypot checks (43 planted)" in out
    tokens = [run(capsys, "judge", "add-assessor", a, *db)[1].strip() for a in ASSESSORS]
    assert all(t.startswith("dsr_") for t in tokens)
    code, out, _ = run(capsys, "judge", "assign", "s1", *db)
    loads = [int(line.split(": ")[1].split()[0]) for line in out.splitlines()]
    assert code == 0 and len(loads) == 4 and sum(loads) == 3 * 551 and max(loads) - min(loads) <= 11
    judging = Judging.open(db[1])
    judging.import_grades("s1", simulate(assignments(judging, "s1"), truth, dict.fromkeys(ASSESSORS, 0.1)), None)
    code, out, _ = run(capsys, "judge", "report", "s1", "--json", *db)
    report = json.loads(out)
    assert code == 0 and report["items"] == 508 and report["grades"] == 3 * 551
    assert report["items_without_counted_grade"] == 0 and 0.3 < report["agreement"]["alpha_ordinal"] < 1
    code, out, _ = run(
        capsys,
        "judge",
        "export",
        "s1",
        "--out",
        str(tmp_path / "j.jsonl"),
        "--qrels",
        str(tmp_path / "j.qrels"),
        "--report",
        str(tmp_path / "r.json"),
        "--method",
        "ds",
        "--only-relevant",
        *db,
    )
    assert code == 0 and "wrote" in out
    judged = read_benchmark(tmp_path / "j.jsonl")
    assert all(d.meta["judged"] is True and d.relevant for d in judged)
    assert judged.dialogues[0].meta["pool"] == {"corpus": "wiki", "depth": 50}
    assert str(tmp_path) not in (tmp_path / "j.jsonl").read_text()  # no path of this machine
    assert read_qrels(tmp_path / "j.qrels") == qrels_from_collection(judged)
    assert json.loads((tmp_path / "r.json").read_text())["method"] == "ds"
    j = str(tmp_path / "j.jsonl")
    assert run(capsys, "stats", j)[0] == 0
    for ranker in ("bm25", "initial"):
        assert run(capsys, "run", j, "--ranker", ranker, "--out", str(tmp_path / f"{ranker}.run"))[0] == 0
    code, out, _ = run(capsys, "evaluate", j, str(tmp_path / "bm25.run"), str(tmp_path / "initial.run"))
    assert code == 0 and "nDCG@5" in out
    code, out, _ = run(capsys, "agreement", "sample", j, str(tmp_path / "bm25.run"), str(tmp_path / "initial.run"))
    assert code == 0 and "Kendall tau" in out
    code, out, _ = run(capsys, "board", "add-phase", j, "--phase", "judged", *db, "--store", str(tmp_path / "runs"))
    assert code == 0 and f"{len(judged)} dialogues, public labels" in out


def test_bad_input_exits_2_naming_the_place_and_writes_nothing(tmp_path, pool_file, capsys):
    pool, _ = pool_file
    db = ["--db", f"sqlite:///{tmp_path / 'board.sqlite'}"]
    code, _, err = run(capsys, "judge", "report", "nope", *db)
    assert code == 2 and "no campaign 'nope'" in err
    (tmp_path / "bad.yaml").write_text(guidelines.default_text().replace("relevant_from: 1", "relevant_from: 5"))
    code, _, err = run(capsys, "judge", "create", "s1", str(pool), "--guidelines", str(tmp_path / "bad.yaml"), *db)
    assert code == 2 and "bad.yaml" in err and "relevant_from" in err
    for flag, value in (("--honeypot-threshold", "1.5"), ("--min-honeypots", "-1"), ("--k", "0")):
        code, _, err = run(capsys, "judge", "create", "s0", str(pool), flag, value, *db)
        assert code == 2 and flag in err and "must be" in err, err  # the library's field, shown as the flag
    assert run(capsys, "judge", "create", "s1", str(pool), *db)[0] == 0
    code, _, err = run(capsys, "judge", "create", "s1", str(pool), *db)
    assert code == 2 and "exists already" in err
    code, _, err = run(capsys, "judge", "export", "s1", "--out", str(tmp_path / "j.jsonl"), *db)
    assert code == 2 and "--partial" in err and not (tmp_path / "j.jsonl").exists()
    (tmp_path / "ls.json").write_text(json.dumps([{"id": 7, "data": {"title": "x"}, "annotations": []}]))
    code, _, err = run(capsys, "judge", "import", "s1", str(tmp_path / "ls.json"), "--format", "label-studio", *db)
    assert code == 2 and "ls.json" in err and "task 7" in err and "data.sentences" in err
    code, _, err = run(capsys, "judge", "assign", "s1", "--assessors", "ghost", *db)
    assert code == 2 and "no assessor 'ghost'" in err
    code, _, err = run(capsys, "judge", "guidelines", *db)
    assert code == 2 and "--out" in err
    (tmp_path / "file").write_text("x")
    code, _, err = run(capsys, "judge", "export-tasks", "s1", "--format", "crowd", "--out", str(tmp_path / "file" / "tasks"), *db)
    assert code == 2 and "is a file" in err
    assert "Traceback" not in err


def test_assign_takes_assessor_names_that_are_also_folders_and_an_overlap(tmp_path, pool_file, capsys, monkeypatch):
    """``--assessors alice bob`` run where folders ``alice`` and ``bob`` exist: names, not files."""
    pool, _ = pool_file
    db = ["--db", f"sqlite:///{tmp_path / 'board.sqlite'}"]
    assert run(capsys, "judge", "create", "s1", str(pool), "--k", "1", "--auto-honeypots", *db)[0] == 0
    for who in ("alice", "bob", "carol"):
        assert run(capsys, "judge", "add-assessor", who, *db)[0] == 0
        (tmp_path / who).mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "judge", "assign", "s1", "--assessors", "alice", "bob", "--overlap", "0.25", *db)
    assert code == 0, err
    loads = dict(line.split(": ") for line in out.splitlines())
    assert set(loads) == {"alice", "bob"}
    assert sum(int(v.split()[0]) for v in loads.values()) > 524  # a quarter of the dialogues twice
    code, _, err = run(capsys, "judge", "assign", "s1", "--overlap", "2", *db)
    assert code == 2 and "overlap" in err and "Traceback" not in err
