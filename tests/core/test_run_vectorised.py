"""``Run.from_scores`` and ``Run.as_dict`` work on all topics at once (numpy); they must give
exactly what the tie rule gives topic by topic, written plainly below as the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsr.core.run import Run
from dsr.core.ties import strictly_decreasing

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in nextafter")


F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)


def plain_steps(ranked: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The tie rule's scores, element by element: float32 rounding (clamped to the float32
    range, subnormals and -0.0 to 0.0) and a step to the next float32 below a predecessor
    not exceeded (below 0: the smallest normal; below -F32_MAX: ValueError)."""
    out, prev = [], math.inf
    for doc, score in ranked:
        value = float(np.float32(min(max(score, -F32_MAX), F32_MAX)))
        value = 0.0 if abs(value) < F32_TINY else value
        if value >= prev:
            value = (
                {0.0: -F32_TINY, F32_TINY: 0.0}.get(prev)
                if prev in (0.0, F32_TINY)
                else float(np.nextafter(np.float32(prev), np.float32(-np.inf)))
            )
            if value < -F32_MAX:
                raise ValueError("too many tied scores at the bottom of the float32 range")
        out.append((doc, value))
        prev = value
    return out


def plain_rule(doc_scores: dict[str, float], initial: list[str]) -> list[tuple[str, float]]:
    """The tie rule for one topic: score descending, initial rank (ids not in it after), id."""
    rank = {d: i for i, d in enumerate(initial)}
    return plain_steps(
        [(d, doc_scores[d]) for d in sorted(doc_scores, key=lambda d: (-doc_scores[d], rank.get(d, len(rank)), d))]
    )


def outcome(function, *args):
    """``function(*args)``, or the ValueError it raises (compared by message)."""
    try:
        return function(*args)
    except ValueError as err:
        return f"ValueError: {err}"


SCORES = st.one_of(
    st.sampled_from(
        [
            0.0,
            -0.0,
            1.0,
            1.0 + 1e-12,
            5e-324,
            -1e-320,
            1e-40,
            1e39,
            -1e39,
            3.4028234663852886e38,
            float(np.finfo(np.float32).tiny),
        ]
    ),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-3, 3).map(float),
)


@st.composite
def topics(draw):
    """Topics of 0-30 docs with many ties; the initial order holds all, some or none of them
    (ids outside it are ordered by id, so equal scores there test the last key)."""
    out, initial = {}, {}
    for t in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 30))
        docs = [f"d{draw(st.integers(0, 99)):02d}x{i}" for i in range(n)]
        out[f"q{t}"] = {d: draw(SCORES) for d in docs}
        kept = draw(st.sampled_from(["all", "some", "none", "absent"]))
        if kept != "absent":
            order = draw(st.permutations(docs))
            initial[f"q{t}"] = {"all": order, "some": order[: n // 2], "none": []}[kept]
    return out, initial


@settings(max_examples=300, deadline=None)
@given(topics())
def test_from_scores_and_as_dict_equal_the_plain_rule_topic_by_topic(case):
    scores, initial = case
    expected = {q: outcome(plain_rule, d, initial.get(q, [])) for q, d in scores.items()}
    run = outcome(Run.from_scores, scores, "t", None, initial)
    failed = [e for e in expected.values() if isinstance(e, str)]
    if failed:  # the first topic that cannot be made strictly decreasing stops the run
        assert run == failed[0]
    else:
        assert list(run.rankings) == list(scores) and run.rankings == expected
        assert run.as_dict() == {q: dict(r) for q, r in run.rankings.items()}
    for doc_scores in scores.values():  # no sorting: only the steps
        assert outcome(strictly_decreasing, list(doc_scores.items())) == outcome(plain_steps, list(doc_scores.items()))
    # a Run made by hand, not strictly decreasing, is normalised by as_dict as the rule says
    by_hand = Run({q: list(d.items()) for q, d in scores.items()})
    plain = {q: outcome(plain_steps, list(d.items())) for q, d in scores.items()}
    failed = [e for e in plain.values() if isinstance(e, str)]
    assert outcome(by_hand.as_dict) == (failed[0] if failed else {q: dict(r) for q, r in plain.items()})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_score_that_is_not_finite_is_named(bad):
    with pytest.raises(ValueError, match=r"score of 'b' is not finite"):
        Run.from_scores({"q0": {"x": 1.0}, "q1": {"a": 2.0, "b": bad, "c": 0.5}})
    with pytest.raises(ValueError, match=r"score of 'b' is not finite"):
        Run({"q0": [("x", 1.0)], "q1": [("a", 2.0), ("b", bad)]}).as_dict()


def test_as_dict_trusts_from_scores_only_while_its_rankings_are_the_same_object():
    run = Run.from_scores({"q": {"a": 1.0, "b": 1.0, "c": 0.5}}, initial_order={"q": ["b", "a", "c"]})
    held = run.rankings["q"]
    assert [d for d, _ in held] == ["b", "a", "c"] and held[0][1] > held[1][1] > held[2][1]
    assert run.as_dict() == {"q": dict(held)}
    run.rankings = {"q": [("x", 2.0), ("y", 2.0)]}  # replaced: normalised again
    assert run.as_dict() == {"q": {"x": 2.0, "y": float(np.nextafter(np.float32(2.0), np.float32(0)))}}
