"""The corpus at its seams: bounded work on huge paragraphs and tokens, damaged
shards and indexes named (exit 2) by search and pool, empty sources and foreign folders
refused at build."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.indexes.corpus.bm25 import build_bm25
from dsr.indexes.corpus.build import build_corpus
from dsr.indexes.corpus.dense import encode_corpus
from dsr.indexes.corpus.layout import Corpus

ROOT = Path(__file__).resolve().parents[2]
WORDS = (
    "the moon landing was watched by millions of people around the world while engineers in "
    "houston followed every step of the lunar module and its crew"
).split()


def prose(size: int, seed: int = 0) -> str:
    """Sentences of plain words (no abbreviations), one line, about ``size`` characters."""
    rng = random.Random(seed)
    out, length = [], 0
    while length < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))).capitalize() + "."
        out.append(sentence)
        length += len(sentence) + 1
    return " ".join(out)


def _jsonl(path: Path, docs: list[tuple[str, str]]) -> Path:
    path.write_text(
        "".join(json.dumps({"id": str(i), "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(docs)), encoding="utf-8"
    )
    return path


# --- bounded work ------------------------------------------------------------------


def test_a_long_paragraph_is_split_in_pieces_with_the_same_sentences():
    from dsr.indexes.corpus.sentences import MAX_TOKEN_CHARS, _segmenter, chunks, split_sentences

    text = prose(9000)
    pieces = list(chunks(text))
    assert "".join(pieces) == text and len(pieces) >= 5 and max(map(len, pieces)) <= 2000
    assert all(p.rstrip().endswith(".") for p in pieces[:-1])  # cut at sentence ends
    whole = [s.strip() for s in _segmenter().segment(text) if s.strip()]  # pysbd on all of it
    assert split_sentences(text) == whole
    # no sentence end, no space: hard cuts; a token past the cap is cut to it
    assert [len(p) for p in chunks("x" * 4500)] == [2000, 2000, 500]
    assert split_sentences("Before. " + "y" * 5000 + " after.") == ["Before.", "y" * MAX_TOKEN_CHARS + " after."]


BOUNDED = """
import json, resource, sys, time, tracemalloc
from dsr.indexes.corpus.build import build_corpus
from dsr.indexes.corpus.layout import Corpus
long, token, out = sys.argv[1:4]
start = time.process_time()
build_corpus(long, out + "/long")
seconds = time.process_time() - start
tracemalloc.start()
build_corpus(token, out + "/token")
peak = tracemalloc.get_traced_memory()[1]
texts = Corpus(out + "/token").texts(0)
print(json.dumps({"long_cpu_s": seconds, "token_peak": peak, "token_texts": [len(t) for t in texts],
                  "long_sentences": len(Corpus(out + "/long"))}))
"""


@pytest.mark.slow  # megabytes of text built twice
def test_huge_paragraphs_and_tokens_build_in_linear_time_and_bounded_memory(tmp_path):
    """A 500 KB one-line document took minutes (pysbd is quadratic) and a 20 MB
    token 3.2 GB; now seconds, and a peak of Python allocations of a few times the input."""
    text = prose(500_000)
    long = _jsonl(tmp_path / "long.jsonl", [("Long", text)])
    token = _jsonl(tmp_path / "token.jsonl", [("Blob", "It starts. " + "A" * 20_000_000 + " It ends.")])
    done = subprocess.run(
        [sys.executable, "-c", BOUNDED, str(long), str(token), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)
    assert got["long_cpu_s"] < 30, got  # linear: the quadratic splitter takes far longer
    assert got["long_sentences"] == text.count("."), got  # every sentence, none cut
    assert got["token_peak"] < 5 * 20_000_000, got  # measured 2.0x (the JSON line and its text)
    assert got["token_texts"] == [len("It starts."), 1000 + len(" It ends.")], got  # the token cut


# --- building ----------------------------------------------------------------------


def test_a_source_of_empty_documents_is_refused(tmp_path, capsys):
    source = _jsonl(tmp_path / "empty.jsonl", [("A", ""), ("B", "   \n  "), ("C", "")])
    assert main(["corpus", "build", str(source), "--out", str(tmp_path / "c"), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "3 documents hold no sentence" in err and str(source) in err and "Traceback" not in err
    assert not (tmp_path / "c" / "corpus.json").exists()


def test_corpus_build_refuses_a_folder_of_other_files(tmp_path, capsys):
    source = _jsonl(tmp_path / "docs.jsonl", [("A", prose(300))])
    out = tmp_path / "c"
    (out / "shards").mkdir(parents=True)
    (out / "shards" / "notes.txt").write_text("mine")
    assert main(["corpus", "build", str(source), "--out", str(out), "--workers", "0"]) == 2
    assert "shards/notes.txt" in capsys.readouterr().err
    assert [p.name for p in out.rglob("*") if p.is_file()] == ["notes.txt"]


# --- a damaged corpus -------------------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Three shards of prose about three topics, with BM25 and vectors."""
    import os

    tmp = tmp_path_factory.mktemp("seams")
    docs = [(f"Doc {i}", "\n".join(prose(400, seed=10 * i + j) for j in range(3))) for i in range(6)]
    docs[3] = ("Doc 3", "Roman concrete sets under sea water. Tobermorite crystals grow in it.")
    old = os.environ.get("DSR_HOME")
    os.environ["DSR_HOME"] = str(tmp / "home")
    try:
        build_corpus(_jsonl(tmp / "docs.jsonl", docs), tmp / "c", docs_per_shard=2)
        build_bm25(Corpus(tmp / "c"))
        encode_corpus(Corpus(tmp / "c"))
    finally:
        if old is None:
            os.environ.pop("DSR_HOME")
        else:
            os.environ["DSR_HOME"] = old
    return tmp / "c"


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _permute_rows(path: Path) -> None:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pq.write_table(table.take(list(reversed(range(table.num_rows)))), path, compression="zstd")


def _corrupt_vocabulary(folder: Path) -> None:
    """Two tokens' ids swapped: still valid JSON that bm25s loads, every score wrong."""
    path = folder / "vocab.index.json"
    vocab = json.loads(path.read_text())
    a, b = "concrete", "tobermorite"
    vocab[a], vocab[b] = vocab[b], vocab[a]
    path.write_text(json.dumps(vocab))


def _permute_vectors(path: Path) -> None:
    vectors = np.load(path)
    np.save(path, vectors[::-1].copy())


DAMAGE = {
    "truncated shard": ("shards/shard-00001.parquet", _truncate),
    "permuted shard rows": ("shards/shard-00001.parquet", _permute_rows),
    "corrupt BM25 vocabulary": ("bm25/shards/shard-00001", _corrupt_vocabulary),
    "permuted vectors": ("dense/*/vectors/shard-00001.npy", _permute_vectors),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_corpus_is_exit_2_naming_the_file_in_search_and_pool(built, tmp_path, damage, capsys, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(built.parent / "home"))
    corpus = tmp_path / "c"
    shutil.copytree(built, corpus)
    where, spoil = DAMAGE[damage]
    target = next(corpus.glob(where))
    method = "dense" if "vectors" in damage else "bm25"
    query = ["--query", "roman concrete tobermorite", "--method", method]
    assert main(["corpus", "search", str(corpus), *query, "--json"]) == 0  # intact: shard 1 is the hit
    assert json.loads(capsys.readouterr().out)["results"][0]["id"].startswith("Doc_3_3_")
    spoil(target)
    for argv in (
        ["corpus", "search", str(corpus), *query],
        ["pool", "sample", "--corpus", str(corpus), "--method", method, "--depth", "5", "--out", str(tmp_path / "pool.jsonl")],
    ):
        assert main(argv) == 2, (damage, argv)
        captured = capsys.readouterr()
        assert str(target) in captured.err and "Traceback" not in captured.err, captured.err
        assert "damaged" in captured.err and "rebuild it with `dsr corpus" in captured.err
        assert captured.out == ""
    assert not (tmp_path / "pool.jsonl").exists()
