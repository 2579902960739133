"""Corpus benchmark: sentence splitting, BM25, encoding and FAISS, in-process vs Ray (run on demand).

    python bench/bench_corpus.py                 # > 100,000 real sentences; encoding on a 10,000 subset
    python bench/bench_corpus.py --quick         # a few minutes: 20,000 sentences, 2,000 encoded

The corpus is real text from ../shared/data: every CMU_DoG conversation
(train and valid; a conversation is a document, a message a paragraph), the
CMU_DoG Wikipedia documents (every text field) and every ReDial test
conversation, as JSON Lines documents, built with ``dsr corpus build``.

Stages, each timed in-process (``--workers 0``) and on a local Ray with 1
and 2 workers (``ray.init(num_cpus=N)``, Ray start-up included and shown
separately), on fresh copies so nothing is reused:

* **split**: documents -> sentence shards (pysbd);
* **bm25**: the two-pass sharded BM25 (counts, merge, index);
* **encode**: all-MiniLM-L6-v2 over a subset of ``--encode`` sentences
  (documents taken in a seeded random order until the subset is full):
  in-process with 1 and 2 torch threads, Ray Data actors with 1 thread each;
* **ivfpq**: train on all the subset's vectors, add the shards, merge.

Then, on the encoded subset's *real* vectors: memory per sentence of each
index (bytes on disk of what search holds in memory or maps), IVF-PQ
recall@50 against exact (flat) search for several ``nprobe`` and ``refine``
settings, and search latency per query (BM25 over the whole corpus, flat and
IVF-PQ over the subset). Queries: ``--queries`` real messages of CMU_DoG
*test*-like held-out conversations (the last conversations in file order,
left out of the corpus).

Ray's overhead is reported as the ratio Ray 1 worker / in-process 1 thread
(wall seconds), the scaling as Ray 1 worker / Ray 2 workers (target >= 1.7).
Before split and BM25 each Ray worker is started and has imported the stages'
modules (a once-per-worker cost, shown apart like Ray's start-up). Each Ray
Data encoding pass starts its actors, which load the model: that start-up is
measured separately (the same number of actors started together) and the
encoding rate is shown both with it and with it taken out.
The machine's load average is printed: other work on a shared machine
lowers every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Ray's memory monitor kills workers when the machine is above 95 % memory, whoever uses it;
# on a shared machine that stops a benchmark whose own workers use ~0.5 GB each.
os.environ.setdefault("RAY_memory_usage_threshold", "0.995")
DATA = ROOT.parent / "shared" / "data"

import numpy as np  # noqa: E402  (after the environment above)
import torch  # noqa: E402
from benchinfo import goal  # noqa: E402

from dsr.core.models import load_sentence_transformer, resolve_model  # noqa: E402
from dsr.core.provenance import machine, package_versions  # noqa: E402
from dsr.indexes.corpus.bm25 import ShardedBM25, build_bm25  # noqa: E402
from dsr.indexes.corpus.build import build_corpus  # noqa: E402
from dsr.indexes.corpus.dense import ShardedDense, build_ivfpq, encode_corpus, model_folder  # noqa: E402
from dsr.indexes.corpus.distributed import EncoderActor, Executor  # noqa: E402
from dsr.indexes.corpus.layout import Corpus  # noqa: E402

RESULTS: dict = {}


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def timed(name: str, fn):
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    RESULTS.setdefault("stages", {})[name] = seconds
    say(f"  {name:<44} {seconds:9.2f} s")
    return value, seconds


def strings(value) -> list[str]:
    """Every string inside a JSON value, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def real_documents(held_out: int) -> tuple[list[dict], list[str]]:
    """Documents from CMU_DoG and ReDial, and ``held_out`` query messages not in them."""
    docs, queries = [], []
    conversations = sorted((DATA / "cmu_dog" / "Conversations").glob("*/*.json"))
    for i, path in enumerate(conversations):
        messages = [m["text"].strip() for m in json.loads(path.read_text())["history"] if m["text"].strip()]
        if i >= len(conversations) - 40:  # held out: queries only
            queries.extend(m for m in messages if len(m.split()) >= 6)
            continue
        docs.append(
            {
                "id": f"cmudog-{path.parent.name}-{path.stem}",
                "title": f"CMU_DoG {path.parent.name} {path.stem[:12]}",
                "text": "\n".join(messages),
            }
        )
    for path in sorted((DATA / "cmu_dog" / "WikiData").glob("*.json")):
        lines = [s.strip() for s in strings(json.loads(path.read_text())) if len(s.split()) >= 3]
        docs.append({"id": f"wiki-{path.stem}", "title": path.stem.replace("_", " "), "text": "\n".join(lines)})
    with open(DATA / "redial" / "test_data.jsonl", encoding="utf-8") as handle:
        for line in handle:
            conv = json.loads(line)
            messages = [m["text"].strip() for m in conv["messages"] if m["text"].strip()]
            docs.append(
                {
                    "id": f"redial-{conv['conversationId']}",
                    "title": f"ReDial {conv['conversationId']}",
                    "text": "\n".join(messages),
                }
            )
    return docs, queries[:held_out]


def write_jsonl(path: Path, docs: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path


def write_dump(path: Path, docs: list[dict]) -> Path:
    """The documents as a MediaWiki XML export (bz2), paragraphs as wikitext paragraphs."""
    import bz2
    from xml.sax.saxutils import escape

    with bz2.open(path, "wt", encoding="utf-8") as handle:
        handle.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">\n')
        for number, doc in enumerate(docs, 1):
            text = "\n\n".join(doc["text"].splitlines())
            handle.write(
                f"<page><title>{escape(doc['title'])}</title><ns>0</ns><id>{number}</id><revision>"
                f"<text>{escape(text)}</text></revision></page>\n"
            )
        handle.write("</mediawiki>\n")
    return path


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def executors():
    yield "in-process", Executor(0)
    for n in (1, 2):
        yield f"ray-{n}", Executor(n)


def ray_up(executor) -> float:
    start = time.perf_counter()
    executor.__enter__()
    return time.perf_counter() - start


def _warm_unit(hold: float) -> int:
    import bm25s  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import pysbd  # noqa: F401

    import dsr.indexes.corpus.bm25
    import dsr.indexes.corpus.build  # noqa: F401

    time.sleep(hold)  # keeps this worker busy, so the next unit starts another one
    return os.getpid()


def warm_workers(executor) -> float:
    """Start every Ray worker process and import the stages' modules in it before a timed
    stage: a cost paid once per worker and session (on a cluster, once per job), shown apart
    like Ray's start-up, so the stage's rate is the work's, not the processes' start."""
    start = time.perf_counter()
    pids = set(executor.map(_warm_unit, [(1.0,)] * executor.workers, desc="warm-up", total=executor.workers))
    RESULTS.setdefault("warm_workers", []).append(len(pids))
    return time.perf_counter() - start


def actor_start_seconds(executor, model) -> float:
    """Seconds until ``executor.workers`` encoder actors started together have loaded the model
    (what each Ray Data encoding pass pays before its first batch)."""
    import ray

    start = time.perf_counter()
    actors = [ray.remote(num_cpus=1)(EncoderActor).remote(model, 64) for _ in range(executor.workers)]
    ray.get([a.__ray_ready__.remote() for a in actors])
    seconds = time.perf_counter() - start
    for actor in actors:
        ray.kill(actor)
    return seconds


# Anchors for the plan (issue 13): all-MiniLM-L6-v2 on a V100; autofaiss; bm25s per core.
V100_SENTENCES_PER_S = 14_200
AUTOFAISS = {"vectors": 200e6, "hours": 3.0, "ram_gb": 15.0}
BM25S_DOCS_PER_S_PER_CORE = 7_500


def plan(total: float = 150e6, nodes: int = 8, cores: int = 16, gpus: int = 8) -> list[str]:
    """The 150-million-sentence plan, from this run's per-sentence costs (RESULTS) and the anchors."""
    n, m = RESULTS["corpus"]["sentences"], RESULTS["subset"]["sentences"]
    stages = RESULTS["stages"]
    per_core = {  # sentences per second on one core, this machine
        "split": n / stages["split [ray-1]"],  # a Ray worker, task overheads included
        "bm25": n / stages["bm25 [ray-1]"],
        # one torch thread, model loaded: the steady rate (a Ray actor's model load is paid once per
        # worker, not per sentence, so it does not belong in a per-sentence cost at 10^8 sentences)
        "encode": m / stages[f"encode {m:,} [in-process-1-thread]"],
    }
    scaling = stages["split [ray-1]"] / stages["split [ray-2]"] / 2  # parallel efficiency at 2 workers
    b = RESULTS["bytes_per_sentence"]
    gb = lambda per_sentence: per_sentence * total / 1e9  # noqa: E731
    hours = lambda rate: total / rate / 3600  # noqa: E731
    cpus = nodes * cores
    lines = [
        f"plan for {total / 1e6:.0f} M sentences (measured per-core rates x {cpus} cores = {nodes} nodes x "
        f"{cores}; parallel efficiency {scaling:.2f} as measured at 2 workers; {gpus} GPUs at the V100 anchor)"
    ]
    for stage, rate in per_core.items():
        lines.append(
            f"  {stage:<7} {rate:8,.0f} sent/s/core -> {hours(rate):8.1f} core-hours; "
            f"{hours(rate * cpus * scaling):6.2f} h on {cpus} cores"
        )
    lines.append(
        f"  encode  on {gpus} V100-class GPUs: {hours(V100_SENTENCES_PER_S * gpus):.2f} h "
        f"({hours(V100_SENTENCES_PER_S):.1f} h on one)"
    )
    lines.append(
        f"  bm25    anchor {BM25S_DOCS_PER_S_PER_CORE:,} docs/s/core -> {hours(BM25S_DOCS_PER_S_PER_CORE):.1f} core-hours"
    )
    lines.append(
        f"  ivfpq   autofaiss anchor: {AUTOFAISS['hours'] * total / AUTOFAISS['vectors']:.2f} h, "
        f"{AUTOFAISS['ram_gb']:.0f} GB RAM for {AUTOFAISS['vectors'] / 1e6:.0f} M vectors"
    )
    for label, key in (
        ("sentences (Parquet)", "sentences (Parquet, zstd)"),
        ("bm25 score matrices", "bm25 (score matrices, all shards)"),
        ("vectors float32", "flat (float32 vectors)"),
        ("ivfpq codes + ids", "ivfpq (codes + ids, index.ivfdata)"),
    ):
        lines.append(f"  disk/RAM {label:<22} {b[key]:8.1f} B/sentence -> {gb(b[key]):8.1f} GB")
    return lines


def arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20,000 sentences, 2,000 encoded")
    parser.add_argument("--encode", type=int, default=10_000, help="sentences encoded (default 10,000)")
    parser.add_argument("--queries", type=int, default=200, help="query messages (default 200)")
    parser.add_argument("--docs-per-shard", type=int, default=300)
    parser.add_argument("--docs", type=int, help="use only the first N documents (a smoke test)")
    parser.add_argument("--work", help="folder for the corpora (default: a temporary one, removed)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    return parser.parse_args()


def print_header() -> None:
    versions = package_versions(("ray", "faiss-cpu", "bm25s", "pysbd", "pyarrow", "torch", "sentence-transformers"))
    header = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "machine": machine(),
        "versions": versions,
        "load_average_start": os.getloadavg(),
        "command": " ".join(sys.argv),
    }
    RESULTS["header"] = header
    print(f"bench_corpus.py  {header['date']}")
    print(f"machine: {header['machine']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in header['load_average_start'])}")


def split_and_bm25(work: Path, source: Path, docs_per_shard: int) -> tuple[dict, dict, Corpus]:
    """Split and BM25, in-process and on Ray with 1 and 2 workers; the in-process corpus (every
    path must build the same shards)."""
    split, bm25 = {}, {}
    for name, executor in executors():
        out = work / f"corpus-{name}"
        shutil.rmtree(out, ignore_errors=True)
        startup = ray_up(executor) if executor.uses_ray else 0.0
        if executor.uses_ray:
            RESULTS.setdefault("warm_up_seconds", {})[name] = warm_workers(executor)
        try:
            _, split[name] = timed(
                f"split [{name}]", lambda: build_corpus(source, out, docs_per_shard=docs_per_shard, executor=executor)
            )
            corpus = Corpus(out)
            _, bm25[name] = timed(f"bm25 [{name}]", lambda: build_bm25(corpus, executor=executor))
        finally:
            executor.__exit__(None, None, None)
        RESULTS.setdefault("ray_startup_seconds", {})[name] = startup
    corpus = Corpus(work / "corpus-in-process")
    for name in split:  # every path built the same shards
        other = Corpus(work / f"corpus-{name}")
        assert [s["sha256"] for s in other.shards] == [s["sha256"] for s in corpus.shards], name
    return split, bm25, corpus


def dump_path(work: Path, docs: list[dict], docs_per_shard: int) -> None:
    """The same text as a bz2 MediaWiki export, parsed and cleaned, against JSON Lines."""
    sample_docs = docs[: max(1, len(docs) // 10)]
    dump = write_dump(work / "sample.xml.bz2", sample_docs)
    out = work / "dump-corpus"
    shutil.rmtree(out, ignore_errors=True)
    _, seconds = timed(
        "split from .xml.bz2 (wikitext) [in-process]", lambda: build_corpus(dump, out, docs_per_shard=docs_per_shard)
    )
    jsonl_out = work / "dump-jsonl"
    shutil.rmtree(jsonl_out, ignore_errors=True)
    _, plain_seconds = timed(
        "split same documents from JSON Lines [in-process]",
        lambda: build_corpus(write_jsonl(work / "sample.jsonl", sample_docs), jsonl_out, docs_per_shard=docs_per_shard),
    )
    RESULTS["dump"] = {
        "documents": len(sample_docs),
        "sentences": len(Corpus(out)),
        "seconds": seconds,
        "jsonl_seconds": plain_seconds,
    }


def encoding_subset(corpus: Corpus, docs: list[dict], encode_n: int) -> list[dict]:
    """Documents in a seeded random order until they hold ``encode_n`` sentences."""
    rng = np.random.default_rng(0)
    subset_docs, count = [], 0
    sizes = {d["id"]: 0 for d in docs}
    for shard in range(len(corpus.names)):
        for doc_id in corpus.table(shard, ["doc_id"]).column("doc_id").to_pylist():
            sizes[doc_id] += 1
    for i in rng.permutation(len(docs)):
        if count >= encode_n:
            break
        subset_docs.append(docs[i])
        count += sizes[docs[i]["id"]]
    return subset_docs


def encode_and_ivfpq(work: Path, subset_source: Path, shards: int, model) -> tuple[dict, dict]:
    """Encoding (in-process with 1 and all threads, Ray with 1 and 2 actors) and IVF-PQ."""
    load_sentence_transformer(model)  # in-process timings leave out the one model load; Ray's include the actors'
    encode, ivf = {}, {}
    default_threads = torch.get_num_threads()
    runs = [("in-process-1-thread", 0, 1), ("in-process", 0, default_threads), ("ray-1", 1, None), ("ray-2", 2, None)]
    for name, workers, threads in runs:
        out = work / f"subset-{name}"
        shutil.rmtree(out, ignore_errors=True)
        build_corpus(subset_source, out, docs_per_shard=shards)
        sub = Corpus(out)
        executor = Executor(workers)
        if threads:
            torch.set_num_threads(threads)
        startup = ray_up(executor) if executor.uses_ray else 0.0
        if executor.uses_ray:
            RESULTS.setdefault("actor_start_seconds", {})[name] = actor_start_seconds(executor, model)
        try:
            _, encode[name] = timed(f"encode {len(sub):,} [{name}]", lambda: encode_corpus(sub, model, executor=executor))
            if name != "in-process-1-thread":
                _, ivf[name] = timed(
                    f"ivfpq train+add+merge [{name}]",
                    lambda: build_ivfpq(sub, model, {"train_size": len(sub)}, executor=executor),
                )
        finally:
            executor.__exit__(None, None, None)
            torch.set_num_threads(default_threads)
        RESULTS.setdefault("ray_startup_seconds", {})[f"encode-{name}"] = startup
    return encode, ivf


def memory_per_sentence(corpus: Corpus, sub: Corpus, model) -> dict[str, float]:
    n, m = len(corpus), len(sub)
    folder = model_folder(sub, model)
    RESULTS["ivfpq_settings"] = json.loads((folder / "ivfpq" / "index.done.json").read_text())["settings"]
    return {
        "bm25 (score matrices, all shards)": folder_bytes(corpus.folder / "bm25" / "shards") / n,
        "flat (float32 vectors)": folder_bytes(folder / "vectors") / m,
        "ivfpq (codes + ids, index.ivfdata)": folder_bytes(folder / "ivfpq" / "index.ivfdata") / m,
        "ivfpq (index.faiss: quantizer, PQ tables)": folder_bytes(folder / "ivfpq" / "index.faiss") / m,
        "sentences (Parquet, zstd)": folder_bytes(corpus.folder / "shards") / n,
    }


def recall_and_latency(corpus: Corpus, sub: Corpus, model, queries: list[str]) -> tuple[dict, dict]:
    """IVF-PQ recall@50 against flat search on the subset, and search latency per query."""
    flat = ShardedDense(sub, model)
    qvec = flat.encode(queries)
    start = time.perf_counter()
    truth = flat.search_vectors(qvec, 50)
    latency = {"flat (subset)": (time.perf_counter() - start) / len(queries)}
    recall = {}
    for nprobe in (8, 16, 32, 64):
        for refine in (0, 2, 4):
            ivfpq = ShardedDense(sub, model, "ivfpq", nprobe=nprobe, refine=refine)
            start = time.perf_counter()
            found = ivfpq.search_vectors(qvec, 50)
            latency[f"ivfpq nprobe={nprobe} refine={refine} (subset)"] = (time.perf_counter() - start) / len(queries)
            recall[f"nprobe={nprobe} refine={refine}"] = float(
                np.mean([len({r for r, _ in t} & {r for r, _ in f}) / 50 for t, f in zip(truth, found)])
            )
    before = anonymous_bytes()
    lexical = ShardedBM25(corpus)
    start = time.perf_counter()
    for q in queries:
        lexical.search(lexical.query_tokens(q), 50)
    latency["bm25 (whole corpus)"] = (time.perf_counter() - start) / len(queries)
    start = time.perf_counter()
    lexical.search_many([lexical.query_tokens(q) for q in queries], 50)
    latency["bm25 (whole corpus), queries batched"] = (time.perf_counter() - start) / len(queries)
    # what the searcher keeps between searches (the shards are memory-mapped and let go)
    RESULTS["bytes_per_sentence"]["BM25 held in memory to search"] = max(0, anonymous_bytes() - before) / len(corpus)
    return recall, latency


def anonymous_bytes() -> int:
    """This process's anonymous resident memory (Linux RssAnon): what it holds itself, not the
    pages of memory-mapped files, which the kernel drops and reads again as it needs."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


def print_throughput(split: dict, bm25: dict, encode: dict, ivf: dict, n: int, m: int) -> None:
    print("\nthroughput (sentences/s; wall, Ray start-up excluded)")
    for label, table, count in (("split", split, n), ("bm25", bm25, n), ("encode", encode, m), ("ivfpq", ivf, m)):
        row = "  ".join(f"{k} {count / v:,.0f}" for k, v in table.items())
        print(f"  {label:<7} {row}")
    actors = RESULTS.get("actor_start_seconds", {})
    if actors:
        steady = {k: m / max(1e-9, encode[k] - actors[k]) for k in actors}
        RESULTS["encode_without_actor_start"] = steady
        print(
            "  encode  Ray, each pass's actor start-up (model load) taken out: "
            + "  ".join(f"{k} {v:,.0f} (start-up {actors[k]:.1f} s)" for k, v in steady.items())
            + f"; scaling {steady['ray-2'] / steady['ray-1']:.2f}x"
        )
    for label, table in (("split", split), ("bm25", bm25), ("encode", encode)):
        base = table.get("in-process-1-thread", table["in-process"])
        print(
            f"  {label:<7} Ray overhead (ray-1 / in-process{' 1 thread' if 'in-process-1-thread' in table else ''})"
            f" {table['ray-1'] / base:.2f}x; scaling ray-1 / ray-2 {table['ray-1'] / table['ray-2']:.2f}x "
            "(target >= 1.7)"
        )
    d = RESULTS["dump"]
    print(
        f"  dump    {d['sentences'] / d['seconds']:,.0f} sent/s from .xml.bz2 (bz2 + iterparse + mwparserfromhell "
        f"+ pysbd) vs {d['sentences'] / d['jsonl_seconds']:,.0f} from JSON Lines, same {d['documents']:,} "
        "documents (real text with little markup: Wikipedia's templates and tables cost more)"
    )
    print(
        "  Ray worker warm-up before split/BM25 (s, excluded): "
        + ", ".join(f"{k} {v:.1f}" for k, v in RESULTS.get("warm_up_seconds", {}).items())
    )
    print("  Ray start-up (s): " + ", ".join(f"{k} {v:.1f}" for k, v in RESULTS["ray_startup_seconds"].items() if v))


def print_search(queries: list[str]) -> None:
    print("\nbytes per sentence")
    for k, v in RESULTS["bytes_per_sentence"].items():
        print(f"  {k:<44} {v:9.1f}")
    print(f"\nIVF-PQ {RESULTS['ivfpq_settings']} recall@50 vs flat ({len(queries)} queries)")
    for k, v in RESULTS["recall_at_50_vs_flat"].items():
        print(f"  {k:<22} {v:.3f}")
    print("\nsearch latency (ms/query)")
    for k, v in RESULTS["latency_seconds_per_query"].items():
        print(f"  {k:<44} {1000 * v:8.2f}")
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in RESULTS['load_average_end'])}")


def print_goals(split: dict, bm25: dict, encode: dict) -> None:
    """Issue 34's goals beside this run's figures."""
    print()
    for label, table in (("split", split), ("bm25", bm25), ("encode", encode)):
        base = table.get("in-process-1-thread", table["in-process"])
        scaling, overhead = table["ray-1"] / table["ray-2"], table["ray-1"] / base
        goal(f"Ray {label}, 2 workers / 1", f"{scaling:.2f}x", ">= 1.7x", scaling >= 1.7)
        goal(f"Ray {label}, 1 worker against in-process (wall)", f"{overhead:.2f}x", "<= 1.10x (issue 34)", overhead <= 1.1)
    best = max(RESULTS["recall_at_50_vs_flat"].values())
    goal("IVF-PQ recall@50 against flat, best setting", f"{best:.3f}", ">= 0.95", best >= 0.95)
    held = RESULTS["bytes_per_sentence"].get("BM25 held in memory to search")
    whole = RESULTS["bytes_per_sentence"].get("bm25 (score matrices, all shards)")
    if held is not None and whole is not None:
        goal(
            "BM25 search: bytes per sentence held in memory",
            f"{held:.1f} (the index: {whole:.1f} on disk)",
            "less than the whole index (issue 34)",
            held < whole,
        )
    sentences = RESULTS["corpus"]["sentences"]
    goal("plan measured at", f"{sentences:,} sentences", ">= 1,000,000 (issue 34)", sentences >= 1_000_000)


def main() -> int:
    args = arguments()
    if not DATA.is_dir():
        say(f"{DATA} is missing: nothing to measure")
        return 2
    encode_n = 2_000 if args.quick else args.encode
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["DSR_HOME"] = str(work / "home")
    print_header()
    docs, queries = real_documents(args.queries)
    docs = docs[::5] if args.quick else docs
    docs = docs[: args.docs] if args.docs else docs
    source = write_jsonl(work / "docs.jsonl", docs)
    say(f"{len(docs):,} documents, {len(queries)} held-out queries")

    split, bm25, corpus = split_and_bm25(work, source, args.docs_per_shard)
    n = len(corpus)
    RESULTS["corpus"] = {"documents": len(docs), "sentences": n, "shards": len(corpus.names)}
    dump_path(work, docs, args.docs_per_shard)
    subset_docs = encoding_subset(corpus, docs, encode_n)
    model = resolve_model("all-MiniLM-L6-v2", "bi-encoder")
    encode, ivf = encode_and_ivfpq(work, write_jsonl(work / "subset.jsonl", subset_docs), max(1, len(subset_docs) // 8), model)
    sub = Corpus(work / "subset-in-process")
    m = len(sub)
    RESULTS["subset"] = {"documents": len(subset_docs), "sentences": m}
    RESULTS["bytes_per_sentence"] = memory_per_sentence(corpus, sub, model)
    recall, latency = recall_and_latency(corpus, sub, model, queries)
    RESULTS["recall_at_50_vs_flat"] = recall
    RESULTS["latency_seconds_per_query"] = latency
    RESULTS["load_average_end"] = os.getloadavg()

    print(
        f"\ncorpus: {len(docs):,} documents -> {n:,} sentences in {len(corpus.names)} shards; "
        f"encoded subset {m:,} sentences ({len(subset_docs):,} documents)"
    )
    print_throughput(split, bm25, encode, ivf, n, m)
    print_search(queries)
    print_goals(split, bm25, encode)
    print()
    RESULTS["plan"] = plan()
    print("\n".join(RESULTS["plan"]))
    if args.json:
        Path(args.json).write_text(json.dumps(RESULTS, indent=2, default=str))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
