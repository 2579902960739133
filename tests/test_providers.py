"""Every fast path of dsr/core/providers.py equals its reference, on random inputs and on
adversarial ones: scores that tie as float32 but not as doubles, negative grades, topics the
run lacks or that judge nothing relevant, identical texts. One check per entry of the table,
each calling the reference and the fast path the table names; an entry without a check (or a
check without an entry) fails the first test."""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from dsr.core.providers import BY_NAME, PROVIDERS, Provider
from dsr.core.run import Run
from tests.support.order import RANX

pytestmark = RANX  # one worker compiles ranx (tests/support/order.py)

ROOT = Path(__file__).resolve().parents[1]
#: scores that tie as float32 but not as doubles, ties in both, negatives, tiny ones
SCORES = (0.3, 0.30000001, 0.25, 0.25, 2.0, -1.5, -1.50000001, 1e-8, 7.0)
GRADES = (-2, -1, 0, 0, 1, 2)
WORDS = "the sky is blue red at noon sunset light sea water roman concrete ash volcano cat sat".split()


def load(where: str):
    module, _, attribute = where.partition(":")
    obj = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


def scored_runs(rng, topics: dict[str, list[str]], n: int = 3, drop: float = 0.3) -> list[dict[str, dict[str, float]]]:
    """``n`` runs over ``topics`` (topic -> its documents), scores from :data:`SCORES` (ties
    everywhere), each run leaving out some documents and one topic."""
    runs = []
    for k in range(n):
        run = {}
        for t, (qid, docs) in enumerate(topics.items()):
            if t == k % len(topics) and k:  # a topic this run lacks
                continue
            kept = [d for d in docs if rng.random() > drop] or docs[:1]
            run[qid] = {d: float(rng.choice(SCORES)) + (0.0 if rng.random() < 0.5 else float(rng.integers(0, 3))) for d in kept}
        runs.append(run)
    return runs


def topics_of(rng, n_topics: int = 6, pool: int = 12) -> dict[str, list[str]]:
    return {f"q{t}": [f"d{int(i):02d}" for i in rng.choice(40, size=pool, replace=False)] for t in range(n_topics)}


def qrels_of(rng, topics: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Grades from :data:`GRADES` (negative ones too); the first topic judges nothing relevant,
    and one topic of the qrels is in no run (``qx``)."""
    qrels = {q: {d: int(rng.choice(GRADES)) for d in docs if rng.random() < 0.8} for q, docs in topics.items()}
    qrels["q0"] = {d: int(rng.choice((-1, 0))) for d in topics["q0"]}
    qrels["qx"] = {"d99": 1, "d98": 0}
    return qrels


# --- one check per provider ------------------------------------------------------------


def check_run_parser(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.board.runcheck import PairIndex
    from dsr.collections.synthetic import make_collection

    parse, read = load(provider.fast), load(provider.reference)
    collection = make_collection(n=8, candidates=6, seed=int(rng.integers(1000)))
    index = PairIndex.of(collection)
    lines = [
        f"{d.id} Q0 {c.id} {rank} {float(rng.choice(SCORES))!r} tag{rank % 2}"
        for d in collection.dialogues
        for rank, c in enumerate(rng.permutation(d.candidates))
    ]
    path = tmp_path / "run.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = parse(index, path.read_bytes())
    assert parsed is not None and parsed.lines == len(lines)
    expected = read(path)
    assert list(parsed.scores) == collection.ids
    assert {q: list(s.items()) for q, s in parsed.scores.items()} == {q: list(s.items()) for q, s in expected.as_dict().items()}
    assert sorted(parsed.tied_topics) == sorted(expected.tied_topics())
    lacking = "\n".join(line for line in lines if not line.startswith(collection.ids[0] + " "))
    assert parse(index, lacking.encode()) is None  # a topic the run lacks: the reference decides


def check_measure_engine(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.evaluation.measures import Evaluator, parse_measures

    assert load(provider.reference) and load(provider.fast)
    topics = topics_of(rng)
    qrels = qrels_of(rng, topics)
    measures = parse_measures(
        ["P@1", "P@5", "R@5", "RR", "RR(rel=2)", "AP", "AP@5", "nDCG", "nDCG@3", "NumRet", "NumRet(rel=1)", "NumRel", "NumQ"]
        + ["P(judged_only=True)@3"]
    )
    arrays, reference = Evaluator(qrels, measures, list(qrels)), Evaluator(qrels, measures, list(qrels), arrays=False)
    assert len(arrays._specs) == len(measures)  # every one on the fast path
    for scores in scored_runs(rng, topics):
        run = Run.from_scores(scores)
        got, want = arrays(run), reference(run)
        assert np.array_equal(got.values, want.values), np.argwhere(got.values != want.values)[:5]


#: dsr's kernels with the parameters ranx's equivalents take
KERNELS = {"rrf": {"k": 60}, "isr": {}, "borda": {}, "combsum": {}, "combmnz": {}, "wsum": {"weights": "0.2,0.3,0.5"}}


def check_fusion_kernels(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.core.fusion import fused_run

    kernels, reference = load(provider.fast), load(provider.reference)
    runs = [Run.from_scores(s) for s in scored_runs(rng, topics_of(rng, pool=8))]
    for method, params in {**KERNELS, "interp": {"weight": 0.7}}.items():
        fused = runs[:2] if method == "interp" else runs
        own = {k: [float(w) for w in v.split(",")] if k == "weights" else v for k, v in params.items()}
        mine, ranx_own = kernels[method](fused, **own), reference(fused, method, backend="dsr", **params)[0]
        assert _orders(fused_run(mine, "dsr")) == _orders(fused_run(ranx_own, "ranx")), method
        for qid, docs in mine.items():
            a, b = np.array([docs[d] for d in sorted(docs)]), np.array([ranx_own[qid][d] for d in sorted(docs)])
            if method == "borda":  # ranx's points are dsr's plus one number per topic
                a, b = a - a.max(), b - b.max()
            assert a == pytest.approx(b, rel=1e-9, abs=1e-9), (method, qid)


def check_aligned_rrf(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.collections.synthetic import make_collection, make_run
    from dsr.core.fusion import fuse

    assert load(provider.reference) and load(provider.fast)
    collection = make_collection(n=10, candidates=7, seed=int(rng.integers(1000)))
    runs = [make_run(collection, seed=int(rng.integers(1000)), ties=bool(k % 2)) for k in range(3)]
    order = collection.initial_order()
    k = float(rng.choice((1, 60)))
    aligned, plain = fuse(runs, "rrf", k=k, initial_order=order), fuse(runs, "rrf", k=k)
    assert aligned.rankings == plain.rankings


def texts_of(rng, n: int = 40) -> list[str]:
    """Sentences of a small vocabulary (terms in over half of them: negative Okapi IDFs), with
    identical texts (tied scores in every variant)."""
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]
    return texts + texts[:5]


def check_bm25_scorer(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.core.text import tokenize

    classes, fast = importlib.import_module(provider.reference.partition(":")[0]), load(provider.fast)
    texts = texts_of(rng)
    ids = [f"s{i}" for i in range(len(texts))]
    query = list(rng.choice(WORDS, size=5)) + ["nowhere"]
    for variant, cls, delta in (("okapi", "BM25Okapi", None), ("l", "BM25L", 0.3), ("plus", "BM25Plus", 0.8)):
        reference = getattr(classes, cls)(
            [tokenize(t) for t in texts], k1=1.1, b=0.6, **({} if delta is None else {"delta": delta})
        )
        index = fast(ids, texts, variant=variant, k1=1.1, b=0.6, delta=delta)
        assert index.scores(query, ids) == pytest.approx(reference.get_scores(query), rel=1e-12, abs=1e-12), variant


def check_sharded_bm25(provider: Provider, rng, tmp_path: Path) -> None:
    from dsr.indexes.corpus.bm25 import build_bm25
    from dsr.indexes.corpus.build import build_corpus
    from dsr.indexes.corpus.layout import Corpus

    single_index = load(provider.reference)
    texts = texts_of(rng, 60)
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": str(i), "title": f"T{i}", "text": t + "."}) + "\n" for i, t in enumerate(texts)))
    build_corpus(docs, tmp_path / "c", docs_per_shard=15)
    corpus = Corpus(tmp_path / "c")
    sentences = [r["text"] for n in range(len(corpus.names)) for r in corpus.table(n).select(["text"]).to_pylist()]
    for variant in ("okapi", "plus"):
        build_bm25(corpus, {"variant": variant})
        sharded = load(provider.fast)(corpus)
        single = single_index([str(i) for i in range(len(sentences))], sentences, variant=variant)
        for query in ([str(w) for w in rng.choice(WORDS, size=3)], ["the"]):
            tokens = single.query_tokens(" ".join(query))
            assert sharded.search(tokens, 25) == [(int(i), s) for i, s in single.search(tokens, 25)], variant


def check_trec_eval_command_line(provider: Provider, rng, tmp_path: Path) -> None:
    """The binaries' own outputs, recorded (tests/fixtures/trec_eval: float32 ties, a negative
    grade, a topic the run lacks, levels below 1, nan and inf scores, the stops and their exit
    status); random inputs need the binaries: tools/trec_eval_differential.py."""
    import contextlib

    from dsr.cli import main

    assert load(provider.fast)
    fixture = ROOT / "tests" / "fixtures" / "trec_eval"
    for line in (fixture / "cases.tsv").read_text().splitlines():
        name, run, options, *qrels = line.split("\t")
        for release in ("9.0.8", "10.0"):
            expected = fixture / f"expected-{release}" / name
            exit_file = expected.with_name(f"{name}.exit")
            status = int(exit_file.read_text().split()[0]) if exit_file.exists() else 0
            out = tmp_path / f"{name}-{release}.txt"
            argv = [
                "trec_eval",
                "--release",
                release,
                *options.split(),
                str(fixture / (qrels or ["qrels"])[0]),
                str(fixture / run),
            ]
            with open(out, "w") as stdout, contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
                assert main(argv) == status, (release, name)
            assert out.read_text() == expected.read_text(), (release, name)


def _trec_files(rng, tmp_path: Path) -> tuple[Path, Path]:
    """A qrels and a run file of :func:`qrels_of` and :func:`scored_runs` (float32 ties,
    negative grades, a topic judging nothing relevant, a topic the run lacks)."""
    topics = topics_of(rng)
    qrels, run = qrels_of(rng, topics), scored_runs(rng, topics, n=2)[1]
    (tmp_path / "qrels").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "run").write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items() for d, s in docs.items()))
    return tmp_path / "qrels", tmp_path / "run"


def check_trec_eval_arrays(provider: Provider, rng, tmp_path: Path) -> None:
    """The arrays (asserted to be the engine) print what the reference prints, or stop where
    it stops, for both releases and a spread of options."""
    from dsr.evaluation.trec_eval_measures import select
    from dsr.evaluation.trec_eval_tool import Options, Stopped, trec_eval

    reference, fast = load(provider.reference), load(provider.fast)
    qrels, run = _trec_files(rng, tmp_path)

    def printed(engine, options):
        try:
            return engine(qrels, run, options).text
        except Stopped as stopped:
            return stopped.printed + str(stopped)

    for release in ("9.0.8", "10.0"):
        for extra in ({}, {"complete": True, "max_docs": 3}, {"judged_only": True, "level": 2}, {"level": -1}):
            options = Options(release=release, measures=["all_trec"], per_topic=True, **extra)
            assert fast(qrels, run, options, select(["all_trec"], release), set()) is not None
            assert printed(trec_eval, options) == printed(reference, options), (release, extra)


def check_runs_as_arrays(provider: Provider, rng, tmp_path: Path) -> None:
    """The evaluator's values of a run read as arrays are those of the run read line by line."""
    from dsr.evaluation.columns_run import read_qrels_file
    from dsr.evaluation.measures import Evaluator
    from dsr.evaluation.qrels import read_qrels
    from dsr.evaluation.trec_eval import apply_rules

    reference, fast = load(provider.reference), load(provider.fast)
    qrels, run = _trec_files(rng, tmp_path)
    judged = read_qrels(qrels)
    measures = ["RR", "nDCG@5", "P@3", "AP", "R@10", "P(rel=2)@5", "AP(judged_only=True)", "NumRet", "NumRel(rel=2)"]
    for release, max_docs in (("9.0.8", None), ("10.0", 4)):
        evaluator = Evaluator(judged, measures)
        arrays = fast(run, read_qrels_file(qrels), release, max_docs)
        assert arrays is not None
        lines = reference(run)
        apply_rules([lines], release, max_docs)
        assert np.array_equal(evaluator(arrays).values, evaluator(lines).values), (release, max_docs)


def _orders(run: Run) -> dict[str, list[str]]:
    return {q: [d for d, _ in r] for q, r in run.rankings.items()}


CHECKS = {
    "run parser": check_run_parser,
    "measure engine": check_measure_engine,
    "fusion kernels": check_fusion_kernels,
    "RRF of candidate-aligned runs": check_aligned_rrf,
    "BM25 scorer": check_bm25_scorer,
    "sharded BM25": check_sharded_bm25,
    "trec_eval's command line": check_trec_eval_command_line,
    "trec_eval over arrays": check_trec_eval_arrays,
    "runs read as arrays": check_runs_as_arrays,
}
#: the checks that compile ranx or build a corpus on disk
SLOW = {"fusion kernels", "sharded BM25"}


def test_every_provider_has_its_check_and_every_check_its_provider():
    assert set(CHECKS) == set(BY_NAME)
    for provider in PROVIDERS:
        assert provider.covers and provider.why, provider.name


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", [pytest.param(p.name, marks=[pytest.mark.slow] if p.name in SLOW else []) for p in PROVIDERS])
def test_the_fast_path_equals_its_reference(name, seed, tmp_path):
    CHECKS[name](BY_NAME[name], np.random.default_rng(seed), tmp_path)


def test_the_bench_justifies_every_fast_path():
    """bench/results/providers.json has a row per provider, and each justified by a measured
    ratio shows the fast path ahead (a fast path that is not goes)."""
    results = json.loads((ROOT / "bench" / "results" / "providers.json").read_text(encoding="utf-8"))
    columns = results["columns"]
    rows = {row[columns.index("provider")]: dict(zip(columns, row)) for row in results["rows"]}
    assert set(rows) == set(BY_NAME)
    for provider in PROVIDERS:
        row = rows[provider.name]
        assert row["justified by"] == provider.justified_by
        if provider.justified_by != "availability":
            assert float(row["ratio"]) > 1, (provider.name, row)
