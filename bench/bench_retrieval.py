"""Retrieval benchmark: time and peak memory per stage (run on demand, not a test).

    python bench/bench_retrieval.py            # full: SIGIR-shaped synthetic set + CMU_DoG valid
    python bench/bench_retrieval.py --quick    # smaller: a few minutes on 2 cores

Stages: BM25 index and re-ranking (rank_bm25), open retrieval with rank_bm25
and bm25s (speed ratio), embedding throughput (cold) and a warm dense run
(every vector cached), FAISS search (flat and HNSW), cross-encoder pairs per
second (when dsr/rerankers/cross_encoder.py exists; the MiniLM-L6
package weights with an untrained head: the size of ms-marco-MiniLM-L-6-v2,
which is what the speed depends on).

Collections: a synthetic one of the SIGIR 2022 shape (846 dialogues x 50
distinct candidates = 42,300 sentences; text generated deterministically:
Zipf-distributed whole words of MiniLM's vocabulary, candidates of 10-40
words, 2-7 context turns of 10-60 words) and
CMU_DoG valid built from ../shared/data/cmu_dog (skipped when absent).

Time: wall seconds, and CPU seconds of this process (user + system, all
threads). On a shared machine the wall time depends on the load; the CPU time
much less: CPU seconds / cores is the wall time the stage needs with the
cores to itself.

Memory: "peak RSS" is the process's maximum resident size after the stage
(resource.getrusage; it never goes down), "+RSS" how much the stage raised it.
tracemalloc is not used: it slows Python code severalfold and does not see
torch's or FAISS's allocations.

Targets (issue 3): BM25 re-ranking of 846x50 < 2 s; dense over 42,300
sentences < 6 min cold and < 10 s warm; cross-encoder >= 100 pairs/s.
Everything runs in a fresh temporary DSR_HOME (cold caches) unless --home.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

RESULTS: list[dict] = []


def rss_mib() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024 if sys.platform == "darwin" else 1024)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stage(name: str, fn, *, items: int | None = None, unit: str = "", target: str = ""):
    before = rss_mib()
    cpu = cpu_seconds()
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    after = rss_mib()
    row = {
        "stage": name,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mib": after,
        "rss_growth_mib": after - before,
        "rate": (items / seconds if items and seconds > 0 else None),
        "unit": unit,
        "target": target,
    }
    RESULTS.append(row)
    rate = f"{row['rate']:,.0f} {unit}/s" if row["rate"] else ""
    print(f"  {name:<48} {seconds:9.2f} s  {rate:>16}  peak {after:7.0f} MiB", file=sys.stderr)
    return value


def bench_bm25(collection, label: str, n_search: int) -> None:
    from dsr.core.queries import query_terms
    from dsr.indexes.bm25 import BM25Index, BM25SIndex
    from dsr.rankers import make_ranker

    pool = collection.sentences()
    ids, texts = list(pool), [c.body for c in pool.values()]
    n_cands = sum(len(d.candidates) for d in collection)
    stage(
        f"[{label}] bm25 index build (rank_bm25, {len(ids):,} sent.)", lambda: BM25Index(ids, texts), items=len(ids), unit="sent"
    )

    def rerank_all():
        return make_ranker("bm25", query="all").rank(collection)

    # the first builds the index and caches it, the second reads the cache
    for when in (f" {len(collection)}x cands, cold (incl. index)", ", warm (index from cache)"):
        stage(f"[{label}] bm25 re-rank{when}", rerank_all, items=n_cands, unit="cand", target="< 2 s (846x50)")
    stage(
        f"[{label}] bm25 re-rank, weighted query, warm",
        lambda: make_ranker("bm25", query="weighted").rank(collection),
        items=n_cands,
        unit="cand",
    )
    queries = [query_terms(d, "all") for d in collection.dialogues[:n_search]]
    ours = BM25Index(ids, texts)
    stage(
        f"[{label}] open retrieval top-100, dsr BM25Index ({n_search} q)",
        lambda: [ours.search(q, 100) for q in queries],
        items=n_search,
        unit="query",
    )
    import rank_bm25

    library = rank_bm25.BM25Okapi([ours.query_tokens(t) for t in texts])
    # rank_bm25 scans the whole pool per query term: time 20 queries, compare per query.
    token_lists = [[t for t, w in q.items() for _ in range(int(w))] for q in queries[:20]]

    def library_search():
        for tokens in token_lists:
            scores = library.get_scores(tokens)
            scores.argsort()[::-1][:100]

    fast = stage(f"[{label}] bm25s index build ({len(ids):,} sent.)", lambda: BM25SIndex(ids, texts), items=len(ids), unit="sent")
    t_ref = stage(
        f"[{label}] open retrieval top-100, rank_bm25 get_scores ({len(token_lists)} q)",
        lambda: _timed(library_search),
        items=len(token_lists),
        unit="query",
    ) / len(token_lists)
    t_fast = (
        stage(
            f"[{label}] open retrieval top-100, bm25s ({n_search} q)",
            lambda: _timed(lambda: [fast.search(q, 100) for q in queries]),
            items=n_search,
            unit="query",
        )
        / n_search
    )
    RESULTS.append({"stage": f"[{label}] open retrieval speed ratio bm25s / rank_bm25 get_scores", "ratio": t_ref / t_fast})
    print(f"  [{label}] bm25s is {t_ref / t_fast:.1f}x faster than rank_bm25 for open retrieval", file=sys.stderr)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_dense(collection, label: str, encode_limit: int | None) -> None:
    import numpy as np

    from dsr.core.models import load_sentence_transformer
    from dsr.indexes import embeddings
    from dsr.indexes.dense import build_faiss
    from dsr.rankers import make_ranker

    stage(f"[{label}] load MiniLM-L6 bi-encoder", lambda: load_sentence_transformer("all-MiniLM-L6-v2"))
    pool = [c.body for d in collection for c in d.candidates]
    if encode_limit is not None and encode_limit < len(pool):
        # --quick: the cold rate on a slice, extrapolated to the whole pool
        sample = pool[:encode_limit]
        stage(
            f"[{label}] encode {len(sample):,} sentences, cold (sample)",
            lambda: embeddings.encode(sample, progress=True),
            items=len(sample),
            unit="sent",
        )
        rate = RESULTS[-1]["rate"]
        cpu_per_text = RESULTS[-1]["cpu_seconds"] / len(sample)
        RESULTS.append(
            {
                "stage": f"[{label}] dense cold over {len(pool):,} sent., extrapolated",
                "seconds": len(pool) / rate,
                "cpu_seconds": cpu_per_text * len(pool),
                "target": "< 360 s (42,300)",
            }
        )
        print(
            f"  [{label}] extrapolated cold encoding of {len(pool):,}: {len(pool) / rate:.0f} s wall, "
            f"{cpu_per_text * len(pool):.0f} CPU s",
            file=sys.stderr,
        )
        return
    embeddings.stats.reset()
    stage(
        f"[{label}] dense rank, cold ({len(pool):,} cand. + {len(collection)} q)",
        lambda: make_ranker("dense").rank(collection),
        items=len(pool) + len(collection),
        unit="text",
        target="< 360 s (42,300)",
    )
    embeddings.stats.reset()
    embeddings._caches.clear()  # read the cache back from disk, as a new process would
    stage(
        f"[{label}] dense rank, warm (all vectors cached)",
        lambda: make_ranker("dense").rank(collection),
        items=len(pool),
        unit="cand",
        target="< 10 s",
    )
    assert embeddings.stats.encoded == 0, "the warm run encoded something"
    vectors = embeddings.encode(pool, progress=False)
    queries = vectors[: len(collection)] + 0.01  # query-like vectors near pool points
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    for kind in ("flat", "hnsw"):
        index = stage(f"[{label}] faiss {kind} build ({len(pool):,})", functools.partial(build_faiss, vectors, kind))
        top_100 = functools.partial(index.search, queries, 100)
        stage(f"[{label}] faiss {kind} search top-100 ({len(queries)} q)", top_100, items=len(queries), unit="query")


def bench_cross_encoder(collection, n_pairs: int) -> None:
    if not (ROOT / "dsr" / "rerankers" / "cross_encoder.py").exists():
        print("  (no dsr/rerankers/cross_encoder.py: cross-encoder skipped)", file=sys.stderr)
        return
    import warnings

    from dsr.core.data import Collection as C
    from dsr.core.models import load_cross_encoder, resolve_model
    from dsr.rankers import make_ranker
    from dsr.rerankers import make_reranker

    per = len(collection.dialogues[0].candidates)
    subset = C("ce-subset", collection.dialogues[: max(1, n_pairs // per)])
    pairs = sum(len(d.candidates) for d in subset)
    first = make_ranker("random").rank(subset)
    folder = resolve_model("all-MiniLM-L6-v2").path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "some weights newly initialised": the head, as intended
        stage("[synthetic] cross-encoder load (MiniLM-L6 size)", lambda: load_cross_encoder(folder, 256))
        for precision in ("fp32", "bf16"):
            reranker = make_reranker("cross-encoder", model=folder, query="last", precision=precision)
            stage(
                f"[synthetic] cross-encoder rerank, {pairs} pairs (max_length 256, {precision})",
                lambda: reranker.rerank(subset, first),
                items=pairs,
                unit="pair",
                target=">= 100 pairs/s",
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer dialogues; dense cold rate on a sample")
    parser.add_argument(
        "--source",
        default=str(ROOT.parent / "shared" / "data" / "cmu_dog"),
        help="CMU_DoG raw folder (default ../shared/data/cmu_dog)",
    )
    parser.add_argument("--home", help="DSR_HOME to use (default: a fresh temporary folder)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["bm25", "dense", "cross", "cmu_dog"])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="torch threads (default: torch's choice, one per core); on a machine shared with other jobs 1 can be faster than 2",
    )
    args = parser.parse_args(argv)

    home = args.home or tempfile.mkdtemp(prefix="dsr-bench-")
    os.environ["DSR_HOME"] = home
    from dsr.core.provenance import machine, package_versions

    versions = package_versions()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    header = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": machine(),
        "torch_threads": torch.get_num_threads(),
        "load_average": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "versions": versions,
        "quick": args.quick,
        "dsr_home": home,
    }
    print(f"bench_retrieval {header['date']} on {platform.node()}", file=sys.stderr)

    from dsr.collections.synthetic import text_collection

    synthetic = stage("[synthetic] generate 846x50 collection", text_collection)
    if "bm25" not in args.skip:
        bench_bm25(synthetic, "synthetic", n_search=50 if args.quick else 200)
    if "dense" not in args.skip:
        bench_dense(synthetic, "synthetic", encode_limit=2000 if args.quick else None)
    if "cross" not in args.skip:
        bench_cross_encoder(synthetic, 200 if args.quick else 1000)
    source = Path(args.source)
    if "cmu_dog" not in args.skip and (source / "Conversations" / "valid").is_dir():
        from dsr.collections import load_collection

        cmu = stage("[cmu_dog] build valid from raw files", lambda: load_collection("cmu_dog", source, "valid"))
        print(f"  [cmu_dog] {len(cmu)} dialogues, {len(cmu.sentences()):,} distinct sentences", file=sys.stderr)
        if "bm25" not in args.skip:
            bench_bm25(cmu, "cmu_dog", n_search=min(len(cmu), 50 if args.quick else 200))
        if "dense" not in args.skip:
            bench_dense(cmu, "cmu_dog", encode_limit=None)

    print_table(header)
    if args.json:
        Path(args.json).write_text(json.dumps({**header, "results": RESULTS}, indent=2), encoding="utf-8")
    return 0


def print_table(header: dict) -> None:
    v = header["versions"]
    print(f"# bench_retrieval  {header['date']}{'  (--quick)' if header['quick'] else ''}")
    print(
        f"machine: {header['machine']['platform']}, {header['machine']['cpus']} CPUs "
        f"({header['machine']['processor']}), torch threads {header['torch_threads']}, "
        f"load average at start {header['load_average']}"
    )
    print(
        "versions: "
        + ", ".join(
            f"{k} {v[k]}"
            for k in ("python", "numpy", "rank_bm25", "bm25s", "torch", "transformers", "sentence-transformers", "faiss-cpu")
            if k in v
        )
    )
    print()
    print(f"| {'stage':<66} | {'seconds':>9} | {'CPU s':>8} | {'rate':>16} | {'peak RSS MiB':>12} | {'+RSS MiB':>8} | target |")
    print(f"|{'-' * 68}|{'-' * 11}|{'-' * 10}|{'-' * 18}|{'-' * 14}|{'-' * 10}|--------|")
    for row in RESULTS:
        if "ratio" in row:
            print(f"| {row['stage']:<66} | {'':>9} | {'':>8} | {row['ratio']:>14.1f} x | {'':>12} | {'':>8} |  |")
            continue
        rate = f"{row['rate']:,.0f} {row['unit']}/s" if row.get("rate") else ""
        peak = f"{row['peak_rss_mib']:.0f}" if "peak_rss_mib" in row else ""
        grow = f"{row['rss_growth_mib']:.0f}" if "rss_growth_mib" in row else ""
        cpu = f"{row['cpu_seconds']:.2f}" if "cpu_seconds" in row else ""
        print(
            f"| {row['stage']:<66} | {row['seconds']:9.2f} | {cpu:>8} | {rate:>16} | {peak:>12} "
            f"| {grow:>8} | {row.get('target', '')} |"
        )


if __name__ == "__main__":
    sys.exit(main())
