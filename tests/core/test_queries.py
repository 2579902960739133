"""Query strategies on a hand-built dialogue."""

from __future__ import annotations

import pytest

from dsr.core.data import Candidate, Dialogue, Turn
from dsr.core.errors import InputError
from dsr.core.queries import MIN_WEIGHT, STRATEGIES, query_terms, query_text


def dialogue(*turns: str, title: str = "Cats or dogs") -> Dialogue:
    return Dialogue(
        id="d1",
        title=title,
        context=[Turn(f"a{i}", f"user{i}", body) for i, body in enumerate(turns)],
        target=Turn("x", "next", "a reply"),
        candidates=[Candidate("c1", "Cat", "Cats purr.", None, 1)],
    )


D = dialogue("I like cats.", "Dogs are better than cats!", "Cats purr softly.")


def test_strategy_names():
    assert STRATEGIES == ("last", "last2", "all", "title+all", "weighted", "title+recent")


def test_plain_strategies_text():
    assert query_text(D, "last") == "Cats purr softly."
    assert query_text(D, "last2") == "Dogs are better than cats!\nCats purr softly."
    assert query_text(D, "all") == "I like cats.\nDogs are better than cats!\nCats purr softly."
    assert query_text(D, "title+all") == ("Cats or dogs\nI like cats.\nDogs are better than cats!\nCats purr softly.")


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
    assert 0.5**4 >= MIN_WEIGHT > 0.5**5
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


# --- title+recent and token budgets -------------------------------------------

LONG = dialogue("one two", "three four five", "six seven", "eight", "nine ten eleven", "twelve")


def words(text: str) -> int:
    """A stand-in word-piece counter: whitespace words."""
    return len(text.split())


def test_title_recent_is_title_then_last_four_turns_newest_first():
    assert query_text(LONG, "title+recent") == "Cats or dogs\ntwelve\nnine ten eleven\neight\nsix seven"
    # BM25 sees the same words, unweighted
    assert query_terms(LONG, "title+recent") == {w: 1 for w in "cats or dogs twelve nine ten eleven eight six seven".split()}


def test_budget_drops_the_oldest_turns_and_keeps_title_and_latest():
    # 15 words in all: title (3) + 6 turns (12 words)
    assert words(query_text(LONG, "title+all")) == 15
    fitted = query_text(LONG, "title+all", budget=9, count=words)
    assert fitted == "Cats or dogs\neight\nnine ten eleven\ntwelve"  # oldest three turns dropped
    assert query_text(LONG, "all", budget=4, count=words) == "nine ten eleven\ntwelve"
    assert query_text(LONG, "title+recent", budget=7, count=words) == "Cats or dogs\ntwelve\nnine ten eleven"
    assert query_text(LONG, "weighted", budget=4, count=words) == "twelve\nnine ten eleven"
    assert query_text(LONG, "weighted", budget=3, count=words) == "twelve"
    # a budget below title + latest turn keeps both (the encoder truncates the rest)
    assert query_text(LONG, "title+all", budget=1, count=words) == "Cats or dogs\ntwelve"
    assert query_text(LONG, "last", budget=0, count=words) == "twelve"
    # a budget that fits changes nothing
    for q in STRATEGIES:
        assert query_text(LONG, q, budget=1000, count=words) == query_text(LONG, q)


def test_model_budget_counts_word_pieces_of_the_model(tmp_path):
    from dsr.core.queries import model_query_budget
    from tests.support.tiny_bert import make_tiny_bert

    folder = make_tiny_bert(tmp_path / "m", ["cats or dogs twelve eleven"], max_position_embeddings=64)
    budget, count = model_query_budget(str(folder), max_length=20)
    assert budget == 18  # [CLS] and [SEP] left out
    assert count("cats or dogs") == 3 and count("twelve eleven") == 2
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 12}')
    assert model_query_budget(str(folder))[0] == 10


def test_the_query_budget_counts_word_pieces_as_the_hugging_face_tokenizer_does_without_importing_it():
    """model_query_budget counts with the Rust tokenizer of tokenizer.json (transformers is not
    imported on the warm path of dsr reproduce): the same counts as the transformers tokenizer on
    every sample text and query, odd texts included."""
    from pathlib import Path

    from transformers import AutoTokenizer

    from dsr.collections import load_collection
    from dsr.core.models import resolve_model
    from dsr.core.queries import model_query_budget, query_text, rust_token_counter, token_counter

    model = resolve_model("all-MiniLM-L6-v2")
    budget, count = model_query_budget(model.path)
    assert budget == 256 - 2  # max_seq_length of sentence_bert_config.json, less [CLS] and [SEP]
    reference = token_counter(AutoTokenizer.from_pretrained(model.path, local_files_only=True))
    texts = ["", "Ünïcödé café naïve — “quotes” 😀", "word " * 2000]
    for dialogue in load_collection("sample"):
        texts += [t.body for t in dialogue.context] + [c.body for c in dialogue.candidates]
        texts += [query_text(dialogue, s) for s in ("all", "last", "weighted")]
    assert [count(t) for t in texts] == [reference(t) for t in texts]
    assert rust_token_counter(Path(model.path) / "tokenizer.json")("word " * 2000) == 2000  # never truncated
