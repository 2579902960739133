"""``dsr pool COLLECTION --runs A B ... --depth k``: the TREC pool of runs. On the bundled
sample, three runs (BM25 on the last turn, BM25 on all turns, the initial order) are pooled
at depth 5; the pool equals a plain depth-5 union of the run files read line by line here,
each run's contribution and unique sentences are counted the same way, and the pool file is
one ``dsr judge create`` takes. Bad input exits 2."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from dsr.cli import main
from dsr.core.data import read_benchmark


def plain_top(path, depth: int) -> dict[str, set[str]]:
    """Each topic's ``depth`` highest-scoring documents of a TREC run file (no ties here)."""
    ranked = defaultdict(list)
    for line in open(path, encoding="utf-8"):
        qid, _, doc, _, score, _ = line.split()
        ranked[qid].append((-float(score), doc))
    return {q: {doc for _, doc in sorted(r)[:depth]} for q, r in ranked.items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    paths = []
    for name, argv in (
        ("bm25-last", ["--ranker", "bm25", "--query", "last"]),
        ("bm25-all", ["--ranker", "bm25", "--query", "all"]),
        ("initial", ["--ranker", "initial"]),
    ):
        out = folder / f"{name}.run"
        assert main(["run", "sample", *argv, "--out", str(out)]) == 0
        paths.append(out)
    return paths


def test_the_pool_is_the_depth_k_union_of_the_runs(runs, tmp_path, capsys):
    from dsr.collections import load_collection

    capsys.readouterr()
    out = tmp_path / "pool.jsonl"
    assert main(["pool", "sample", "--runs", *map(str, runs), "--depth", "5", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    tops = [plain_top(p, 5) for p in runs]
    sample = load_collection("sample")
    pooled = read_benchmark(out)
    expected = {d.id: set().union(*(t.get(d.id, set()) for t in tops)) for d in sample}
    assert {d.id: {c.id for c in d.candidates} for d in pooled} == {q: s for q, s in expected.items() if s}
    for d in pooled:  # candidates keep the collection's order, labels hidden
        order = [c.id for c in sample[d.id].candidates]
        assert [c.id for c in d.candidates] == [c for c in order if c in expected[d.id]]
        assert d.meta["judged"] is False and all(c.label == 0 for c in d.candidates)
    assert report["sentences"] == sum(map(len, expected.values())) and report["depth"] == 5
    for row, top, path in zip(report["runs"], tops, runs):
        others = [t for t in tops if t is not top]
        assert row["run"] == path.name
        assert row["contributed"] == sum(len(s) for s in top.values())
        assert row["unique"] == sum(len(s - set().union(*(o.get(q, set()) for o in others))) for q, s in top.items())
    assert min(r["unique"] for r in report["runs"]) < max(r["unique"] for r in report["runs"])
    # the table names the runs, no folder
    assert main(["pool", "sample", "--runs", *map(str, runs), "--depth", "5", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert all(p.name in text for p in runs) and str(runs[0].parent) not in text
    # the campaign takes it
    db = f"sqlite:///{tmp_path / 'board.sqlite'}"
    assert main(["judge", "create", "p5", str(out), "--db", db]) == 0
    assert f"{report['sentences']} sentences" in capsys.readouterr().out


def test_bad_pool_requests_exit_2(runs, tmp_path, capsys):
    out = tmp_path / "pool.jsonl"
    assert main(["pool", "sample", "--depth", "5", "--out", str(out)]) == 2
    assert main(["pool", "sample", "--runs", str(runs[0]), "--depth", "0", "--out", str(out)]) == 2
    foreign = tmp_path / "foreign.run"
    foreign.write_text("nosuchdialogue Q0 x 1 3.5 t\n", encoding="utf-8")
    assert main(["pool", "sample", "--runs", str(foreign), "--depth", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "foreign.run" in err and "Traceback" not in err
    assert not out.exists()


def test_a_board_phase_pools_its_submissions(runs, tmp_path, capsys, dsr_home):
    assert main(["board", "add-phase", "sample", "--phase", "public"]) == 0
    for path in runs:
        assert main(["board", "add-baseline", "sample", str(path)]) == 0
    capsys.readouterr()
    by_files, by_phase = tmp_path / "files.jsonl", tmp_path / "phase.jsonl"
    assert main(["pool", "sample", "--runs", *map(str, runs), "--depth", "5", "--out", str(by_files)]) == 0
    capsys.readouterr()
    assert main(["pool", "sample", "--phase", "public", "--depth", "5", "--out", str(by_phase), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    files, phase = read_benchmark(by_files), read_benchmark(by_phase)
    assert {d.id: [c.id for c in d.candidates] for d in phase} == {d.id: [c.id for c in d.candidates] for d in files}
    assert len(report["runs"]) == 3 and all("#" in r["run"] for r in report["runs"])
    assert str(dsr_home) not in json.dumps(report)
    assert main(["pool", "sample", "--phase", "nosuch", "--depth", "5", "--out", str(by_phase)]) == 2


def test_the_collection_may_come_after_the_runs(runs, tmp_path, capsys):
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    assert main(["pool", "sample", "--runs", *map(str, runs), "--depth", "3", "--out", str(before)]) == 0
    assert main(["pool", "--runs", *map(str, runs), "sample", "--depth", "3", "--out", str(after)]) == 0
    assert before.read_text() == after.read_text()
