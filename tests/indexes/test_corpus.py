"""The sentence corpus: sources, sentence ids, shards, BM25 with global statistics,
dense and IVF-PQ search, resumability, pools and the open ranker."""

from __future__ import annotations

import bz2
import json
import os
from pathlib import Path

import numpy as np
import pytest

from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.data import read_benchmark
from dsr.core.errors import InputError
from dsr.core.queries import query_terms
from dsr.indexes.bm25 import BM25SIndex
from dsr.indexes.corpus import bm25 as bm25_module
from dsr.indexes.corpus import build as build_module
from dsr.indexes.corpus.bm25 import ShardedBM25, build_bm25
from dsr.indexes.corpus.build import build_corpus
from dsr.indexes.corpus.dense import ShardedDense, build_ivfpq, encode_corpus
from dsr.indexes.corpus.layout import Corpus
from dsr.open_retrieval.search import CorpusSearcher
from tests.support.tiny_bert import make_tiny_bert

pytestmark = pytest.mark.xdist_group("corpus")  # one worker sets up the module fixtures (tests/support/order.py GROUPS)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Two articles, a redirect, a talk page (namespace 1) and a stub with markup of every kind we strip.
PAGES = [
    (
        "Roman concrete",
        0,
        "101",
        False,
        """{{Short description|Building material}}
{{Infobox material|name=Roman concrete}}
'''Roman concrete''', also called ''opus caementicium'', was used in construction in [[Ancient Rome]].<ref>{{cite book|title=Concrete}}</ref> Like its modern equivalent, it was based on a [[hydraulic cement|hydraulic-setting cement]].

It is durable due to its incorporation of [[volcanic ash]], which prevents cracks from spreading.
[[File:Pantheon dome.jpg|thumb|The dome of the [[Pantheon, Rome|Pantheon]]]]

== History ==
The [[Pantheon, Rome|Pantheon]] in Rome has the largest unreinforced concrete dome. It was built around 126 AD.
{| class="wikitable"
! Year !! Event
|-
| 126 || Pantheon
|}

=== Materials ===
Builders mixed lime with [[pozzolana]]. Seawater reacted with the ash to grow crystals of tobermorite.

== References ==
* {{cite journal|title=Roman seawater concrete}}
[[Category:Concrete]]
""",
    ),
    ("Opus caementicium", 0, "102", True, "#REDIRECT [[Roman concrete]]"),
    ("Talk:Roman concrete", 1, "103", False, "Is this article accurate? I think so."),
    (
        "Tobermorite",
        0,
        "104",
        False,
        """'''Tobermorite''' is a [[calcium silicate hydrate]] mineral.<ref name="a"/> It was first described in 1880 near Tobermory in Scotland.

It forms in Roman marine concrete over many years. Dr. Jackson studied it at the U.C. Berkeley lab.
""",
    ),
]

EXPECTED_XML = [
    ("Roman_concrete_101_0_0_0", "Roman concrete, also called opus caementicium, was used in construction in Ancient Rome."),
    ("Roman_concrete_101_0_0_1", "Like its modern equivalent, it was based on a hydraulic-setting cement."),
    ("Roman_concrete_101_0_1_0", "It is durable due to its incorporation of volcanic ash, which prevents cracks from spreading."),
    ("Roman_concrete_101_1_0_0", "The Pantheon in Rome has the largest unreinforced concrete dome."),
    ("Roman_concrete_101_1_0_1", "It was built around 126 AD."),
    ("Roman_concrete_101_2_0_0", "Builders mixed lime with pozzolana."),
    ("Roman_concrete_101_2_0_1", "Seawater reacted with the ash to grow crystals of tobermorite."),
    ("Tobermorite_104_0_0_0", "Tobermorite is a calcium silicate hydrate mineral."),
    ("Tobermorite_104_0_0_1", "It was first described in 1880 near Tobermory in Scotland."),
    ("Tobermorite_104_0_1_0", "It forms in Roman marine concrete over many years."),
    ("Tobermorite_104_0_1_1", "Dr. Jackson studied it at the U.C. Berkeley lab."),
]


def write_dump(path: Path, pages=PAGES) -> Path:
    """A MediaWiki export (schema 0.10), bz2-compressed, as dumps.wikimedia.org publishes them."""
    from xml.sax.saxutils import escape

    parts = [
        '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">',
        "<siteinfo><sitename>Wikipedia</sitename></siteinfo>",
    ]
    for title, ns, pid, redirect, text in pages:
        parts.append(
            f"<page><title>{escape(title)}</title><ns>{ns}</ns><id>{pid}</id>"
            + (f'<redirect title="{escape(text[12:-2])}" />' if redirect else "")
            + f'<revision><id>9{pid}</id><text bytes="{len(text)}" xml:space="preserve">'
            + escape(text)
            + "</text></revision></page>"
        )
    parts.append("</mediawiki>")
    path.write_bytes(bz2.compress("\n".join(parts).encode("utf-8")))
    return path


def sentences(folder: Path) -> list[tuple[str, str]]:
    corpus = Corpus(folder)
    return [(r["id"], r["text"]) for n in range(len(corpus.names)) for r in corpus.table(n).select(["id", "text"]).to_pylist()]


def sample_docs(path: Path, limit: int | None = None) -> Path:
    """The sample collection's candidate sentences as JSON Lines documents, one per title."""
    docs: dict[str, list[str]] = {}
    for cand in load_collection("sample").sentences().values():
        docs.setdefault(cand.title, []).append(cand.body)
    items = list(docs.items())[:limit]
    path.write_text(
        "".join(json.dumps({"id": str(i), "title": t, "text": "\n".join(b)}) + "\n" for i, (t, b) in enumerate(items)),
        encoding="utf-8",
    )
    return path


# --- sources and sentence ids ------------------------------------------------------


def test_wikipedia_dump_becomes_clean_sentences_with_sigir_ids(tmp_path):
    dump = write_dump(tmp_path / "enwiki-pages-articles.xml.bz2")
    report = build_corpus(dump, tmp_path / "c", docs_per_shard=1)
    assert sentences(tmp_path / "c") == EXPECTED_XML
    manifest = json.loads((tmp_path / "c" / "corpus.json").read_text())
    assert manifest["counts"] == {"documents": 2, "sentences": 11, "shards": 2}
    assert manifest["source"]["format"] == "xml" and len(manifest["source"]["sha256"]) == 64
    assert report.built == ["shard-00000", "shard-00001"] and report.reused == []
    for shard in manifest["shards"]:  # the manifest's checksums are the files'
        import hashlib

        data = (tmp_path / "c" / "shards" / f"{shard['name']}.parquet").read_bytes()
        assert hashlib.sha256(data).hexdigest() == shard["sha256"]


def test_wikiextractor_and_json_lines_give_the_same_sentences(tmp_path):
    docs = [
        {
            "id": "101",
            "title": "Roman concrete",
            "url": "https://en.wikipedia.org/wiki?curid=101",
            "text": "Roman concrete was used in Ancient Rome. It is durable.\n\nThe Pantheon has a dome.",
        },
        {
            "id": "104",
            "title": "Tobermorite",
            "url": "https://en.wikipedia.org/wiki?curid=104",
            "text": "Tobermorite is a mineral.\n== Occurrence ==\nIt forms in Roman marine concrete.",
        },
    ]
    folder = tmp_path / "extracted" / "AA"
    folder.mkdir(parents=True)
    (folder / "wiki_00").write_text(json.dumps(docs[0]) + "\n", encoding="utf-8")
    (folder / "wiki_01.bz2").write_bytes(bz2.compress((json.dumps(docs[1]) + "\n").encode()))
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text("".join(json.dumps({k: d[k] for k in ("id", "title", "text")}) + "\n" for d in docs))
    build_corpus(tmp_path / "extracted", tmp_path / "a")
    build_corpus(jsonl, tmp_path / "b")
    expected = [
        ("Roman_concrete_101_0_0_0", "Roman concrete was used in Ancient Rome."),
        ("Roman_concrete_101_0_0_1", "It is durable."),
        ("Roman_concrete_101_0_1_0", "The Pantheon has a dome."),
        ("Tobermorite_104_0_0_0", "Tobermorite is a mineral."),
        ("Tobermorite_104_1_0_0", "It forms in Roman marine concrete."),
    ]
    assert sentences(tmp_path / "a") == sentences(tmp_path / "b") == expected
    assert json.loads((tmp_path / "a" / "corpus.json").read_text())["source"]["format"] == "wikiextractor"


def test_bad_record_is_exit_2_naming_file_line_and_field(tmp_path, capsys):
    src = tmp_path / "docs.jsonl"
    src.write_text('{"id": "1", "title": "A", "text": "Fine."}\n{"id": "2", "text": "No title."}\n')
    assert main(["corpus", "build", str(src), "--out", str(tmp_path / "c"), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert f"{src}:2" in err and "field 'title'" in err and "Traceback" not in err
    assert not (tmp_path / "c" / "corpus.json").exists()
    bad_xml = tmp_path / "dump.xml.bz2"
    bad_xml.write_bytes(bz2.compress(b"<mediawiki><page><title>A</title>"))
    assert main(["corpus", "build", str(bad_xml), "--out", str(tmp_path / "d"), "--workers", "0"]) == 2
    assert "dump.xml.bz2" in capsys.readouterr().err


# --- BM25 with global statistics ---------------------------------------------------

QUERIES = [
    "why is the sky blue at noon and red at sunset",
    "roman concrete seawater",
    "the",
    "volcano eruption ash",
    "light scattering wavelength of the atmosphere",
]


def test_sharded_bm25_with_global_statistics_equals_one_index(tmp_path):
    build_corpus(sample_docs(tmp_path / "docs.jsonl"), tmp_path / "c", docs_per_shard=40)
    corpus = Corpus(tmp_path / "c")
    assert len(corpus.names) == 5
    build_bm25(corpus)
    sharded = ShardedBM25(corpus)
    texts = [t for _, t in sentences(tmp_path / "c")]
    single = BM25SIndex([str(i) for i in range(len(texts))], texts)
    for query in QUERIES:
        tokens = single.query_tokens(query)
        expected = [(int(i), s) for i, s in single.search(tokens, 30)]
        assert sharded.search(tokens, 30) == expected  # same rows, same scores, same tie order
    # a batch of queries (each shard opened once) gives each query's own result; weighted
    # terms too; nothing of the index stays in memory between searches
    batch = [single.query_tokens(q) for q in QUERIES] + [{"concrete": 2.5, "water": 0.5}, ["zzznotaword"]]
    assert sharded.search_many(batch, 30) == [sharded.search(q, 30) for q in batch]
    assert sharded.search_many(batch, 30)[-2] == [(int(i), s) for i, s in single.search(batch[-2], 30)]
    assert len(sharded._open) == 5 and all(isinstance(m.scores["data"], np.memmap) for m in sharded._open.values())
    streaming = ShardedBM25(corpus)
    streaming.OPEN_SHARDS = 2  # a corpus of more shards than stay open: the same results
    assert streaming.search_many(batch, 30) == sharded.search_many(batch, 30)
    assert [streaming.search(q, 30) for q in batch] == [sharded.search(q, 30) for q in batch]
    assert list(streaming._open) == [3, 4]
    # The global statistics are what makes this true: each shard on its own scores differently.
    rows = range(int(corpus.offsets[1]), int(corpus.offsets[2]))
    local = BM25SIndex([str(r) for r in rows], [texts[r] for r in rows])
    tokens = single.query_tokens(QUERIES[0])
    assert not np.allclose(local.all_scores(tokens), single.all_scores(tokens)[list(rows)])


def test_killed_builds_resume_from_finished_shards(tmp_path, monkeypatch):
    src = sample_docs(tmp_path / "docs.jsonl")
    real_write, real_index = build_module.write_shard, bm25_module.index_shard

    def dies_on_shard_2(folder, number, *args):
        if number == 2:
            raise KeyboardInterrupt  # the user's ^C, or a killed worker
        return real_write(folder, number, *args)

    monkeypatch.setattr(build_module, "write_shard", dies_on_shard_2)
    with pytest.raises(KeyboardInterrupt):
        build_corpus(src, tmp_path / "c", docs_per_shard=40)
    assert not (tmp_path / "c" / "corpus.json").exists()
    monkeypatch.setattr(build_module, "write_shard", real_write)
    report = build_corpus(src, tmp_path / "c", docs_per_shard=40)
    assert report.reused == ["shard-00000", "shard-00001"]
    assert report.built == ["shard-00002", "shard-00003", "shard-00004"]
    build_corpus(src, tmp_path / "fresh", docs_per_shard=40)
    for n in range(5):
        name = f"shard-{n:05d}.parquet"
        assert (tmp_path / "c" / "shards" / name).read_bytes() == (tmp_path / "fresh" / "shards" / name).read_bytes()

    # a damaged shard (checksum no longer matches) is rebuilt, the others are not
    (tmp_path / "c" / "shards" / "shard-00003.parquet").write_bytes(b"garbage")
    assert build_corpus(src, tmp_path / "c", docs_per_shard=40).built == ["shard-00003"]

    corpus = Corpus(tmp_path / "c")

    def index_dies_on_shard_1(corpus_dir, number, key):
        if number == 1:
            raise KeyboardInterrupt
        return real_index(corpus_dir, number, key)

    monkeypatch.setattr(bm25_module, "index_shard", index_dies_on_shard_1)
    with pytest.raises(KeyboardInterrupt):
        build_bm25(corpus)
    monkeypatch.setattr(bm25_module, "index_shard", real_index)
    report = build_bm25(corpus)
    assert sorted(report.reused) == [f"counts/shard-{n:05d}" for n in range(5)] + ["shards/shard-00000"]
    assert report.built == [f"shards/shard-{n:05d}" for n in range(1, 5)]
    assert build_bm25(corpus).built == []  # everything done: nothing to do


# --- dense: flat and IVF-PQ --------------------------------------------------------


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The sample's sentences as a corpus of 5 shards, with BM25, vectors (all-MiniLM-L6-v2) and IVF-PQ."""
    import os

    tmp = tmp_path_factory.mktemp("corpus")
    old = os.environ.get("DSR_HOME")
    os.environ["DSR_HOME"] = str(tmp / "home")
    try:
        build_corpus(sample_docs(tmp / "docs.jsonl"), tmp / "c", docs_per_shard=40)
        corpus = Corpus(tmp / "c")
        build_bm25(corpus)
        encode_corpus(corpus)
        build_ivfpq(corpus, params={"m": 16, "nlist": 4})
    finally:
        if old is None:
            os.environ.pop("DSR_HOME", None)
        else:
            os.environ["DSR_HOME"] = old
    return tmp / "c"


def test_flat_search_is_exact_cosine_over_all_shards(indexed):
    corpus = Corpus(indexed)
    flat = ShardedDense(corpus)
    vectors = np.concatenate([np.load(p) for p in sorted(indexed.glob("dense/*/vectors/*.npy"))])
    assert vectors.shape == (len(corpus), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    queries = flat.encode(QUERIES)
    for q, got in zip(queries, flat.search_vectors(queries, 20)):
        scores = vectors.astype(np.float64) @ q
        order = np.lexsort((np.arange(len(scores)), -scores))[:20]
        assert [r for r, _ in got] == order.tolist()
        assert np.allclose([s for _, s in got], scores[order], atol=1e-6)


def test_flat_search_settles_near_ties_so_every_machine_gets_one_top_k(indexed, monkeypatch):
    """fp32 products differ in their last bits between machines (the BLAS, the CPU); ``search``
    settles the near ties at and across the k-th place in float64 (embeddings.settled_top_k).
    "Another machine": the same vectors with noise, scaled up with the margin (1e-4 and 3e-3,
    30 times apart, as fp32's 3e-7 and NEAR_TIE's 1e-5)."""
    from dsr.indexes import embeddings
    from dsr.indexes.corpus import dense as corpus_dense

    monkeypatch.setattr(embeddings, "NEAR_TIE", 3e-3)
    met = []
    real = corpus_dense.settled_top_k

    def spy(found, queries, texts_of, k, model, backend="torch"):
        met.append(sum(len(f) for f in found) - k * len(found))  # rows past the cut, within the margin
        return real(found, queries, texts_of, k, model, backend)

    monkeypatch.setattr(corpus_dense, "settled_top_k", spy)
    corpus = Corpus(indexed)
    orders, unsettled = [], []
    for seed in range(3):
        flat = ShardedDense(corpus)
        rng = np.random.default_rng(seed)
        flat.vectors = [(np.asarray(v) + rng.uniform(-1e-4, 1e-4, v.shape)).astype(np.float32) for v in flat.vectors]
        clean = flat.encode
        flat.encode = lambda queries, clean=clean, rng=rng: (
            clean(queries) + rng.uniform(-1e-4, 1e-4, (len(queries), 384))
        ).astype(np.float32)
        orders.append([[r for r, _ in hits] for hits in flat.search(QUERIES, 20)])
        unsettled.append([[r for r, _ in hits] for hits in flat.search_vectors(flat.encode(QUERIES), 20)])
    assert sum(met) > 0, "no near tie at the cut: the test would prove nothing"
    assert orders[0] == orders[1] == orders[2]
    assert not unsettled[0] == unsettled[1] == unsettled[2], "the noise moved nothing: the test would prove nothing"


def test_ivfpq_is_approximate_and_exact_when_it_visits_and_refines_everything(indexed):
    corpus = Corpus(indexed)
    flat = ShardedDense(corpus)
    queries = flat.encode(QUERIES)
    truth = [[r for r, _ in ranked] for ranked in flat.search_vectors(queries, 10)]
    marker = json.loads(next(indexed.glob("dense/*/ivfpq/index.done.json")).read_text())
    assert marker["settings"]["nlist"] == 4 and marker["settings"]["m"] == 16
    everything = ShardedDense(corpus, kind="ivfpq", nprobe=4, refine=len(corpus))
    assert [[r for r, _ in ranked] for ranked in everything.search_vectors(queries, 10)] == truth
    pq_only = ShardedDense(corpus, kind="ivfpq", nprobe=4)
    found = pq_only.search_vectors(queries, 10)
    # PQ scores are approximate (here 2-bit codes trained on 221 vectors; the benchmark measures
    # recall at scale): ten distinct corpus rows per query, scores not increasing
    for ranked in found:
        rows = [r for r, _ in ranked]
        assert len(set(rows)) == 10 and all(0 <= r < len(corpus) for r in rows)
        assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    ivfdata = next(indexed.glob("dense/*/ivfpq/index.ivfdata")).stat().st_size
    code_size = pq_only.index.code_size  # m x nbits / 8 bytes: 16 x 2 bits here
    assert code_size == 4 and ivfdata >= len(corpus) * (code_size + 8)  # codes and 8-byte ids, on disk


# --- pools, stats and the open ranker ----------------------------------------------


def test_pool_cli_writes_a_benchmark_file_that_stats_reads(indexed, tmp_path, capsys):
    out = tmp_path / "pool.jsonl"
    assert main(["pool", "sample", "--corpus", str(indexed), "--depth", "50", "--method", "bm25", "--out", str(out)]) == 0
    pooled = read_benchmark(out)
    sample = load_collection("sample")
    assert pooled.ids == sample.ids
    corpus = Corpus(indexed)
    texts = [t for _, t in sentences(indexed)]
    ids = [i for i, _ in sentences(indexed)]
    single = BM25SIndex([str(i) for i in range(len(texts))], texts)
    for dialogue, original in zip(pooled, sample):
        assert len(dialogue.candidates) == 50
        assert {c.label for c in dialogue.candidates} == {0} and dialogue.meta["judged"] is False
        assert dialogue.context == original.context and dialogue.target == original.target
        # independently: one bm25s index over every corpus sentence, the same query terms
        expected = single.search(query_terms(original, "all"), 50)
        assert [c.id for c in dialogue.candidates] == [ids[int(r)] for r, _ in expected]
        assert [c.score for c in dialogue.candidates] == [s for _, s in expected]
    assert len(corpus) == len(texts)
    capsys.readouterr()
    assert main(["stats", str(out), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["all"]["dialogues"] == 20 and stats["all"]["candidates_per_dialogue"]["mean"] == 50
    assert stats["all"]["labels"] == {"0": 20 * 50}


def test_pool_of_ccpe_dialogues_fused(indexed, tmp_path):
    out = tmp_path / "ccpe-pool.jsonl"
    assert (
        main(
            [
                "pool",
                "ccpe",
                "--source",
                str(FIXTURES / "ccpe"),
                "--corpus",
                str(indexed),
                "--method",
                "fused",
                "--depth",
                "10",
                "--query",
                "last2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    pooled = read_benchmark(out)
    ccpe = load_collection("ccpe", source=FIXTURES / "ccpe")
    assert pooled.ids == ccpe.ids and all(len(d.candidates) == 10 for d in pooled)
    searcher = CorpusSearcher(indexed, "fused")
    # RRF of the two lists: a sentence first in both gets 2/61; scores never increase down the list
    for d in pooled:
        scores = [c.score for c in d.candidates]
        assert scores == sorted(scores, reverse=True) and scores[0] <= 2 / 61 + 1e-12
        assert d.meta["pool"]["method"] == "fused" and d.meta["pool"]["query"] == "last2"
    assert searcher.describe()["fusion"] == {"method": "rrf", "k": 60}


def test_run_with_the_open_ranker(indexed, tmp_path):
    run_path = tmp_path / "open.run"
    assert (
        main(
            [
                "run",
                "sample",
                "--ranker",
                "open",
                "--param",
                f"corpus={indexed}",
                "method=dense",
                "depth=5",
                "--out",
                str(run_path),
            ]
        )
        == 0
    )
    lines = [line.split() for line in run_path.read_text().splitlines()]
    assert len(lines) == 20 * 5
    sidecar = json.loads(run_path.with_name("open.run.json").read_text())
    assert sidecar["params"]["method"] == "dense" and sidecar["search"]["sentences"] == len(Corpus(indexed))
    corpus_ids = {i for i, _ in sentences(indexed)}
    assert all(line[2] in corpus_ids for line in lines)


def test_corpus_search_cli(indexed, capsys):
    assert main(["corpus", "search", str(indexed), "--query", "why is the sunset red", "-k", "3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["query"] == "why is the sunset red" and [r["rank"] for r in result["results"]] == [1, 2, 3]
    assert main(["corpus", "search", str(indexed.parent / "nothing"), "--query", "x"]) == 2


# --- Ray -------------------------------------------------------------------------


@pytest.mark.slow
def test_ray_and_in_process_build_the_same_corpus_and_indexes(tmp_path, monkeypatch):
    """Every stage on a local Ray (one session: corpus, BM25, vectors on torch and on OpenVINO,
    then IVF-PQ shards added by Ray tasks) equals the in-process build. The vectors are a tiny
    BERT's (which model encodes is not the point: that the Ray encoder actor's vectors are the
    in-process ones, to float rounding on torch and identical on a fast backend)."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install '.[distributed]')")
    # Ray kills workers when the *machine* is above 95 % memory; on a shared test machine that is
    # other people's memory (our actors use ~0.5 GB each): let the local Ray run up to 99.5 %.
    monkeypatch.setenv("RAY_memory_usage_threshold", "0.995")
    # Ray runs its workers at nice 15 (RAY_worker_niceness). Beside a full run's other xdist
    # workers (nice 0) they got a few % of a core, and this test spent nearly all of a full run
    # waiting. At 0 its time is its own cost.
    monkeypatch.setenv("RAY_worker_niceness", "0")
    from dsr.indexes.corpus.distributed import Executor

    src = sample_docs(tmp_path / "docs.jsonl", limit=24)
    model = str(make_tiny_bert(tmp_path / "tiny", src.read_text().splitlines(), num_labels=None))
    results = {}
    for name, workers in (("local", 0), ("ray", 2)):
        executor = Executor(workers)
        with executor:  # one Ray session (ray.init(num_cpus=2)) for the stages
            build_corpus(src, tmp_path / name, docs_per_shard=6, executor=executor)
            corpus = Corpus(tmp_path / name)
            build_bm25(corpus, executor=executor)
            encode_corpus(corpus, model, executor=executor)
            encode_corpus(corpus, model, executor=executor, backend="openvino")  # the encoder on a fast backend
            assert ray.is_initialized() == bool(workers)
            if workers:  # a local Ray's workers inherit this process's DSR_HOME and this checkout

                def seen():
                    import dsr

                    return os.environ.get("DSR_HOME"), dsr.__file__

                import dsr

                assert ray.get(ray.remote(seen).remote()) == (os.environ.get("DSR_HOME"), dsr.__file__)
                # IVF-PQ shards added by Ray tasks (in this session) equal those added in-process
                # (same trained index, same vectors)
                local = results["local"]
                build_ivfpq(local, model, params={"m": 8, "nlist": 2})
                first = {p.name: p.read_bytes() for p in local.folder.glob("dense/*/ivfpq/*.faiss")}
                for p in local.folder.glob("dense/*/ivfpq/*"):
                    if p.name != "trained.faiss" and not p.name.startswith("trained"):
                        p.unlink()
                report = build_ivfpq(local, model, params={"m": 8, "nlist": 2}, executor=executor)
                assert report.reused == ["ivfpq/trained"] and len(report.built) == 5
                assert {p.name: p.read_bytes() for p in local.folder.glob("dense/*/ivfpq/*.faiss")} == first
        results[name] = corpus
        assert not ray.is_initialized()  # the executor shut its Ray down
    local, remote = results["local"], results["ray"]
    assert len(local.names) == 4
    for rel in [f"shards/{n}.parquet" for n in local.names] + ["bm25/global.parquet"]:
        assert (local.folder / rel).read_bytes() == (remote.folder / rel).read_bytes(), rel
    folders = sorted(p.name for p in (local.folder / "dense").iterdir())
    assert len(folders) == 2 and folders[1] == folders[0] + "+openvino"
    vectors = {
        (k, f): np.concatenate([np.load(p) for p in sorted((c.folder / "dense" / f / "vectors").glob("*.npy"))])
        for k, c in results.items()
        for f in folders
    }
    # the same model on other batches and threads: equal to float rounding
    assert vectors["local", folders[0]].shape == (len(local), 32)
    assert np.allclose(vectors["local", folders[0]], vectors["ray", folders[0]], atol=1e-5)
    # the encoder actor on a fast backend (the export in DSR_HOME, fed as in-process): identical vectors
    assert np.array_equal(vectors["local", folders[1]], vectors["ray", folders[1]])
    for c in results.values():
        assert [ShardedBM25(c).search(ShardedBM25(c).query_tokens(q), 10) for q in QUERIES] == [
            ShardedBM25(local).search(ShardedBM25(local).query_tokens(q), 10) for q in QUERIES
        ]
        assert [[r for r, _ in x] for x in ShardedDense(c, model).search(QUERIES, 10)] == [
            [r for r, _ in x] for x in ShardedDense(local, model).search(QUERIES, 10)
        ]


def test_parts_encode_disjoint_shards_and_the_last_run_completes_the_corpus(tmp_path, capsys):
    src = sample_docs(tmp_path / "docs.jsonl", limit=24)
    model = str(make_tiny_bert(tmp_path / "tiny", src.read_text().splitlines(), num_labels=None))
    build_corpus(src, tmp_path / "c", docs_per_shard=6)
    corpus = Corpus(tmp_path / "c")
    first = encode_corpus(corpus, model, part="1/3")
    assert first.built == ["vectors/shard-00000", "vectors/shard-00003"] and first.reused == []
    assert not list(corpus.folder.glob("dense/*/model.json"))  # the corpus is not complete yet
    assert encode_corpus(corpus, model, part=(2, 3)).built == ["vectors/shard-00001"]
    last = encode_corpus(corpus, model, part="3/3")  # the last part completes it: the model file
    assert last.built == ["vectors/shard-00002"] and len(last.reused) == 3
    assert encode_corpus(corpus, model).built == []
    assert len(list(corpus.folder.glob("dense/*/model.json"))) == 1
    build_corpus(src, tmp_path / "w", docs_per_shard=6)
    whole = Corpus(tmp_path / "w")
    encode_corpus(whole, model)
    assert [[r for r, _ in x] for x in ShardedDense(corpus, model).search(QUERIES, 10)] == [
        [r for r, _ in x] for x in ShardedDense(whole, model).search(QUERIES, 10)
    ]
    for bad in ("0/2", "3/2", "x", "1/0"):
        with pytest.raises(InputError, match="K/N") as err:
            encode_corpus(corpus, model, part=bad)
        assert err.value.field == "part"
    assert main(["corpus", "index", str(corpus.folder), "--dense", "--index", "ivfpq", "--part", "1/2", "--workers", "0"]) == 2
    assert "--part shares the encoding" in capsys.readouterr().err


def test_a_rebuilt_corpus_is_not_searched_with_its_old_indexes(tmp_path, capsys):
    src = tmp_path / "docs.jsonl"
    src.write_text(json.dumps({"id": "1", "title": "A", "text": "Roman concrete sets under water."}) + "\n")
    build_corpus(src, tmp_path / "c")
    build_bm25(Corpus(tmp_path / "c"))
    assert ShardedBM25(Corpus(tmp_path / "c")).search(["concrete"], 1)[0][0] == 0
    src.write_text(json.dumps({"id": "1", "title": "A", "text": "Tobermorite is a mineral."}) + "\n")
    build_corpus(src, tmp_path / "c")
    assert main(["corpus", "search", str(tmp_path / "c"), "--query", "concrete"]) == 2
    assert "no BM25 index (or it is out of date)" in capsys.readouterr().err
    assert main(["corpus", "index", str(tmp_path / "c"), "--bm25", "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["corpus", "search", str(tmp_path / "c"), "--query", "mineral", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in result["results"]] == ["A_1_0_0_0"]


def test_ivfpq_keeps_no_shard_files_and_reuses_the_merged_index(indexed):
    """After the merge only the trained and merged indexes remain (the per-shard files took
    4-6x the merged index on disk), and a rerun reuses the index without rebuilding shards."""
    import os

    folder = next(indexed.glob("dense/*/ivfpq"))
    assert sorted(p.name for p in folder.iterdir()) == [
        "index.done.json",
        "index.faiss",
        "index.ivfdata",
        "trained.done.json",
        "trained.faiss",
    ]
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    old = os.environ.get("DSR_HOME")
    os.environ["DSR_HOME"] = str(indexed.parent / "home")
    try:
        report = build_ivfpq(Corpus(indexed), params={"m": 16, "nlist": 4})
    finally:
        if old is None:
            os.environ.pop("DSR_HOME", None)
        else:
            os.environ["DSR_HOME"] = old
    assert report.built == [] and report.reused == ["ivfpq/trained", "ivfpq/index"]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_ivfpq_lists_grow_with_the_corpus():
    """The default training sample grows with nlist = 4 sqrt(N): it no longer caps the lists
    at 100,000 / 39 = 2,564; a train_size given still caps them."""
    from dsr.indexes.corpus.dense import check_ivfpq, ivfpq_sample_size, ivfpq_settings

    p = check_ivfpq({})
    for sentences, lists in ((10_000, 256), (100_000, 1_265), (1_000_000, 4_000), (150_000_000, 48_990)):
        sample = ivfpq_sample_size(sentences, p)
        assert ivfpq_settings(sentences, sample, 384, p)["nlist"] == lists
        assert sample == min(sentences, max(100_000, 39 * lists))
    capped = check_ivfpq({"train_size": 100_000})
    assert ivfpq_settings(150_000_000, ivfpq_sample_size(150_000_000, capped), 384, capped)["nlist"] == 2_564


@pytest.mark.slow
def test_a_fast_backend_indexes_apart_and_ranks_like_torch(indexed, monkeypatch, exports):
    """`dsr corpus index --backend openvino`: the vectors and their search live beside torch's
    (other digits, other folder), queries are encoded with the same backend, and the top 10
    of each query are torch's (fp32 OpenVINO agrees with torch to about 6 digits). The encoder
    actor on a fast backend is tested in the Ray test above (one Ray session for both)."""
    from dsr.core.errors import InputError
    from dsr.indexes import backends

    monkeypatch.setenv("DSR_HOME", str(indexed.parent / "home"))
    exports.seed(indexed.parent / "home", "all-MiniLM-L6-v2", "bi-encoder", "openvino")  # the run's one export
    corpus = Corpus(indexed)
    report = encode_corpus(corpus, backend="openvino")
    assert len(report.built) == len(corpus.names)
    folders = sorted(p.name for p in (indexed / "dense").iterdir())
    assert len(folders) == 2 and folders[1] == folders[0] + "+openvino"
    torch_search, fast = ShardedDense(corpus), ShardedDense(corpus, backend="openvino")
    assert [[r for r, _ in x] for x in fast.search(QUERIES, 10)] == [[r for r, _ in x] for x in torch_search.search(QUERIES, 10)]
    assert encode_corpus(corpus, backend="openvino").built == []  # resumable as ever
    # (the encoder actor of a local Ray on a fast backend: test_ray_and_in_process_build_the_same_corpus_and_indexes)
    assert backends.resolve_backend("auto") in ("torch", "openvino-int8")
    with pytest.raises(InputError):
        backends.resolve_backend("cuda")
