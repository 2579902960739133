"""The bundled ``sample`` collection: shape, labels, honest initial scores, loading."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from dsr.collections import load_collection, sample, source_module
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.errors import InputError
from dsr.core.text import content_words, tokenize

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "dsr" / "collections" / "data" / "sample.jsonl"
# <Doc_title>_<docid>_<section>_<passage>_<sentence>, as in the SIGIR 2022 files
SENTENCE_ID = re.compile(r"^(?P<title>.+)_(?P<doc>\d+)_(\d+)_(\d+)_(\d+)$")
URL = re.compile(r"https?://")


@pytest.fixture(scope="module")
def collection():
    return load_collection("sample")


def test_loads_by_name_from_the_package_file(collection):
    assert collection.name == "sample"
    assert len(collection) == 20
    assert Path(collection.meta["path"]).resolve() == PACKAGED.resolve()
    assert source_module("sample") is sample
    assert sample.data_file().is_file()
    assert sample.SOURCE.name == "sample" and "MIT" in sample.SOURCE.licence


def test_ten_plain_and_ten_grounded(collection):
    assert collection.subsets == ["plain", "grounded"]
    assert len(collection.subset("plain")) == 10
    assert len(collection.subset("grounded")) == 10
    assert {d.source for d in collection} == {"sample"}
    assert len({d.subreddit for d in collection}) >= 10


def test_candidates_and_labels(collection):
    sizes = set()
    for d in collection:
        n, rel = len(d.candidates), len(d.relevant)
        sizes.add(n)
        assert 10 <= n <= 50, d.id
        assert rel >= 1, d.id
        assert n - rel >= 3, d.id
        assert {c.label for c in d.candidates} <= {0, 1}, d.id
    assert min(sizes) == 10 and max(sizes) == 50
    assert len(sizes) >= 10  # the sizes vary, not one fixed pool size
    assert len({len(d.relevant) for d in collection}) >= 2


def test_initial_scores_are_non_increasing(collection):
    for d in collection:
        scores = [c.score for c in d.candidates]
        assert all(s is not None for s in scores), d.id
        assert all(a >= b for a, b in zip(scores, scores[1:])), d.id


def test_initial_scores_are_the_documented_bm25(collection):
    # Recomputed here from the loaded dialogues, independently of the generator.
    for d in collection:
        query = " ".join([d.title, *(t.body for t in d.context)])
        bm25 = BM25Okapi([tokenize(c.body, stopwords=True, stem=True) for c in d.candidates])
        expected = bm25.get_scores(tokenize(query, stopwords=True, stem=True))
        assert [c.score for c in d.candidates] == pytest.approx(list(expected), abs=1e-4), d.id
        # ties are listed by id, so the order is the ranker's and nothing else
        keys = [(-c.score, c.id) for c in d.candidates]
        assert keys == sorted(keys), d.id


def test_dialogue_shape(collection):
    for d in collection:
        assert 3 <= len(d.context) <= 6, d.id
        assert d.target is not None and d.title
        opener, target_author = d.context[0].author_id, d.target.author_id
        assert opener != target_author, d.id  # user A asks, user B writes the target
        assert d.context[1].author_id == target_author, d.id
        assert len({t.author_id for t in d.context}) <= 3, d.id
        # SIGIR 2022's filter: every turn has 5 to 70 tokens
        for turn in [*d.context, d.target]:
            assert 5 <= len(tokenize(turn.body)) <= 70, (d.id, turn.body)
        # only the target of a grounded dialogue links (to Wikipedia)
        assert not any(URL.search(t.body) for t in d.context), d.id
        if d.subset == "grounded":
            assert "en.wikipedia.org/wiki/" in d.target.body, d.id
        else:
            assert not URL.search(d.target.body), d.id


def test_sentence_ids_follow_the_sigir_shape(collection):
    seen: dict[str, tuple[str, str]] = {}
    doc_ids: dict[str, str] = {}
    for d in collection:
        for c in d.candidates:
            m = SENTENCE_ID.match(c.id)
            assert m, c.id
            assert m["title"] == c.title.replace(" ", "_"), c.id
            # one document id per title, one sentence per id across dialogues
            assert doc_ids.setdefault(c.title, m["doc"]) == m["doc"], c.id
            assert seen.setdefault(c.id, (c.title, c.body)) == (c.title, c.body), c.id
    appearances = Counter(c.id for d in collection for c in d.candidates)
    # some sentences recur across dialogues under the same id, as in the SIGIR set
    assert sum(n > 1 for n in appearances.values()) > 0
    assert len(collection.sentences()) == len(seen)


def test_not_solvable_by_word_overlap_alone(collection):
    low_overlap_relevant = high_overlap_distractors = wrong_top = 0
    for d in collection:
        words = content_words(" ".join([d.title, *(t.body for t in d.context)]))
        for c in d.candidates:
            shared = len(words & content_words(c.body))
            low_overlap_relevant += c.label > 0 and shared == 0
            high_overlap_distractors += c.label == 0 and shared >= 3
        wrong_top += d.candidates[0].label == 0
    assert low_overlap_relevant >= 10
    assert high_overlap_distractors >= 10
    assert wrong_top >= 5


def test_round_trip_keeps_content_and_hash(collection, tmp_path):
    out = tmp_path / "sample.jsonl"
    write_benchmark(collection, out)
    again = read_benchmark(out)
    assert again.content_hash == collection.content_hash
    assert [d.to_json() for d in again] == [d.to_json() for d in collection]
    # the packaged file is exactly what write_benchmark writes
    assert out.read_bytes() == PACKAGED.read_bytes()


def test_split_keeps_one_subset():
    grounded = load_collection("sample", split="grounded")
    assert len(grounded) == 10 and {d.subset for d in grounded} == {"grounded"}
    assert sample.build(None, "plain").ids == load_collection("sample", split="plain").ids
    assert sample.build(None, None).content_hash == load_collection("sample").content_hash


def test_bad_split_and_params_are_input_errors():
    with pytest.raises(InputError) as err:
        load_collection("sample", split="test")
    assert err.value.field == "split" and "plain" in str(err.value)
    with pytest.raises(InputError) as err:
        sample.build(None, None, threshold=0.5)
    assert "threshold" in str(err.value)


def test_packaged_file_is_what_the_generator_writes(tmp_path):
    # the committed JSONL is reproducible from tools/make_sample.py
    out = tmp_path / "regenerated.jsonl"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_sample.py"), "--out", str(out)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == PACKAGED.read_bytes()
    check = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_sample.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == load_collection("sample").ids
