"""cmu_dog: the build recomputed independently, on the fixture (tests/fixtures/cmu_dog: invented
conversations and documents in the festvox layout) and on the real valid split when
../shared/data/cmu_dog is beside the checkout; silver labels; cache."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pysbd
import pytest
from rank_bm25 import BM25Okapi

from dsr.cli import main
from dsr.collections import cmu_dog
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.errors import InputError
from dsr.core.text import STOPWORDS, content_words, tokenize
from dsr.indexes.bm25 import BM25Index
from tests.support.data import FIXTURES, SHARED_DATA, data_sources

SHARED = SHARED_DATA / "cmu_dog"
#: query points of the valid split as built (the real count is reported in the README)
VALID_POINTS = {"fixture": 7, "shared": 502}


@pytest.fixture(scope="module", params=data_sources("cmu_dog"))
def source(request):
    return request.param


@pytest.fixture(scope="module")
def valid(source, tmp_path_factory):
    """Built by the command users run: dsr data build cmu_dog --source DIR --split valid."""
    out = tmp_path_factory.mktemp("built") / "cmu_dog-valid.jsonl"
    assert main(["data", "build", "cmu_dog", "--source", str(source.path), "--split", "valid", "--out", str(out)]) == 0
    return read_benchmark(out)


# --- an independent, plain re-implementation of the documented rules ----------------


def plain_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", re.sub(r"(?<=[a-z])['\u2019](?=[a-z])", "", text.lower()))
    return {w for w in words if w not in STOPWORDS}


def plain_sentences(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """document stem -> [(sentence id, text)], straight from the README's fields."""
    seg = pysbd.Segmenter(language="en", clean=False)
    squash = lambda t: " ".join(t.split())  # noqa: E731
    docs = {}
    for path in sorted((folder / "WikiData").glob("*.json")):
        raw = json.loads(path.read_text())
        o = raw["0"]
        out = []
        sections = [("introduction", [squash(s) for s in seg.segment(o["introduction"])])]
        sections += [(k, [squash(s) for s in o[k]]) for k in ("cast", "critical_response", "rating")]
        sections.append(
            (
                "facts",
                [
                    f"{squash(o['movieName'])}: directed by {squash(o['director'])}; "
                    f"genre: {squash(o['genre'])}; year: {squash(o['year'])}."
                ],
            )
        )
        sections += [(f"scene{k}", [squash(s) for s in seg.segment(raw[k])]) for k in "123"]
        for name, texts in sections:
            texts = [t for t in texts if t]
            out += [(f"{path.stem}/{name}/{i}", t) for i, t in enumerate(texts)]
        docs[path.stem] = (raw["wikiDocumentIdx"], out)
    return docs


def okapi_scores(okapi: BM25Okapi, query: list[str], seen: dict[str, np.ndarray]) -> np.ndarray:
    """``okapi.get_scores(query)`` to the last bit: rank_bm25 adds each query word's scores in
    the query's order, and here each word's own scores (``get_scores([word])``) are computed once
    per conversation (``seen``), not again in every later turn's query (the history so far)."""
    scores = np.zeros(len(okapi.doc_len))
    for word in query:
        if word not in seen:
            seen[word] = okapi.get_scores([word])
        scores += seen[word]
    return scores


def test_valid_counts_recomputed_independently(source, valid):
    docs = plain_sentences(source.path)
    by_idx = {idx: (stem, sents) for stem, (idx, sents) in docs.items()}
    corpus = [(sid, text) for _, sents in docs.values() for sid, text in sents]
    okapi = BM25Okapi([tokenize(t, stopwords=True, stem=True) or [""] for _, t in corpus])
    files = sorted((source.path / "Conversations" / "valid").glob("*.json"))

    eligible, expected = 0, {}
    for path in files:
        conv = json.loads(path.read_text())
        stem, sents = by_idx[conv["wikiDocumentIdx"]]
        seen: dict[str, np.ndarray] = {}
        for i, turn in enumerate(conv["history"]):
            if i < 2 or turn["uid"] not in conv["whoSawDoc"]:
                continue
            eligible += 1
            want = plain_words(turn["text"])
            if not want:
                continue
            cover = {sid: len(want & plain_words(t)) / len(want) for sid, t in sents}
            rel = {sid: c for sid, c in cover.items() if c >= 0.5}
            if not rel:
                continue
            best = max(rel.values())
            labels = {sid: (2 if c == best else 1) for sid, c in rel.items()}
            query = " ".join(h["text"] for h in conv["history"][:i])
            words = tokenize(query, stopwords=True, stem=True)
            scores = okapi_scores(okapi, words, seen)
            if eligible % 50 == 1:  # the sum is rank_bm25's own
                assert np.array_equal(scores, okapi.get_scores(words))
            scores = scores.round(6)
            ranked = sorted((j for j in range(len(corpus)) if scores[j] > 0), key=lambda j: (-scores[j], corpus[j][0]))[:50]
            pool = {corpus[j][0]: scores[j] for j in ranked}
            if any(sid in labels for sid in pool):
                expected[f"{path.stem}-{i}"] = (pool, labels, turn["docIdx"], i)

    # a builder statistic, not stored in the benchmark file
    assert cmu_dog.build(source.path, "valid").meta["eligible_turns"] == eligible
    assert set(valid.ids) == set(expected)
    assert len(valid) == len(expected) == VALID_POINTS[source.kind]  # counts as built
    for d in valid:
        pool, labels, doc_idx, turn = expected[d.id]
        assert d.subset == f"section{doc_idx}"
        assert len(d.context) == turn
        assert [c.id for c in d.candidates] == list(pool)
        for c in d.candidates:
            assert c.score == pytest.approx(pool[c.id], rel=1e-9, abs=1e-9)
            assert c.label == labels.get(c.id, 0), (d.id, c.id)


def test_valid_shape_and_roles(source, valid):
    d = valid.dialogues[0]
    raw = json.loads((source.path / "Conversations" / "valid" / d.meta["conversation"]).read_text())
    history = raw["history"]
    assert [t.body for t in d.context] == [h["text"] for h in history[: d.meta["turn"]]]
    for t, h in zip(d.context, history):
        assert t.author_name == h["uid"] and t.author_id == raw[f"{h['uid']}_id"]
    assert d.target.author_name in raw["whoSawDoc"]
    assert d.title == json.loads((source.path / "WikiData" / f"{d.meta['document']}.json").read_text())["0"]["movieName"]
    for d in valid:
        scores = [c.score for c in d.candidates]
        assert scores == sorted(scores, reverse=True) and 0 < len(scores) <= 50
        assert all(c.id.startswith(d.meta["document"] + "/") for c in d.relevant)


def test_named_points_are_built_as_the_whole_split_builds_them(source, valid):
    """``build_points`` (what cmu_dog_dev takes from CMU_DoG) reads only the named points'
    conversations and labels only their turns, and gives each point as the whole split's build
    does: context, target, candidates with their scores and labels, subset and meta."""
    every = {d.id: d for d in valid}
    named = sorted(every)[::2] + ["no-such-conversation-3", f"{sorted(every)[0].rsplit('-', 1)[0]}-999"]
    built = cmu_dog.build_points(source.path, {"valid": named, "train": []})
    assert set(built) == {"valid", "train"} and built["train"] == {}
    assert sorted(built["valid"]) == sorted(every)[::2]  # ids that are not query points are left out
    for point_id, d in built["valid"].items():
        assert d == every[point_id]
        assert d.meta == every[point_id].meta
    with pytest.raises(InputError, match="unknown split"):
        cmu_dog.build_points(source.path, {"dev": named})


def test_ids_stable_across_builds_and_round_trip(source, valid, tmp_path):
    again = cmu_dog.build(source.path, "valid")
    assert again.ids == valid.ids
    assert again.content_hash == valid.content_hash
    path = tmp_path / "cmu_dog.jsonl"
    write_benchmark(valid, path)
    assert read_benchmark(path).content_hash == valid.content_hash


def test_parameters_change_the_build(source, valid):
    strict = cmu_dog.build(source.path, "valid", threshold=0.75, pool_size=20)
    assert 0 < len(strict) < len(valid)
    assert all(len(d.candidates) <= 20 for d in strict)
    assert any(len(d.candidates) == 20 for d in strict)
    with pytest.raises(InputError) as err:
        cmu_dog.build(source.path, "valid", treshold=0.4)
    assert err.value.field == "params" and "treshold" in str(err.value)
    with pytest.raises(InputError):
        cmu_dog.build(source.path, "valid", threshold=1.5)
    with pytest.raises(InputError) as err:
        cmu_dog.build(source.path, "dev")
    assert err.value.field == "split"


def test_silver_grades_hand_made():
    sentences = {
        "d/scene1/0": content_words("The shark attacks the swimmers at Amity beach."),
        "d/scene1/1": content_words("A giant shark attacks beachgoers."),
        "d/cast/0": content_words("Roy Scheider as Chief Martin Brody"),
        "d/scene2/0": content_words("Hooper finds a shark tooth."),
    }
    # content words of the target: shark, attacks, beach, scary -> 4
    grades = cmu_dog.silver_grades("The shark attacks at the beach were scary!", sentences, 0.5)
    # scene1/0 covers shark, attacks, beach (3/4) -> best; scene1/1 covers 2/4 = threshold
    assert grades == {"d/scene1/0": 2, "d/scene1/1": 1}
    # a tie for the best coverage: both get grade 2
    assert cmu_dog.silver_grades("shark attacks", sentences, 0.5) == {"d/scene1/0": 2, "d/scene1/1": 2, "d/scene2/0": 1}
    assert cmu_dog.silver_grades("ok, yes it is!", sentences, 0.5) == {}
    assert cmu_dog.silver_grades("Brody was great", sentences, 0.9) == {}


def test_pool_bm25_equals_rank_bm25_defaults():
    corpus = [
        tokenize(t, stopwords=True, stem=True)
        for t in (
            "The shark attacks the swimmers",
            "Brody hunts the shark with Quint",
            "Quint's boat sinks",
            "The mayor keeps the beaches open for the summer",
        )
    ]
    query = tokenize("shark shark boat beaches Quint", stopwords=True, stem=True)
    expected = BM25Okapi(corpus).get_scores(query)
    texts = [
        "The shark attacks the swimmers",
        "Brody hunts the shark with Quint",
        "Quint's boat sinks",
        "The mayor keeps the beaches open for the summer",
    ]
    index = BM25Index([str(i) for i in range(4)], texts, k1=1.5, b=0.75, stopwords=True, stem=True)
    assert index.all_scores(query) == pytest.approx(expected)
    top = cmu_dog.top_positive(index.all_scores(query), 3)
    # only positive scores enter a pool, best first
    assert [j for j, _ in top] == sorted((j for j in range(4) if expected[j] > 0), key=lambda j: -expected[j])[:3]


def _tiny_source(tmp: Path, history: list[dict], who=("user1",)) -> Path:
    (tmp / "WikiData").mkdir(parents=True)
    (tmp / "Conversations" / "valid").mkdir(parents=True)
    doc = {
        "0": {
            "cast": ["Roy Scheider as Chief Martin Brody"],
            "critical_response": ["Scary."],
            "director": "Steven Spielberg",
            "genre": "thriller",
            "introduction": "Jaws is a 1975 film. A shark attacks Amity Island.",
            "movieName": "Jaws",
            "rating": ["IMDB: 8.0/10"],
            "year": "1975",
        },
        "1": "A woman is pulled under. Brody closes the beaches.",
        "2": "Hooper finds a tooth.",
        "3": "Quint's boat sinks. The shark explodes.",
        "wikiDocumentIdx": 2,
    }
    (tmp / "WikiData" / "Jaws.json").write_text(json.dumps(doc))
    conv = {"history": history, "whoSawDoc": list(who), "wikiDocumentIdx": 2, "user1_id": "USR1", "user2_id": "USR2", "rating": 2}
    (tmp / "Conversations" / "valid" / "abc.json").write_text(json.dumps(conv))
    return tmp


def _turn(uid, text, doc_idx=0):
    return {"docIdx": doc_idx, "text": text, "uid": uid, "utcTimestamp": "2018-02-28T18:11:32Z"}


def _history(opening: str) -> list[dict]:
    """A four-turn chat about Jaws whose last turn, a document reader's, is the query point."""
    return [
        _turn("user2", opening),
        _turn("user1", "Jaws, a shark movie"),
        _turn("user2", "what happens on the beaches?"),
        _turn("user1", "Brody closes the beaches after a woman is pulled under", 1),
    ]


def test_tiny_source_and_errors(tmp_path):
    history = _history("hi, what is the movie?")
    folder = _tiny_source(tmp_path / "ok", history)
    built = cmu_dog.build(folder, "valid")
    assert built.ids == ["abc-3"]
    d = built.dialogues[0]
    assert d.subset == "section1" and d.target.author_id == "USR1"
    # target words brody, closes, beaches, woman, pulled: scene1/1 covers 3/5, scene1/0 2/5
    assert {c.id: c.label for c in d.relevant} == {"Jaws/scene1/1": 2}
    # the pool: exactly the sentences sharing a word with the context (jaws, shark, beaches)
    assert {c.id for c in d.candidates} == {
        "Jaws/introduction/0",
        "Jaws/introduction/1",
        "Jaws/facts/0",
        "Jaws/scene1/1",
        "Jaws/scene3/1",
    }

    bad = _tiny_source(tmp_path / "bad", history[:2] + [_turn("user3", "who?")])
    with pytest.raises(InputError) as err:
        cmu_dog.build(bad, "valid")
    assert err.value.field == "history[2].uid" and err.value.path.endswith("abc.json")
    broken = _tiny_source(tmp_path / "broken", history)
    (broken / "WikiData" / "Jaws.json").write_text('{"0": ')
    with pytest.raises(InputError) as err:
        cmu_dog.build(broken, "valid")
    assert err.value.path.endswith("Jaws.json") and err.value.line == 1


def test_load_caches_and_rebuilds_when_stale(tmp_path, dsr_home):
    history = _history("hi")
    folder = _tiny_source(tmp_path / "src", history)
    first = cmu_dog.load(folder, "valid")
    cache = Path(first.meta["cache"])
    assert cache.is_relative_to(dsr_home / "collections")
    stamp = cache.stat().st_mtime_ns
    second = cmu_dog.load(folder, "valid")
    assert second.content_hash == first.content_hash and cache.stat().st_mtime_ns == stamp
    # a damaged cache is rebuilt, not trusted
    cache.write_text(cache.read_text().replace("Brody", "Brady"))
    assert cmu_dog.load(folder, "valid").content_hash == first.content_hash
    # a changed source file is rebuilt
    conv = folder / "Conversations" / "valid" / "abc.json"
    conv.write_text(conv.read_text().replace("after a woman", "after the woman"))
    assert cmu_dog.load(folder, "valid").content_hash != first.content_hash
    with pytest.raises(InputError) as err:
        cmu_dog.load(None, "valid")
    assert "dsr data fetch cmu_dog" in str(err.value) and "--source" in str(err.value)


def test_load_valid_is_fast_the_second_time(source, valid):
    started = time.perf_counter()
    first = cmu_dog.load(source.path, "valid")
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    second = cmu_dog.load(source.path, "valid")
    assert second.content_hash == first.content_hash == valid.content_hash
    assert second.meta["cache"] == first.meta["cache"]
    print(f"cmu_dog valid ({source.kind}): build+cache {build_s:.2f}s, cached load {time.perf_counter() - started:.2f}s")


def test_it_keeps_the_collection_contract_on_its_fixture():
    """dsr.testing's check, the one a plug-in's collection runs: it builds, loads, hashes the
    same twice and through its benchmark file, and exports."""
    from dsr import testing
    from dsr.collections import source_module

    testing.check_collection(source_module("cmu_dog"), FIXTURES / "cmu_dog", "valid", name="cmu_dog")
