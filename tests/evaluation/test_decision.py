"""The decision rule (``dsr.evaluation.decision``, ``dsr decide``) on real CMU_DoG valid points.

The label sets are the real ones: silver CMU_DoG valid (502 points, built from
../shared/data/cmu_dog) and the 115-point judged set (../shared/data/judged), whose points
are valid points with the same 50 candidates. The candidate runs are made from those real
labels so that what each is better at is known: one follows the judged grades where there
are any and the silver labels elsewhere (better on both), one follows the judged grades but
ranks silver-relevant sentences last elsewhere (better on judged, worse on silver).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dsr.cli import main
from dsr.collections import load_collection
from dsr.core.run import Run
from dsr.evaluation.decision import decide, decide_runs
from tests.support.tiers import slow_fixture


@pytest.fixture(scope="module")
@slow_fixture
def label_sets(tmp_path_factory):
    from tests.support.data import SHARED_DATA, shared_data_home

    with shared_data_home(tmp_path_factory):
        silver = load_collection("cmu_dog", SHARED_DATA / "cmu_dog", "valid")
    judged = load_collection("cmu_dog_judged", SHARED_DATA / "judged")
    return silver, judged


def _run(silver, judged, judged_way: str, silver_way: str) -> Run:
    """Scores: by the judged grades on judged points (``judged_way``) and by the silver labels
    elsewhere (``silver_way``), each 'up' (relevant first) or 'down' (relevant last); the
    initial (BM25) order breaks ties."""
    grades = {d.id: {c.id: c.label for c in d.candidates} for d in judged}
    scores = {}
    for d in silver:
        labels, way = (grades[d.id], judged_way) if d.id in grades else ({c.id: c.label for c in d.candidates}, silver_way)
        sign = {"up": 1, "down": -1, "none": 0}[way]
        n = len(d.candidates)
        scores[d.id] = {c.id: sign * labels[c.id] * n + (n - i) / n for i, c in enumerate(d.candidates)}
    return Run.from_scores(scores)


def _initial(silver) -> Run:
    return _run(silver, [], "none", "none")


def test_better_on_judged_but_worse_on_silver_keeps_the_default(label_sets):
    silver, judged = label_sets
    runs = {"initial": _initial(silver), "judged-only": _run(silver, judged, "up", "down")}
    decision = decide_runs(judged, silver, {k: {"dev": r, "silver": r} for k, r in runs.items()}, "initial")
    dev, sil = decision.rows["judged-only"]["dev"], decision.rows["judged-only"]["silver"]
    assert dev["better"] and dev["diff"] > 0.3  # far better on the judged points
    assert sil["diff"] < 0 and not sil["better"]  # worse on the 387 other silver points
    assert decision.topics == {"dev": 115, "silver": 502}
    assert not decision.switch and decision.chosen == "initial" and decision.passed == []


def test_better_on_both_switches_and_the_best_on_dev_wins(label_sets):
    silver, judged = label_sets
    runs = {
        "initial": _initial(silver),
        "judged-only": _run(silver, judged, "up", "down"),
        "silver-only": _run(silver, judged, "none", "up"),  # judged points: initial order
        "both": _run(silver, judged, "up", "up"),
    }
    decision = decide_runs(judged, silver, {k: {"dev": r, "silver": r} for k, r in runs.items()}, "initial")
    assert decision.switch and decision.chosen == "both"
    assert "both" in decision.passed and "judged-only" not in decision.passed
    # silver-only is the initial order on every judged point: no difference there
    assert decision.rows["silver-only"]["dev"]["diff"] == 0
    assert "silver-only" not in decision.passed
    as_json = decision.as_dict()
    assert as_json["decision"] == "both" and as_json["switch"] is True


def test_holm_over_the_candidates_tried_can_keep_the_default():
    """A candidate that passes alone (raw p < 0.05 on both sets) fails once two more are tried:
    Holm multiplies the smallest of three p-values by 3."""
    from scipy.stats import ttest_rel

    rng = np.random.default_rng(5)
    base = {s: rng.uniform(0.2, 0.8, n) for s, n in (("dev", 400), ("silver", 500))}
    noise = {s: rng.normal(0, 0.3, len(v)) for s, v in base.items()}

    def shifted(s, shift):
        return base[s] + noise[s] - noise[s].mean() + shift

    # find, per label set, a shift whose raw paired t p-value is between 0.02 and 0.04
    shifts = {}
    for s in base:
        for shift in np.linspace(0.005, 0.1, 400):
            p = ttest_rel(shifted(s, shift), base[s]).pvalue
            if 0.02 < p < 0.04:
                shifts[s] = shift
                break
    values = {s: {"default": base[s], "candidate": shifted(s, shifts[s])} for s in base}
    alone = decide(values, "default", test="t")
    assert alone.chosen == "candidate"
    for s in base:  # two more candidates that are no better than the default
        values[s]["other1"] = base[s] + rng.normal(0, 0.01, len(base[s]))
        values[s]["other2"] = base[s].copy()
    crowded = decide(values, "default", test="t")
    assert crowded.rows["candidate"]["dev"]["t_holm"] > 0.05 or crowded.rows["candidate"]["silver"]["t_holm"] > 0.05
    assert crowded.chosen == "default"


def test_dsr_decide_prints_the_table_and_json(label_sets, tmp_path, capsys, monkeypatch):
    silver, judged = label_sets
    monkeypatch.setenv("DSR_HOME", str(tmp_path / "home"))
    _initial(silver).write(tmp_path / "initial.run")
    _run(silver, judged, "up", "up").write(tmp_path / "both.run")
    _run(silver, judged, "up", "down").write(tmp_path / "judged-only.run")
    common = _decide_on_shared_data()
    assert (
        main(
            [
                *common,
                "--default",
                str(tmp_path / "initial.run"),
                f"good={tmp_path / 'both.run'}",
                str(tmp_path / "judged-only.run"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "judged dev (115)" in out and "silver valid (502)" in out
    assert "decision: good replaces initial" in out
    assert str(tmp_path) not in out
    assert main([*common, "--json", "--default", str(tmp_path / "initial.run"), str(tmp_path / "judged-only.run")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["decision"] == "initial" and result["switch"] is False
    assert result["rows"]["judged-only"]["silver"]["diff"] < 0


def test_bad_run_specs_are_bad_input(label_sets, tmp_path, capsys):
    silver, _ = label_sets
    _initial(silver).write(tmp_path / "initial.run")
    common = [
        *_decide_on_shared_data(),
        "--default",
        str(tmp_path / "initial.run"),
    ]
    assert main([*common, str(tmp_path / "missing.run")]) == 2
    assert "missing.run" in capsys.readouterr().err
    assert main([*common, f"{tmp_path / 'initial.run'},{tmp_path / 'initial.run'},x"]) == 2
    assert "SILVER_RUN,DEV_RUN" in capsys.readouterr().err
    assert main([*common, str(tmp_path / "initial.run")]) == 2  # same name twice
    assert "two runs named" in capsys.readouterr().err


def test_each_candidates_paired_difference_has_its_t_interval():
    """diff_ci_low/high: the 95 % t interval of the per-topic differences, as scipy gives it."""
    from scipy import stats

    rng = np.random.default_rng(3)
    base = {s: rng.uniform(0, 1, n) for s, n in (("dev", 60), ("silver", 90))}
    other = {s: v + rng.normal(0.02, 0.2, len(v)) for s, v in base.items()}
    decision = decide({s: {"base": base[s], "other": other[s]} for s in base}, "base", n_resamples=200)
    for s in base:
        d = other[s] - base[s]
        low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        row = decision.rows["other"][s]
        assert row["diff_ci_low"] == pytest.approx(low, abs=1e-12) and row["diff_ci_high"] == pytest.approx(high, abs=1e-12)
        assert row["diff_ci_low"] < row["diff"] < row["diff_ci_high"]


def _decide_on_shared_data() -> list[str]:
    """``dsr decide`` on CMU_DoG valid's silver labels and the judged set in ../shared/data."""
    from tests.support.data import SHARED_DATA

    cmu, judged = SHARED_DATA / "cmu_dog", SHARED_DATA / "judged"
    return f"decide cmu_dog cmu_dog_judged --silver-source {cmu} --silver-split valid --dev-source {judged}".split()


def test_a_run_of_other_points_or_other_candidates_is_refused_not_scored_as_zeros():
    """A run that lacks some of a label set's points, or ranks a sentence that is not the point's
    candidate, would be measured on what it never ranked (a CMU_DoG valid run given for
    cmu_dog_dev covers 125 of its 389 points): refused, naming the run, the set and the point."""
    sample = load_collection("sample")
    whole = Run.from_scores({d.id: {c.id: -i for i, c in enumerate(d.candidates)} for d in sample})
    decide_runs(sample, sample, {"a": {"dev": whole, "silver": whole}, "b": {"dev": whole, "silver": whole}}, "a")
    first = sample.ids[0]
    part = Run({q: r for q, r in whole.rankings.items() if q != first})
    with pytest.raises(
        ValueError, match=rf"run 'b' ranks {len(sample) - 1} of the {len(sample)} query points .*{first!r} is missing"
    ):
        decide_runs(sample, sample, {"a": {"dev": whole, "silver": whole}, "b": {"dev": part, "silver": whole}}, "a")
    stray = Run({**whole.rankings, first: [("not-a-candidate", 1.0), *whole.rankings[first][1:]]})
    with pytest.raises(ValueError, match=r"ranks 'not-a-candidate' for query point .* not one of its candidates .*silver"):
        decide_runs(sample, sample, {"a": {"dev": whole, "silver": whole}, "b": {"dev": whole, "silver": stray}}, "a")
