"""Fast backends side by side: torch fp32, OpenVINO fp32, OpenVINO int8 (run on demand, not a test).

    python bench/bench_backends.py                   # speed, memory and quality
    python bench/bench_backends.py --quick           # fewer texts and settings
    python bench/bench_backends.py --skip quality    # speed and memory only

Speed and memory: each (model kind, backend, input set, setting) runs in its
own subprocess, so ``peak RSS`` (the peak resident size of that process:
imports, model, inference; VmHWM, see peak_rss_mib) belongs to that backend alone; exports are built beforehand (their
cost is printed separately) and every worker warms up on two batches before
the timed pass. Models: all-MiniLM-L6-v2 (bi-encoder) and a MiniLM-L6
cross-encoder (the same weights with a seeded one-logit head: the size and
speed of ms-marco-MiniLM-L-6-v2, which is not on this machine). Inputs, from
CMU_DoG valid (built from ../shared/data/cmu_dog):

* ``real``: bi-encoder: the pool's distinct sentences; cross-encoder:
  (last turn, candidate) pairs. Realistic lengths.
* ``256``: bi-encoder: whole contexts, truncated at the model's 256 tokens;
  cross-encoder: (every turn, candidate) pairs truncated at 256 tokens, what
  the reranker's default (query=all, max_length=256) feeds.

Settings: the default batch sizes (64 bi-encoder, 32 cross-encoder) and all
cores; then batch sizes 16 and 128, one thread, and unsorted batches (inputs
in their original order instead of longest first).

Quality: nDCG@5 of the dense ranker (query strategies all and weighted) and of
a cross-encoder reranking each dialogue's top 20 of BM25 (query all) for each
backend, and |delta| against torch fp32, on CMU_DoG valid (silver labels, 502
dialogues) and on the judged dev set
(../shared/data/judged/cmu_dog-valid-judged.jsonl, 115 dialogues). The
cross-encoder is ``--cross-encoder MODEL`` (a trained one: a random head says
nothing about quality), skipped when not given.

Targets (issue 12): int8 >= 6x torch fp32 (bi-encoder) and >= 5x
(cross-encoder), OpenVINO fp32 >= 3x; |delta nDCG@5| <= 0.005.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchinfo import footer, goal, header, peak_rss_mib  # noqa: E402

from dsr.indexes.backends import BACKENDS  # noqa: E402

BATCH = {"bi-encoder": 64, "cross-encoder": 32}


# --- worker (one subprocess per measurement) ---------------------------------


def worker(spec: dict) -> dict:
    """Load one backend, warm up, time ``passes`` passes over the inputs; the process's peak RSS."""
    import numpy as np

    kind, backend, batch, threads = spec["kind"], spec["backend"], spec["batch_size"], spec["threads"]
    items = json.loads(Path(spec["inputs"]).read_text(encoding="utf-8"))
    if kind == "cross-encoder":
        items = [tuple(p) for p in items]
    if not spec["sorted"]:  # a fixed shuffle: batches of mixed lengths
        items = [items[i] for i in np.random.default_rng(0).permutation(len(items))]
    start = time.perf_counter()
    from dsr.core.models import resolve_model

    model = resolve_model(spec["model"], kind)
    if backend == "torch":  # torch is imported only here, so the others' peak RSS is their own
        import torch

        from dsr.core.models import load_cross_encoder, load_sentence_transformer

        if threads:
            torch.set_num_threads(threads)

        if kind == "bi-encoder":
            st = load_sentence_transformer(model)
            run = lambda xs: st.encode(xs, batch_size=batch, convert_to_numpy=True)  # noqa: E731
        else:
            from dsr.rerankers.cross_encoder import score_pairs

            ce = load_cross_encoder(model, spec["max_length"])
            run = lambda xs: score_pairs(ce, xs, batch)  # noqa: E731
    else:
        from dsr.indexes.backends import FastBiEncoder, FastCrossEncoder, export

        fed = export(model, kind, backend)
        config = {"INFERENCE_NUM_THREADS": threads} if threads else {}
        if spec.get("hint"):
            config["PERFORMANCE_HINT"] = spec["hint"]
        runner = {"request_batch": batch, "in_flight": spec["in_flight"]}
        fast = (
            FastBiEncoder(fed, config, **runner)
            if kind == "bi-encoder"
            else FastCrossEncoder(fed, spec["max_length"], config, **runner)
        )

        def run(xs):
            return fast.runner.run(xs, fast.max_length if kind == "cross-encoder" else None, order=spec["sorted"])

    load = time.perf_counter() - start

    def timed_pass(xs):
        if spec["sorted"] or backend != "torch":
            return run(xs)
        # torch unsorted: one call per batch, so no sort across batches happens
        return [run(xs[i : i + batch]) for i in range(0, len(xs), batch)]

    timed_pass(items[: 4 * batch])  # warm-up: first-call allocations, OpenVINO's shape caches
    rates = []
    for _ in range(spec["passes"]):
        start = time.perf_counter()
        timed_pass(items)
        rates.append(len(items) / (time.perf_counter() - start))
    return {"load_s": load, "rates": rates, "n": len(items), "peak_rss_mib": peak_rss_mib()}


def measure(spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True, env=os.environ.copy()
    )
    if out.returncode != 0:
        raise RuntimeError(f"worker failed for {spec}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- inputs ----------------------------------------------------------------


def inputs(collection, kind: str, length: str, limit: int) -> list:
    from dsr.core.queries import query_text

    dialogues = list(collection)
    if kind == "bi-encoder":
        if length == "real":
            items = sorted({c.body for d in dialogues for c in d.candidates})
        else:  # whole contexts of >= 256 tokens (about 200+ words) after truncation
            items = [query_text(d, "all") for d in dialogues]
            items = [t for t in items if len(t.split()) >= 220] or items
    else:
        if length == "256":  # long contexts, so (every turn, candidate) fills the 256 tokens
            dialogues = [d for d in dialogues if len(query_text(d, "all").split()) >= 220] or dialogues
        query = "last" if length == "real" else "all"
        items = [(query_text(d, query), c.body) for d in dialogues for c in d.candidates[:10]]
    # a fixed spread over the collection, not its first dialogues only
    step = max(1, len(items) // limit)
    return items[::step][:limit]


def token_lengths(items: list, kind: str, max_length: int) -> float:
    from dsr.core.models import load_sentence_transformer

    tok = load_sentence_transformer("all-MiniLM-L6-v2").tokenizer
    cols = [items] if kind == "bi-encoder" else [[a for a, _ in items], [b for _, b in items]]
    enc = tok(*cols, truncation="longest_first", max_length=max_length)
    return sum(len(x) for x in enc["input_ids"]) / len(items)


def cross_encoder_folder(home: Path) -> Path:
    """MiniLM-L6 with a seeded one-logit head, saved once (a fixed model for every process)."""
    folder = home / "bench-minilm-ce"
    if not (folder / "config.json").exists():
        import torch
        from sentence_transformers import CrossEncoder

        from dsr.core.models import resolve_model

        torch.manual_seed(0)
        ce = CrossEncoder(resolve_model("all-MiniLM-L6-v2").path, num_labels=1, local_files_only=True, device="cpu")
        ce.save_pretrained(str(folder))
    return folder


# --- parts ----------------------------------------------------------------


def speed_settings(kind: str, length: str, extra: bool) -> list[dict]:
    """(backend, setting) pairs to time: each backend's default, then (``extra``, realistic
    lengths) other batch sizes, one thread, unsorted inputs, and the fast backends' old
    one-request LATENCY setting."""
    from dsr.indexes.backends import IN_FLIGHT, REQUEST_BATCH

    def fast(**kw):
        return {"batch_size": REQUEST_BATCH, "in_flight": IN_FLIGHT, "hint": None, "threads": 0, "sorted": True, **kw}

    torch_default = {"batch_size": BATCH[kind], "in_flight": 1, "hint": None, "threads": 0, "sorted": True}
    rows = [("torch", torch_default)] + [(b, fast()) for b in fast_backends()]
    if extra and length == "real":
        for size in (16, 32, 128):
            rows.append(("torch", dict(torch_default, batch_size=size)))
        rows.append(("torch", dict(torch_default, threads=1)))
        for b in fast_backends():
            rows += [
                (b, fast(batch_size=8)),
                (b, fast(batch_size=32)),
                (b, fast(in_flight=2)),
                (b, fast(threads=1)),
                (b, fast(sorted=False)),
                (b, fast(batch_size=BATCH[kind], in_flight=1, hint="LATENCY")),
            ]
    return rows


def fast_backends() -> list[str]:
    from dsr.indexes.backends import cpu_has_bf16

    return [b for b in BACKENDS[1:] if b != "openvino-bf16" or cpu_has_bf16()]


def bench_speed(collection, home: Path, quick: bool, rows: list, extra: bool, rounds: int, passes: int) -> None:
    """Every (backend, setting) in its own process, ``rounds`` times interleaved (so a slow
    minute of a shared host falls on all of them), ``passes`` timed passes each; the figure is
    the median pass, the speed-up the ratio to torch's default setting's median."""
    import statistics

    from dsr.core.models import resolve_model
    from dsr.indexes.backends import export

    models = {"bi-encoder": "all-MiniLM-L6-v2", "cross-encoder": str(cross_encoder_folder(home))}
    for kind, spec in models.items():
        for backend in fast_backends():
            start = time.perf_counter()
            export(resolve_model(spec, kind), kind, backend)
            print(f"  export {kind} {backend}: {time.perf_counter() - start:.1f} s (cached after)", file=sys.stderr)
    limits = {
        ("bi-encoder", "real"): 600 if quick else 1151,
        ("bi-encoder", "256"): 100 if quick else 300,
        ("cross-encoder", "real"): 300 if quick else 1000,
        ("cross-encoder", "256"): 100 if quick else 300,
    }
    folder = Path(tempfile.mkdtemp(prefix="bench-inputs-"))
    for (kind, length), limit in limits.items():
        items = inputs(collection, kind, length, limit)
        path = folder / f"{kind}-{length}.json"
        path.write_text(json.dumps(items), encoding="utf-8")
        mean_tokens = token_lengths(items, kind, 256)
        plan = speed_settings(kind, length, extra)
        results: list[dict] = [{"rates": [], "peak_rss_mib": 0.0, "load_s": []} for _ in plan]
        for _ in range(rounds):
            for (backend, setting), result in zip(plan, results):
                got = measure(
                    {
                        "kind": kind,
                        "backend": backend,
                        "model": models[kind],
                        "inputs": str(path),
                        "max_length": 256,
                        "passes": passes,
                        **setting,
                    }
                )
                result["rates"] += got["rates"]
                result["load_s"].append(got["load_s"])
                result["peak_rss_mib"] = max(result["peak_rss_mib"], got["peak_rss_mib"])
        base = statistics.median(results[0]["rates"])
        for (backend, setting), result in zip(plan, results):
            rate = statistics.median(result["rates"])
            row = {
                "kind": kind,
                "inputs": length,
                "n": len(items),
                "mean_tokens": round(mean_tokens, 1),
                "backend": backend,
                **setting,
                "rate": rate,
                "rates": [round(r, 1) for r in result["rates"]],
                "speedup": rate / base,
                "peak_rss_mib": result["peak_rss_mib"],
                "load_s": statistics.median(result["load_s"]),
            }
            rows.append(row)
            how = (
                f"batch {setting['batch_size']:>3}"
                + (f" x{setting['in_flight']}" if backend != "torch" else "")
                + f" threads {setting['threads'] or 'all'}"
                + ("" if setting["sorted"] else " unsorted")
                + (f" {setting['hint']}" if setting["hint"] else "")
            )
            spread = f"{min(result['rates']):.0f}-{max(result['rates']):.0f}"
            print(
                f"  {kind:<13} {length:>4} ({mean_tokens:5.1f} tok) {backend:<13} {how:<38} "
                f"{rate:8.1f}/s ({spread:>9})  {row['speedup']:5.2f}x  peak {row['peak_rss_mib']:6.0f} MiB",
                file=sys.stderr,
            )


def bench_quality(collections: dict, cross_encoder: str | None, rows: list) -> None:
    from dsr.evaluation.measures import evaluate_run
    from dsr.evaluation.qrels import qrels_from_collection
    from dsr.rankers import make_ranker
    from dsr.rerankers import make_reranker

    for name, collection in collections.items():
        qrels = qrels_from_collection(collection)
        ndcg = lambda run: float(evaluate_run(qrels, run, ["nDCG@5"]).values[:, 0].mean())  # noqa: E731
        systems = [
            (f"dense ({q})", lambda b, q=q: make_ranker("dense", query=q, backend=b).rank(collection))
            for q in ("all", "weighted")
        ]
        if cross_encoder:
            first = make_ranker("bm25", query="all").rank(collection)
            systems.append(
                (
                    "cross-encoder top 20 of BM25 (all)",
                    lambda b: make_reranker("cross-encoder", model=cross_encoder, backend=b).rerank(collection, first, 20),
                )
            )
        for system, make in systems:
            exact = None
            for backend in ["torch", *fast_backends()]:
                start = time.perf_counter()
                value = ndcg(make(backend))
                exact = value if backend == "torch" else exact
                row = {
                    "collection": name,
                    "system": system,
                    "backend": backend,
                    "nDCG@5": value,
                    "delta": value - exact,
                    "seconds": time.perf_counter() - start,
                }
                rows.append(row)
                print(
                    f"  {name:<22} {system:<36} {backend:<13} nDCG@5 {value:.4f}  delta {row['delta']:+.4f}"
                    f"  ({row['seconds']:.0f} s)",
                    file=sys.stderr,
                )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer texts, default settings only")
    parser.add_argument("--skip", nargs="*", default=[], choices=["speed", "quality"])
    parser.add_argument(
        "--settings", action="store_true", help="with --quick: still try batch sizes, one thread and unsorted batches"
    )
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3; --quick 1)")
    parser.add_argument("--passes", type=int, default=3, help="timed passes per process (default 3)")
    parser.add_argument(
        "--source",
        default=str(ROOT.parent / "shared" / "data" / "cmu_dog"),
        help="CMU_DoG raw folder (default ../shared/data/cmu_dog)",
    )
    parser.add_argument("--judged", default=str(ROOT.parent / "shared" / "data" / "judged" / "cmu_dog-valid-judged.jsonl"))
    parser.add_argument("--cross-encoder", metavar="MODEL", help="a trained cross-encoder for the quality rows")
    parser.add_argument("--home", help="DSR_HOME to use (default: a fresh temporary one)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0

    home = Path(args.home or tempfile.mkdtemp(prefix="dsr-bench-home-"))
    os.environ["DSR_HOME"] = str(home)
    from dsr.collections import load_collection
    from dsr.core.provenance import package_versions

    info = header("bench_backends: fast inference backends against torch fp32")
    info["versions"] = package_versions(("torch", "openvino", "nncf", "onnxruntime", "transformers", "sentence-transformers"))
    print(json.dumps(info), file=sys.stderr)
    cmu_dog = load_collection("cmu_dog", args.source, "valid")
    speed: list = []
    quality: list = []
    if "speed" not in args.skip:
        rounds = args.rounds or (1 if args.quick else 3)
        bench_speed(cmu_dog, home, args.quick, speed, args.settings or not args.quick, rounds, args.passes)
    if "quality" not in args.skip:
        collections = {"cmu_dog valid (silver)": cmu_dog}
        if Path(args.judged).exists():
            collections["cmu_dog valid judged"] = load_collection(args.judged)
        bench_quality(collections, args.cross_encoder, quality)
    footer(info)
    if args.json:
        Path(args.json).write_text(json.dumps({"header": info, "speed": speed, "quality": quality}, indent=2), encoding="utf-8")
    print(json.dumps(info))
    for row in speed:
        print("speed", json.dumps(row))
    for row in quality:
        print("quality", json.dumps(row))
    goals(speed, quality)
    return 0


def goals(speed: list, quality: list) -> None:
    """The GOAL lines: int8 against torch fp32 per kind (>= 3.5x, what `dsr corpus index` needs
    from the fastest backend, issue 34), and int8's |delta nDCG@5| (<= 0.005)."""
    for kind in dict.fromkeys(row.get("kind") for row in speed if row.get("kind")):
        rows = [
            r for r in speed if r.get("kind") == kind and r.get("speedup") is not None and r.get("backend") == "openvino-int8"
        ]
        if rows:
            ratio = max(r["speedup"] for r in rows)
            goal(f"{kind}: int8 / torch fp32", f"{ratio:.2f}x", ">= 3.5x (issue 34)", ratio >= 3.5)
    deltas = [abs(r["delta"]) for r in quality if r.get("delta") is not None and r.get("backend") == "openvino-int8"]
    if deltas:
        goal("int8 |delta nDCG@5|, largest", f"{max(deltas):.4f}", "<= 0.005", max(deltas) <= 0.005)


if __name__ == "__main__":
    raise SystemExit(main())
