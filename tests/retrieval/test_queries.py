"""Query strategies on a hand-built dialogue."""

from __future__ import annotations

import pytest

from retrieval.data import Candidate, Dialogue, Turn
from retrieval.errors import InputError
from retrieval.queries import MIN_WEIGHT, STRATEGIES, query_terms, query_text


def dialogue(*turns: str, title: str = "Cats or dogs") -> Dialogue:
    return Dialogue(id="d1", title=title,
                    context=[Turn(f"a{i}", f"user{i}", body) for i, body in enumerate(turns)],
                    target=Turn("x", "next", "a reply"),
                    candidates=[Candidate("c1", "Cat", "Cats purr.", None, 1)])


D = dialogue("I like cats.", "Dogs are better than cats!", "Cats purr softly.")


def test_strategy_names():
    assert STRATEGIES == ("last", "last2", "all", "title+all", "weighted")


def test_plain_strategies_text():
    assert query_text(D, "last") == "Cats purr softly."
    assert query_text(D, "last2") == "Dogs are better than cats!\nCats purr softly."
    assert query_text(D, "all") == "I like cats.\nDogs are better than cats!\nCats purr softly."
    assert query_text(D, "title+all") == ("Cats or dogs\nI like cats.\nDogs are better than cats!\n"
                                          "Cats purr softly.")


def test_plain_strategies_terms_are_counts():
    assert query_terms(D, "last") == {"cats": 1, "purr": 1, "softly": 1}
    terms = query_terms(D, "all")
    assert terms["cats"] == 3 and terms["dogs"] == 1 and terms["i"] == 1
    assert query_terms(D, "title+all")["dogs"] == 2  # title "Cats or dogs" adds one


def test_weighted_terms_decay_with_age():
    # ages: "I like cats." 2, "Dogs are better than cats!" 1, "Cats purr softly." 0
    terms = query_terms(D, "weighted", decay=0.5)
    assert terms["cats"] == pytest.approx(0.25 + 0.5 + 1.0)
    assert terms["like"] == pytest.approx(0.25)
    assert terms["dogs"] == pytest.approx(0.5)
    assert terms["purr"] == pytest.approx(1.0)
    assert query_terms(D, "weighted", decay=0.1)["like"] == pytest.approx(0.01)
    # decay 1 weighs every turn the same: the counts of `all`
    assert query_terms(D, "weighted", decay=1.0) == pytest.approx(query_terms(D, "all"))


def test_weighted_text_is_recent_first_and_drops_light_turns():
    long = dialogue(*[f"turn number {i}" for i in range(7)])
    text = query_text(long, "weighted", decay=0.5).split("\n")
    # weights 1, .5, .25, .125, .0625 are kept; .03125 < MIN_WEIGHT is not
    assert 0.5 ** 4 >= MIN_WEIGHT > 0.5 ** 5
    assert text == [f"turn number {i}" for i in (6, 5, 4, 3, 2)]
    assert query_text(long, "weighted", decay=1.0).split("\n")[0] == "turn number 6"


def test_tokeniser_options_pass_through():
    terms = query_terms(D, "last", stopwords=True, stem=True)
    assert terms == {"cat": 1, "purr": 1, "soft": 1}
    assert "than" not in query_terms(D, "all", stopwords=True)


def test_no_context_falls_back_to_title():
    empty = dialogue(title="Favourite films")
    for strategy in STRATEGIES:
        assert query_text(empty, strategy) == "Favourite films"
        assert query_terms(empty, strategy) == {"favourite": 1, "films": 1}
    assert query_text(dialogue(title=""), "all") == ""


def test_unknown_strategy_lists_the_names():
    with pytest.raises(InputError) as err:
        query_text(D, "first")
    message = str(err.value)
    assert "first" in message and all(name in message for name in STRATEGIES)
    assert err.value.field == "query"


@pytest.mark.parametrize("decay", [0, -0.5, 1.5, "fast"])
def test_bad_decay(decay):
    with pytest.raises(InputError, match="decay"):
        query_terms(D, "weighted", decay=decay)
