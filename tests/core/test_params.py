"""Parameters declared as data: one resolver, one error shape, help from the declaration."""

from __future__ import annotations

import pytest

from dsr.core.errors import InputError
from dsr.core.params import Param, defaults, grid, help_text, parse_assignments, resolve

DECLARED = (
    Param("query", "all", "str", "query strategy", choices=("last", "all"), grid=("last", "all")),
    Param("k1", 1.2, "float", "term saturation", low=0, grid=(0.9, 1.2)),
    Param("b", 0.75, "float", "length normalisation", low=0, high=1),
    Param("depth", 10, "int", "rerank depth", low=1),
    Param("stem", False, "bool", "stem tokens"),
    Param("delta", None, "float", "BM25+ delta", low=0),
    Param("decay", 0.5, "float", "turn decay", above=0, high=1),
)


def test_defaults_and_overrides_are_checked_and_typed():
    out = resolve({"k1": 2, "query": "last"}, DECLARED, "ranker 'bm25'")
    assert out == {"query": "last", "k1": 2, "b": 0.75, "depth": 10, "stem": False, "delta": None, "decay": 0.5}
    assert resolve({"depth": 3.0}, DECLARED, "x")["depth"] == 3
    assert defaults(DECLARED)["b"] == 0.75
    assert grid(DECLARED) == {"query": ["last", "all"], "k1": [0.9, 1.2]}


@pytest.mark.parametrize(
    "given, words",
    [
        ({"k2": 1}, "unknown parameter(s) k2 for ranker 'bm25'; known: query, k1"),
        ({"b": 1.5}, "parameter b of ranker 'bm25' must be a number >= 0 and <= 1, got 1.5"),
        ({"query": "first"}, "must be one of last, all"),
        ({"depth": 2.5}, "must be a whole number >= 1"),
        ({"depth": 0}, "must be a whole number >= 1"),
        ({"stem": 1}, "must be true or false"),
        ({"k1": "high"}, "must be a number >= 0"),
        ({"k1": float("nan")}, "must be a number >= 0"),
        ({"decay": 0}, "must be a number > 0 and <= 1"),
        ({"k1": None}, "must be a number >= 0, got None"),
    ],
)
def test_bad_values_name_the_parameter_and_what_it_accepts(given, words):
    with pytest.raises(InputError) as err:
        resolve(given, DECLARED, "ranker 'bm25'")
    assert words in str(err.value)


def test_optional_parameter_takes_none():
    assert resolve({"delta": None}, DECLARED, "x")["delta"] is None
    assert resolve({"delta": 0.5}, DECLARED, "x")["delta"] == 0.5


def test_parse_assignments_types_values():
    assert parse_assignments(["k1=1.2", "depth=3", "stem=true", "delta=none", "query=title+all", "text=title: body"]) == {
        "k1": 1.2,
        "depth": 3,
        "stem": True,
        "delta": None,
        "query": "title+all",
        "text": "title: body",
    }
    with pytest.raises(InputError, match="expected NAME=VALUE"):
        parse_assignments(["k1"])


def test_help_text_lists_every_parameter_with_default_and_grid():
    text = help_text(DECLARED)
    assert "k1 (default 1.2): term saturation; a number >= 0; tuned over 0.9, 1.2" in text
    assert len(text.splitlines()) == len(DECLARED)


def test_a_settings_record_is_made_by_keyword_with_defaults_and_checked_when_made():
    import dataclasses

    from dsr.judging.quality import CAMPAIGN_PARAMS, Settings

    assert [f.name for f in dataclasses.fields(Settings)] == [p.name for p in CAMPAIGN_PARAMS]
    made = Settings(honeypot_threshold=0.6, min_honeypots=5)
    assert (made.k, made.honeypot_threshold, made.min_honeypots, made.description) == (3, 0.6, 5, "")
    with pytest.raises(TypeError):
        Settings(3, 10)  # by keyword only
    for name, value in (("honeypot_threshold", 1.5), ("min_honeypots", -1), ("k", 21), ("chunk", 2.5)):
        with pytest.raises(InputError) as raised:
            Settings(**{name: value})
        assert raised.value.field == name and "a judging campaign" in str(raised.value)
    assert Settings(k=3.0).k == 3 and isinstance(Settings(k=3.0).k, int)  # a whole float narrowed
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.k = 4


def test_a_settings_record_reads_its_params_from_its_fields_and_checks_them():
    import dataclasses

    from dsr.core.params import Settings, setting

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Part(Settings):
        n: int = setting(2, "how many", low=1, metavar="N")
        rate: float | None = setting(None, "a rate", above=0, below=1)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Whole(Part):
        WHAT = "a test"
        names: tuple[str, ...] | None = setting(None, "names", choices=("a", "b"), flags=("--name",), repeated=True)
        fast: bool = setting(False, "go fast")

    declared = {p.name: p for p in Whole.params()}
    assert list(declared) == ["n", "rate", "names", "fast"]
    assert (declared["n"].kind, declared["rate"].kind, declared["rate"].optional) == ("int", "float", True)
    assert declared["names"].many and declared["names"].flags == ("--name",) and declared["fast"].kind == "bool"
    made = Whole(n=3.0, names=["a"])
    assert made.n == 3 and isinstance(made.n, int) and made.names == ("a",)  # checked and narrowed
    assert made.values() == {"n": 3, "rate": None, "names": ("a",), "fast": False}
    for name, value in (("n", 0), ("rate", 1.0), ("names", ["c"]), ("names", 3), ("fast", "yes")):
        with pytest.raises(InputError) as raised:
            Whole(**{name: value})
        assert raised.value.field == name and "of a test" in str(raised.value)
    assert Whole.of(made, {"rate": 0.5}) == dataclasses.replace(made, rate=0.5)
    with pytest.raises(InputError, match=r"unknown setting.*rte"):
        Whole.of(None, {"rte": 0.5})
    with pytest.raises(TypeError):
        Whole(3)  # by keyword only
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.n = 4  # type: ignore[misc]
