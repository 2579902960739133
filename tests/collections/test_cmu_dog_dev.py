"""``cmu_dog_dev``: the judged development set's definition, shipped ids and builder, on the real
CMU_DoG files (../shared/data/cmu_dog) and the 115-point judged set (../shared/data/judged); the
definition and the builder also on the fixtures (tests/fixtures/cmu_dog, judged and
cmu_dog_dev), which run on a fresh clone."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dsr.cli import main
from dsr.collections import cmu_dog, cmu_dog_dev, cmu_dog_judged, load_collection
from dsr.core.errors import InputError
from tests.support.data import FIXTURES, REAL_CMU_DOG, SHARED_DATA, shared_data_home
from tests.support.tiers import slow_fixture

pytestmark = REAL_CMU_DOG


@pytest.fixture(scope="module")
@slow_fixture
def real(tmp_path_factory):
    """The real CMU_DoG splits, loaded once (``cmu_dog.load``: the built collection's checks and
    its 3,373 train conversations, seconds a call) for the tests that compare with them;
    ``cmu_dog_dev``'s builder itself builds only its own points (``cmu_dog.build_points``)."""
    with shared_data_home(tmp_path_factory) as home:
        folder = SHARED_DATA / "cmu_dog"
        loaded = {split: cmu_dog.load(folder, split) for split in ("valid", "train")}
        yield {
            "source": folder,
            "home": home,
            **loaded,
            "judged": cmu_dog_judged.load(SHARED_DATA / "judged"),
        }


@pytest.fixture
def fixture_points(monkeypatch):
    """tests/fixtures/cmu_dog_dev's points file in place of the shipped one (made by the
    definition over the CMU_DoG fixture with a train slice of 1); yields the CMU_DoG fixture."""
    monkeypatch.setattr(cmu_dog_dev, "POINTS_FILE", FIXTURES / "cmu_dog_dev" / "cmu_dog_dev.points.jsonl")
    monkeypatch.setattr(cmu_dog_dev, "TRAIN_SLICE", 1)
    cmu_dog_dev.points.cache_clear()
    yield FIXTURES / "cmu_dog"
    cmu_dog_dev.points.cache_clear()


def test_the_definition_on_the_fixtures(fixture_points):
    source = fixture_points
    valid, train = cmu_dog.load(source, "valid"), cmu_dog.load(source, "train")
    judged = cmu_dog_judged.load(FIXTURES / "judged")
    records = cmu_dog_dev.points()
    # the fixture's valid conversation that is also in train (same file, same turns) gives no point
    shared = cmu_dog_dev.shared_conversations(
        cmu_dog_dev.read_split_turns(source, "valid"), cmu_dog_dev.read_split_turns(source, "train")
    )
    assert len(shared) == 1 and not {r["conversation"] for r in records} & set(shared)
    again = cmu_dog_dev.choose_points(valid, train, source, judged)
    assert [r["id"] for r in again] == [r["id"] for r in records]
    assert Counter((r["split"], r["origin"]) for r in records) == {("valid", "judged-115"): 2, ("train", "new"): 1}
    by_id = {d.id: d for d in judged}
    for r in records:
        if r["origin"] == "judged-115":  # folded in with the judged set's grades
            assert r["grades"] == {c.id: c.label for c in by_id[r["id"]].candidates}
        candidates = {c.id for d in [*valid, *train] if d.id == r["id"] for c in d.candidates}
        assert 0 < len(r["pool"]) <= 10 and set(r["pool"]) <= candidates


def test_the_builder_on_the_fixtures(fixture_points, tmp_path):
    source = fixture_points
    records = {r["id"]: r for r in cmu_dog_dev.points()}
    built = {d.id: d for d in [*cmu_dog.load(source, "valid"), *cmu_dog.load(source, "train")]}
    judged = load_collection("cmu_dog_dev", source)
    assert judged.meta["judged"] and len(judged) == 2
    for d in judged:
        assert [c.id for c in d.candidates] == [c.id for c in built[d.id].candidates]
        assert [t.body for t in d.context] == [t.body for t in built[d.id].context]
        assert {c.id: c.label for c in d.candidates} == {c.id: records[d.id]["grades"].get(c.id, 0) for c in d.candidates}
    pool = cmu_dog_dev.build(source, points="pool")
    assert [d.id for d in pool] == [i for i, r in records.items() if not r["grades"]]
    assert all({c.id for c in d.candidates} == set(records[d.id]["pool"]) for d in pool)
    assert not any(c.label for d in pool for c in d.candidates)
    assert len(cmu_dog_dev.build(source, points="all")) == len(records) == 3
    with pytest.raises(InputError, match="only 'dev'"):
        cmu_dog_dev.build(source, "valid")
    out = tmp_path / "pool.jsonl"
    assert main(["data", "build", "cmu_dog_dev", "--source", str(source), "--param", "points=pool", "--out", str(out)]) == 0
    assert sum(1 for _ in out.open()) == 1


def test_valid_and_train_share_45_conversations_with_identical_turns(real):
    train = cmu_dog_dev.read_split_turns(real["source"], "train")
    valid = cmu_dog_dev.read_split_turns(real["source"], "valid")
    shared = cmu_dog_dev.shared_conversations(valid, train)
    assert len(valid) == 229 and len(shared) == 45
    # the same file name in both splits, and every turn the same
    assert all(name == other and valid[name] == train[other] for name, other in shared.items())
    assert len(cmu_dog_dev.shared_conversations(train, valid)) == 45


def test_shipped_points_follow_the_definition(real):
    records = cmu_dog_dev.points()
    assert len(records) == 405 >= 400
    assert Counter(r["split"] for r in records) == {"valid": 125, "train": 280}
    assert len({(r["split"], r["conversation"]) for r in records}) == 405  # one per conversation
    # no point comes from a conversation that appears in another split
    train = cmu_dog_dev.read_split_turns(real["source"], "train")
    valid = cmu_dog_dev.read_split_turns(real["source"], "valid")
    shared_valid = set(cmu_dog_dev.shared_conversations(valid, train))
    shared_train = set(cmu_dog_dev.shared_conversations(train, valid))
    assert not {r["conversation"] for r in records if r["split"] == "valid"} & shared_valid
    assert not {r["conversation"] for r in records if r["split"] == "train"} & shared_train
    # every clean valid conversation with a query point is in
    with_points = {d.meta["conversation"] for d in real["valid"]}
    assert {r["conversation"] for r in records if r["split"] == "valid"} == with_points - shared_valid
    # the same definition, run again, gives the same points (the seed fixes the slice)
    again = cmu_dog_dev.choose_points(real["valid"], real["train"], real["source"], real["judged"])
    assert [r["id"] for r in again] == [r["id"] for r in records]


def test_the_115_point_set_folds_in_with_its_grades(real):
    records = {r["id"]: r for r in cmu_dog_dev.points()}
    judged = {d.id: d for d in real["judged"]}
    folded = [r for r in records.values() if r["origin"] == "judged-115"]
    assert len(folded) == 93  # the other 22 judged points are conversations also in train
    for r in folded:
        assert r["grades"] == {c.id: c.label for c in judged[r["id"]].candidates}
    new = [r for r in records.values() if r["origin"] == "new"]
    assert len(new) == 312 and all(set(r["grades"]) == set(r["pool"]) for r in new)  # graded: the pool
    # the 22 left out are exactly the judged points of shared conversations
    train = cmu_dog_dev.read_split_turns(real["source"], "train")
    valid = cmu_dog_dev.read_split_turns(real["source"], "valid")
    shared = set(cmu_dog_dev.shared_conversations(valid, train))
    left_out = [d for d in real["judged"] if d.id not in records]
    assert len(left_out) == 22 and all(d.meta["conversation"] in shared for d in left_out)


def test_pools_are_depth_10_unions_within_the_candidates(real):
    candidates = {d.id: {c.id for c in d.candidates} for d in [*real["valid"], *real["train"]]}
    for r in cmu_dog_dev.points():
        assert 10 <= len(r["pool"]) <= 30 and set(r["pool"]) <= candidates[r["id"]]
    runs = [{"q": [("a", 3), ("b", 2), ("c", 1)]}, {"q": [("c", 3), ("d", 2), ("a", 1)]}]
    assert cmu_dog_dev.depth_pool(runs, 2) == {"q": ["a", "b", "c", "d"]}


def test_the_shipped_file_holds_ids_and_grades_only():
    text = cmu_dog_dev.POINTS_FILE.read_text(encoding="utf-8")
    for line in text.splitlines():
        record = json.loads(line)
        assert set(record) == {"id", "split", "conversation", "turn", "origin", "pool", "grades"}
        assert all(isinstance(v, (str, int, list, dict)) for v in record.values())
        assert all(g in (0, 1, 2) for g in record["grades"].values())
    # no turn or sentence text: a real sentence of the judged set does not occur in it
    assert "Catch me if you can" not in text and "how are you" not in text.lower()


def ungraded_copy(monkeypatch):
    """The shipped points with the campaign's grades taken out, as before the campaign."""
    rows = tuple(dict(r, grades={} if r["origin"] == "new" else r["grades"]) for r in cmu_dog_dev.points())
    monkeypatch.setattr(cmu_dog_dev, "points", lambda: rows)


def test_builder_joins_ids_to_the_cmu_dog_files(real, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(real["home"]))
    judged = load_collection("cmu_dog_dev", real["source"])
    with_relevant = [r for r in cmu_dog_dev.points() if any(r["grades"].values())]
    assert len(judged) == len(with_relevant) == 389 and judged.meta["judged"]  # 16 graded points have none
    valid = {d.id: d for d in real["valid"]}
    one = judged.dialogues[0]
    assert [c.id for c in one.candidates] == [c.id for c in valid[one.id].candidates]
    assert [t.body for t in one.context] == [t.body for t in valid[one.id].context]
    assert all(any(c.label for c in d.candidates) for d in judged)
    assert len(cmu_dog_dev.build(real["source"], points="pool")) == 0  # nothing left to grade
    ungraded_copy(monkeypatch)
    pool = cmu_dog_dev.build(real["source"], points="pool")
    records = {r["id"]: r for r in cmu_dog_dev.points()}
    assert len(pool) == 312 and not any(c.label for d in pool for c in d.candidates)
    assert all({c.id for c in d.candidates} == set(records[d.id]["pool"]) for d in pool)
    assert len(cmu_dog_dev.build(real["source"], points="all")) == 405
    with pytest.raises(InputError, match="only 'dev'"):
        cmu_dog_dev.build(real["source"], "valid")


def test_data_build_writes_the_campaign_input_and_bad_params_are_refused(real, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DSR_HOME", str(real["home"]))
    ungraded_copy(monkeypatch)
    out = tmp_path / "pool.jsonl"
    assert (
        main(["data", "build", "cmu_dog_dev", "--source", str(real["source"]), "--param", "points=pool", "--out", str(out)]) == 0
    )
    assert sum(1 for _ in out.open()) == 312
    assert (
        main(
            [
                "data",
                "build",
                "cmu_dog_dev",
                "--source",
                str(real["source"]),
                "--param",
                "points=everything",
                "--out",
                str(tmp_path / "x.jsonl"),
            ]
        )
        == 2
    )
    assert "points" in capsys.readouterr().err and not (tmp_path / "x.jsonl").exists()


def test_training_never_uses_the_development_set(real, monkeypatch):
    """The graded points are refused as the judged set is; every point (``points=all``) is
    dropped by training hygiene, leaving nothing to train on."""
    from dsr.training import hygiene
    from dsr.training.recipe import refuse_judged
    from dsr.training.steps import conversation_of

    monkeypatch.setenv("DSR_HOME", str(real["home"]))
    with pytest.raises(InputError, match="judged development set"):
        refuse_judged(load_collection("cmu_dog_dev", real["source"]))
    everything = cmu_dog_dev.build(real["source"], points="all")
    with pytest.raises(InputError, match="nothing left to train on"):
        hygiene.apply(list(everything), everything, None, conversation_of)


def test_ir_datasets_loads_it_from_the_cmu_dog_folder(real, monkeypatch):
    """``ir_datasets.load("dsr/cmu_dog_dev")`` joins the shipped ids to ``$DSR_HOME/data/cmu_dog``."""
    import ir_datasets

    from dsr.interchange import irds

    (real["home"] / "data").mkdir(exist_ok=True)
    link = real["home"] / "data" / "cmu_dog"
    if not link.exists():
        link.symlink_to(real["source"])
    monkeypatch.setenv("DSR_HOME", str(real["home"]))
    irds.register()
    dataset = ir_datasets.load("dsr/cmu_dog_dev")
    queries = list(dataset.queries_iter())
    graded = [r for r in cmu_dog_dev.points() if any(r["grades"].values())]
    assert len(queries) == len(graded) == 389
    relevant = {(q.query_id, q.doc_id) for q in dataset.qrels_iter() if q.relevance > 0}
    assert relevant == {(r["id"], s) for r in graded for s, g in r["grades"].items() if g > 0}
