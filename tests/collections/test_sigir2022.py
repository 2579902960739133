"""SIGIR 2022 reader: both schemas, three file shapes, strict errors, the split file."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from dsr.collections import load_collection, sigir2022
from dsr.core import splits as split_files
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.errors import InputError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sigir2022"
CURRENT = FIXTURES / "current"
OLD = FIXTURES / "old"
PLAIN = CURRENT / "datasets" / "dialogues.json"
GROUNDED = CURRENT / "datasets" / "wikipedia_grounded_dialogues.json"


def raw(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))


def make_source(tmp_path: Path, plain: list | None = None, grounded: list | None = None, splits: bool = False) -> Path:
    """A source folder with (possibly edited) copies of the current-schema fixtures."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "dialogues.json").write_text(json.dumps(raw(PLAIN) if plain is None else plain))
    (src / "wikipedia_grounded_dialogues.json").write_text(json.dumps(raw(GROUNDED) if grounded is None else grounded))
    if splits:
        shutil.copy(CURRENT / "evaluation" / "val_test_splits.json", src)
    return src


# --- reading ----------------------------------------------------------------


def test_current_schema_keeps_every_field_and_the_file_order():
    coll = sigir2022.load(CURRENT)
    expected = raw(PLAIN) + raw(GROUNDED)
    assert coll.ids == [d["id"] for d in expected]
    assert coll.subsets == ["plain", "grounded"]
    assert [d.subset for d in coll] == ["plain"] * len(raw(PLAIN)) + ["grounded"] * len(raw(GROUNDED))
    for d, e in zip(coll, expected):
        assert d.title == e["title"] and d.subreddit == e["subreddit"]
        assert [t.body for t in d.context] == [t["body"] for t in e["context"]]
        assert [t.author_id for t in d.context] == [t["author_id"] for t in e["context"]]
        assert d.target.body == e["target"]["body"] and d.target.score == e["target"]["score"]
        # the initial ranking is the file's order, labels and scores as numbers
        # sentence ids as TREC files can carry them: spaces of the titles become "_"
        assert [c.id for c in d.candidates] == [c["id"].replace(" ", "_") for c in e["candidates"]]
        assert [c.label for c in d.candidates] == [int(c["label"]) for c in e["candidates"]]
        assert [c.score for c in d.candidates] == [float(c["score"]) for c in e["candidates"]]
        assert d.source == "sigir2022"
    assert coll.meta["schema"] == "current"


def test_numbers_stored_as_strings_are_read_as_numbers():
    d = sigir2022.load(CURRENT)["t5_2qm4e.nc8rq.2.7"]
    # the fixture stores this dialogue's scores and labels as strings
    assert isinstance(raw(GROUNDED)[2]["candidates"][0]["score"], str)
    assert d.candidates[0].score == 41.5 and d.candidates[0].label == 1
    assert [c.label for c in d.candidates] == [1, 1, 0, 0]


def test_old_schema_gives_the_same_collection_ordered_by_initial_score():
    current = sigir2022.load(CURRENT)
    old = sigir2022.load(OLD)  # files at the folder root; object keyed by id + JSON Lines
    assert old.meta["schema"] == "old"
    assert old.ids == current.ids
    assert old.content_hash == current.content_hash
    # independently: pos then neg, stable sort by score descending
    raw_old = json.loads((OLD / "dialogues.json").read_text())["t5_2qh1i.le4kh.1.3"]["candidates"]
    merged = [(c["id"].replace(" ", "_"), float(c["score"])) for c in raw_old["pos"] + raw_old["neg"]]
    want = [cid for cid, _ in sorted(merged, key=lambda x: -x[1])]
    got = old["t5_2qh1i.le4kh.1.3"]
    assert [c.id for c in got.candidates] == want
    # the tie at 31.2 between a pos and a neg sentence: pos first
    tied = [c for c in got.candidates if c.score == 31.2]
    assert [c.label for c in tied] == [1, 0]
    assert {c.id for c in got.relevant} == {c["id"].replace(" ", "_") for c in raw_old["pos"]}


def test_old_schema_orders_by_score_not_by_group(tmp_path):
    d = {d["id"]: d for d in raw(PLAIN)}["t5_2qh03.tkeys.0.3"]
    pos = [{k: v for k, v in c.items() if k != "label"} for c in d["candidates"] if c["label"] == 1]
    neg = [{k: v for k, v in c.items() if k != "label"} for c in d["candidates"] if c["label"] == 0]
    old = dict(d, candidates={"pos": pos, "neg": neg})
    src = make_source(tmp_path, plain=[old])
    got = sigir2022.load(src)["t5_2qh03.tkeys.0.3"]
    # the highest score is a neg sentence: it must come first, not the pos group
    assert got.candidates[0].label == 0 and got.candidates[0].score == 30.12
    assert [c.score for c in got.candidates] == sorted((c.score for c in got.candidates), reverse=True)


@pytest.mark.parametrize("shape", ["array", "keyed", "keyed-without-id", "jsonl"])
def test_file_shapes_give_the_same_collection(tmp_path, shape):
    reference = sigir2022.load(CURRENT).content_hash
    src = tmp_path / shape
    src.mkdir()
    for path in (PLAIN, GROUNDED):
        items = raw(path)
        if shape == "array":
            text = json.dumps(items)
        elif shape == "keyed":
            text = json.dumps({d["id"]: d for d in items}, indent=2)
        elif shape == "keyed-without-id":
            text = json.dumps({d["id"]: {k: v for k, v in d.items() if k != "id"} for d in items})
        else:
            text = "\n".join(json.dumps(d) for d in items) + "\n"
        (src / path.name).write_text(text)
    assert sigir2022.load(src).content_hash == reference


def test_benchmark_round_trip_keeps_content_and_hash(tmp_path):
    coll = sigir2022.load(CURRENT)
    out = tmp_path / "sigir.jsonl"
    write_benchmark(coll, out)
    back = read_benchmark(out)
    assert back.content_hash == coll.content_hash
    assert [d.to_json() for d in back] == [d.to_json() for d in coll]
    assert load_collection(out).ids == coll.ids


def test_registered_name_loads_from_dsr_home(dsr_home):
    target = dsr_home / "data" / "sigir2022"
    shutil.copytree(CURRENT, target)
    coll = load_collection("sigir2022")
    assert len(coll) == 6 and coll.splits is not None
    assert load_collection("sigir2022", split="grounded").subsets == ["grounded"]


def test_split_keeps_one_subset_and_restricts_the_splits():
    coll = sigir2022.load(CURRENT, "plain")
    plain_ids = {d["id"] for d in raw(PLAIN)}
    assert set(coll.ids) == plain_ids and coll.subsets == ["plain"]
    for val, test in coll.splits:
        assert set(val) | set(test) == plain_ids and not set(val) & set(test)
    with pytest.raises(InputError) as err:
        sigir2022.load(CURRENT, "valid")
    assert err.value.field == "split"


def test_meta_records_the_files_git_blob_ids():
    coll = sigir2022.load(CURRENT)
    data = PLAIN.read_bytes()
    blob = hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()
    assert coll.meta["files"]["dialogues.json"]["git_blob"] == blob
    assert coll.meta["files"]["dialogues.json"]["official_commit"] is None  # a fixture


def test_missing_source_says_how_to_get_the_data():
    with pytest.raises(InputError) as err:
        sigir2022.load(None)
    message = str(err.value)
    assert "dsr data fetch sigir2022" in message and "--source DIR" in message
    assert "sample" in message


def test_one_missing_file_is_named(tmp_path):
    src = make_source(tmp_path)
    (src / "wikipedia_grounded_dialogues.json").unlink()
    with pytest.raises(InputError, match=r"wikipedia_grounded_dialogues\.json is missing"):
        sigir2022.load(src)


# --- strictness -------------------------------------------------------------


def _edit(fn):
    items = raw(PLAIN)
    fn(items)
    return items


CASES = {
    "candidate without id": (lambda d: d[1]["candidates"][1].pop("id"), "t5_2qh03.tkeys.0.3", "candidates[1].id"),
    "candidate with empty body": (lambda d: d[0]["candidates"][2].update(body="  "), "t5_2qh1i.iixjd.2.3", "candidates[2].body"),
    "label 2": (lambda d: d[0]["candidates"][0].update(label=2), "t5_2qh1i.iixjd.2.3", "candidates[0].label"),
    "label yes": (lambda d: d[0]["candidates"][3].update(label="yes"), "t5_2qh1i.iixjd.2.3", "candidates[3].label"),
    "label missing": (lambda d: d[2]["candidates"][1].pop("label"), "t5_2qh1i.le4kh.1.3", "candidates[1].label"),
    "duplicate candidate id": (
        lambda d: d[0]["candidates"][4].update(id=d[0]["candidates"][1]["id"]),
        "t5_2qh1i.iixjd.2.3",
        "candidates[4].id",
    ),
    "no relevant candidate": (lambda d: [c.update(label=0) for c in d[2]["candidates"]], "t5_2qh1i.le4kh.1.3", "candidates"),
    "missing context": (lambda d: d[1].pop("context"), "t5_2qh03.tkeys.0.3", "context"),
    "empty context": (lambda d: d[1].update(context=[]), "t5_2qh03.tkeys.0.3", "context"),
    "missing target": (lambda d: d[2].pop("target"), "t5_2qh1i.le4kh.1.3", "target"),
    "target without text": (lambda d: d[2]["target"].pop("body"), "t5_2qh1i.le4kh.1.3", "target.body"),
    "score not a number": (lambda d: d[0]["candidates"][0].update(score="high"), "t5_2qh1i.iixjd.2.3", "candidates[0].score"),
    "missing dialogue id": (lambda d: d[1].pop("id"), "#1", "id"),
    "duplicate dialogue id": (lambda d: d[2].update(id=d[0]["id"]), "t5_2qh1i.iixjd.2.3", "id"),
    "candidates neither list nor pos/neg": (lambda d: d[0].update(candidates={"good": []}), "t5_2qh1i.iixjd.2.3", "candidates"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_malformed_case_names_file_record_and_field(tmp_path, case):
    mutate, record, field = CASES[case]
    src = make_source(tmp_path, plain=_edit(mutate))
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.path == str(src / "dialogues.json")
    assert err.value.record == record
    assert err.value.field == field


def test_duplicate_dialogue_id_across_the_two_files(tmp_path):
    grounded = raw(GROUNDED)
    grounded[1]["id"] = raw(PLAIN)[0]["id"]
    src = make_source(tmp_path, grounded=grounded)
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.path == str(src / "wikipedia_grounded_dialogues.json")
    assert err.value.record == raw(PLAIN)[0]["id"] and err.value.field == "id"
    assert "dialogues.json" in err.value.message


def _old_dialogue():
    return copy.deepcopy(json.loads((OLD / "dialogues.json").read_text())["t5_2qh03.tkeys.0.3"])


def test_old_schema_without_scores_is_refused(tmp_path):
    d = _old_dialogue()
    d["candidates"]["neg"][1].pop("score")
    src = make_source(tmp_path, plain=[d])
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.record == "t5_2qh03.tkeys.0.3"
    assert err.value.field == "candidates.neg[1].score"


def test_old_schema_label_contradicting_its_group_is_refused(tmp_path):
    d = _old_dialogue()
    d["candidates"]["pos"][0]["label"] = 0
    src = make_source(tmp_path, plain=[d])
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.field == "candidates.pos[0].label"


def test_old_schema_same_sentence_in_pos_and_neg_is_refused(tmp_path):
    d = _old_dialogue()
    d["candidates"]["neg"][0]["id"] = d["candidates"]["pos"][0]["id"]
    src = make_source(tmp_path, plain=[d])
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.field == "candidates.neg[0].id"
    assert "candidates.pos[0]" in err.value.message


def test_json_lines_errors_name_the_line(tmp_path):
    src = make_source(tmp_path)
    lines = [json.dumps(d) for d in raw(PLAIN)]
    lines[1] = lines[1][:-20]  # truncated record
    (src / "dialogues.json").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.line == 2 and err.value.path == str(src / "dialogues.json")
    lines = [json.dumps(d) for d in raw(PLAIN)]
    bad = raw(PLAIN)[2]
    bad["candidates"][0]["label"] = 3
    lines[2] = json.dumps(bad)
    (src / "dialogues.json").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert (err.value.line, err.value.record, err.value.field) == (3, bad["id"], "candidates[0].label")


def test_keyed_object_whose_id_differs_from_its_key(tmp_path):
    items = raw(PLAIN)
    keyed = {d["id"]: d for d in items}
    keyed[items[0]["id"]] = dict(items[0], id="t5_2qh1i.other.0.3")
    src = make_source(tmp_path)
    (src / "dialogues.json").write_text(json.dumps(keyed))
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.record == items[0]["id"] and err.value.field == "id"


# --- split files ------------------------------------------------------------


def test_fixture_split_file_is_read_and_checked():
    splits = split_files.read_split_file(CURRENT / "evaluation" / "val_test_splits.json")
    lines = (CURRENT / "evaluation" / "val_test_splits.json").read_text().splitlines()
    assert splits == [(json.loads(x)["val"], json.loads(x)["test"]) for x in lines]
    assert sigir2022.load(CURRENT).splits == splits


def test_split_file_not_partitioning_the_collection(tmp_path):
    src = make_source(tmp_path, splits=True)
    lines = (src / "val_test_splits.json").read_text().splitlines()
    second = json.loads(lines[1])
    dropped = second["test"].pop(1)
    lines[1] = json.dumps(second)
    (src / "val_test_splits.json").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        sigir2022.load(src)
    assert err.value.path == str(src / "val_test_splits.json") and err.value.line == 2
    assert dropped in err.value.message


def test_check_splits_names_line_and_ids():
    ids = ["a", "b", "c", "d"]
    split_files.check_splits([(["a", "b"], ["c", "d"]), (["d", "a"], ["b", "c"])], ids, "s.json")
    with pytest.raises(InputError) as err:
        split_files.check_splits([(["a", "b"], ["c", "d"]), (["a", "b"], ["c", "x", "d"])], ids, "s.json")
    assert (err.value.line, err.value.field) == (2, "test") and "x" in err.value.message
    with pytest.raises(InputError) as err:
        split_files.check_splits([(["a"], ["c", "d"])], ids, "s.json")
    assert err.value.line == 1 and "b" in err.value.message and "neither" in err.value.message
    with pytest.raises(InputError) as err:
        split_files.check_splits([(["a", "b"], ["b", "c", "d"])], ids, "s.json")
    assert "both" in err.value.message


@pytest.mark.parametrize(
    "line, field, message",
    [
        ('{"val": ["a", "b"], "test": ["c", "d"]', None, "malformed JSON"),
        ('{"val": ["a", "b"]}', "test", "missing"),
        ('{"val": ["a", "a"], "test": ["c", "d"]}', "val", "twice"),
        ('{"val": ["a", 7], "test": ["c", "d"]}', "val", "text"),
        ('{"val": ["a", "b"], "test": ["b", "d"]}', "test", "both"),
    ],
)
def test_read_split_file_errors(tmp_path, line, field, message):
    path = tmp_path / "splits.json"
    path.write_text('{"val": ["a", "b"], "test": ["c", "d"]}\n' + line + "\n")
    with pytest.raises(InputError) as err:
        split_files.read_split_file(path)
    assert err.value.line == 2 and err.value.field == field and message in err.value.message


def test_real_split_file_is_the_official_one(shared_data):
    path = shared_data / "sigir2022" / "val_test_splits.json"
    data = path.read_bytes()
    assert (
        hashlib.sha1(b"blob " + str(len(data)).encode() + b"\0" + data).hexdigest()
        == "b832c178d530d366884ff7258a3310457578ba12"
        == sigir2022.SPLIT_BLOB
    )
    splits = split_files.read_split_file(path)
    assert len(splits) == 50
    ids = set(splits[0][0]) | set(splits[0][1])
    assert len(ids) == 846
    for val, test in splits:
        assert len(val) == 423 and len(test) == 423
        assert set(val) | set(test) == ids and not set(val) & set(test)
    assert len({tuple(sorted(t)) for _, t in splits}) == 50  # 50 different splits
    split_files.check_splits(splits, ids, path)
    missing = sorted(ids)[17]
    with pytest.raises(InputError) as err:
        split_files.check_splits(splits, ids - {missing}, path)
    assert err.value.line == 1 and missing in err.value.message


def test_split_file_as_a_json_array(tmp_path):
    lines = (CURRENT / "evaluation" / "val_test_splits.json").read_text().splitlines()
    path = tmp_path / "splits.json"
    path.write_text(json.dumps([json.loads(x) for x in lines], indent=2))
    assert split_files.read_split_file(path) == split_files.read_split_file(CURRENT / "evaluation" / "val_test_splits.json")


def test_it_keeps_the_collection_contract_on_its_fixture():
    """dsr.testing's check, the one a plug-in's collection runs: it builds, loads, hashes the
    same twice and through its benchmark file, and exports."""
    from dsr import testing
    from dsr.collections import source_module

    testing.check_collection(source_module("sigir2022"), CURRENT, None, name="sigir2022")
