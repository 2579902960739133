"""BM25: scores against a hand computation, pool statistics, weighted queries, caching."""

from __future__ import annotations

import json
import math

import pytest

from dsr.core.data import Candidate, Collection, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.indexes.bm25 import BM25Index, BM25SIndex
from dsr.rankers import make_ranker
from dsr.rankers.bm25 import bm25_search

# Eight tokenised sentences. "the" is in 5 of 8 (over half: Okapi's IDF is
# negative there and gets floored); "cat" in 3, "sat" in 2, "mat" in 1.
CORPUS = [
    "the cat sat on the mat",
    "the dog sat",
    "a cat and a dog",
    "the bird sang",
    "cats are not a cat",
    "the end",
    "the fish swam",
    "birds fly high",
]
IDS = [f"s{i}" for i in range(len(CORPUS))]


def okapi_by_hand(query: list[str], k1: float, b: float, epsilon: float = 0.25) -> list[float]:
    """BM25 Okapi as rank_bm25 defines it, written out.

    idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5)); a negative idf is replaced by
    epsilon * (mean idf over the vocabulary).
    score(d) = sum over query tokens t of idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))
    """
    docs = [s.split() for s in CORPUS]
    n_docs = len(docs)
    avgdl = sum(len(d) for d in docs) / n_docs
    vocab = sorted({t for d in docs for t in d})
    df = {t: sum(t in d for d in docs) for t in vocab}
    raw = {t: math.log(n_docs - df[t] + 0.5) - math.log(df[t] + 0.5) for t in vocab}
    floor = epsilon * sum(raw.values()) / len(raw)
    idf = {t: (v if v >= 0 else floor) for t, v in raw.items()}
    scores = []
    for d in docs:
        total = 0.0
        for t in query:
            tf = d.count(t)
            total += idf.get(t, 0.0) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
        scores.append(total)
    return scores


def plus_by_hand(query: list[str], k1: float, b: float, delta: float) -> list[float]:
    """BM25+: idf = ln((N + 1) / n_t); each query token adds idf * (delta + tf (k1+1) / (k1 (1-b+b|d|/avgdl) + tf))."""
    docs = [s.split() for s in CORPUS]
    avgdl = sum(len(d) for d in docs) / len(docs)
    out = []
    for d in docs:
        total = 0.0
        for t in query:
            n_t = sum(t in doc for doc in docs)
            if not n_t:
                continue
            tf = d.count(t)
            total += math.log((len(docs) + 1) / n_t) * (delta + tf * (k1 + 1) / (k1 * (1 - b + b * len(d) / avgdl) + tf))
        out.append(total)
    return out


def test_okapi_equals_hand_computation():
    index = BM25Index(IDS, CORPUS, variant="okapi", k1=1.2, b=0.75)
    query = ["the", "cat", "mat", "unseen"]
    assert index.scores(query, IDS) == pytest.approx(okapi_by_hand(query, 1.2, 0.75), rel=1e-12)
    # another k1/b without rebuilding: rank_bm25 reads them at scoring time
    index.set_parameters(k1=2.0, b=0.3)
    assert index.scores(query, IDS) == pytest.approx(okapi_by_hand(query, 2.0, 0.3), rel=1e-12)


def test_plus_equals_hand_computation():
    index = BM25Index(IDS, CORPUS, variant="plus", k1=1.5, b=0.5, delta=0.7)
    query = ["cat", "sat", "bird"]
    assert index.scores(query, IDS) == pytest.approx(plus_by_hand(query, 1.5, 0.5, 0.7), rel=1e-12)


@pytest.mark.parametrize("variant, delta", [("okapi", None), ("l", 0.3), ("plus", 0.8)])
def test_scores_equal_rank_bm25_itself(variant, delta):
    import rank_bm25

    cls = {"okapi": rank_bm25.BM25Okapi, "l": rank_bm25.BM25L, "plus": rank_bm25.BM25Plus}[variant]
    extra = {} if delta is None else {"delta": delta}
    reference = cls([s.split() for s in CORPUS], k1=1.1, b=0.6, **extra)
    index = BM25Index(IDS, CORPUS, variant=variant, k1=1.1, b=0.6, delta=delta)
    query = ["the", "cat", "cat", "sat", "bird", "nowhere"]
    assert index.scores(query, IDS) == pytest.approx(reference.get_scores(query), rel=1e-12)
    assert index.scores(query, ["s4", "s1"]) == pytest.approx(reference.get_batch_scores(query, [4, 1]), rel=1e-12)


def test_scores_of_a_subset_use_pool_statistics():
    index = BM25Index(IDS, CORPUS)
    full = okapi_by_hand(["cat", "sat"], 1.2, 0.75)
    assert index.scores(["cat", "sat"], ["s2", "s0"]) == pytest.approx([full[2], full[0]], rel=1e-12)


def test_weighted_query_is_weighted_sum_of_term_scores():
    index = BM25Index(IDS, CORPUS)
    cat, sat = okapi_by_hand(["cat"], 1.2, 0.75), okapi_by_hand(["sat"], 1.2, 0.75)
    got = index.scores({"cat": 0.25, "sat": 1.5}, IDS)
    assert got == pytest.approx([0.25 * c + 1.5 * s for c, s in zip(cat, sat)], rel=1e-12)
    # count weights give exactly the score of the repeated token list
    assert index.scores({"cat": 2, "sat": 1}, IDS) == pytest.approx(okapi_by_hand(["cat", "cat", "sat"], 1.2, 0.75), rel=1e-12)


@pytest.mark.parametrize("variant", ["okapi", "plus"])
def test_bm25s_backend_matches_rank_bm25(variant):
    # No query term in over half the pool: there the two backends agree exactly
    # (bm25s clips a negative Okapi IDF at 0, rank_bm25 floors it; see dsr.indexes.bm25).
    reference = BM25Index(IDS, CORPUS, variant=variant)
    fast = BM25SIndex(IDS, CORPUS, variant=variant)
    query = {"cat": 1.0, "sat": 0.5, "dog": 2.0}
    assert fast.scores(query, IDS) == pytest.approx(reference.scores(query, IDS), rel=1e-5)
    assert [d for d, _ in fast.search(query, 3)] == [d for d, _ in reference.search(query, 3)]


def test_search_breaks_ties_by_pool_order():
    index = BM25Index(IDS, CORPUS)
    top = index.search(["sang", "swam"], 2)  # s3 and s6: equal length, equal idf
    assert [d for d, _ in top] == ["s3", "s6"] and top[0][1] == top[1][1] > 0


def test_cached_index_is_reused_and_rebuilt_when_texts_change(capsys, monkeypatch):
    BM25Index.cached(IDS, CORPUS, name="quiet")
    assert capsys.readouterr().err == ""  # a first build is progress: on a terminal only
    monkeypatch.setattr("dsr.core.quiet.progress_shown", lambda: True)  # stderr a terminal
    BM25Index.cached(IDS, CORPUS, name="tiny")
    assert "building bm25 index" in capsys.readouterr().err
    monkeypatch.undo()  # a rebuild's reason is printed everywhere
    again = BM25Index.cached(IDS, CORPUS, name="tiny", k1=2.0, b=0.3)
    assert capsys.readouterr().err == ""
    query = ["the", "cat"]
    assert again.scores(query, IDS) == pytest.approx(okapi_by_hand(query, 2.0, 0.3), rel=1e-12)
    assert again.scores(["parrot"], ["s7"])[0] == 0
    changed = CORPUS[:-1] + ["a parrot at last"]
    rebuilt = BM25Index.cached(IDS, changed, name="tiny")
    err = capsys.readouterr().err
    assert "rebuilding bm25 index" in err and "inputs changed" in err
    assert rebuilt.scores(["parrot"], ["s7"])[0] > 0


def test_cached_bm25s_rebuilds_when_parameters_change(capsys):
    BM25SIndex.cached(IDS, CORPUS, name="tiny", k1=1.2)
    capsys.readouterr()
    BM25SIndex.cached(IDS, CORPUS, name="tiny", k1=1.2)
    assert capsys.readouterr().err == ""
    index = BM25SIndex.cached(IDS, CORPUS, name="tiny", k1=1.6)
    assert "params changed (k1: 1.2 -> 1.6)" in capsys.readouterr().err
    assert index.scores(["cat"], IDS) == pytest.approx(BM25Index(IDS, CORPUS, k1=1.6).scores(["cat"], IDS), rel=1e-5)


# --- the ranker ------------------------------------------------------------


def collection() -> Collection:
    def cand(cid: str, body: str) -> Candidate:
        return Candidate(cid, "", body, None, 0)

    d1 = Dialogue(
        "d1",
        "Pets",
        [Turn("u", "u", "Does your cat sit on the mat?")],
        None,
        [cand("s0", CORPUS[0]), cand("s1", CORPUS[1]), cand("s5", CORPUS[5]), cand("s6", CORPUS[6])],
    )
    d2 = Dialogue(
        "d2",
        "Birds",
        [Turn("u", "u", "the birds"), Turn("v", "v", "a bird sang")],
        None,
        [cand("s3", CORPUS[3]), cand("s7", CORPUS[7]), cand("s2", CORPUS[2]), cand("s4", CORPUS[4])],
    )
    return Collection("pets", [d1, d2])


def test_ranker_scores_candidates_with_pool_statistics():
    run = make_ranker("bm25", query="last").rank(collection())
    # the pool is all 8 sentences of both dialogues: the hand computation's corpus
    expected = okapi_by_hand("does your cat sit on the mat".split(), 1.2, 0.75)
    assert run.scores("d1")["s0"] == pytest.approx(expected[0], rel=1e-7)  # run scores are float32
    assert run.top("d1")[0] == "s0"
    # d2: "a bird sang" (last) matches s3 only
    assert run.top("d2")[0] == "s3"
    assert run.tag == "bm25-query=last"
    assert run.config["collection"]["hash"] == collection().content_hash
    assert run.config["params"]["k1"] == 1.2


def test_ranker_ties_follow_initial_order():
    pets = collection()
    pets["d1"].context = [Turn("u", "u", "zebra")]  # in no sentence: every score is 0
    run = make_ranker("bm25", query="last").rank(pets)
    assert run.top("d1") == ["s0", "s1", "s5", "s6"]  # the candidates' initial order
    scores = [s for _, s in run.rankings["d1"]]
    assert scores[0] == 0 and all(a > b for a, b in zip(scores, scores[1:]))


def test_ranker_weighted_query_and_tag():
    ranker = make_ranker("bm25", query="weighted", decay=0.2, k1=0.9)
    run = ranker.rank(collection())
    index = BM25Index(IDS, CORPUS, k1=0.9)
    expected = index.scores({"the": 0.2, "birds": 0.2, "a": 1.0, "bird": 1.0, "sang": 1.0}, ["s3"])[0]
    assert run.scores("d2")["s3"] == pytest.approx(expected, rel=1e-7)  # run scores are float32
    assert run.tag == "bm25-query=weighted-decay=0.2-k1=0.9"


def test_ranker_grid_is_modest_and_valid():
    ranker_cls = type(make_ranker("bm25"))
    size = math.prod(len(v) for v in ranker_cls.GRID.values())
    assert 20 <= size <= 40
    for key in ranker_cls.GRID:
        assert key in ranker_cls.DEFAULTS


@pytest.mark.parametrize(
    "params, field",
    [
        ({"query": "first"}, "query"),
        ({"variant": "bm26"}, "variant"),
        ({"k1": -1}, "k1"),
        ({"b": 1.5}, "b"),
        ({"stem": "yes"}, "stem"),
        ({"decay": 0}, "decay"),
        ({"kl": 1.2}, "params"),
    ],
)
def test_ranker_bad_parameters(params, field):
    with pytest.raises(InputError) as err:
        make_ranker("bm25", **params)
    assert err.value.field == field


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_open_retrieval_over_the_pool(backend):
    run = bm25_search(collection(), {"q1": "a cat on a mat", "q2": {"bird": 1.0, "sang": 0.5}}, k=3, backend=backend)
    assert run.top("q1")[0] == "s0"
    assert run.top("q2")[0] == "s3"
    assert len(run.top("q1")) == 3
    pool = {f"p{i}": text for i, text in enumerate(CORPUS)}
    assert bm25_search(pool, {"q": "fish"}, k=1, backend=backend).top("q") == ["p6"]


def test_open_retrieval_unknown_backend():
    with pytest.raises(InputError, match="backend"):
        bm25_search({"a": "x"}, {"q": "x"}, backend="lucene")


def test_cached_index_missing_a_file_or_of_an_older_layout_is_rebuilt(capsys):
    from dsr.indexes.manifest import index_folder

    BM25Index.cached(IDS, CORPUS, name="layout")
    folder = index_folder("bm25", "layout-okapi-sw0-st0")
    (folder / "stats.npz").unlink()
    index = BM25Index.cached(IDS, CORPUS, name="layout")
    assert "missing stats.npz" in capsys.readouterr().err
    assert index.scores(["cat"], ["s0"])[0] > 0
    # an index written by an older version records no (or other) files: rebuilt, not loaded
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["files"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    BM25Index.cached(IDS, CORPUS, name="layout")
    assert "files changed" in capsys.readouterr().err
