"""ccpe: query points from a data.json in the documented schema; strict validation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dsr.collections import ccpe
from dsr.core.data import read_benchmark, write_benchmark
from dsr.core.errors import InputError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ccpe"
RAW = json.loads((FIXTURE / "data.json").read_text(encoding="utf-8"))


def test_fixture_is_in_the_documented_shape():
    # the first utterance of each conversation carries no "segments", as upstream
    assert all("segments" not in c["utterances"][0] for c in RAW)
    for conv in RAW:
        for u in conv["utterances"]:
            for s in u.get("segments", []):
                assert u["text"][s["startIndex"] : s["endIndex"]] == s["text"]


def test_preference_query_points():
    built = ccpe.build(FIXTURE)
    expected = []
    for conv in RAW:
        for i, u in enumerate(conv["utterances"]):
            prefs = [s for s in u.get("segments", []) for a in s["annotations"] if a["annotationType"] == "ENTITY_PREFERENCE"]
            if u["speaker"] == "USER" and prefs and i >= 2:
                expected.append(f"{conv['conversationId']}-{i}")
    assert built.ids == expected == ["CCPE-8e113-3", "CCPE-8e113-6", "CCPE-8e113-8", "CCPE-a37c2-5", "CCPE-a37c2-7"]
    d = built["CCPE-8e113-8"]
    assert d.candidates == [] and d.target.author_id == "USER"
    assert [t.author_id for t in d.context][:3] == ["ASSISTANT", "USER", "ASSISTANT"]
    assert d.target.body == "Yeah, Jake Gyllenhaal is great in everything he does."
    assert d.subset == "person"
    assert d.meta["target_segments"] == RAW[0]["utterances"][8]["segments"]
    assert set(d.meta["context_segments"]) == {str(k) for k in range(1, 8)}
    # the first preference (by position) decides the subset: "It's hilarious" (a movie)
    assert built["CCPE-a37c2-5"].subset == "movie_or_series"
    assert built["CCPE-8e113-6"].subset == "movie_genre_or_category"
    assert built.meta["conversations"] == 3 and built.meta["annotations"]["ENTITY_PREFERENCE"] == 11


def test_assistant_targets_and_round_trip(tmp_path):
    built = ccpe.build(FIXTURE, targets="assistant", min_context=3)
    assert built.ids == ["CCPE-8e113-5", "CCPE-8e113-7", "CCPE-a37c2-4", "CCPE-a37c2-6", "CCPE-5f0d1-4"]
    assert set(built.subsets) == {"assistant"}
    for one in (built, ccpe.build(FIXTURE / "data.json")):
        path = tmp_path / "ccpe.jsonl"
        write_benchmark(one, path)
        assert read_benchmark(path).content_hash == one.content_hash


def _broken(tmp_path: Path, change) -> Path:
    data = copy.deepcopy(RAW)
    change(data)
    path = tmp_path / "data.json"
    path.write_text(json.dumps(data))
    return path


def _set(path, value):
    def change(data):
        obj = data
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return change


@pytest.mark.parametrize(
    "change, record, field",
    [
        (_set([0, "utterances", 1, "speaker"], "BOT"), "CCPE-8e113", "utterances[1].speaker"),
        (_set([0, "utterances", 1, "segments", 0, "startIndex"], 3), "CCPE-8e113", "utterances[1].segments[0].text"),
        (_set([0, "utterances", 1, "segments", 0, "endIndex"], 500), "CCPE-8e113", "utterances[1].segments[0].endIndex"),
        (_set([0, "utterances", 1, "segments", 0, "startIndex"], -1), "CCPE-8e113", "utterances[1].segments[0].startIndex"),
        (_set([1, "utterances", 3, "index"], 4), "CCPE-a37c2", "utterances[3].index"),
        (
            _set([1, "utterances", 3, "segments", 0, "annotations", 0, "annotationType"], "LIKES"),
            "CCPE-a37c2",
            "utterances[3].segments[0].annotations[0].annotationType",
        ),
        (
            _set([1, "utterances", 3, "segments", 0, "annotations", 0, "entityType"], "ACTOR"),
            "CCPE-a37c2",
            "utterances[3].segments[0].annotations[0].entityType",
        ),
        (_set([2, "conversationId"], "CCPE-8e113"), "CCPE-8e113", "conversationId"),
        (_set([2, "utterances", 1, "text"], None), "CCPE-5f0d1", "utterances[1].text"),
        (_set([2, "utterances"], []), "CCPE-5f0d1", "utterances"),
        (_set([2, "conversationId"], ""), "#2", "conversationId"),
    ],
)
def test_malformed_input_names_record_and_field(tmp_path, change, record, field):
    path = _broken(tmp_path, change)
    with pytest.raises(InputError) as err:
        ccpe.build(path)
    assert (err.value.path, err.value.record, err.value.field) == (str(path), record, field)


def test_offset_check_can_be_relaxed(tmp_path):
    path = _broken(tmp_path, _set([0, "utterances", 1, "segments", 0, "startIndex"], 3))
    assert len(ccpe.build(path, check_offsets=False)) == 5


def test_bad_files_and_params(tmp_path):
    path = tmp_path / "data.json"
    path.write_text('[{"conversationId": "x",\n "utterances": [}]')
    with pytest.raises(InputError) as err:
        ccpe.build(path)
    assert err.value.line == 2
    path.write_text(json.dumps({"conversationId": "x"}))
    with pytest.raises(InputError, match="JSON array"):
        ccpe.build(path)
    with pytest.raises(InputError) as err:
        ccpe.build(FIXTURE, targets="everyone")
    assert err.value.field == "targets"
    with pytest.raises(InputError) as err:
        ccpe.build(FIXTURE, target="user")
    assert err.value.field == "params"
    with pytest.raises(InputError) as err:
        ccpe.build(FIXTURE, split="test")
    assert err.value.field == "split"


def test_load_caches_and_missing_source(tmp_path, dsr_home):
    first = ccpe.load(FIXTURE, None)
    cache = Path(first.meta["cache"])
    assert cache.is_relative_to(dsr_home / "collections") and cache.is_file()
    assert ccpe.load(FIXTURE / "data.json", None).content_hash == first.content_hash
    with pytest.raises(InputError) as err:
        ccpe.load(None, None)
    assert "dsr data fetch ccpe" in str(err.value)


def test_it_keeps_the_collection_contract_on_its_fixture():
    """dsr.testing's check, the one a plug-in's collection runs: it builds, loads, hashes the
    same twice and through its benchmark file, and exports."""
    from dsr import testing
    from dsr.collections import source_module

    testing.check_collection(source_module("ccpe"), FIXTURE, None, name="ccpe")
