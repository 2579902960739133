"""The dense ranker's default backend is the exact one (torch fp32, issue 39); ``auto`` is int8
where the CPU has VNNI or AMX, torch elsewhere; and how far int8's rankings may be from torch's.

Tolerance (stated here, checked below on CMU_DoG valid, 502 dialogues of 50 candidates,
all-MiniLM-L6-v2, query strategies ``all`` and ``last``), int8 against torch fp32. It depends
on the CPU: int8 runs on other kernels where the CPU has no int8 dot-product units (VNNI, AMX:
where ``auto`` picks int8), and moves the rankings further there.

* the same top-1 sentence for at least ``top1`` of the dialogues;
* the same set of top 5 for at least ``top5`` of them (int8 swaps near-tied neighbours);
* nDCG@5 within ``ndcg`` of torch's.

A CPU without VNNI, BF16 or AMX (a Skylake-SP Xeon) agrees less than one with them, so its
tolerance is looser (the tolerance of a CPU with the units failed there on ``last``'s top 5).

What int8 does to the tables of ``dsr reproduce`` (every cell, the marks) is measured by
``bench/backend_deltas.py`` and stated under every table made with it (dsr.indexes.exactness).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import ir_measures
import pytest
from ir_measures import nDCG

from dsr.collections import load_collection
from dsr.core.errors import InputError
from dsr.core.models import resolve_model
from dsr.indexes import backends, embeddings
from dsr.rankers import make_ranker
from tests.support.data import REAL_CMU_DOG, SHARED_DATA

#: with the modules that build from ../shared/data: CMU_DoG valid is built once a run, and the
#: README's tables, which run before this module in that group (tests/support/order.py), leave
#: their exact vectors of most of its texts in that home
pytestmark = REAL_CMU_DOG

#: (top1, top5, ndcg): where the CPU has int8 dot-product units, and where it has none
WITH_INT8_UNITS = (0.85, 0.60, 0.01)
WITHOUT_INT8_UNITS = (0.80, 0.50, 0.01)


def cpu_flags() -> set[str]:
    flags: set[str] = set()
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            flags.update(line.partition(":")[2].split())
    return flags


def has_fast_extra() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("openvino", "nncf"))


def test_the_default_is_torch_and_auto_means_int8_on_a_cpu_with_vnni_or_amx(monkeypatch):
    monkeypatch.delenv("DSR_BACKEND", raising=False)
    from dsr.rerankers import make_reranker

    assert backends.DEFAULT_BACKEND == "torch"
    for stage in (make_ranker("dense"), make_reranker("bi-encoder"), make_reranker("cross-encoder")):
        assert stage.params["backend"] == "torch"
        assert stage.describe()["params"]["backend"] == "torch"  # whatever the CPU
    expected = "openvino-int8" if cpu_flags() & {"avx512_vnni", "avx_vnni", "amx_int8"} and has_fast_extra() else "torch"
    assert backends.resolve_backend("auto") == expected
    assert make_ranker("dense", backend="auto").describe()["params"]["backend"] == expected  # what runs is recorded
    monkeypatch.setenv("DSR_BACKEND", "torch")
    assert backends.resolve_backend("auto") == "torch"
    assert backends.resolve_backend("openvino") == "openvino"  # an explicit choice is never overridden
    monkeypatch.setenv("DSR_BACKEND", "openvino-int8")
    assert make_ranker("dense").describe()["params"]["backend"] == "torch"  # the default is not auto
    monkeypatch.setenv("DSR_BACKEND", "fp8")
    with pytest.raises(InputError, match="DSR_BACKEND") as err:
        backends.resolve_backend("auto")
    assert err.value.field == "backend"


def test_reproduce_and_its_flags_default_to_the_exact_backend():
    import inspect

    from dsr.baselines import reproduce
    from dsr.cli import build_parser

    assert inspect.signature(reproduce).parameters["backend"].default == "torch"
    args = build_parser("reproduce").parse_args(["reproduce", "sample"])
    assert args.backend is None and not args.fast  # the handler's default: DEFAULT_BACKEND
    help_text = build_parser("reproduce")._subparsers._group_actions[0].choices["reproduce"].format_help()
    assert "default torch" in help_text and "--fast" in help_text


def test_a_cross_encoder_in_bf16_stays_on_torch_under_auto(monkeypatch):
    monkeypatch.delenv("DSR_BACKEND", raising=False)
    from dsr.rerankers import make_reranker

    assert make_reranker("cross-encoder", precision="bf16").backend() == "torch"
    with pytest.raises(InputError, match="precision"):
        make_reranker("cross-encoder", precision="bf16", backend="openvino-int8")


@pytest.fixture(scope="module")
def cmu_dog_valid(real_home):
    if not (SHARED_DATA / "cmu_dog").is_dir():
        pytest.skip("../shared/data/cmu_dog is not beside the checkout")
    return load_collection("cmu_dog", str(SHARED_DATA / "cmu_dog"), "valid")


def reuse_exact_vectors(real_home: Path, home: Path, model: str) -> None:
    """Copy the exact (torch) vectors ``model`` has in ``real_home`` into ``home``'s embedding
    cache, where the README's tables left them (1,290 of CMU_DoG valid's 2,006 texts here):
    which test made a torch vector is not what a tolerance against int8 is about, and the
    README's tables keep a home whose vectors no other test made. Nothing is copied where
    they have not run (another order, ``-p no:xdist``): this test then encodes every text."""
    for backend in ("torch", embeddings.FLOAT64):  # the fp32 vectors, and the float64 ones of near ties
        name = embeddings.cache_name(resolve_model(model), backend)
        source = real_home / "indexes" / "embeddings" / name
        if source.is_dir():
            shutil.copytree(source, home / "indexes" / "embeddings" / name)


def ndcg5(collection, run) -> float:
    qrels = [ir_measures.Qrel(d.id, c.id, int(c.label)) for d in collection for c in d.candidates]
    scored = [ir_measures.ScoredDoc(q, doc, s) for q, ranking in run.rankings.items() for doc, s in ranking]
    return ir_measures.calc_aggregate([nDCG @ 5], qrels, scored)[nDCG @ 5]


@pytest.mark.slow
@pytest.mark.skipif(not has_fast_extra(), reason="the fast extra (openvino, nncf) is not installed")
def test_int8_ranks_cmu_dog_valid_within_the_stated_tolerance_of_torch(cmu_dog_valid, real_home, monkeypatch, dsr_home, exports):
    monkeypatch.delenv("DSR_BACKEND", raising=False)
    exports.seed(dsr_home, "all-MiniLM-L6-v2", "bi-encoder", "openvino-int8")  # the product's export, built once a run
    reuse_exact_vectors(real_home, dsr_home, "all-MiniLM-L6-v2")
    top1_min, top5_min, ndcg_max = WITH_INT8_UNITS if backends.cpu_int8_units() else WITHOUT_INT8_UNITS
    figures = {}
    for query in ("all", "last"):
        exact = make_ranker("dense", query=query, backend="torch")(cmu_dog_valid)
        fast = make_ranker("dense", query=query, backend="openvino-int8")(cmu_dog_valid)
        # the runs record the backend that ran and the model's weights
        assert exact.config["params"]["backend"] == "torch"
        assert fast.config["params"]["backend"] == "openvino-int8"
        assert len(fast.config["model"]["weights_sha256"]) == 64
        assert fast.config["model"]["weights_sha256"] == exact.config["model"]["weights_sha256"]
        topics = exact.topics()
        assert len(topics) == len(cmu_dog_valid) == 502
        top1 = sum(exact.top(q, 1) == fast.top(q, 1) for q in topics) / len(topics)
        top5 = sum(set(exact.top(q, 5)) == set(fast.top(q, 5)) for q in topics) / len(topics)
        figures[query] = (top1, top5, ndcg5(cmu_dog_valid, fast) - ndcg5(cmu_dog_valid, exact))
        assert "exactness" not in exact.config
        assert fast.config["exactness"].startswith("openvino-int8: figures differ from the exact backend")
        if backends.fastest_backend() == "openvino-int8":  # auto gives the int8 run itself
            auto = make_ranker("dense", query=query, backend="auto")(cmu_dog_valid)
            assert auto.rankings == fast.rankings
            assert auto.config["params"]["backend"] == "openvino-int8"
    # every figure in the message, so that a run on a new kind of CPU states what it measured
    measured = "; ".join(f"{q}: top 1 {t1:.1%}, top 5 {t5:.1%}, nDCG@5 {d:+.4f}" for q, (t1, t5, d) in figures.items())
    units = ", ".join(backends.cpu_int8_units()) or "no int8 dot-product units"
    for query, (top1, top5, delta) in figures.items():
        assert top1 >= top1_min and top5 >= top5_min and abs(delta) <= ndcg_max, (
            f"{query} outside the tolerance ({units}: top 1 >= {top1_min:.0%}, top 5 >= {top5_min:.0%}, "
            f"|nDCG@5| <= {ndcg_max}); measured {measured}"
        )
