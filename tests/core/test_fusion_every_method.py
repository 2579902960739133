"""Every fusion method (dsr's kernels and the rest of ranx's 25), by every call path (``dsr fuse``,
``dsr.fuse``, the fusion stage), against the run ranx itself writes: run files written as
another tool writes them, ranx reads them (``Run.from_file``), learns what a method learns
(``optimize_fusion`` on the qrels file), fuses and saves (``Run.save``); dsr's fused runs read
back must rank every topic as ranx's saved run does (both read in trec_eval's order). Runs
whose own scores tie are fused with ``backend="ranx"`` and compared the same way; with dsr's
default they are ranked as trec_eval ranks them (a plain RRF over those ranks says so)."""

from __future__ import annotations

import random

import pytest

import dsr
from dsr.cli import main
from dsr.core.fusion import METHODS, method_params
from dsr.core.fusion_ranx import RANX_METHODS, SEARCHED
from dsr.core.run import load_run
from dsr.evaluation.qrels import collection_from_qrels, read_qrels
from dsr.rankers.fusion import Fusion
from tests.support.order import RANX

ranx = pytest.importorskip("ranx")
pytestmark = [pytest.mark.slow, RANX]  # one worker compiles ranx (tests/support/order.py)

#: dsr's kernels: ranx's method and the parameters both are given
DSR_KERNELS = {
    "rrf": ("rrf", {"k": 60}, {"k": 60}),
    "isr": ("isr", {}, {}),
    "borda": ("bordafuse", {}, {}),
    "combsum": ("sum", {"norm": "minmax"}, {}),
    "combmnz": ("mnz", {"norm": "minmax"}, {}),
    "wsum": ("wsum", {"weights": "0.2,0.5,0.3"}, {"weights": [0.2, 0.5, 0.3]}),
    "interp": ("wsum", {"weight": 0.3}, {"weights": [0.3, 0.7]}),
}
#: ranx methods given a parameter (the others learn theirs, or take none)
GIVEN = {"mixed": {"weights": "0.2,0.5,0.3"}, "rbc": {"phi": 0.7}}
RANK_BASED = {"rrf", "isr", "borda", *(m for m, s in RANX_METHODS.items() if s.kind in ("rank", "trained"))}
#: every comparison made: (method, path) -> fused lines compared
COMPARED: dict[tuple[str, str], int] = {}


def write_runs(folder, tied: bool, seed: int = 7):
    """Three runs over the same 4 topics, as another tool writes them (ranks from 1, its own
    tag), documents from a pool of 12 per topic (some missing from some runs); scores distinct
    within a run's topic, or (``tied``) from a few integers, as integer-scored BM25 is."""
    rng = random.Random(seed)
    pools = {f"t{t}": [f"d{t}{i:02d}" for i in range(12)] for t in range(4)}
    paths = []
    for r in range(3):
        path = folder / f"run{r}.txt"
        with open(path, "w") as f:
            for qid, pool in pools.items():
                docs = rng.sample(pool, rng.randint(6, 11))
                values = (
                    [float(rng.randint(1, 4)) for _ in docs]
                    if tied
                    else rng.sample([round(rng.uniform(0, 30), 4) for _ in range(40)], len(docs))
                )
                ranked = sorted(zip(docs, values), key=lambda ds: -ds[1])
                f.writelines(f"{qid} Q0 {d} {i} {s} tool{r}\n" for i, (d, s) in enumerate(ranked, 1))
        paths.append(path)
    qrels = folder / "qrels.txt"
    with open(qrels, "w") as f:
        for qid, pool in pools.items():
            f.writelines(f"{qid} 0 {d} {rng.choice([0, 0, 1, 2])}\n" for d in pool)
    return paths, qrels


def ranx_saved(paths, qrels, method: str, out):
    """ranx on the files: Run.from_file, optimize_fusion when the method learns, fuse, save."""
    if method in DSR_KERNELS:
        name, _, params = DSR_KERNELS[method]
        norm = "min-max" if method in ("combsum", "combmnz", "wsum", "interp") else None
    else:
        spec = RANX_METHODS[method]
        name, norm = spec.ranx, ("min-max" if "norm" in spec.params else None)
        params = {k: ([float(w) for w in v.split(",")] if k == "weights" else v) for k, v in GIVEN.get(method, {}).items()}
        if spec.params.get("sigma"):
            params["sigma"] = spec.params["sigma"]
    runs = [ranx.Run.from_file(str(p), kind="trec") for p in paths]
    learnt = {}
    if method in RANX_METHODS and (
        RANX_METHODS[method].kind == "trained"
        or any(v is None and k not in GIVEN.get(method, {}) for k, v in RANX_METHODS[method].params.items())
    ):
        extra = {"metric": "ndcg", "show_progress": False} if name in SEARCHED else {}
        learnt = ranx.optimize_fusion(ranx.Qrels.from_file(str(qrels), kind="trec"), runs, norm=norm, method=name, **extra)
    ranx.fuse(runs, norm=norm, method=name, params={**params, **learnt}).save(str(out), kind="trec")
    return load_run(out)


def dsr_params(method: str) -> dict:
    return DSR_KERNELS[method][1] if method in DSR_KERNELS else dict(GIVEN.get(method, {}))


def ranking(run) -> dict[str, list[str]]:
    return {q: [d for d, _ in r] for q, r in run.rankings.items()}


def by_every_path(paths, qrels, method: str, folder, backend: str) -> dict[str, object]:
    """dsr's fused run by the command line, the facade and the stage (each written and read back)."""
    params = dsr_params(method)
    learnt = (
        method in RANX_METHODS
        and any(v is None for v in method_params(method).values())
        and not set(GIVEN.get(method, {})) >= {k for k, v in method_params(method).items() if v is None}
    )
    learnt = learnt or (method in RANX_METHODS and RANX_METHODS[method].kind == "trained")
    cli = folder / f"cli-{method}.run"
    args = ["fuse", *map(str, paths), "--method", method, "--out", str(cli), "--backend", backend]
    args += ["--param", *(f"{k}={v}" for k, v in params.items())] if params else []
    args += ["--qrels", str(qrels)] if learnt else []
    assert main(args) == 0
    out = {"cli": load_run(cli)}
    api = dsr.fuse(paths, method, qrels=qrels if learnt else None, backend=backend, **params)
    api.write(folder / f"api-{method}.run", sidecar=False)
    out["api"] = load_run(folder / f"api-{method}.run")
    collection = collection_from_qrels(read_qrels(qrels))  # the stage learns from a collection's labels
    stage = Fusion(method=method, backend=backend, **params)(collection, *[load_run(p) for p in paths])
    stage.write(folder / f"stage-{method}.run", sidecar=False)
    out["stage"] = load_run(folder / f"stage-{method}.run")
    return out


@pytest.mark.parametrize("method", METHODS)
def test_every_method_on_every_path_is_ranx_s_saved_run(method, tmp_path):
    paths, qrels = write_runs(tmp_path, tied=False)
    paths = paths[:2] if method == "interp" else paths  # interp fuses two runs
    theirs = ranking(ranx_saved(paths, qrels, method, tmp_path / "ranx.run"))
    for path_name, run in by_every_path(paths, qrels, method, tmp_path, "dsr").items():
        assert ranking(run) == theirs, (method, path_name)
        COMPARED[(method, path_name)] = sum(map(len, theirs.values()))


@pytest.mark.parametrize("method", METHODS)
def test_tied_input_runs_with_backend_ranx_are_ranx_s_saved_run(method, tmp_path):
    """Integer scores (ties in every topic): backend=ranx hands ranx the files' lines, so its own
    sort orders the tied documents, and the fused run is ranx's on every path."""
    paths, qrels = write_runs(tmp_path, tied=True)
    paths = paths[:2] if method == "interp" else paths
    theirs = ranking(ranx_saved(paths, qrels, method, tmp_path / "ranx.run"))
    for path_name, run in by_every_path(paths, qrels, method, tmp_path, "ranx").items():
        assert ranking(run) == theirs, (method, path_name)
        COMPARED[(method, path_name + "+ties")] = sum(map(len, theirs.values()))


def test_tied_input_runs_under_dsr_s_rule_are_ranked_as_trec_eval_ranks_them(tmp_path, capsys):
    """The default: a run's tied documents take trec_eval's ranks (doc id descending), so RRF is
    the plain sum over those ranks; the command warns about each tied run."""
    paths, _ = write_runs(tmp_path, tied=True)
    runs = [load_run(p) for p in paths]
    plain: dict[str, dict[str, float]] = {}
    for run in runs:
        for qid, ranked in run.rankings.items():
            by_id = sorted(ranked, key=lambda ds: ds[0], reverse=True)  # trec_eval's order
            ordered = sorted(by_id, key=lambda ds: -ds[1])
            for rank, (doc, _) in enumerate(ordered, 1):
                plain.setdefault(qid, {})[doc] = plain.setdefault(qid, {}).get(doc, 0.0) + 1 / (60 + rank)
    expected = {q: [d for d, _ in sorted(sorted(s.items(), reverse=True), key=lambda ds: -ds[1])] for q, s in plain.items()}
    for backend_method in ("rrf", "log_isr"):
        capsys.readouterr()
        assert main(["fuse", *map(str, paths), "--method", backend_method, "--out", str(tmp_path / "f.run")]) == 0
        err = capsys.readouterr().err
        assert err.count("tie as 32-bit floats") == 3 and "--backend ranx" in err
    rrf = dsr.fuse(paths, "rrf")
    assert ranking(rrf) == expected


def test_comparison_counts(capsys):
    """The figure for the report: fused lines compared, per path (0 differing: the tests above)."""
    if not COMPARED:
        pytest.skip("run with the comparisons above")
    per_path: dict[str, int] = {}
    for (_, path_name), lines in COMPARED.items():
        per_path[path_name] = per_path.get(path_name, 0) + lines
    with capsys.disabled():
        print(
            f"\nfusion vs ranx's saved runs: {len({m for m, _ in COMPARED})} methods, "
            f"{sum(COMPARED.values())} fused lines equal in order, by path {per_path}"
        )


def test_learnt_methods_are_refused_without_labels(tmp_path, capsys):
    paths, _ = write_runs(tmp_path, tied=False)
    for method in ("bayesfuse", "probfuse", "wmnz", "gmnz"):
        capsys.readouterr()
        assert main(["fuse", *map(str, paths), "--method", method, "--out", str(tmp_path / "f.run")]) == 2
        err = capsys.readouterr().err
        assert "learns" in err and "--qrels" in err, err
        with pytest.raises(ValueError, match="labels"):
            dsr.fuse(paths, method)
