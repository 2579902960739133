"""Known answers and the organiser's guidelines file.

Automatic honeypots are checked against the judged CMU_DoG set: every quoted sentence the rule
finds was judged relevant, every unrelated sentence it plants is from another film and shares
no content word with the dialogue. A judged collection gives the grades of the dialogues it
shares with the pool. The guidelines YAML is checked field by field."""

from __future__ import annotations

import pytest

from eval.judging import guidelines
from eval.judging.honeypots import auto_golds, judged_golds, quoted_candidate
from judging_support import as_pool
from retrieval.errors import InputError
from retrieval.text import content_words


@pytest.fixture(scope="module")
def judged():
    from conftest import SHARED_DATA
    from retrieval.data import read_benchmark

    path = SHARED_DATA / "judged" / "cmu_dog-valid-judged.jsonl"
    if not path.is_file():
        pytest.skip("../shared/data/judged is not beside the checkout")
    return read_benchmark(path)


def test_automatic_honeypots_agree_with_the_judged_labels(judged):
    golds = auto_golds(as_pool(judged), 0, 2, seed=0)
    quoted = [(d, cid) for d in judged for cid, (grade, source) in golds[d.id].known.items()]
    assert len(quoted) == 18                    # 18 of 115 next turns quote a candidate (>= 5 words)
    assert all(judged[d.id].candidates[[c.id for c in d.candidates].index(cid)].label == 2 for d, cid in quoted)
    for d in judged:
        words = content_words(d.title) | content_words(d.target.body)
        for t in d.context:
            words |= content_words(t.body)
        planted = golds[d.id].planted
        assert len(planted) == 12 and all(p.grade == 0 and p.title != d.title for p in planted)
        assert not any(content_words(p.body) & words or content_words(p.title) & words for p in planted)
        assert not {(p.title, p.body) for p in planted} & {(c.title, c.body) for c in d.candidates}


def test_a_judged_collection_gives_the_grades_of_shared_dialogues(judged):
    from retrieval.collections import load_collection

    pool = as_pool(judged)
    golds = judged_golds(pool, judged)
    assert set(golds) == set(judged.ids)
    d = judged.dialogues[0]
    assert golds[d.id].known == {c.id: (c.label, "judged") for c in d.candidates}
    assert judged_golds(load_collection("sample"), judged) == {}         # nothing shared
    sample = load_collection("sample")           # SIGIR 2022-shaped: next turns quote Wikipedia
    quoted = [(d, quoted_candidate(d)) for d in sample if quoted_candidate(d) is not None]
    assert quoted and all(next(c for c in d.candidates if c.id == cid).label >= 1 for d, cid in quoted)


def test_default_guidelines_load_and_rule_honeypots():
    rules = guidelines.load()
    assert rules.grades == [0, 1, 2] and [g.key for g in rules.scale] == ["0", "1", "2"]
    assert rules.passes(1, 2) and not rules.passes(0, 2) and rules.passes(0, 0)
    assert rules.examples and "next turn" in rules.guidelines
    exact = guidelines.from_json({**rules.to_json(), "honeypot_match": "exact"})
    assert not exact.passes(1, 2) and exact.passes(2, 2)


@pytest.mark.parametrize("change, field", [
    ({"scale": [{"grade": 0, "key": "0", "name": "no"}]}, "scale"),
    ({"scale": [{"grade": 1, "key": "a", "name": "x"}, {"grade": 0, "key": "c", "name": "y"}]}, "scale"),
    ({"scale": [{"grade": 0, "key": "j", "name": "x"}, {"grade": 1, "key": "c", "name": "y"}]}, "scale[0].key"),
    ({"scale": [{"grade": -1, "key": "a", "name": "x"}, {"grade": 1, "key": "c", "name": "y"}]}, "scale[0].grade"),
    ({"relevant_from": 0}, "relevant_from"),
    ({"honeypot_match": "fuzzy"}, "honeypot_match"),
    ({"guidelines": ""}, "guidelines"),
    ({"examples": [{"grade": 7}]}, "examples[0].grade"),
])
def test_bad_guidelines_name_the_field(tmp_path, change, field):
    import yaml

    raw = {**guidelines.load().to_json(), **change}
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(InputError) as err:
        guidelines.load(path)
    assert err.value.field == field and err.value.path == str(path)


def test_broken_yaml_names_the_line(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text("question: x\nscale: [\n  - grade: 0\n")
    with pytest.raises(InputError) as err:
        guidelines.load(path)
    assert err.value.path == str(path) and err.value.line is not None and "YAML" in err.value.message
