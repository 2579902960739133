"""`dsr export` (trec, beir, hf, ir_datasets) and `dsr qrels`: each export is loaded with the
library it is for, and what it loads is checked against the benchmark file read plainly."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import ir_measures
import pytest

from dsr.cli import main
from dsr.collections.sample import data_file
from dsr.core.queries import query_text
from dsr.interchange.corpus import TestCollection, corpus_id


def _sample_records() -> list[dict]:
    with data_file().open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def expected() -> dict:
    """Corpus, labels and queries of `sample`, straight from its JSON lines."""
    records = _sample_records()
    corpus, qrels = {}, {}
    for record in records:
        for cand in record["candidates"]:
            corpus[cand["id"]] = (cand["title"], cand["body"])
            qrels.setdefault(record["id"], {})[cand["id"]] = int(cand["label"])
    return {"records": records, "corpus": corpus, "qrels": qrels}


def _export(fmt: str, out: Path, *extra: str) -> Path:
    assert main(["export", "sample", "--format", fmt, "--out", str(out), *extra]) == 0
    return out


def _all_query(record_id: str) -> str:
    from dsr.collections import load_collection

    return query_text(load_collection("sample")[record_id], "all")


def test_beir_export_loads_with_beirs_generic_data_loader(tmp_path, expected):
    beir_loader = pytest.importorskip("beir.datasets.data_loader")
    out = _export("beir", tmp_path / "beir")
    corpus, queries, qrels = beir_loader.GenericDataLoader(data_folder=str(out)).load(split="test")
    assert corpus == {cid: {"title": t, "text": b} for cid, (t, b) in expected["corpus"].items()}
    assert qrels == expected["qrels"]
    assert queries == {r["id"]: _all_query(r["id"]) for r in expected["records"]}
    assert (out / "qrels" / "test.tsv").read_text().splitlines()[0] == "query-id\tcorpus-id\tscore"
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert [c["corpus-ids"] for c in candidates] == [[c["id"] for c in r["candidates"]] for r in expected["records"]]
    assert [c["scores"] for c in candidates] == [[c["score"] for c in r["candidates"]] for r in expected["records"]]
    manifest = json.loads((out / "dsr_export.json").read_text())
    assert manifest["format"] == "beir" and manifest["renamed_ids"] == 0
    assert set(manifest["files"]) == {"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", "candidates.jsonl"}


def test_hf_export_loads_with_datasets(tmp_path, monkeypatch, expected):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = _export("hf", tmp_path / "hf", "--query", "last")
    cache = str(tmp_path / "hf-cache")

    def load(config, split):
        return datasets.load_dataset(str(out), config, split=split, cache_dir=cache)

    qrels = load("default", "test")
    assert {(r["query-id"], r["corpus-id"], r["score"]) for r in qrels} == {
        (q, d, g) for q, docs in expected["qrels"].items() for d, g in docs.items()
    }
    corpus = load("corpus", "corpus")
    assert {r["_id"]: (r["title"], r["text"]) for r in corpus} == expected["corpus"]
    queries = load("queries", "queries")
    assert [r["_id"] for r in queries] == [r["id"] for r in expected["records"]]
    assert [r["text"] for r in queries] == ["\n".join([t["body"] for t in r["context"]][-1:]) for r in expected["records"]]
    dialogues = load("dialogues", "test")
    first, record = dialogues[0], expected["records"][0]
    assert first["id"] == record["id"] and first["subset"] == record["subset"]
    assert [t["body"] for t in first["context"]] == [t["body"] for t in record["context"]]
    assert [(c["id"], c["label"]) for c in first["candidates"]] == [(c["id"], c["label"]) for c in record["candidates"]]
    assert load("candidates", "test").num_rows == len(expected["records"])


def test_ir_datasets_export_loads_with_ir_datasets(tmp_path, expected):
    import ir_datasets
    from ir_datasets.formats import TrecScoredDocs
    from ir_datasets.util import LocalDownload

    out = _export("ir_datasets", tmp_path / "irds")
    dataset = ir_datasets.create_dataset(
        docs_tsv=str(out / "docs.tsv"), queries_tsv=str(out / "queries.tsv"), qrels_trec=str(out / "qrels.trec")
    )
    assert {d.doc_id: d.text for d in dataset.docs_iter()} == {
        cid: " ".join(body.split()) for cid, (_, body) in expected["corpus"].items()
    }
    assert {q.query_id: q.text for q in dataset.queries_iter()} == {
        r["id"]: " ".join(_all_query(r["id"]).split()) for r in expected["records"]
    }
    got = {}
    for qrel in dataset.qrels_iter():
        got.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert got == expected["qrels"]
    scored = list(TrecScoredDocs(LocalDownload(str(out / "scoreddocs.run"))).scoreddocs_iter())
    assert [(s.query_id, s.doc_id, s.score) for s in scored] == [
        (r["id"], c["id"], c["score"]) for r in expected["records"] for c in r["candidates"]
    ]


def test_trec_export_topics_and_qrels_load_with_ir_datasets_and_ir_measures(tmp_path, expected):
    from ir_datasets.formats import TrecQueries
    from ir_datasets.util import LocalDownload

    out = _export("trec", tmp_path / "trec", "--query", "last2")
    topics = list(TrecQueries(LocalDownload(str(out / "topics.trec"))).queries_iter())
    records = expected["records"]
    assert [t.query_id for t in topics] == [r["id"] for r in records]
    assert [t.title for t in topics] == [" ".join(" ".join(x["body"] for x in r["context"][-2:]).split()) for r in records]
    assert topics[0].description.splitlines() == [
        f"{t['author_name']}: {' '.join(t['body'].split())}" for t in records[0]["context"]
    ]
    assert records[0]["title"] in topics[0].narrative
    tsv = [line.split("\t") for line in (out / "topics.tsv").read_text().splitlines()]
    assert [(q, text) for q, text in tsv] == [(t.query_id, t.title) for t in topics]
    got = {}
    for qrel in ir_measures.read_trec_qrels(str(out / "qrels.txt")):
        got.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
    assert got == expected["qrels"]


def test_qrels_command_writes_graded_trec_qrels_plain_and_gzip(tmp_path, expected):
    plain, packed = tmp_path / "sample.qrels", tmp_path / "sample.qrels.gz"
    assert main(["qrels", "sample", "--out", str(plain)]) == 0
    assert main(["qrels", "sample", "--out", str(packed)]) == 0
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    for path in (plain, packed):
        got = {}
        for qrel in ir_measures.read_trec_qrels(str(path)):
            got.setdefault(qrel.query_id, {})[qrel.doc_id] = qrel.relevance
        assert got == expected["qrels"]
    first = plain.read_text().splitlines()[0].split(" ")
    record = expected["records"][0]
    assert first == [record["id"], "0", record["candidates"][0]["id"], str(record["candidates"][0]["label"])]


def test_graded_labels_are_kept(tmp_path):
    record = _sample_records()[0]
    record["candidates"][0]["label"] = 2
    path = tmp_path / "graded.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert main(["qrels", str(path), "--out", str(tmp_path / "q.txt")]) == 0
    assert (tmp_path / "q.txt").read_text().splitlines()[0].endswith(" 2")
    _export_path = tmp_path / "beir"
    assert main(["export", str(path), "--format", "beir", "--out", str(_export_path)]) == 0
    assert (_export_path / "qrels" / "test.tsv").read_text().splitlines()[1].endswith("\t2")


def _two_dialogues(tmp_path: Path, same_text: bool) -> Path:
    first, second = _sample_records()[:2]
    shared = dict(second["candidates"][0])
    shared["id"] = first["candidates"][0]["id"]
    if same_text:
        shared["title"], shared["body"] = first["candidates"][0]["title"], first["candidates"][0]["body"]
    second["candidates"][0] = shared
    path = tmp_path / "two.jsonl"
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    return path


def test_a_candidate_id_with_two_texts_gets_one_corpus_id_per_text(tmp_path):
    path = _two_dialogues(tmp_path, same_text=False)
    first, second = [json.loads(line) for line in path.read_text().splitlines()]
    cid = first["candidates"][0]["id"]
    out = tmp_path / "beir"
    assert main(["export", str(path), "--format", "beir", "--out", str(out)]) == 0
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    ids = [doc["_id"] for doc in corpus]
    assert len(ids) == len(set(ids))
    assert cid not in ids
    variants = {doc["_id"]: doc["text"] for doc in corpus if doc["_id"].startswith(cid + "~")}
    assert sorted(variants.values()) == sorted([first["candidates"][0]["body"], second["candidates"][0]["body"]])
    qrels = [line.split("\t") for line in (out / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    mapped = {q: d for q, d, _ in qrels if d.startswith(cid + "~")}
    # each dialogue's judgement points at the text that dialogue showed
    by_id = {doc["_id"]: doc["text"] for doc in corpus}
    assert by_id[mapped[first["id"]]] == first["candidates"][0]["body"]
    assert by_id[mapped[second["id"]]] == second["candidates"][0]["body"]
    manifest = json.loads((out / "dsr_export.json").read_text())
    assert manifest["renamed_ids"] == 1
    # the suffix is the documented hash of title + "\n" + body
    c = second["candidates"][0]
    assert (
        mapped[second["id"]] == f"{cid}~" + __import__("hashlib").sha256(f"{c['title']}\n{c['body']}".encode()).hexdigest()[:10]
    )
    assert corpus_id(cid, c["title"], c["body"]) == mapped[second["id"]]


def test_a_candidate_id_with_one_text_is_one_document(tmp_path):
    path = _two_dialogues(tmp_path, same_text=True)
    from dsr.core.data import read_benchmark

    view = TestCollection.build(read_benchmark(path))
    records = [json.loads(line) for line in path.read_text().splitlines()]
    distinct = {c["id"] for r in records for c in r["candidates"]}
    assert set(view.documents) == distinct and not view.renamed


def test_export_refuses_a_folder_of_other_files_and_replaces_an_earlier_export(tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    assert main(["export", "sample", "--format", "trec", "--out", str(busy)]) == 2
    assert "holds files this command does not write (notes.txt)" in capsys.readouterr().err
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    out = _export("trec", tmp_path / "again")
    first = (out / "topics.tsv").read_text()
    _export("trec", out, "--query", "last")
    assert (out / "topics.tsv").read_text() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "busy"]  # no leftovers


def test_export_over_an_earlier_export_keeps_the_users_files(tmp_path, capsys):
    """A folder holding an earlier export and other files is refused, not emptied."""
    out = _export("hf", tmp_path / "out")
    exported = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    mine = {"notes.md": b"my notes\n", "analysis/plot.py": b"print(1)\n", "qrels/extra.tsv": b"q\td\t1\n"}
    for name, data in mine.items():
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_bytes(data)
    for fmt in ("hf", "trec"):
        assert main(["export", "sample", "--format", fmt, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "analysis/, notes.md, qrels/extra.tsv" in err, err
        files = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        assert files == {**exported, **mine}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    # without them, the earlier export (files in a subfolder included) is replaced whole
    for name in mine:
        (out / name).unlink()
    (out / "analysis").rmdir()
    _export("trec", out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "dsr_export.json",
        "qrels.txt",
        "topics.trec",
        "topics.tsv",
    ]


def test_an_export_carries_no_path_of_the_machine(tmp_path):
    """dsr_export.json once named the collection's file (and a built collection's source and
    cache folders): a path of the machine in a file that is shared."""
    copy = tmp_path / "mine.jsonl"
    copy.write_text(data_file().read_text(encoding="utf-8"), encoding="utf-8")
    for fmt in ("hf", "trec", "beir", "ir_datasets"):
        out = _export(fmt, tmp_path / fmt)
        assert main(["export", str(copy), "--format", fmt, "--out", str(tmp_path / f"{fmt}-file")]) == 0
        for folder in (out, tmp_path / f"{fmt}-file"):
            for path in folder.rglob("*"):
                text = path.read_text(encoding="utf-8") if path.is_file() else ""
                assert str(tmp_path) not in text and str(data_file().parent) not in text, path
    manifest = json.loads((tmp_path / "trec-file" / "dsr_export.json").read_text())
    assert manifest["collection"]["name"] == "mine" and "path" not in manifest["collection"].get("meta", {})


def test_export_bad_query_strategy_is_exit_2_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "x"
    assert main(["export", "sample", "--format", "beir", "--out", str(out), "--query", "nope"]) == 2
    assert "unknown query strategy" in capsys.readouterr().err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_cmu_dog_hf_export_loads(tmp_path, monkeypatch, shared_data):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "hf"
    assert (
        main(
            [
                "export",
                "cmu_dog",
                "--source",
                str(shared_data / "cmu_dog"),
                "--split",
                "valid",
                "--format",
                "hf",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    dialogues = datasets.load_dataset(str(out), "dialogues", split="test", cache_dir=str(tmp_path / "c"))
    qrels = datasets.load_dataset(str(out), "default", split="test", cache_dir=str(tmp_path / "c"))
    assert dialogues.num_rows == 502
    assert qrels.num_rows == sum(len(d["candidates"]) for d in dialogues)
    assert max(qrels["score"]) == 2


def test_bad_outputs_and_collections_without_candidates_are_exit_2(tmp_path, capsys):
    assert main(["qrels", "sample", "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    record = _sample_records()[0]
    record["candidates"] = []
    path = tmp_path / "empty.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert main(["export", str(path), "--format", "beir", "--out", str(tmp_path / "e")]) == 2
    assert "no candidates" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()
    (tmp_path / "file").write_text("x")
    assert main(["export", "sample", "--format", "beir", "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
