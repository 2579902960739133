"""ir_datasets registration: `ir_datasets.load("dsr/...")` after `import dsr.interchange.irds`."""

from __future__ import annotations

import json

import ir_datasets
import ir_measures
import pytest

import dsr.interchange.irds as irds
from dsr.cli import main
from dsr.collections.sample import data_file
from dsr.core.errors import InputError
from dsr.core.queries import query_text


@pytest.fixture(scope="module")
def records() -> list[dict]:
    with data_file().open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def test_ids_cover_every_collection_with_candidates_and_its_splits():
    ids = set(ir_datasets.registry)
    assert {
        "dsr/sample",
        "dsr/sample/plain",
        "dsr/sample/grounded",
        "dsr/cmu_dog",
        "dsr/cmu_dog/valid",
        "dsr/cmu_dog/train",
        "dsr/redial/test",
        "dsr/sigir2022",
        "dsr/sigir2022/grounded",
    } <= ids
    assert not any(i.startswith("dsr/ccpe") for i in ids)  # no candidates, nothing to rank
    assert irds.register() == list(irds.dataset_ids())  # idempotent


def test_sample_docs_queries_qrels_scoreddocs(records):
    dataset = ir_datasets.load("dsr/sample")
    docs = {d.doc_id: d for d in dataset.docs_iter()}
    expected_docs = {c["id"]: (c["title"], c["body"]) for r in records for c in r["candidates"]}
    assert {k: (d.title, d.text) for k, d in docs.items()} == expected_docs
    assert dataset.docs_count() == len(expected_docs)
    some = next(iter(expected_docs))
    assert dataset.docs_store().get(some).text == expected_docs[some][1]

    from dsr.collections import load_collection

    collection = load_collection("sample")
    queries = list(dataset.queries_iter())
    assert [q.query_id for q in queries] == [r["id"] for r in records]
    assert [q.last for q in queries] == [r["context"][-1]["body"] for r in records]
    assert [q.text for q in queries] == [query_text(d, "all") for d in collection]
    assert [q.title_all for q in queries] == [query_text(d, "title+all") for d in collection]
    assert [q.subset for q in queries] == [r["subset"] for r in records]

    qrels = [(q.query_id, q.doc_id, q.relevance) for q in dataset.qrels_iter()]
    assert qrels == [(r["id"], c["id"], c["label"]) for r in records for c in r["candidates"]]
    assert set(dataset.qrels_defs()) == {0, 1, 2}
    scored = [(s.query_id, s.doc_id, s.score) for s in dataset.scoreddocs_iter()]
    assert scored == [(r["id"], c["id"], c["score"]) for r in records for c in r["candidates"]]


def test_a_split_id_keeps_that_subset(records):
    plain = list(ir_datasets.load("dsr/sample/plain").queries_iter())
    assert [q.query_id for q in plain] == [r["id"] for r in records if r["subset"] == "plain"]


def test_ir_measures_on_the_registered_qrels_equals_dsr_evaluate(tmp_path, capsys):
    run = tmp_path / "bm25.run"
    assert main(["run", "sample", "--ranker", "bm25", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "sample", str(run), "--json", "--quiet", "--measures", "nDCG@5", "AP"]) == 0
    dsr = json.loads(capsys.readouterr().out)["runs"]["bm25"]["all_dialogues"]["all"]
    qrels = ir_datasets.load("dsr/sample").qrels_iter()
    got = ir_measures.calc_aggregate([ir_measures.nDCG @ 5, ir_measures.AP], qrels, ir_measures.read_trec_run(str(run)))
    assert got[ir_measures.nDCG @ 5] == pytest.approx(dsr["nDCG@5"], abs=1e-12)
    assert got[ir_measures.AP] == pytest.approx(dsr["AP"], abs=1e-12)


def test_a_source_with_local_files_is_found_through_dsr_home(dsr_home, shared_data):
    (dsr_home / "data").mkdir()
    (dsr_home / "data" / "cmu_dog").symlink_to(shared_data / "cmu_dog")
    dataset = ir_datasets.load("dsr/cmu_dog/valid")
    queries = list(dataset.queries_iter())
    qrels = list(dataset.qrels_iter())
    assert len(queries) == 502
    assert {q.relevance for q in qrels} == {0, 1, 2}
    assert len({q.query_id for q in qrels}) == 502


def test_a_missing_source_says_how_to_get_it():
    with pytest.raises(InputError, match="dsr data fetch redial"):
        next(iter(ir_datasets.load("dsr/redial/train").queries_iter()))


def test_register_benchmark_file(tmp_path, records):
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    dataset = irds.register_benchmark("dsr-test/mine", path)
    assert [q.query_id for q in dataset.queries_iter()] == [r["id"] for r in records[:3]]
    assert dataset.docs_count() == len({c["id"] for r in records[:3] for c in r["candidates"]})


def test_what_pyterriers_irds_adapter_reads(records):
    """PyTerrier (not installable here: it needs Java) reads an ir_datasets id with these calls:
    topics and results as DataFrames of the namedtuples (a query field picked by name), and
    text for `pt.text.get_text` from the doc fields annotated exactly `str` via docs_store."""
    import pandas as pd

    dataset = ir_datasets.load("dsr/sample")
    docs_cls = dataset.docs_cls()
    text_fields = [f for f in docs_cls._fields if f != "doc_id" and docs_cls.__annotations__[f] is str]
    assert text_fields == ["text", "title"]
    assert "last" in dataset.queries_cls()._fields[1:]
    topics = pd.DataFrame(dataset.queries_iter()).rename(columns={"query_id": "qid", "last": "query"})
    assert list(topics["query"]) == [r["context"][-1]["body"] for r in records]
    results = pd.DataFrame(dataset.scoreddocs)
    assert list(results.columns) == ["query_id", "doc_id", "score"]
    assert len(results) == sum(len(r["candidates"]) for r in records)
    wanted = set(results["doc_id"])
    assert {d.doc_id for d in dataset.docs_store().get_many_iter(wanted)} == wanted


def _fresh(tmp_path, *argv: str):
    """A new Python process, started outside the checkout (dsr as installed)."""
    import subprocess
    import sys

    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.slow  # new processes
def test_the_supported_ways_in_a_fresh_process(tmp_path):
    """The one import, in Python, and ``python -m dsr.interchange.irds`` for ir_datasets' own command
    line; without either, ir_datasets (no plug-in mechanism) does not know dsr's ids, as the docs say."""
    expected = [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in ir_datasets.load("dsr/sample").qrels_iter()]
    loaded = _fresh(
        tmp_path,
        "-c",
        "import ir_datasets, dsr.interchange.irds\n"
        "print(sum(1 for _ in ir_datasets.load('dsr/sample').qrels_iter()), sum(1 for _ in ir_datasets.load('dsr/sample/plain').queries_iter()))",
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == [str(len(expected)), "10"]
    exported = _fresh(tmp_path, "-m", "dsr.interchange.irds", "export", "dsr/sample", "qrels", "--format", "trec")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.splitlines() == expected
    queries = _fresh(tmp_path, "-m", "dsr.interchange.irds", "export", "dsr/sample", "queries", "--fields", "query_id", "last")
    assert queries.returncode == 0, queries.stderr
    dialogue = next(iter(ir_datasets.load("dsr/sample").queries_iter()))
    assert queries.stdout.splitlines()[0] == f"{dialogue.query_id}\t{dialogue.last}" and len(queries.stdout.splitlines()) == 20
    listed = _fresh(tmp_path, "-m", "dsr.interchange.irds", "list")
    assert listed.returncode == 0 and "dsr/cmu_dog/valid" in listed.stdout.split()
    unaided = _fresh(tmp_path, "-c", "import ir_datasets; ir_datasets.load('dsr/sample')")
    assert unaided.returncode != 0 and "KeyError: 'dsr/sample'" in unaided.stderr, (
        "ir_datasets now finds dsr without the import: say so in docs/interchange.md and dsr/interchange/irds.py"
    )
