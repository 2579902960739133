"""A campaign on real data: the judged CMU_DoG valid set (115 dialogues, 5,670 candidates of the
BM25 pools) made into a pool (labels hidden), four assessors of whom three grade the judged
grades with noise at known rates and one answers at random. The honeypots exclude the random
one; majority vote then recovers the judged labels to the accuracy the noise allows (computed
exactly from the noise rates, item by item); and the agreement figures equal those of
``krippendorff``, statsmodels and scikit-learn on a matrix built here from the same grades."""

from __future__ import annotations

import functools
import itertools
from collections import Counter

import numpy as np
import pytest

from tests.support.judging import as_pool, assignments, noisy, true_grade, truth_of
from tests.support.tiers import slow_fixture

NOISE = {"ann": 0.10, "ben": 0.20, "cat": 0.30}
SPAM = "spam"
#: the module's campaign and outcomes, made once: its tests on one worker (tests/support/order.py)
pytestmark = pytest.mark.xdist_group("judging-real-data")


def mv_correct_probability(true: int, rates: list[float], values=(0, 1, 2)) -> float:
    """P(majority vote == true) when each assessor errs with their rate (uniformly over the
    other grades) and a tie goes to the lowest tied grade (dsr.judging.aggregate's rule)."""
    total = 0.0
    for outcome in itertools.product(values, repeat=len(rates)):
        p = np.prod([1 - r if g == true else r / (len(values) - 1) for g, r in zip(outcome, rates)])
        counts = Counter(outcome)
        top = max(counts.values())
        total += p * (min(g for g, c in counts.items() if c == top) == true)
    return float(total)


@pytest.fixture(scope="module")
@slow_fixture
def campaign(tmp_path_factory):
    from dsr.core.data import read_benchmark
    from dsr.judging import guidelines, honeypots
    from dsr.judging.campaigns import Judging, Settings
    from tests.support.data import shared_file

    path = shared_file("judged/cmu_dog-valid-judged.jsonl")
    judged = read_benchmark(path)
    pool = as_pool(judged)
    judging = Judging.open(f"sqlite:///{tmp_path_factory.mktemp('real') / 'board.sqlite'}")
    golds = honeypots.auto_golds(pool, 0, 2, seed=3)
    judging.create(
        "cmu",
        pool,
        guidelines.load(),
        Settings(k=3, chunk=10, honeypot_rate=0.1, honeypot_threshold=0.6, min_honeypots=5, seed=3),
        golds,
    )
    for name in [*NOISE, SPAM]:
        judging.assignments.add_assessor(name)
    judging.assignments.assign("cmu")
    pairs = assignments(judging, "cmu")
    truth = truth_of(judged)
    rng = np.random.default_rng(11)
    rows = [
        {
            "item": p["key"],
            "assessor": p["assessor"],
            "seconds": 3.0,
            "grade": int(rng.integers(3)) if p["assessor"] == SPAM else noisy(true_grade(p, truth), NOISE[p["assessor"]], rng),
        }
        for p in pairs
    ]
    judging.import_grades("cmu", rows, origin=None)
    return judging, judged, pairs, rows


@pytest.fixture(scope="module")
def outcomes(campaign):
    """The campaign's outcome by aggregation method (``dsr.judging.campaign_report.outcome``),
    computed on first use and shared by the module's tests, which only read it."""
    from dsr.judging.campaign_report import outcome

    made: dict = {}

    def of(method: str):
        if method not in made:
            made[method] = outcome(campaign[0], "cmu", method)
        return made[method]

    return of


def test_the_pool_hides_the_labels_and_every_sentence_is_a_task_item(campaign):
    judging, judged, pairs, _ = campaign
    items = judging.items_frame(judging.campaign("cmu"))
    pool_items = items[items["candidate"].notna()]
    assert len(pool_items) == sum(len(d.candidates) for d in judged) == 5670
    assert not pool_items.duplicated(["dialogue", "candidate"]).any()
    assert all(
        d.meta["judged"] is False and all(c.label == 0 for c in d.candidates) for d in judging.pool(judging.campaign("cmu"))
    )
    per_item = Counter(p["key"] for p in pairs)
    assert set(per_item.values()) == {3}  # k = 3 on every item
    assert all(len({p["assessor"] for p in pairs if p["key"] == k}) == 3 for k in list(per_item)[:200])


def test_honeypots_exclude_the_random_assessor_only(outcomes):
    result = outcomes("mv")
    verdict = {a: c.counted for a, c in result.checks.items()}
    assert verdict == {"ann": True, "ben": True, "cat": True, SPAM: False}
    assert all(c.checks >= 5 for c in result.checks.values())
    assert result.checks[SPAM].accuracy < 0.6 <= result.checks["cat"].accuracy


def test_majority_vote_recovers_the_judged_labels_as_far_as_the_noise_allows(campaign, outcomes):
    judging, judged, pairs, _ = campaign
    result = outcomes("mv")
    truth = truth_of(judged)
    items = judging.items_frame(judging.campaign("cmu")).set_index("item").to_dict("index")  # item: its row
    holders: dict[str, list[str]] = {}
    for p in pairs:
        if p["assessor"] != SPAM and p["candidate"] is not None:
            holders.setdefault(p["key"], []).append(p["assessor"])
    chance = functools.cache(lambda true, rates: mv_correct_probability(true, list(rates)))  # a few distinct cases
    expected, observed = [], []
    for item, label in result.labels.items():
        row = items[item]
        true = truth[row["dialogue"], row["candidate"]]
        expected.append(chance(true, tuple(NOISE[a] for a in holders[row["key"]])))
        observed.append(label == true)
    assert len(observed) == 5670  # every pool sentence has counted grades (2 or 3)
    n, p = len(observed), float(np.mean(expected))
    assert abs(np.mean(observed) - p) < 4 * np.sqrt(p * (1 - p) / n), (np.mean(observed), p)
    ds = outcomes("ds")
    ds_acc = np.mean([label == truth[items[i]["dialogue"], items[i]["candidate"]] for i, label in ds.labels.items()])
    assert ds_acc >= np.mean(observed) - 0.01


def test_agreement_equals_the_libraries_on_the_same_matrix(campaign, outcomes):
    import krippendorff
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    _, _, pairs, rows = campaign
    result = outcomes("mv")
    planted = {p["key"] for p in pairs if p["candidate"] is None}
    keys = sorted({r["item"] for r in rows if r["item"] not in planted})
    people = sorted(NOISE)
    matrix = np.full((len(people), len(keys)), np.nan)
    column = {k: j for j, k in enumerate(keys)}
    for r in rows:
        if r["assessor"] != SPAM and r["item"] in column:
            matrix[people.index(r["assessor"]), column[r["item"]]] = r["grade"]
    a = result.agreement
    assert a["assessors"] == 3 and a["items"] == len(keys) and a["grades"] == int((~np.isnan(matrix)).sum())
    assert a["alpha_ordinal"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[0, 1, 2]), abs=1e-12
    )
    binary = np.where(np.isnan(matrix), np.nan, (matrix >= 1).astype(float))
    assert a["alpha_binary"] == pytest.approx(
        krippendorff.alpha(reliability_data=binary, level_of_measurement="nominal"), abs=1e-12
    )
    counts = (~np.isnan(matrix)).sum(axis=0)  # the spammer's items keep 2 grades: the most common
    modal = Counter(counts.tolist()).most_common(1)[0][0]
    assert modal == 2
    full = np.array([row[~np.isnan(row)] for row in matrix[:, counts == modal].T]).astype(int)
    assert a["fleiss"]["items"] == len(full) and a["fleiss"]["raters_per_item"] == modal
    assert a["fleiss"]["kappa"] == pytest.approx(fleiss_kappa(aggregate_raters(full, n_cat=3)[0]), abs=1e-12)
    for pair in a["pairs"]:
        i, j = (people.index(x) for x in pair["assessors"])
        both = ~np.isnan(matrix[i]) & ~np.isnan(matrix[j])
        assert pair["items"] == both.sum()
        assert pair["kappa"] == pytest.approx(cohen_kappa_score(matrix[i, both], matrix[j, both]), abs=1e-9)
        assert pair["kappa_linear"] == pytest.approx(
            cohen_kappa_score(matrix[i, both], matrix[j, both], weights="linear"), abs=1e-9
        )
    # the noisier the assessor, the lower their kappa with the aggregate
    kappas = {p["assessor"]: p["kappa_with_aggregate"] for p in result.assessors}
    assert kappas["ann"] > kappas["ben"] > kappas["cat"] > kappas[SPAM]


def test_the_judged_export_recovers_the_labels_and_keeps_the_records(campaign, outcomes, tmp_path):
    from dsr.core.data import read_benchmark, write_benchmark
    from dsr.judging.campaign_report import judged_collection

    judging, judged, pairs, _ = campaign
    result = outcomes("ds")
    out = judged_collection(judging, result, only_relevant=True)
    write_benchmark(out, tmp_path / "j.jsonl")
    back = read_benchmark(tmp_path / "j.jsonl")
    items = judging.items_frame(judging.campaign("cmu"))
    item_of = {(d, c): i for i, d, c in zip(items["item"], items["dialogue"], items["candidate"])}
    labels = {key: int(result.labels[i]) for key, i in item_of.items() if isinstance(key[1], str)}
    assert all(d.meta["judged"] is True for d in back)
    assert all(c.label == labels[d.id, c.id] for d in back for c in d.candidates)
    kept = [d.id for d in judged if any(labels[d.id, c.id] >= 1 for c in d.candidates)]
    assert back.ids == kept and 0 < len(kept) <= len(judged)  # only dialogues with a relevant sentence
    # (how many lose every relevant sentence to the simulated noise depends on the seeded draws)
    first = back.dialogues[0]
    original = judged[first.id]
    assert [c.id for c in first.candidates] == [c.id for c in original.candidates]
    assert [c.body for c in first.candidates] == [c.body for c in original.candidates]
    assert first.context == original.context and first.target == original.target
    counted = Counter((p["dialogue"], p["candidate"]) for p in pairs if p["assessor"] != SPAM)
    assert first.meta["judging"]["grades"] == [counted[first.id, c.id] for c in first.candidates]
    assert set(first.meta["judging"]["grades"]) <= {2, 3}
