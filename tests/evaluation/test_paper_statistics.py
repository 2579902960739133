"""Significance a paper can use: corrections, families, intervals, effect sizes, all-pairs
groups and direction marks, each against a plain computation; tables as DataFrames and the
report's figures (PNG, PDF, SVG)."""

from __future__ import annotations

import io
import json
import statistics
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dsr.cli import main
from dsr.collections.synthetic import make_collection, make_run
from dsr.core.data import write_benchmark
from dsr.core.errors import InputError
from dsr.evaluation import figure_files, tables
from dsr.evaluation import significance as sig
from dsr.evaluation.experiment import evaluate_runs
from dsr.evaluation.protocol import generate_splits
from dsr.evaluation.report import write_report

P = [0.01, 0.04, 0.03, 0.005, 0.2, np.nan, 0.049]


def by_size(p) -> tuple[list[int], list[float]]:
    """The indices of the p-values that are not NaN, smallest first; and a NaN for each one."""
    return sorted((i for i, v in enumerate(p) if v == v), key=lambda i: p[i]), [float("nan")] * len(p)


def plain_bh(p):
    """Benjamini-Hochberg step-up written out: p_(i) * m / i, running min from the largest."""
    order, out = by_size(p)
    m = len(order)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        out[i] = running
    return out


def plain_holm(p):
    """Holm's step-down written out: p_(i) * (m - i + 1), running max from the smallest."""
    order, out = by_size(p)
    m = len(order)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, p[i] * (m - rank)))
        out[i] = running
    return out


def test_corrections_against_plain_step_up_and_step_down():
    np.testing.assert_allclose(sig.adjust(P, "bh"), plain_bh(P))
    np.testing.assert_allclose(sig.adjust(P, "holm"), plain_holm(P))
    m = sum(v == v for v in P)
    np.testing.assert_allclose(sig.adjust(P, "bonferroni"), [v if v != v else min(1, v * m) for v in P])
    # BH on a worked example: sorted 0.005, 0.01, 0.03, 0.04 (m = 4) -> 0.02, 0.02, 0.04, 0.04
    np.testing.assert_allclose(sig.adjust([0.01, 0.04, 0.03, 0.005], "bh"), [0.02, 0.04, 0.04, 0.02])


def test_correction_families_group_the_p_values_they_name():
    rng = np.random.default_rng(4)
    significance = {
        s: {n: {m: {"t": float(rng.uniform(0, 0.1)), "perm": None} for m in ("RR", "AP")} for n in ("a", "b", "c")}
        for s in ("all", "plain")
    }
    flat = lambda keys: [significance[s][n][m]["t"] for s, n, m in keys]  # noqa: E731
    for family, groups in (
        ("runs", [[(s, n, m) for n in "abc"] for s in ("all", "plain") for m in ("RR", "AP")]),
        ("runs+measures", [[(s, n, m) for n in "abc" for m in ("RR", "AP")] for s in ("all", "plain")]),
        ("runs+measures+subsets", [[(s, n, m) for s in ("all", "plain") for n in "abc" for m in ("RR", "AP")]]),
    ):
        sig.correct(significance, "bh", family)
        for keys in groups:
            got = [significance[s][n][m]["t_adj"] for s, n, m in keys]
            np.testing.assert_allclose(got, plain_bh(flat(keys)))
            assert all(significance[s][n][m]["perm_adj"] is None for s, n, m in keys)


def test_paired_effects_against_plain_counts_and_scipy():
    rng = np.random.default_rng(2)
    b = rng.uniform(size=(40, 2))
    a = b + rng.normal(0.05, 0.1, size=(40, 2))
    a[:5] = b[:5]  # five ties
    got = sig.paired_effects(a, b)
    for j in range(2):
        d = a[:, j] - b[:, j]
        assert got["wins"][j] == sum(1 for v in d if v > 0)
        assert got["ties"][j] == sum(1 for v in d if v == 0) == 5
        assert got["losses"][j] == sum(1 for v in d if v < 0)
        assert got["d"][j] == pytest.approx(statistics.mean(d) / statistics.stdev(d))
        ci = stats.ttest_rel(a[:, j], b[:, j]).confidence_interval(0.95)
        assert (got["ci_low"][j], got["ci_high"][j]) == pytest.approx((ci.low, ci.high))


def test_mean_intervals_t_and_bootstrap_against_scipy():
    values = np.random.default_rng(3).beta(0.5, 2, size=(300, 2))
    mean, low, high = sig.mean_ci(values, "t")
    for j in range(2):
        ref = stats.t.interval(0.95, 299, loc=values[:, j].mean(), scale=stats.sem(values[:, j]))
        assert (low[j], high[j]) == pytest.approx(ref)
    mean, low, high = sig.mean_ci(values, "bootstrap", n_resamples=4000, seed=1)
    for j in range(2):
        ref = stats.bootstrap((values[:, j],), np.mean, method="percentile", n_resamples=4000, random_state=1).confidence_interval
        assert low[j] == pytest.approx(ref.low, abs=0.004) and high[j] == pytest.approx(ref.high, abs=0.004)
        assert low[j] < mean[j] < high[j]
    # the same seed gives the same interval
    assert np.array_equal(sig.mean_ci(values, "bootstrap", seed=5)[1], sig.mean_ci(values, "bootstrap", seed=5)[1])


def test_all_pairs_groups_tied_systems_and_corrects_over_pairs():
    rng = np.random.default_rng(7)
    base = rng.uniform(size=(200, 1))
    per_topic = {
        "low": base,
        "low2": base + rng.normal(0, 0.01, size=(200, 1)),
        "high": np.clip(base + 0.3 + rng.normal(0, 0.05, size=(200, 1)), 0, 2),
    }
    out = sig.all_pairs(per_topic, ["RR"], correction="holm")["RR"]
    assert out["order"][0] == "high"
    assert out["letters"] == {"high": "a", "low": "b", "low2": "b"}
    pairs = [("low", "low2"), ("low", "high"), ("low2", "high")]
    raw = [stats.ttest_rel(per_topic[x][:, 0], per_topic[y][:, 0]).pvalue for x, y in pairs]
    np.testing.assert_allclose([out["p"][f"{x}|{y}"] for x, y in pairs], plain_holm(raw))


@pytest.fixture(scope="module")
def constructed():
    """A baseline, a run clearly better and a run clearly worse (random), with splits."""
    collection = make_collection(n=120, seed=12)
    runs = {
        "base": make_run(collection, seed=1, quality=1.0),
        "good": make_run(collection, seed=2, quality=3.0),
        "worse": make_run(collection, seed=3, quality=0.0),
    }
    splits = generate_splits(collection.ids, 10, seed=0)
    family = {"t1": make_run(collection, seed=4, quality=0.2), "t2": make_run(collection, seed=5, quality=2.0)}
    results = evaluate_runs(
        collection,
        runs,
        ["RR", "nDCG@5"],
        splits=splits,
        families={"tuned": family},
        baseline="base",
        n_resamples=200,
        progress=False,
        all_pairs=True,
    )
    return collection, runs, family, results


def test_marks_have_the_direction_of_the_difference(constructed):
    _, _, _, results = constructed
    for subset in results.subsets:
        for measure in results.measures:
            assert results.mark(subset, "worse", measure) == sig.WORSE
            assert results.significance[subset]["worse"][measure]["diff"] < 0
        # RR is near its ceiling for both, so "good" is only clearly better on nDCG@5
        assert results.mark(subset, "good", "nDCG@5") == sig.BETTER
    text = tables.format_text(results)
    assert sig.WORSE in text and sig.BETTER in text and "†" not in text
    assert "Holm-Bonferroni over the systems compared, per subset and measure" in text
    latex = tables.to_latex(results)
    assert r"$^{\blacktriangledown}$" in latex and r"$^{\blacktriangle}$" in latex
    frame = results.to_frame()
    worse = frame[(frame.system == "worse")]
    assert (worse["mark"] == sig.WORSE).all() and (worse["diff"] < 0).all()
    sizes = worse["subset"].map({s: len(i) for s, i in results.subsets.items()})
    assert (worse["wins"] + worse["ties"] + worse["losses"] == sizes).all()


def test_untuned_block_holds_tuned_families_by_their_out_of_sample_values(constructed):
    _, runs, family, results = constructed
    frame = tables.main_frame(results)
    tuned = frame[(frame.block == "all") & (frame.run == "tuned") & (frame.subset == "all")]
    values = results.systems["tuned"].per_topic
    expected = np.nanmean(values[~np.isnan(values).any(axis=1)], axis=0)
    np.testing.assert_allclose(tuned["mean"].to_numpy(), expected)
    assert set(tuned["kind"]) == {"tuned"}
    # the recall@k curve of the family is its configuration chosen most often
    modal = results.modal_config("tuned")
    assert results.run_objects["tuned"] is family[modal]


def test_tables_render_from_frames_and_parse(constructed):
    _, _, _, results = constructed
    csv = pd.read_csv(io.StringIO(tables.render(results, "csv")))
    ref = results.to_frame().set_index(["subset", "system", "measure"])["mean"]
    test_block = csv[csv.block == "test"].set_index(["subset", "run", "measure"])["mean"]
    for key, value in test_block.items():
        assert value == pytest.approx(ref[key], abs=1e-12)
    data = json.loads(tables.render(results, "json"))
    assert {"table", "comparison", "pairs"} <= set(data)
    assert len(data["comparison"]) == 3 * len(results.subsets) * len(results.measures)
    md = tables.render(results, "md")
    header = [line for line in md.splitlines() if line.startswith("| run |")]
    assert len(header) == 2 * len(results.subsets)  # test and untuned block per subset
    assert "systems sharing a letter" in md
    assert r"\toprule" in tables.render(results, "latex")


def test_report_writes_png_and_pdf_for_every_figure(constructed, tmp_path):
    _, _, _, results = constructed
    write_report(results, tmp_path / "rep")
    names = {p.name for p in (tmp_path / "rep").iterdir()}
    stems = {"main", "measures", "diff_vs_baseline", "recall_at_k"}  # main: the primary, nDCG@5
    for stem in stems:
        assert {f"{stem}.png", f"{stem}.pdf"} <= names
        assert (tmp_path / "rep" / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / "rep" / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
    svg = figure_files.figure_files(results.plot("main"), "main", ("svg",))["main.svg"]
    ET.fromstring(svg)  # SVG on request (Results.plot + savefig)
    comparison = pd.read_csv(tmp_path / "rep" / "comparison.csv")
    assert len(comparison) == 3 * len(results.subsets) * len(results.measures)
    worse = comparison[comparison.system == "worse"]
    assert (worse["mark"] == sig.WORSE).all() and (worse["diff"] < 0).all()
    assert set(pd.read_csv(tmp_path / "rep" / "pairs.csv")["system"]) == set(results.systems)
    report = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert report["significance"]["method"] == "holm" and report["significance"]["family"] == "runs"


def test_cli_correction_family_and_format(tmp_path, capsys):
    collection = make_collection(n=60, seed=2)
    write_benchmark(collection, tmp_path / "c.jsonl")
    for name, seed, quality in (("a", 1, 1.0), ("b", 2, 0.0), ("c", 3, 1.2)):
        make_run(collection, seed=seed, quality=quality).write(tmp_path / f"{name}.run")
    argv = [
        str(tmp_path / "c.jsonl"),
        *(str(tmp_path / f"{n}.run") for n in "abc"),
        "--baseline",
        "a",
        "--measures",
        "RR,P@1",
        "--quiet",
        "--permutations",
        "0",
    ]
    assert main(["evaluate", *argv, "--correction", "bh", "--family", "runs+measures", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    results = data["significance"]["results"]["all"]
    raw = [results[n][m]["t"] for n in "bc" for m in ("RR", "P@1")]
    np.testing.assert_allclose([results[n][m]["t_adj"] for n in "bc" for m in ("RR", "P@1")], plain_bh(raw))
    assert "Benjamini-Hochberg" in data["significance"]["correction"]
    assert main(["evaluate", *argv, "--format", "csv"]) == 0
    csv = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert set(csv["run"]) == {"a", "b", "c"} and (csv.loc[csv.run == "b", "mark"] == sig.WORSE).all()
    assert main(["evaluate", *argv, "--format", "latex", "--all-pairs"]) == 0
    assert r"\begin{tabular}" in capsys.readouterr().out
    assert main(["evaluate", *argv, "--family", "nope"]) == 2  # refused by its Param, as from Python:
    assert "field '--family': parameter family must be one of runs, " in capsys.readouterr().err
    with pytest.raises(InputError) as err:
        evaluate_runs(collection, {"a": make_run(collection)}, family="nope", progress=False)
    assert err.value.field == "family"
