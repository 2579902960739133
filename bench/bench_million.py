"""Open retrieval at >= 1 M sentences: BM25 and IVF-PQ build and search, int8 encoding, and the
plan for English Wikipedia (~150 M sentences) extrapolated from them.

    python bench/bench_million.py [--work DIR]    # minutes on 2 cores, 2 GB of disk
    python bench/bench_million.py --work /tmp/m --docs 200 --encode 500   # a smoke test

The corpus: the real documents of bench_corpus.py (every CMU_DoG conversation
and Wikipedia document, every ReDial test conversation: 184,394 sentences)
and ``--copies - 1`` recombined copies of them. In copy r each paragraph (a
chat message, a Wikipedia paragraph) is the first half of its words followed
by the second half of another paragraph's, drawn by a permutation seeded with
r: sentences that exist nowhere else, with the real texts' words, lengths and
punctuation (pysbd splits them as it splits the originals). Built with
``dsr corpus build`` on a local Ray of ``--workers`` CPUs (the CLI's default).

Each stage runs in a process of its own, so its peak resident memory (VmHWM)
is its own:

* **split**: documents -> sentence shards (the driver's memory; Ray's workers apart);
* **bm25**: ``build_bm25`` in-process (count, merge, index), and its disk;
* **bm25 search**: ``--queries`` held-out CMU_DoG messages, batched, top 10;
* **encode**: ``--encode`` sentences of the corpus (seeded rows) on the
  fastest backend this CPU has (openvino-int8 with VNNI/AMX; the export is
  made before and not timed): sentences/s. The whole corpus is **not**
  encoded (1 M sentences would take far longer);
* **vectors**: every sentence's vector is one of the encoded sample's real
  vectors (seeded choice) plus Gaussian noise (sd 0.05 per dimension),
  normalised: **not the model's vectors**, but vectors of its dimension and
  spread, written through ``encode_corpus`` (markers, model file) so the next
  stages run as on a real corpus;
* **ivfpq**: ``build_ivfpq`` with the default settings (nlist 4 sqrt(N), its
  training sample, m 48), its disk;
* **dense search**: flat (exact) and IVF-PQ (nprobe 64, refine 4) over those
  vectors for the encoded queries: ms/query and IVF-PQ recall@10 against flat.

Prints date, machine, load before and after, a table and the extrapolation
to 150 M sentences (linear in the sentences for time and disk; per node for memory).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_memory_usage_threshold", "0.995")

from benchinfo import footer, goal, header, peak_rss_mib  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
WIKIPEDIA = 150e6


def recombined(docs: list[dict], copies: int) -> list[dict]:
    """The documents and ``copies - 1`` recombined copies (see the module docstring)."""
    paragraphs = [p for d in docs for p in d["text"].split("\n")]
    out = list(docs)
    for r in range(1, copies):
        order = list(range(len(paragraphs)))
        random.Random(r).shuffle(order)
        donor = iter(order)
        for d in docs:
            lines = []
            for p in d["text"].split("\n"):
                a, b = p.split(), paragraphs[next(donor)].split()
                lines.append(" ".join(a[: (len(a) + 1) // 2] + b[len(b) // 2 :]))
            out.append({"id": f"{d['id']}-r{r}", "title": f"{d['title']} ({r})", "text": "\n".join(lines)})
    return out


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20 if path.exists() else 0.0


def stage(name: str, work: Path, args: argparse.Namespace) -> dict:
    """One stage in this process: its figures (seconds, peak RSS and what else it measures)."""
    from dsr.indexes.corpus.layout import Corpus

    corpus_dir, start, out = work / "corpus", time.perf_counter(), {}
    if name == "split":
        from bench_corpus import real_documents, write_jsonl

        from dsr.indexes.corpus.build import build_corpus
        from dsr.indexes.corpus.distributed import Executor

        docs, queries = real_documents(args.queries)
        docs = docs[: args.docs] if args.docs else docs
        (work / "queries.json").write_text(json.dumps(queries))
        source = write_jsonl(work / "docs.jsonl", recombined(docs, args.copies))
        start = time.perf_counter()
        build_corpus(source, corpus_dir, docs_per_shard=args.docs_per_shard, executor=Executor(args.workers))
        corpus = Corpus(corpus_dir)
        out.update(sentences=len(corpus), shards=len(corpus.names), mb=folder_mb(corpus_dir / "shards"))
    elif name == "bm25":
        from dsr.indexes.corpus.bm25 import build_bm25

        build_bm25(Corpus(corpus_dir))
        out["mb"] = folder_mb(corpus_dir / "bm25")
    elif name == "bm25-search":
        from dsr.indexes.corpus.bm25 import ShardedBM25

        index = ShardedBM25(Corpus(corpus_dir))
        queries = json.loads((work / "queries.json").read_text())
        start = time.perf_counter()
        index.search_many([index.query_tokens(q) for q in queries], 10)
        out["ms_per_query"] = 1000 * (time.perf_counter() - start) / len(queries)
    elif name == "encode":
        out.update(encode_sample(corpus_dir, work, args))
        start = time.perf_counter() - out["seconds_encoding"]
    elif name == "vectors":
        write_vectors(Corpus(corpus_dir), work, args.backend)
    elif name == "ivfpq":
        from dsr.indexes.corpus.dense import build_ivfpq

        build_ivfpq(Corpus(corpus_dir), MODEL, backend=args.backend)
        out["mb"] = folder_mb(next(corpus_dir.glob("dense/*/ivfpq")))
        out["vectors_mb"] = folder_mb(next(corpus_dir.glob("dense/*/vectors")))
    elif name == "dense-search":
        out.update(dense_search(Corpus(corpus_dir), work, args))
    out.setdefault("seconds", time.perf_counter() - start)
    out["peak_rss_mib"] = peak_rss_mib()
    return out


def encode_sample(corpus_dir: Path, work: Path, args: argparse.Namespace) -> dict:
    import numpy as np

    from dsr.core.models import resolve_model
    from dsr.indexes.backends import export
    from dsr.indexes.corpus.layout import Corpus
    from dsr.indexes.embeddings import encode

    corpus = Corpus(corpus_dir)
    rows = sorted(random.Random(0).sample(range(len(corpus)), min(args.encode, len(corpus))))
    texts = [r["text"] for r in corpus.records(rows)]
    model = resolve_model(MODEL, "bi-encoder")
    if args.backend != "torch":
        export(model, "bi-encoder", args.backend)  # made once per DSR_HOME: not timed
    encode(texts[:64], model, cache=False, backend=args.backend)  # compiled and warmed: not timed
    start, cpu = time.perf_counter(), time.process_time()
    vectors = encode(texts, model, cache=False, backend=args.backend)
    seconds = time.perf_counter() - start
    queries = json.loads((work / "queries.json").read_text())
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    wiki = []  # the sentences of the CMU_DoG Wikipedia documents (and their recombinations)
    for path in sorted((corpus_dir / "shards").glob("*.parquet")):
        table = pq.read_table(path, columns=["doc_id", "text"])
        wiki += table.filter(pc.starts_with(table.column("doc_id"), "wiki-")).column("text").to_pylist()
    wiki = random.Random(1).sample(wiki, min(len(wiki), args.encode // 4))
    start = time.perf_counter()
    encode(wiki, model, cache=False, backend=args.backend)
    wiki_rate = len(wiki) / (time.perf_counter() - start)
    np.save(work / "sample.npy", vectors)
    np.save(work / "queries.npy", encode(queries, model, cache=False, backend=args.backend))
    return {
        "texts": len(texts),
        "seconds_encoding": seconds,
        "cpu_seconds": time.process_time() - cpu,
        "per_second": len(texts) / seconds,
        "chars_per_text": sum(map(len, texts)) / len(texts),
        "wikipedia_texts": len(wiki),
        "wikipedia_per_second": wiki_rate,
        "wikipedia_chars_per_text": sum(map(len, wiki)) / max(1, len(wiki)),
    }


def write_vectors(corpus, work: Path, backend: str) -> None:
    """Every sentence's vector: a real sample vector plus noise, through encode_corpus."""
    import numpy as np

    from dsr.indexes.corpus.dense import encode_corpus
    from dsr.indexes.corpus.distributed import Executor

    pool = np.load(work / "sample.npy")

    class Synthetic(Executor):
        def encode_parquet(self, files, counts, model, batch_size, backend="torch"):
            for number, count in enumerate(counts):
                rng = np.random.default_rng(number)
                v = pool[rng.integers(0, len(pool), count)] + rng.normal(0, 0.05, (count, pool.shape[1]))
                yield number, (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)

    encode_corpus(corpus, MODEL, executor=Synthetic(0), backend=backend)


def dense_search(corpus, work: Path, args: argparse.Namespace) -> dict:
    import numpy as np

    from dsr.indexes.corpus.dense import ShardedDense

    queries = np.load(work / "queries.npy")[: args.dense_queries]
    out = {}
    results = {}
    for kind, settings in (("flat", {}), ("ivfpq", {"nprobe": 64, "refine": 4})):
        index = ShardedDense(corpus, MODEL, kind, backend=args.backend, **settings)
        start = time.perf_counter()
        results[kind] = index.search_vectors(queries, 10)
        out[f"{kind}_ms_per_query"] = 1000 * (time.perf_counter() - start) / len(queries)
    hits = [len({r for r, _ in a} & {r for r, _ in b}) / 10 for a, b in zip(results["flat"], results["ivfpq"])]
    out["ivfpq_recall_at_10"] = sum(hits) / len(hits)
    out["queries"] = len(queries)
    return out


STAGES = ("split", "bm25", "bm25-search", "encode", "vectors", "ivfpq", "dense-search")


def plan(figures: dict) -> list[str]:
    """150 M sentences from the figures measured here (time and disk linear in sentences)."""
    n = figures["split"]["sentences"]
    scale = WIKIPEDIA / n
    cores = os.cpu_count() or 2
    rows = [
        f"| stage | measured at {n:,} sentences ({cores} cores) | 150 M sentences: core-hours | "
        "on 8 nodes x 16 cores (0.9 efficiency) | memory per node | disk |",
        "|---|---|---:|---:|---|---:|",
    ]

    def row(label, key, memory, per_core=True):
        f = figures[key]
        core_h = f["seconds"] * scale * (cores if per_core else 1) / 3600
        rows.append(
            f"| {label} | {f['seconds']:.0f} s, peak RSS {f['peak_rss_mib']:.0f} MiB | {core_h:.1f} | "
            f"{core_h / (128 * 0.9):.2f} h | {memory} | {f.get('mb', 0) * scale / 1024:.1f} GB |"
        )

    row("split (pysbd, Ray)", "split", "one shard's text per worker")
    row("BM25 count + merge + index (1 process)", "bm25", "global df; shards memory-mapped to search", False)
    enc = figures["encode"]
    rate = enc.get("wikipedia_per_second") or enc["per_second"]  # Wikipedia-length sentences first
    core_h = WIKIPEDIA / rate * cores / 3600
    rows.append(
        f"| encode, {enc['backend']} (Wikipedia-length sentences where the corpus has them) | "
        f"{rate:.0f} sentences/s | {core_h:.0f} | {core_h / (128 * 0.9):.1f} h | one model per node "
        f"(peak RSS {enc['peak_rss_mib']:.0f} MiB here) | {1536 * WIKIPEDIA / 2**30:.0f} GB float32 |"
    )
    row("IVF-PQ train + add + merge (1 process)", "ivfpq", "training sample (39 x nlist vectors)", False)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", help="folder for the corpus, kept (default: a temporary one, removed)")
    parser.add_argument("--copies", type=int, default=6, help="the real documents and copies-1 recombinations")
    parser.add_argument("--encode", type=int, default=20_000, help="sentences encoded for the rate")
    parser.add_argument("--queries", type=int, default=200, help="held-out query messages (BM25)")
    parser.add_argument("--dense-queries", type=int, default=50, help="queries for flat and IVF-PQ")
    parser.add_argument("--docs-per-shard", type=int, default=1000)
    parser.add_argument("--docs", type=int, help="only the first N real documents (a smoke test)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Ray CPUs for the split")
    parser.add_argument("--backend", default="auto", help="encoder backend (default auto: the fastest)")
    parser.add_argument("--stage", choices=STAGES, help="run one stage here and print its JSON (internal)")
    args = parser.parse_args()
    if args.stage:
        work = Path(args.work)
        print(json.dumps(stage(args.stage, work, args)))
        return 0
    from dsr.indexes.backends import resolve_backend

    args.backend = resolve_backend(args.backend)
    info = header("open retrieval at >= 1 M sentences (bench_million.py)")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-million-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return run_stages(args, work, info)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def run_stages(args: argparse.Namespace, work: Path, info: dict) -> int:
    figures = {}
    for name in STAGES:
        options = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if v is not None and k not in ("stage", "work")]
        done = subprocess.run(
            [sys.executable, __file__, "--stage", name, f"--work={work}", *options], capture_output=True, text=True
        )
        if done.returncode:
            print(done.stderr[-3000:], file=sys.stderr)
            return 1
        figures[name] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{name:<13} {json.dumps(figures[name])}  (load {os.getloadavg()[0]:.2f})", flush=True)
    figures["encode"]["backend"] = args.backend
    print()
    print("\n".join(plan(figures)))
    n = figures["split"]["sentences"]
    goal("corpus measured", f"{n:,} sentences", ">= 1,000,000", n >= 1_000_000)
    footer(info)
    (work / "figures.json").write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
