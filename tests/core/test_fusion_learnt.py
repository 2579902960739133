"""Fusion through the real command line (``dsr.cli.main``) against ranx itself on the same labels:
every method with ``--qrels FILE`` and with ``--collection`` (a benchmark file whose labels are not
the qrels file's, and the registered ``sample`` for the methods that learn). ranx reads the same
run files (``Run.from_file``), learns with ``optimize_fusion`` what it learns (on ndcg, its own
grid) from the same labels, fuses and saves; both files are then read as trec_eval 9.0.8 reads a
run (the score as a C float, subnormals kept, descending; ties by docno descending), by a plain
reader written here. What dsr learnt (its sidecar's ``learnt``) must be what ranx learnt, a value
the user gives is never learnt over, and CombMIN and CombMED, whose scores ranx writes near 1e-40,
must be read by trec_eval in ranx's order."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from dsr.cli import main
from dsr.core.fusion import METHODS
from dsr.core.fusion_ranx import RANX_METHODS
from dsr.evaluation.qrels import read_qrels
from tests.core.test_fusion_every_method import write_runs
from tests.support.order import RANX

ranx = pytest.importorskip("ranx")
pytestmark = [pytest.mark.slow, RANX]  # one worker compiles ranx (tests/support/order.py)

#: dsr's kernels by ranx's name and normalisation
KERNELS = {
    "rrf": ("rrf", None),
    "isr": ("isr", None),
    "borda": ("bordafuse", None),
    "combsum": ("sum", "min-max"),
    "combmnz": ("mnz", "min-max"),
    "wsum": ("wsum", "min-max"),
    "interp": ("wsum", "min-max"),
}
#: ranx's own defaults for what its fuse takes without optimize_fusion (ranx/fusion/*.py)
RANX_DEFAULTS = {"wsum": lambda n: {"weights": [1 / n] * n}, "interp": lambda n: {"weights": [0.5, 0.5]}}
#: ranx's optimize_fusion methods that search ``metric`` (its optimize_fusion, which passes it)
SEARCHED_BY_RANX = {
    "gmnz",
    "logn_isr",
    "mixed",
    "probfuse",
    "rbc",
    "rrf",
    "slidefuse",
    "w_bordafuse",
    "w_condorcet",
    "wmnz",
    "wsum",
}


def ranx_name(method: str) -> tuple[str, str | None]:
    if method in KERNELS:
        return KERNELS[method]
    spec = RANX_METHODS[method]
    return spec.ranx, ("min-max" if "norm" in spec.params else None)


def learns_in_ranx(name: str) -> bool:
    """Whether ranx's optimize_fusion learns something for ``name`` (its switch knows it)."""
    from ranx.fusion_optimization import optimization_switch

    try:
        optimization_switch(name)
    except ValueError:
        return False
    return True


def trec_eval_order(path) -> dict[str, list[str]]:
    """A run file's rankings as trec_eval 9.0.8 reads them: ``atof`` into a C float (subnormals
    kept), sorted by that descending, then by docno descending."""
    lines: dict[str, list[tuple[str, float]]] = {}
    for line in open(path):
        qid, _, doc, _, score, _ = line.split()
        lines.setdefault(qid, []).append((doc, float(score)))
    out = {}
    for qid, ranked in lines.items():
        ranked.sort(key=lambda ds: ds[0], reverse=True)
        as_float = np.array([s for _, s in ranked]).astype(np.float32)
        out[qid] = [ranked[i][0] for i in np.argsort(-as_float, kind="stable")]
    return out


def ranx_fused(paths, labels: dict | None, method: str, given: dict, out):
    """ranx on the files: what it learns (optimize_fusion on ``labels``, the parameters not given),
    then fuse and save; (trec_eval's reading of the saved run, what was learnt)."""
    name, norm = ranx_name(method)
    runs = [ranx.Run.from_file(str(p), kind="trec") for p in paths]
    params = {**RANX_DEFAULTS.get(method, lambda n: {})(len(runs)), **given}
    learnt = {}
    if labels is not None and learns_in_ranx(name) and not given:
        topics = list(runs[0].keys())
        qrels = ranx.Qrels.from_dict({q: labels[q] for q in topics})
        extra = {"metric": "ndcg", "show_progress": False} if name in SEARCHED_BY_RANX else {}
        learnt = ranx.optimize_fusion(qrels, runs, norm=norm, method=name, **extra)
    ranx.fuse(runs, norm=norm, method=name, params={**params, **learnt}).save(str(out), kind="trec")
    return trec_eval_order(out), learnt


def dsr_fused(paths, method: str, source: list[str], out, params: dict | None = None) -> tuple[dict, dict]:
    """``dsr fuse`` by the command line: (trec_eval's reading of the run, its sidecar)."""
    args = ["fuse", *map(str, paths), "--method", method, *source, "--out", str(out)]
    args += ["--param", *(f"{k}={v}" for k, v in params.items())] if params else []
    assert main(args) == 0, args
    return trec_eval_order(out), json.loads(out.with_name(out.name + ".json").read_text())


def same_learnt(ours: dict | None, theirs: dict) -> None:
    """The sidecar's ``learnt`` holds what ranx learnt: the same values, or a table for a table."""
    if not theirs:
        assert ours is None
        return
    assert ours is not None
    for key, value in theirs.items():
        if isinstance(value, (int, float)):
            assert ours[key] == value, key
        elif all(np.ndim(v) == 0 for v in value):
            assert ours[key] == [float(v) for v in value], key
        else:
            assert ours[key].startswith("learnt from labels"), key


def benchmark_file(path, labels: dict[str, dict[str, int]]) -> None:
    """A benchmark .jsonl holding ``labels`` (one dialogue per topic, each labelled doc a candidate)."""
    with open(path, "w") as f:
        for qid, docs in labels.items():
            turn = {"author_id": "a", "author_name": "a", "body": f"what about {qid}?", "score": 1}
            candidates = [{"id": d, "title": "t", "body": f"sentence {d}", "score": None, "label": g} for d, g in docs.items()]
            f.write(
                json.dumps(
                    {"id": qid, "subreddit": "s", "title": qid, "context": [turn], "target": None, "candidates": candidates}
                )
            )
            f.write("\n")


@pytest.fixture
def files(tmp_path):
    """Three runs of 4 topics, the qrels file, and a collection whose labels differ from it."""
    paths, qrels = write_runs(tmp_path, tied=False)
    rng = random.Random(11)
    other = {q: {d: rng.choice([0, 1, 1, 2]) for d in docs} for q, docs in read_qrels(qrels).items()}
    collection = tmp_path / "collection.jsonl"
    benchmark_file(collection, other)
    return paths, qrels, collection, other


@pytest.mark.parametrize("method", METHODS)
def test_every_method_by_the_command_line_is_ranx_s_run_on_the_same_labels(method, files, tmp_path):
    paths, qrels, collection, other = files
    paths = paths[:2] if method == "interp" else paths  # interp fuses two runs
    name, _ = ranx_name(method)
    for source, labels in ((["--qrels", str(qrels)], read_qrels(qrels)), (["--collection", str(collection)], other)):
        theirs, learnt = ranx_fused(paths, labels, method, {}, tmp_path / "ranx.run")
        ours, sidecar = dsr_fused(paths, method, source, tmp_path / "dsr.run")
        assert ours == theirs, (method, source[0])
        same_learnt(sidecar.get("learnt"), learnt)
        assert bool(learnt) == learns_in_ranx(name), (method, "learns what ranx's optimize_fusion learns")
        if learnt:
            assert sidecar["learnt"]["from"].startswith(source[0].lstrip("-")), sidecar["learnt"]
            if name in SEARCHED_BY_RANX:
                assert sidecar["learnt"]["metric"] == "ndcg" and sidecar["learnt"]["grid"], sidecar["learnt"]


LEARNT = [m for m in METHODS if learns_in_ranx(ranx_name(m)[0])]


@pytest.fixture(scope="module")
def sample_runs(tmp_path_factory):
    """Three runs of the registered ``sample`` by dsr's rankers (ties stepped by dsr's rule, so
    min-max normalised scores that differ by subnormals)."""
    folder = tmp_path_factory.mktemp("sample-runs")
    made = []
    for name, extra in (("bm25", []), ("initial", []), ("bm25-last", ["--query", "last"])):
        out = folder / f"{name}.run"
        assert main(["run", "sample", "--ranker", name.split("-")[0], *extra, "--out", str(out)]) == 0
        made.append(out)
    return made


@pytest.mark.parametrize("method", LEARNT)
def test_learnt_methods_on_a_registered_collection_are_ranx_s_on_its_labels(method, sample_runs, tmp_path):
    """``--collection sample`` (a registered name): dsr learns from its labels what ranx learns."""
    from dsr.collections import load_collection

    labels = {d.id: {c.id: int(c.label) for c in d.candidates} for d in load_collection("sample").dialogues}
    paths = sample_runs[:2]  # two runs: 11 weightings in ranx's grid, not 66
    theirs, learnt = ranx_fused(paths, labels, method, {}, tmp_path / "ranx.run")
    ours, sidecar = dsr_fused(paths, method, ["--collection", "sample"], tmp_path / "dsr.run")
    assert ours == theirs, method
    same_learnt(sidecar["learnt"], learnt)
    assert sidecar["learnt"]["from"].startswith("collection sample")


@pytest.mark.parametrize(
    "method,given",
    [
        ("rrf", {"k": 60}),
        ("wsum", {"weights": "0.2,0.5,0.3"}),
        ("logn_isr", {"sigma": 0.01}),
        ("gmnz", {"gamma": 0.5}),
        ("rbc", {"phi": 0.8}),
        ("wmnz", {"weights": "0.2,0.5,0.3"}),
    ],
)
def test_a_parameter_given_is_never_learnt_over(method, given, files, tmp_path, capsys):
    paths, qrels, collection, _ = files
    ranx_given = {k: ([float(w) for w in v.split(",")] if k == "weights" else v) for k, v in given.items()}
    theirs, _ = ranx_fused(paths, None, method, ranx_given, tmp_path / "ranx.run")
    for source in (["--qrels", str(qrels)], ["--collection", str(collection)]):
        capsys.readouterr()
        ours, sidecar = dsr_fused(paths, method, source, tmp_path / "dsr.run", given)
        assert ours == theirs and "learnt" not in sidecar, (method, source[0])
        assert sidecar["params"][next(iter(given))] == next(iter(given.values()))
        assert f"{method} learnt" not in capsys.readouterr().err


def test_what_was_learnt_is_said_on_stderr_and_in_the_sidecar(files, tmp_path, capsys):
    paths, qrels, _, _ = files
    theirs, learnt = ranx_fused(paths, read_qrels(qrels), "rrf", {}, tmp_path / "ranx.run")
    capsys.readouterr()
    _, sidecar = dsr_fused(paths, "rrf", ["--qrels", str(qrels)], tmp_path / "dsr.run")
    err = capsys.readouterr().err
    assert f"rrf learnt k={learnt['k']} (ranx's optimize_fusion on ndcg over min_k=10, max_k=100, step=10)" in err, err
    assert sidecar["params"]["k"] == learnt["k"] and sidecar["learnt"]["grid"] == {"min_k": 10, "max_k": 100, "step": 10}
    # without labels the defaults hold, and nothing says it learnt
    _, sidecar = dsr_fused(paths, "rrf", [], tmp_path / "plain.run")
    assert sidecar["params"]["k"] == 60 and "learnt" not in sidecar and "rrf learnt" not in capsys.readouterr().err


@pytest.mark.parametrize("method", ["min", "med"])
def test_comb_min_and_med_are_read_by_trec_eval_in_ranx_s_order(method, sample_runs, tmp_path):
    """ranx's CombMIN/CombMED of dsr-written runs (ties stepped below one another) hold scores
    1e-45 to 1e-39 apart, which trec_eval reads as distinct C floats: dsr's run must rank them so."""
    theirs, _ = ranx_fused(sample_runs, None, method, {}, tmp_path / "ranx.run")
    ours, _ = dsr_fused(sample_runs, method, [], tmp_path / "dsr.run")
    assert ours == theirs
    # the case is real: ranx wrote subnormal scores, and read as zero they would rank otherwise
    scores = [float(line.split()[4]) for line in open(tmp_path / "ranx.run")]
    assert any(0 < abs(s) < np.finfo(np.float32).tiny for s in scores)
    flushed = {}
    for line in open(tmp_path / "ranx.run"):
        qid, _, doc, _, score, _ = line.split()
        value = float(np.float32(float(score)))
        flushed.setdefault(qid, []).append((doc, 0.0 if abs(value) < np.finfo(np.float32).tiny else value))
    as_zero = {q: [d for d, _ in sorted(sorted(r, reverse=True), key=lambda ds: -ds[1])] for q, r in flushed.items()}
    assert as_zero != theirs
