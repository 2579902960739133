"""What each fast path of dsr/core/providers.py buys over its reference: the ratio that
justifies it (run on demand, not a test).

    python bench/bench_providers.py [--out bench/results/providers.json]

One row per provider, on inputs of the size dsr meets them at (a SIGIR-shaped collection:
846 dialogues x 50 candidates), best of three rounds, reference and fast path interleaved:

* run parser: a full-depth run's bytes, the validator and the reader (the board's path
  before) against ``runcheck.parse``;
* measure engine: the default measures of five runs, pytrec_eval (``arrays=False``) against
  the arrays;
* fusion kernels: RRF of two runs in a fresh process (import and first call: ranx compiles
  numba code, or loads numba's cache), ranx's code against dsr's kernel; the warm per-call
  figures are in the notes;
* RRF of candidate-aligned runs: the rrf kernel against the aligned sum;
* BM25 scorer: the candidates of 200 dialogues, rank_bm25's get_batch_scores against
  BM25Index (both built before);
* sharded BM25: peak memory (tracemalloc) of one bm25s index over a corpus against the
  largest shard's unit of the sharded build (8 shards);
* trec_eval's command line: no ratio (the reference, trec_eval's C binaries, is not
  installable with dsr);
* trec_eval over arrays: ``dsr trec_eval -q -m all_trec`` of a TREC-sized run (200 topics x
  1,000 documents, bench/bench_trec_eval.py's files), the reference engine against the arrays;
* runs read as arrays: the same run read and measured (dsr evaluate's default measures),
  ``load_run`` against ``ColumnRun.of_file``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from benchinfo import header, write_result  # noqa: E402

from dsr.core.providers import PROVIDERS  # noqa: E402

ROUNDS = 3


def best(reference: Callable[[], object], fast: Callable[[], object]) -> tuple[float, float]:
    """The best of :data:`ROUNDS` interleaved rounds of each, in seconds."""
    times: dict[str, list[float]] = {"reference": [], "fast": []}
    for _ in range(ROUNDS):
        for key, call in (("reference", reference), ("fast", fast)):
            started = time.perf_counter()
            call()
            times[key].append(time.perf_counter() - started)
    return min(times["reference"]), min(times["fast"])


def run_parser(collection, work: Path) -> tuple[str, float, float]:
    from dsr.board.runcheck import PairIndex, parse
    from dsr.collections.synthetic import make_run
    from dsr.core.run import read_trec_run
    from dsr.evaluation.validate import validate_run

    path = work / "full.run"
    make_run(collection, seed=1).write(path, sidecar=False)
    data, index = path.read_bytes(), PairIndex.of(collection)
    ref, fast = best(lambda: (validate_run(collection, path), read_trec_run(path)), lambda: parse(index, data))
    return "a full-depth run (42,300 lines)", ref, fast


def measure_engine(collection, work: Path) -> tuple[str, float, float]:
    from dsr.collections.synthetic import make_run
    from dsr.evaluation.measures import Evaluator
    from dsr.evaluation.qrels import qrels_from_collection

    qrels = qrels_from_collection(collection)
    runs = [make_run(collection, seed=s, quality=0.5) for s in range(5)]
    arrays, reference = Evaluator(qrels), Evaluator(qrels, arrays=False)
    ref, fast = best(lambda: [reference(r) for r in runs], lambda: [arrays(r) for r in runs])
    return "default measures of 5 runs, 846 topics", ref, fast


FIRST_FUSION = """
import time
started = time.perf_counter()
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.fusion import fuse
collection = make_collection(n=846, candidates=50)
runs = [make_run(collection, seed=s) for s in (1, 2)]
ready = time.perf_counter()
fuse(runs, "rrf", backend="{backend}")
first = time.perf_counter()
fuse(runs, "rrf", backend="{backend}")
print(first - ready, time.perf_counter() - first)
"""


def fusion_kernels(collection, work: Path, notes: list[str]) -> tuple[str, float, float]:
    def child(backend: str) -> tuple[float, float]:
        code = FIRST_FUSION.format(backend=backend)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        return float(out[0]), float(out[1])

    rounds = [(child("ranx"), child("dsr")) for _ in range(ROUNDS)]
    (ref_first, ref_warm), (fast_first, fast_warm) = _mins([r[0] for r in rounds]), _mins([r[1] for r in rounds])
    notes.append(
        f"fusion kernels, a later call in the same process (warm): ranx {ref_warm:.3f} s, dsr {fast_warm:.3f} s "
        f"(ratio {ref_warm / fast_warm:.1f})"
    )
    return "RRF of two 846 x 50 runs, a process's first call", ref_first, fast_first


def _mins(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return min(p[0] for p in pairs), min(p[1] for p in pairs)


def aligned_rrf(collection, work: Path) -> tuple[str, float, float]:
    from dsr.collections.synthetic import make_run
    from dsr.core.fusion import fuse

    runs, order = [make_run(collection, seed=s) for s in (1, 2)], collection.initial_order()
    ref, fast = best(lambda: fuse(runs, "rrf"), lambda: fuse(runs, "rrf", initial_order=order))
    return "RRF of two 846 x 50 runs", ref, fast


def bm25_scorer(texts, work: Path) -> tuple[str, float, float]:
    import rank_bm25

    from dsr.core.queries import query_terms
    from dsr.core.text import tokenize
    from dsr.indexes.bm25 import BM25Index

    collection = texts
    part = collection.dialogues[:200]
    pool = [c for d in collection for c in d.candidates]
    ids, bodies = [c.id for c in pool], [c.body for c in pool]
    row = {sid: i for i, sid in enumerate(ids)}
    queries = [(query_terms(d, "all"), [c.id for c in d.candidates]) for d in part]

    model, index = rank_bm25.BM25Okapi([tokenize(b) for b in bodies]), BM25Index(ids, bodies)

    def reference() -> None:
        for query, cands in queries:
            model.get_batch_scores([t for t, w in query.items() for _ in range(int(w))], [row[c] for c in cands])

    def fast() -> None:
        for query, cands in queries:
            index.scores(query, cands)

    ref, quick = best(reference, fast)
    return "200 dialogues' 50 candidates each, a 42,300-sentence pool (indexes built before)", ref, quick


def bm25_pool_search(texts, work: Path) -> tuple[str, float, float]:
    from dsr.core.queries import query_terms
    from dsr.indexes.bm25 import BM25Index, BM25SIndex

    pool = [c for d in texts for c in d.candidates]
    ids, bodies = [c.id for c in pool], [c.body for c in pool]
    plain, quick = BM25Index(ids, bodies, variant="plus"), BM25SIndex(ids, bodies, variant="plus")
    queries = [dict(query_terms(d, "all")) for d in texts.dialogues[:50]]
    ref, fast = best(lambda: [plain.search(q, 100) for q in queries], lambda: [quick.search(q, 100) for q in queries])
    return "top 100 of a 42,300-sentence pool, 50 queries", ref, fast


def sharded_bm25(texts, work: Path) -> tuple[str, float, float]:
    from dsr.indexes.bm25 import BM25SIndex
    from dsr.indexes.corpus.bm25 import build_bm25, check_params, index_shard
    from dsr.indexes.corpus.build import build_corpus
    from dsr.indexes.corpus.layout import Corpus

    documents = work / "docs.jsonl"
    with documents.open("w", encoding="utf-8") as out:
        for d in texts:
            out.write(json.dumps({"id": d.id, "title": d.title, "text": " ".join(c.body for c in d.candidates)}) + "\n")
    build_corpus(documents, work / "corpus", docs_per_shard=106)  # 8 shards
    corpus = Corpus(work / "corpus")
    build_bm25(corpus)
    sentences = [r["text"] for n in range(len(corpus.names)) for r in corpus.table(n).select(["text"]).to_pylist()]
    key = {"stage": "bm25-index", "params": check_params({})}  # the unit's own work; its marker is rewritten

    def peak(call: Callable[[], object]) -> float:
        tracemalloc.start()
        call()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top / 2**20

    single = peak(lambda: BM25SIndex([str(i) for i in range(len(sentences))], sentences))
    largest = max(range(len(corpus.names)), key=lambda n: len(corpus.texts(n)))
    unit = peak(lambda: index_shard(str(corpus.folder), largest, key))
    return f"peak MiB: one index of {len(sentences):,} sentences vs the largest of {len(corpus.names)} shards", single, unit


def trec_files(work: Path) -> tuple[Path, Path]:
    """bench/bench_trec_eval.py's qrels and run, 200 topics x 1,000 documents (made once)."""
    from bench_trec_eval import write_files

    if not (work / "run").exists():
        write_files(work, 200, 1000, 100, 0)
    return work / "qrels", work / "run"


def trec_eval_arrays(work: Path) -> tuple[str, float, float]:
    from dsr.evaluation.trec_eval_tool import Options, trec_eval

    qrels, run = trec_files(work)
    options = Options(measures=["all_trec"], per_topic=True)
    ref, fast = best(lambda: trec_eval(qrels, run, options, engine="reference"), lambda: trec_eval(qrels, run, options))
    return "dsr trec_eval -q -m all_trec, 200 topics x 1,000 documents", ref, fast


def runs_as_arrays(work: Path) -> tuple[str, float, float]:
    from dsr.core.run import load_run
    from dsr.evaluation.columns_run import ColumnRun, read_qrels_file
    from dsr.evaluation.measures import Evaluator
    from dsr.evaluation.qrels import read_qrels

    qrels, run = trec_files(work)
    evaluator, judged = Evaluator(read_qrels(qrels)), read_qrels_file(qrels)
    assert judged is not None
    ref, fast = best(lambda: evaluator(load_run(run)), lambda: evaluator(ColumnRun.of_file(run, judged)))
    return "a run of 200 topics x 1,000 documents read and measured", ref, fast


def rows_of(work: Path, notes: list[str]) -> list[list[object]]:
    from dsr.collections.synthetic import make_collection, text_collection

    collection, texts = make_collection(n=846, candidates=50), text_collection()
    measured = {
        "run parser": lambda: run_parser(collection, work),
        "measure engine": lambda: measure_engine(collection, work),
        "fusion kernels": lambda: fusion_kernels(collection, work, notes),
        "RRF of candidate-aligned runs": lambda: aligned_rrf(collection, work),
        "BM25 scorer": lambda: bm25_scorer(texts, work),
        "sharded BM25": lambda: sharded_bm25(texts, work),
        "trec_eval over arrays": lambda: trec_eval_arrays(work),
        "runs read as arrays": lambda: runs_as_arrays(work),
    }
    what, plain, bm25s = bm25_pool_search(texts, work)
    notes.append(
        f"not a fast path (so not in the table): bm25s's pool search (BM25SIndex, bm25_search's default "
        f"backend) against BM25Index, {what}: {bm25s:.3f} s against {plain:.3f} s"
    )
    rows = []
    for provider in PROVIDERS:
        if provider.justified_by == "availability":
            rows.append([provider.name, "-", "-", "-", "-", provider.justified_by])
            continue
        what, ref, fast = measured[provider.name]()
        unit = "MiB" if provider.justified_by == "memory" else "s"
        rows.append([provider.name, what, f"{ref:.3f} {unit}", f"{fast:.3f} {unit}", f"{ref / fast:.1f}", provider.justified_by])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "providers.json")
    args = parser.parse_args(argv)
    info = header("providers: each fast path against its reference")
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as work:
        rows = rows_of(Path(work), notes)
    columns = ["provider", "input", "reference", "fast path", "ratio", "justified by"]
    title = "each fast path of dsr/core/providers.py against its reference (best of 3)"
    command = "python bench/bench_providers.py"
    write_result("providers", info, columns, rows, title=title, command=command, notes=notes, path=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
