"""How far each fast backend's tables are from the exact backend's (torch fp32): re-runnable.

    python bench/backend_deltas.py                     # every set, every backend this CPU runs
    python bench/backend_deltas.py --write             # ... and rewrite dsr/indexes/data/backend_deltas.json
    python bench/backend_deltas.py --sets cmu_dog_judged --backends openvino-int8
    python bench/backend_deltas.py --torch-isa --sets cmu_dog_judged   # torch fp32 on other instruction sets

For each judged or silver set (``SETS``) it runs ``dsr reproduce`` (the baseline suite:
BM25, zero-shot dense with each query strategy, RRF; no trained model) once on torch fp32
and once on each fast backend, each in a process of its own, all in one scratch DSR_HOME
(BM25 indexes and the torch embeddings are built once). Then, backend against torch, it
prints per set: the largest difference of a cell of the printed table (the primary measure,
nDCG@5, by subset: the mean over the 50 splits' test halves, as printed to 4 decimals), how
many of its cells print differently (4 decimals, mean and sd), the largest difference over
every measure of the report (its untuned blocks over all points included), and the ▲/▼
marks that flip (on the printed table, and over every measure).
``--write`` stores those figures, with the date and CPU, in the JSON that dsr reads to
write the one-line note under every table, report and run sidecar made on a fast backend
(:mod:`dsr.indexes.exactness`); entries of sets or backends not measured in this run are kept.

``--torch-isa`` checks the other claim: that torch fp32 prints the same table whatever
the CPU. It reruns the torch suite in a fresh DSR_HOME (so every embedding is computed
again) under settings that change the code paths torch and MKL take on this CPU (ATen's
kernels at AVX2 or no SIMD instead of AVX-512, MKL's instruction set, MKL's reproducible
mode, 1 or 16 threads instead of 2) and prints whether each table equals the default one
character for character, and how far the raw vectors of ``VECTORS`` sentences moved (to
show that a setting changed the arithmetic at all). A CPU with AMX (where oneDNN takes other kernels) cannot be
emulated here.

Sets (the sources in ../shared/data, see its SOURCES.md): ``cmu_dog_judged`` (115 points,
``--source ../shared/data/judged``), ``cmu_dog_dev`` (405 points, 389 measured; built
from CMU_DoG), ``cmu_dog`` valid (502 points, silver labels) and the bundled ``sample``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from benchinfo import footer, header  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
#: name -> (collection, --source, --split)
SETS = {
    "cmu_dog_judged": ("cmu_dog_judged", SHARED / "judged", None),
    "cmu_dog_dev": ("cmu_dog_dev", SHARED / "cmu_dog", None),
    "cmu_dog-valid": ("cmu_dog", SHARED / "cmu_dog", "valid"),
    "sample": ("sample", None, None),
}
EXACT = "torch"
FAST = ("openvino", "openvino-bf16", "openvino-int8")
JSON_PATH = ROOT / "dsr" / "indexes" / "data" / "backend_deltas.json"
#: --torch-isa: candidate texts whose raw vectors are compared too
VECTORS = 2000
#: --torch-isa: environment settings that move torch's fp32 code paths on this CPU
ISA_VARIANTS = {
    "default": {},
    "ATen AVX2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ATen no SIMD": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL AVX2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "MKL reproducible (CBWR=COMPATIBLE)": {"MKL_CBWR": "COMPATIBLE"},
    "1 thread": {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    "16 threads": {"BENCH_TORCH_THREADS": "16"},  # torch caps OMP_NUM_THREADS at the CPUs it sees
}


def worker(spec: dict) -> dict:
    """One ``reproduce`` on ``spec``'s set and backend; the table's cells and marks as JSON."""
    os.environ["DSR_HOME"] = spec["home"]
    if os.environ.get("BENCH_TORCH_THREADS"):  # --torch-isa: more threads than cores, as a 16-core host runs
        import torch

        torch.set_num_threads(int(os.environ["BENCH_TORCH_THREADS"]))
    from dsr.baselines import reproduce
    from dsr.collections import load_collection
    from dsr.evaluation import tables

    name, source, split = spec["collection"], spec["source"], spec["split"]
    collection = load_collection(name, source, split)
    started = time.perf_counter()
    out = reproduce(
        collection,
        Path(spec["home"]) / "out" / f"{collection.name}-{spec['backend']}",
        backend=spec["backend"],
        skipped_reason="skipped: no trained model in this measurement",
    )
    results = out["results"]
    cells, marks = {}, {}
    for subset in ["all", *results.collection.get("subsets", [])]:
        for system, values in results.summary(subset).items():
            for measure, (mean, sd) in values.items():
                key = f"{system} | {subset} | {measure}"
                cells[key] = [mean, sd]
                marks[key] = results.mark(subset, system, measure) if results.baseline else ""
        for run, values in results.untuned(subset).items():  # the report's untuned blocks (all points)
            for measure, mean in values.items():
                key = f"{run} (untuned) | {subset} | {measure}"
                cells[key], marks[key] = [mean, None], ""
    out = {
        "collection": collection.describe(),
        "primary": results.primary_measure,
        "cells": cells,
        "marks": marks,
        "table": tables.render(results, "text", verbose=False),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if spec.get("vectors"):  # --torch-isa: the raw vectors too, to see that the setting moved them
        out.update(raw_vectors(collection, Path(spec["home"]) / "vectors.npy"))
    return out


def raw_vectors(collection, path: Path) -> dict:
    """all-MiniLM-L6-v2's vectors of the collection's first VECTORS candidate texts (no cache),
    saved to ``path``; and the kernels torch chose (ATen's CPU capability, threads)."""
    import numpy as np
    import torch

    from dsr.core.models import resolve_model
    from dsr.indexes.embeddings import encode

    texts = [c.body for d in collection for c in d.candidates][:VECTORS]
    np.save(path, encode(texts, resolve_model("all-MiniLM-L6-v2", "bi-encoder"), cache=False))
    return {"vectors": str(path), "capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}


def run_worker(spec: dict, env: dict | None = None) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"reproduce {spec} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def printed(cell: list) -> str:
    mean, sd = cell
    return f"{mean:.4f}" + ("" if sd is None else f"±{sd:.4f}")


def compare(exact: dict, fast: dict) -> dict:
    """Backend against torch: the largest cell difference, cells printed differently and
    flipped marks, on the printed table (the primary measure) and over every measure."""
    primary = exact["primary"]
    keys = list(exact["cells"])
    on_table = [k for k in keys if k.endswith(f" | {primary}") and " (untuned) | " not in k]

    def delta(k):  # between the figures as printed (4 decimals), as a reader compares them
        return round(abs(round(fast["cells"][k][0], 4) - round(exact["cells"][k][0], 4)), 4)

    worst = max(on_table, key=delta)  # the first cell when none differs
    flipped = [
        f"{k.rsplit(' | ', 1)[0]}: {exact['marks'][k] or 'none'} -> {fast['marks'][k] or 'none'}"
        for k in on_table
        if exact["marks"][k] != fast["marks"][k]
    ]
    return {
        "measure": primary,
        "max_delta": delta(worst),
        "cell": worst.rsplit(" | ", 1)[0],
        "cells_changed": sum(printed(exact["cells"][k]) != printed(fast["cells"][k]) for k in on_table),
        "cells": len(on_table),
        "max_delta_untuned": max((delta(k) for k in keys if k.endswith(f" | {primary}") and " (untuned) | " in k), default=0.0),
        "max_delta_any_measure": delta(max(keys, key=delta)),
        "cell_any_measure": max(keys, key=delta),
        "marks_flipped": len(flipped),
        "flipped": flipped,
        "marks_flipped_any_measure": sum(exact["marks"][k] != fast["marks"][k] for k in keys),
        "same_table": exact["table"] == fast["table"],
    }


def fast_backends(asked: list[str] | None) -> list[str]:
    from dsr.indexes.backends import cpu_has_bf16

    chosen = list(asked or FAST)
    if "openvino-bf16" in chosen and not cpu_has_bf16():
        print("openvino-bf16: skipped, this CPU has no bf16 units")
        chosen.remove("openvino-bf16")
    return chosen


def measure(sets: list[str], backends: list[str], home: Path) -> dict:
    measured: dict = {}
    for name in sets:
        collection, source, split = SETS[name]
        spec = {"collection": collection, "source": str(source) if source else None, "split": split, "home": str(home)}
        exact = run_worker({**spec, "backend": EXACT})
        print(
            f"\n## {name}: {exact['collection']['dialogues']} dialogues, hash "
            f"{exact['collection']['hash'][:12]} (torch {exact['seconds']} s)\n{exact['table']}\n",
            flush=True,
        )
        rows = {}
        for backend in backends:
            fast = run_worker({**spec, "backend": backend})
            rows[backend] = {**compare(exact, fast), "seconds": fast["seconds"]}
            print_row(name, backend, rows[backend])
        measured[exact["collection"]["name"]] = {"collection": exact["collection"], "backends": rows}
    return measured


def print_row(name: str, backend: str, row: dict) -> None:
    print(
        f"{name:<16} {backend:<14} max |Δ| {row['measure']} {row['max_delta']:.4f} ({row['cell']}); "
        f"{row['cells_changed']}/{row['cells']} cells print differently; max |Δ| untuned blocks "
        f"{row['max_delta_untuned']:.4f}; max |Δ| any measure "
        f"{row['max_delta_any_measure']:.4f} ({row['cell_any_measure']}); marks flipped {row['marks_flipped']} on the table, "
        f"{row['marks_flipped_any_measure']} over every measure ({row['seconds']} s)",
        flush=True,
    )
    for flip in row["flipped"]:
        print(f"    flipped: {flip}")


def summary(measured: dict) -> None:
    print(
        "\n| set | backend | max \\|Δ\\| nDCG@5 (cell) | cells changed | max \\|Δ\\| nDCG@5, untuned blocks "
        "| max \\|Δ\\| any measure | marks flipped (table / any measure) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, entry in measured.items():
        for backend, row in entry["backends"].items():
            cell = row["cell"].replace(" | ", ", ") if row["max_delta"] else "none differs"
            print(
                f"| {name} | {backend} | {row['max_delta']:.4f} ({cell}) | "
                f"{row['cells_changed']}/{row['cells']} | {row['max_delta_untuned']:.4f} | "
                f"{row['max_delta_any_measure']:.4f} | "
                f"{row['marks_flipped']} / {row['marks_flipped_any_measure']} |"
            )


def cpu_label(model: str) -> str:
    """A CPU's short name for the notes: ``Intel(R) Xeon(R) Processor @ 2.50GHz`` -> ``Intel Xeon``."""
    return re.sub(r"\s+", " ", re.sub(r"\((R|TM)\)|\s(Processor|CPU)\b.*$|\s@.*$", "", model)).strip() or model


def write_json(measured: dict, info: dict) -> None:
    """Merge this run's figures into the package's JSON (other sets and backends kept)."""
    data = json.loads(JSON_PATH.read_text(encoding="utf-8")) if JSON_PATH.exists() else {}
    data.setdefault(
        "about",
        "How far tables made on a fast backend are from the exact backend (torch "
        "fp32), per collection and backend: written by bench/backend_deltas.py --write, read "
        "by dsr.indexes.exactness for the note under every table, report and run sidecar.",
    )
    data["exact"] = EXACT
    collections = data.setdefault("collections", {})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    from dsr.baselines import DEFAULT_DENSE
    from dsr.core.models import resolve_model
    from dsr.indexes.exactness import merge_measurement

    model = resolve_model(DEFAULT_DENSE, "bi-encoder").describe()  # the suite's dense rows' model
    for name, entry in measured.items():
        slot = collections.setdefault(name, {"backends": {}})
        if slot.get("hash") != entry["collection"]["hash"] or (slot.get("model") or {}).get("weights_sha256") not in (
            None,
            model["weights_sha256"],
        ):
            slot["backends"] = {}  # figures of another build of the set, or of another model: not this one's
        slot["hash"] = entry["collection"]["hash"]
        slot["dialogues"] = entry["collection"]["dialogues"]
        slot["rows"] = "the baseline suite of dsr reproduce without trained models (BM25, zero-shot dense, RRF)"
        slot["model"] = {"name": model["name"], "weights_sha256": model["weights_sha256"]}  # what the figures hold for
        for backend, row in entry["backends"].items():
            kept = (
                "measure",
                "max_delta",
                "cell",
                "cells_changed",
                "cells",
                "max_delta_untuned",
                "max_delta_any_measure",
                "cell_any_measure",
                "marks_flipped",
                "flipped",
                "marks_flipped_any_measure",
            )
            # one row per kind of CPU measured; the note quotes the largest (exactness.merge_measurement)
            slot["backends"][backend] = merge_measurement(
                slot["backends"].get(backend),
                {
                    **{k: round(row[k], 5) if isinstance(row[k], float) else row[k] for k in kept},
                    "date": info["date"][:10],
                    "cpu": cpu_label(str(info["cpu"])),
                    "units": info["units"],
                    "commit": commit,
                },
            )
    JSON_PATH.parent.mkdir(parents=True, exist_ok=True)
    JSON_PATH.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {JSON_PATH.relative_to(ROOT)}")


def torch_isa(sets: list[str], root: Path, variants: list[str]) -> None:
    """torch fp32's table under each of ISA_VARIANTS, each in a fresh DSR_HOME, against the default;
    and the raw vectors of VECTORS texts, to show whether the setting changed the arithmetic at all."""
    import numpy as np

    for name in sets:
        collection, source, split = SETS[name]
        spec = {"collection": collection, "source": str(source) if source else None, "split": split, "backend": EXACT}
        default, first = None, None
        for i, label in enumerate(["default", *(v for v in variants if v != "default")]):
            env = ISA_VARIANTS[label]
            got = run_worker({**spec, "home": str(root / f"isa-{name}-{i}"), "vectors": True}, env)
            default = default or got
            row = compare(default, got)
            vectors = np.load(got["vectors"])
            first = vectors if first is None else first
            moved = float(np.abs(vectors.astype(np.float64) - first).max())
            print(
                f"{name:<16} torch, {label:<36} "
                f"{'same table' if row['same_table'] else 'DIFFERENT table'}: max |Δ| any measure "
                f"{row['max_delta_any_measure']:.4f}, {row['cells_changed']}/{row['cells']} cells print "
                f"differently, {row['marks_flipped_any_measure']} marks flipped; {len(vectors)} raw vectors "
                f"{'bitwise equal' if moved == 0 else f'differ by up to {moved:.1e}'} (ATen {got['capability']}, "
                f"{got['threads']} threads; {got['seconds']} s)",
                flush=True,
            )
            if not row["same_table"]:
                print(got["table"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--backends", nargs="+", choices=FAST, help="default: every fast backend this CPU runs")
    parser.add_argument("--write", action="store_true", help=f"rewrite {JSON_PATH.relative_to(ROOT)}")
    parser.add_argument(
        "--torch-isa", action="store_true", help="instead: torch fp32's table under other instruction sets and thread counts"
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(ISA_VARIANTS),
        default=list(ISA_VARIANTS),
        help="--torch-isa: the settings to compare with the default (default: all)",
    )
    parser.add_argument("--home", type=Path, help="scratch DSR_HOME (default: a temporary folder)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    missing = [s for s in args.sets if SETS[s][1] is not None and not SETS[s][1].is_dir()]
    if missing:
        print(f"not found (../shared/data): {', '.join(missing)}", file=sys.stderr)
        return 2
    info = header("backend deltas: fast backends against torch fp32, table by table")
    with tempfile.TemporaryDirectory(prefix="dsr-deltas-") as scratch:
        home = args.home or Path(scratch)
        if args.torch_isa:
            torch_isa(args.sets, home, args.variants)
        else:
            measured = measure(args.sets, fast_backends(args.backends), home)
            summary(measured)
            if args.write:
                write_json(measured, info)
    footer(info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
