"""Known answers and the organiser's guidelines file.

Automatic honeypots are checked against the judged CMU_DoG set: every quoted sentence the rule
finds was judged relevant; the not-relevant checks come from the dialogue's own document (or a
related one) and share no content word with the last turns, and the judges' grades of them are
counted. A judged collection gives the grades of the dialogues it
shares with the pool. The guidelines YAML is checked field by field."""

from __future__ import annotations

import pytest

from dsr.core.errors import InputError
from dsr.core.text import content_words
from dsr.judging import guidelines
from dsr.judging.honeypots import auto_golds, judged_golds, quoted_candidate
from tests.support.judging import as_pool
from tests.support.tiers import slow_fixture


@pytest.fixture(scope="module")
@slow_fixture
def judged():
    from dsr.core.data import read_benchmark
    from tests.support.data import shared_file

    path = shared_file("judged/cmu_dog-valid-judged.jsonl")
    return read_benchmark(path)


def test_automatic_honeypots_agree_with_the_judged_labels(judged):
    """Every automatic check of the judged CMU_DoG set against its judged grade (the figures of
    dsr/judging/honeypots.py and docs/judging.md), and what each kind of not-relevant check
    is: a sentence sharing no word with the next turn that catches the title-match script
    (its title matches the dialogue's) or the word-overlap one (it shares a word with the last
    turns), or both; the retitled ones (another document's sentence that names it, under the
    dialogue's title) catch the two together as well, and come first."""
    from collections import Counter

    from dsr.judging.honeypots import RECENT_TURNS

    golds = auto_golds(as_pool(judged), 0, 2, seed=0)
    label = {(d.id, c.id): c.label for d in judged for c in d.candidates}
    known = [(d.id, cid, grade, source) for d in judged for cid, (grade, source) in golds[d.id].known.items()]
    quoted = [k for k in known if k[3] == "quote"]
    assert len(quoted) == 18  # 18 of 115 next turns quote a candidate (>= 5 words)
    assert all(label[d, cid] == 2 and grade == 2 for d, cid, grade, _ in quoted)
    judged_as = Counter((source, label[d, cid]) for d, cid, grade, source in known if source != "quote")
    assert all(grade == 0 for *_, grade, source in known if source != "quote")
    assert judged_as == {
        ("same-document", 0): 440,
        ("same-document", 1): 32,
        ("related-document", 0): 277,
        ("other-document", 0): 1700,
        ("other-document", 1): 1,
    }
    every, retitled = 0, []
    titles_of: dict[str, set[str]] = {}
    grade_of: dict[str, int] = {}
    for d in judged:
        for c in d.candidates:
            titles_of.setdefault(c.body, set()).add(c.title)
            if c.title != d.title:  # the sentence in a dialogue about another document
                grade_of[c.body] = max(grade_of.get(c.body, 0), c.label)
    for d in judged:
        words = content_words(d.title) | content_words(d.target.body)
        following = content_words(d.target.body)
        recent = set()
        for t in d.context:
            words |= content_words(t.body)
        for t in d.context[-RECENT_TURNS:]:
            recent |= content_words(t.body)
        planted = golds[d.id].planted
        assert 1 <= len(planted) <= 12 and all(p.grade == 0 for p in planted)
        shown = content_words(d.title).union(*(content_words(t.body) for t in d.context))  # what the page shows
        for p in planted:
            body, title = content_words(p.body), content_words(p.title)
            assert not body & following
            if p.source == "retitled-document":  # shown under the dialogue's title, names another
                origin = titles_of[p.body] - {d.title}
                assert p.title == d.title and body & recent and origin
                assert any((body & content_words(t)) - shown for t in origin)
                retitled.append(p.body)
            elif p.source == "same-document":
                assert p.title == d.title and not body & recent
            elif p.source == "related-document":
                assert p.title != d.title and title & words
            else:
                assert p.source == "other-document" and body & recent and not title & words
        caught = [
            (
                p.title == d.title or bool(content_words(p.title) & shown),
                bool(content_words(p.body) & recent),
                p.title == d.title and bool(content_words(p.body) & recent),
            )
            for p in planted
        ]
        assert caught == sorted(caught, key=lambda c: -sum(c)) or caught[0] == (True, True, True)
        every += caught[0] == (True, True, True)
        assert not {(p.title, p.body) for p in planted} & {(c.title, c.body) for c in d.candidates}
        assert not {p.body for p in planted if p.source == "retitled-document"} & {c.body for c in d.candidates}
    # nearly every dialogue has a check that catches the title-match and word-overlap scripts
    # and the two together (106 of 115). Where the judged set shows the sentences so used
    # (under their own title) in a dialogue about another document, they are graded 0: 169 of
    # 171 (the other 2, Iron Man's and The Avengers' first sentences, graded 1 in a
    # conversation that compares superhero films)
    assert every >= 100, every
    graded = Counter(grade_of[b] for b in set(retitled) if b in grade_of)
    assert graded[0] >= 0.98 * sum(graded.values()) and sum(graded.values()) > 150, graded


def test_a_judged_collection_gives_the_grades_of_shared_dialogues(judged):
    from dsr.collections import load_collection

    pool = as_pool(judged)
    golds = judged_golds(pool, judged)
    assert set(golds) == set(judged.ids)
    d = judged.dialogues[0]
    assert golds[d.id].known == {c.id: (c.label, "judged") for c in d.candidates}
    assert judged_golds(load_collection("sample"), judged) == {}  # nothing shared
    sample = load_collection("sample")  # SIGIR 2022-shaped: next turns quote Wikipedia
    quoted = [(d, quoted_candidate(d)) for d in sample if quoted_candidate(d) is not None]
    assert quoted and all(next(c for c in d.candidates if c.id == cid).label >= 1 for d, cid in quoted)


def test_default_guidelines_load_and_rule_honeypots():
    rules = guidelines.load()
    assert rules.grades == [0, 1, 2] and [g.key for g in rules.scale] == ["0", "1", "2"]
    assert rules.passes(1, 2) and not rules.passes(0, 2) and rules.passes(0, 0)
    assert rules.examples and "next turn" in rules.guidelines
    exact = guidelines.from_json({**rules.to_json(), "honeypot_match": "exact"})
    assert not exact.passes(1, 2) and exact.passes(2, 2)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"scale": [{"grade": 0, "key": "0", "name": "no"}]}, "scale"),
        ({"scale": [{"grade": 1, "key": "a", "name": "x"}, {"grade": 0, "key": "c", "name": "y"}]}, "scale"),
        ({"scale": [{"grade": 0, "key": "j", "name": "x"}, {"grade": 1, "key": "c", "name": "y"}]}, "scale[0].key"),
        ({"scale": [{"grade": -1, "key": "a", "name": "x"}, {"grade": 1, "key": "c", "name": "y"}]}, "scale[0].grade"),
        ({"relevant_from": 0}, "relevant_from"),
        ({"honeypot_match": "fuzzy"}, "honeypot_match"),
        ({"guidelines": ""}, "guidelines"),
        ({"examples": [{"grade": 7}]}, "examples[0].grade"),
    ],
)
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
