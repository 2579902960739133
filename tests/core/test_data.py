"""The data model and the benchmark file: round trips, the content hash, strict reading."""

from __future__ import annotations

import copy
import json

import pytest

from dsr.core.data import Candidate, Collection, Dialogue, Turn, read_benchmark, write_benchmark
from dsr.core.errors import InputError


def make_dialogue(did="t5_2qh1i.iixjd.2.3", subset="plain") -> Dialogue:
    return Dialogue(
        id=did,
        subreddit="AskHistorians",
        title="Why did the Romans use concrete?",
        context=[
            Turn("t2_a", "alice", "Roman concrete has lasted two thousand years.", 12),
            Turn("t2_b", "bob", "Modern concrete cracks within decades though.", 4),
            Turn("t2_a", "alice", "So what was different about theirs?", 3),
        ],
        target=Turn("t2_b", "bob", "Volcanic ash reacted with seawater to grow crystals.", 7),
        candidates=[
            Candidate(
                "Roman_concrete_1_2_0_3",
                "Roman concrete",
                "Pozzolanic ash from Pozzuoli made the mortar set under water.",
                18.25,
                1,
            ),
            Candidate("Concrete_2_1_0_1", "Concrete", "Concrete is a composite material.", 11.5, 0),
            Candidate(
                "Tobermorite_3_0_0_0",
                "Tobermorite",
                "Aluminous tobermorite crystals grow in seawater-exposed Roman mortar.",
                9.0,
                2,
            ),
        ],
        subset=subset,
        source="fixture",
        meta={"note": "hand-written"},
    )


def make_collection() -> Collection:
    return Collection("fixture", [make_dialogue(), make_dialogue("t5_2qh03.tkeys.0.3", "grounded")])


def test_round_trip_keeps_content_and_hash(tmp_path):
    coll = make_collection()
    path = tmp_path / "bench.jsonl"
    write_benchmark(coll, path)
    back = read_benchmark(path)
    assert [d.to_json() for d in back] == [d.to_json() for d in coll]
    assert back.content_hash == coll.content_hash
    assert back.subsets == ["plain", "grounded"]
    # Writing what was read gives the same bytes.
    path2 = tmp_path / "again.jsonl"
    write_benchmark(back, path2)
    assert path2.read_bytes() == path.read_bytes()


@pytest.mark.parametrize(
    "change",
    [
        lambda d: setattr(d.candidates[0], "body", d.candidates[0].body + "!"),
        lambda d: setattr(d.candidates[1], "label", 1),
        lambda d: setattr(d.candidates[2], "score", 9.000001),
        lambda d: setattr(d.context[0], "body", "Roman concrete has lasted 2000 years."),
        lambda d: setattr(d.target, "body", "Volcanic ash."),
        lambda d: setattr(d, "subset", "grounded"),
    ],
)
def test_hash_changes_when_content_changes(change):
    base = make_collection()
    changed = copy.deepcopy(base.dialogues)
    change(changed[0])
    assert Collection("fixture", changed).content_hash != base.content_hash


def test_hash_ignores_the_collection_name():
    assert Collection("a", [make_dialogue()]).content_hash == Collection("b", [make_dialogue()]).content_hash


def test_lookups_and_pool():
    coll = make_collection()
    assert "t5_2qh03.tkeys.0.3" in coll and len(coll) == 2
    assert coll.candidate_ids("t5_2qh1i.iixjd.2.3")[0] == "Roman_concrete_1_2_0_3"
    assert len(coll.sentences()) == 3  # the same ids in both dialogues are one sentence
    assert [c.id for c in coll["t5_2qh1i.iixjd.2.3"].relevant] == ["Roman_concrete_1_2_0_3", "Tobermorite_3_0_0_0"]


def _write_lines(tmp_path, objs_or_text):
    path = tmp_path / "bad.jsonl"
    if isinstance(objs_or_text, str):
        path.write_text(objs_or_text, encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(o) + "\n" for o in objs_or_text), encoding="utf-8")
    return path


def _good():
    return make_dialogue().to_json()


@pytest.mark.parametrize(
    "mutate, line, field, words",
    [
        (lambda o: o.pop("id"), 2, "id", "missing"),
        (lambda o: o["candidates"][1].pop("body"), 2, "candidates[1].body", "missing"),
        (lambda o: o["candidates"][1].pop("id"), 2, "candidates[1].id", "missing"),
        (lambda o: o["candidates"][0].__setitem__("label", "yes"), 2, "candidates[0].label", "number"),
        (lambda o: o["candidates"][0].__setitem__("label", -1), 2, "candidates[0].label", "label must be"),
        (lambda o: o["candidates"][0].__setitem__("label", 0.5), 2, "candidates[0].label", "whole number"),
        (lambda o: o["candidates"][0].__setitem__("score", "NaN"), 2, "candidates[0].score", "finite"),
        (lambda o: o["candidates"][2].__setitem__("id", "Concrete_2_1_0_1"), 2, "candidates[2].id", "duplicate"),
        (lambda o: o.__setitem__("context", "hello"), 2, "context", "list"),
        (lambda o: o["context"][1].pop("body"), 2, "context[1].body", "missing"),
    ],
)
def test_malformed_records_name_file_line_and_field(tmp_path, mutate, line, field, words):
    bad = _good()
    bad["id"] = "second"
    mutate(bad)
    path = _write_lines(tmp_path, [_good(), bad])
    with pytest.raises(InputError) as info:
        read_benchmark(path)
    err = info.value
    assert err.path == str(path) and err.line == line and err.field == field
    assert words in str(err)
    assert f"{path}:{line}" in str(err)


def test_malformed_json_and_duplicates(tmp_path):
    good = json.dumps(_good())
    path = _write_lines(tmp_path, good + "\n" + good[:-5] + "\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2: malformed JSON"):
        read_benchmark(path)
    path = _write_lines(tmp_path, [_good(), _good()])
    with pytest.raises(InputError, match=r"duplicate dialogue id .* \(first on line 1\)") as info:
        read_benchmark(path)
    assert info.value.line == 2
    path = _write_lines(tmp_path, "\n\n")
    with pytest.raises(InputError, match="no dialogues"):
        read_benchmark(path)
    with pytest.raises(InputError, match="no such file"):
        read_benchmark(tmp_path / "absent.jsonl")


def test_numbers_as_strings_are_accepted(tmp_path):
    obj = _good()
    obj["candidates"][0]["score"] = "18.25"
    obj["candidates"][0]["label"] = "1"
    obj["context"][0]["score"] = "12"
    coll = read_benchmark(_write_lines(tmp_path, [obj]))
    cand = coll.dialogues[0].candidates[0]
    assert cand.score == 18.25 and cand.label == 1 and coll.dialogues[0].context[0].score == 12


def test_failed_write_leaves_nothing(tmp_path):
    coll = make_collection()
    coll.dialogues[1].candidates[0].score = object()  # not JSON-serialisable, fails mid-file
    out = tmp_path / "out.jsonl"
    with pytest.raises(TypeError):
        write_benchmark(coll, out)
    assert list(tmp_path.iterdir()) == []


def test_written_files_get_the_usual_mode(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        write_benchmark(make_collection(), tmp_path / "b.jsonl")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b.jsonl").stat().st_mode) == 0o644


# --- the bulk check of plain candidates (so that loading stays linear in size) ------------

_VARIANTS = [
    lambda c: None,
    lambda c: c.pop("title"),
    lambda c: c.__setitem__("title", None),
    lambda c: c.__setitem__("title", 7),
    lambda c: c.__setitem__("score", None),
    lambda c: c.pop("score"),
    lambda c: c.__setitem__("score", ""),
    lambda c: c.__setitem__("score", 3),
    lambda c: c.__setitem__("score", "2.5"),
    lambda c: c.__setitem__("label", 2.0),
    lambda c: c.__setitem__("label", "2"),
    lambda c: c.__setitem__("id", 12345),
    lambda c: c.__setitem__("label", 2**31 - 1),
    lambda c: c.__setitem__("body", " padded body "),
]


@pytest.mark.parametrize("variant", range(len(_VARIANTS)))
def test_bulk_check_reads_what_the_field_path_reads(variant):
    """Every accepted shape gives the same records through the bulk check and through
    the field-by-field path, the records' own checks included."""
    from dsr.core import data

    obj = _good()
    _VARIANTS[variant](obj["candidates"][1])
    fast = data.dialogue_from_json(copy.deepcopy(obj))
    slow_cands = data._candidates(copy.deepcopy(obj)["candidates"], data._Where(None))
    assert fast.candidates == slow_cands
    assert [type(c.score) for c in fast.candidates] == [type(c.score) for c in slow_cands]
    assert [type(c.label) for c in fast.candidates] == [type(c.label) for c in slow_cands]
    checked = Dialogue(**{**fast.__dict__, "candidates": [Candidate(**c.__dict__) for c in slow_cands]})
    assert fast == checked


@pytest.mark.parametrize(
    "mutate, field, words",
    [
        (lambda c: c.__setitem__("id", "has space"), "candidates[1].id", "contains ' '"),
        (lambda c: c.__setitem__("id", "tab\there"), "candidates[1].id", "contains '\\t'"),
        (lambda c: c.__setitem__("id", "nul\x00"), "candidates[1].id", "contains"),
        (lambda c: c.__setitem__("id", ""), "candidates[1].id", "missing"),
        (lambda c: c.__setitem__("body", "   "), "candidates[1].body", "empty sentence text"),
        (lambda c: c.__setitem__("label", True), "candidates[1].label", "expected a number"),
        (lambda c: c.__setitem__("label", 2**31), "candidates[1].label", "label must be"),
        (lambda c: c.__setitem__("score", True), "candidates[1].score", "expected a number"),
        (lambda c: c.__setitem__("score", 1e400), "candidates[1].score", "finite"),
        (lambda c: c.__setitem__("title", ["x"]), "candidates[1].title", "expected text"),
    ],
)
def test_bulk_check_leaves_errors_to_the_field_path(tmp_path, mutate, field, words):
    """A candidate the bulk check refuses still fails naming file, line and field."""
    bad = _good()
    bad["id"] = "second"
    mutate(bad["candidates"][1])
    path = _write_lines(tmp_path, [_good(), bad])
    with pytest.raises(InputError) as info:
        read_benchmark(path)
    assert info.value.line == 2 and info.value.field == field and words in str(info.value)


def test_reading_pauses_the_collector_and_restores_it(tmp_path):
    import gc

    path = _write_lines(tmp_path, [_good()])
    assert gc.isenabled()
    read_benchmark(path)
    assert gc.isenabled()
    bad = _good()
    bad["candidates"][0]["label"] = -1
    bad_path = tmp_path / "worse.jsonl"
    bad_path.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_benchmark(bad_path)
    assert gc.isenabled()
    gc.disable()
    try:
        read_benchmark(path)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


def test_an_integer_too_long_for_python_names_its_field(tmp_path):
    bad = json.dumps(_good()).replace('"label": 1', '"label": ' + "9" * 5000, 1)
    path = _write_lines(tmp_path, bad + "\n")
    with pytest.raises(InputError) as info:
        read_benchmark(path)
    assert info.value.field == "candidates[0].label" and info.value.line == 1
