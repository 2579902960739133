"""dsr's rankers and rerankers inside the real PyTerrier (no Java: these stages are Python):
``bm25 >> cross_encoder % 20`` (and the bi-encoder) in ``pt.Experiment`` gives the figures of
``dsr run`` + ``dsr rerank`` + ``dsr evaluate`` (run here by ``dsr.cli.main``), the pipelines'
frames are the command line's run files topic for topic, every registered ranker answers a topics
frame with each dialogue's own candidates as ``dsr run`` ranks them, and PyTerrier finds dsr's
datasets by its ``dsr`` provider in a fresh process. The cross-encoder and bi-encoder are tiny
BERTs built from a config (tests/support/exports.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dsr.cli import main
from dsr.core.errors import InputError
from dsr.core.run import load_run
from dsr.rankers import RANKERS

pt = pytest.importorskip("pyterrier")
ir_measures = pytest.importorskip("ir_measures")

pytestmark = pytest.mark.slow  # models, every ranker, PyTerrier
MEASURES = ["nDCG@5", "nDCG@10", "RR", "AP", "P@5", "R@20"]
#: the measures a list cut at 20 scores as the whole list does
AT_20 = ["nDCG@5", "nDCG@10", "P@5", "R@20"]


@pytest.fixture(scope="module")
def sample():
    from dsr.pyterrier import DsrDataset

    return DsrDataset("sample")


def figures(collection, runs: dict, tmp_path) -> dict[str, dict[str, float]]:
    """``dsr evaluate COLLECTION RUN... --json``: each run's mean of every measure over all dialogues."""
    out = tmp_path / "report.json"
    argv = ["evaluate", str(collection), *map(str, runs.values()), "--measures", *MEASURES, "--json"]
    with open(out, "w") as handle, pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdout", handle)
        assert main(argv) == 0
    report = json.loads(out.read_text())["runs"]
    return {name: report[path.stem]["all_dialogues"]["all"] for name, path in runs.items()}


def rankings(frame) -> dict[str, list[str]]:
    ordered = frame.sort_values(["qid", "rank"])
    return {q: list(group["docno"]) for q, group in ordered.groupby("qid", sort=False)}


def by_file(path) -> dict[str, list[str]]:
    return {q: [d for d, _ in r] for q, r in load_run(path).rankings.items()}


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """The sample's first six dialogues as a benchmark file (a reranker scores 150 pairs, not 508)."""
    from dsr.collections import load_collection
    from dsr.core.data import Collection, write_benchmark

    path = tmp_path_factory.mktemp("small") / "small.jsonl"
    write_benchmark(Collection("small", load_collection("sample").dialogues[:6]), path)
    return path


@pytest.mark.parametrize("kind,model", [("cross-encoder", "tiny-ce"), ("bi-encoder", "tiny-bi")])
def test_bm25_then_a_reranker_in_pt_experiment_gives_the_command_line_s_figures(kind, model, small, exports, tmp_path):
    from dsr.pyterrier import DsrDataset

    folder = str(exports.model(model))
    bm25_run, full, top20 = tmp_path / "bm25.run", tmp_path / "full.run", tmp_path / "top20.run"
    assert main(["run", str(small), "--ranker", "bm25", "--out", str(bm25_run)]) == 0
    rerank = ["rerank", str(small), "--reranker", kind, "--run", str(bm25_run), "--model", folder]
    assert main([*rerank, "--out", str(full)]) == 0
    assert main([*rerank, "--top-k", "20", "--out", str(top20)]) == 0
    ours = figures(small, {"bm25": bm25_run, "full": full, "top20": top20}, tmp_path)

    dataset = DsrDataset(small)
    bm25 = dataset.ranker("bm25")
    reranker = dataset.reranker(kind, model=folder)
    pipelines = {
        "bm25": bm25,
        "full": bm25 >> reranker,
        "cut20": bm25 >> reranker % 20,
        "top20": bm25 >> dataset.reranker(kind, model=folder, top_k=20),
    }
    saved = tmp_path / "pt"
    saved.mkdir()
    table = pt.Experiment(
        list(pipelines.values()),
        dataset.get_topics(),
        dataset.get_qrels(),
        [ir_measures.parse_measure(m) for m in MEASURES],
        names=list(pipelines),
        save_dir=str(saved),
    )
    theirs = {row["name"]: {m: row[m] for m in MEASURES} for _, row in table.iterrows()}
    for name in ("bm25", "full", "top20"):
        for measure in MEASURES:
            assert theirs[name][measure] == pytest.approx(ours[name][measure], abs=1e-12), (name, measure)
    for measure in AT_20:  # PyTerrier's % 20 cuts the reranked list: the same at depth 20 or less
        assert theirs["cut20"][measure] == pytest.approx(ours["full"][measure], abs=1e-12), measure
    # the pipelines' rankings are the command line's runs, topic for topic
    results = {name: rankings(pt.io.read_results(str(saved / f"{name}.res.gz"))) for name in pipelines}
    assert results["bm25"] == by_file(bm25_run) and results["full"] == by_file(full) and results["top20"] == by_file(top20)
    assert results["cut20"] == {q: docs[:20] for q, docs in by_file(full).items()}
    assert results["full"] != results["bm25"] and results["top20"] != results["full"]  # the rerankers changed rankings


#: rankers that need more than a collection (``open``: a sentence corpus built by dsr corpus build)
NEEDS_MORE = {"open": "corpus"}


@pytest.mark.parametrize("name", [n for n in RANKERS if n not in NEEDS_MORE])
def test_every_registered_ranker_answers_topics_as_dsr_run_ranks(name, sample, tmp_path):
    ranker = sample.ranker(name)
    assert isinstance(ranker, pt.Transformer)
    topics = sample.get_topics("last")
    some = topics.iloc[[3, 0, 7]]  # a few topics, out of the collection's order
    frame = ranker.transform(some)
    assert list(dict.fromkeys(frame["qid"])) == list(some["qid"])
    assert (frame["query"] == frame["qid"].map(dict(zip(topics["qid"], topics["query"])))).all()
    for qid, group in frame.groupby("qid"):
        assert set(group["docno"]) == set(sample.collection.candidate_ids(qid))  # its own candidates, all of them
        assert list(group["rank"]) == list(range(len(group))) and group["score"].is_monotonic_decreasing
    out = tmp_path / f"{name}.run"
    assert main(["run", "sample", "--ranker", name, "--out", str(out)]) == 0
    assert rankings(ranker.transform(topics)) == by_file(out)


def test_a_ranker_that_needs_more_than_the_collection_says_what(sample):
    with pytest.raises(InputError, match="corpus"):
        sample.ranker("open")


def test_bad_frames_name_the_qid_or_docno(sample, exports):
    bm25 = sample.ranker("bm25")
    with pytest.raises(InputError, match="'nope' is not a dialogue of collection 'sample'"):
        bm25.transform(pt.new.queries(["some text"], qid=["nope"]))
    with pytest.raises(InputError, match="qid column"):
        bm25.transform(pt.new.queries(["some text"]).drop(columns=["qid"]))
    ranked = bm25.transform(sample.get_topics().iloc[:1])
    ranked.loc[ranked.index[0], "docno"] = "not-a-candidate"
    reranker = sample.reranker("cross-encoder", model=str(exports.model("tiny-ce")))
    with pytest.raises(InputError, match="'not-a-candidate' is not a candidate of dialogue"):
        reranker.transform(ranked)
    with pytest.raises(InputError, match="unknown ranker"):
        sample.ranker("no-such-ranker")


def test_topics_and_qrels_are_the_collection_s(sample):
    from dsr.core.queries import query_text

    collection = sample.collection
    topics = sample.get_topics("title+recent")
    assert list(topics["qid"]) == [d.id for d in collection.dialogues]
    assert list(topics["query"]) == [query_text(d, "title+recent") for d in collection.dialogues]
    qrels = sample.get_qrels()
    assert len(qrels) == sum(len(d.candidates) for d in collection.dialogues)
    assert set(qrels["label"]) <= {0, 1, 2} and qrels["label"].sum() == sum(
        c.label for d in collection.dialogues for c in d.candidates
    )
    with pytest.raises(InputError, match="strategy"):
        sample.get_topics("no-such-strategy")


def test_pyterrier_finds_dsr_s_datasets_in_a_fresh_process(tmp_path):
    """The ``pyterrier.dataset_provider`` entry point: ``pt.get_dataset("dsr:NAME")`` with no import of dsr
    (from a folder outside the checkout: dsr as installed, not the source tree's build files)."""
    code = (
        "import sys, pyterrier as pt\n"
        "ds = pt.get_dataset('dsr:sample')\n"
        "print(type(ds).__name__, len(ds.get_topics()), len(ds.get_qrels()), 'dsr' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["DsrDataset", "20", "508", "True"]
