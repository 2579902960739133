"""Shared set-up for the judging tests: campaigns on real pools, simulated assessors.

The helpers are ``tools/judging_harness.py``'s (the benchmarks use them too); they are
re-exported here for the tests. The fixture ``served_campaign`` is registered for the whole
suite by tests/conftest.py (``pytest_plugins``).
"""

from __future__ import annotations

import pytest

from tests.support.board import LiveServer, make_board
from tests.support.tiers import slow_fixture
from tools.judging_harness import (
    ASSESSORS,
    SCRIPTS,
    as_pool,
    assignments,
    by_position,
    by_size,
    noisy,
    sample_campaign,
    shortcut_campaign,
    simulate,
    title_and_overlap,
    title_matcher,
    true_grade,
    truth_of,
    word_overlap,
)

__all__ = [
    "served_campaign",
    "ASSESSORS",
    "SCRIPTS",
    "as_pool",
    "assignments",
    "by_position",
    "by_size",
    "noisy",
    "sample_campaign",
    "shortcut_campaign",
    "simulate",
    "title_and_overlap",
    "title_matcher",
    "true_grade",
    "truth_of",
    "word_overlap",
]


@pytest.fixture
@slow_fixture
def served_campaign(tmp_path):
    """Campaign ``s1`` (:func:`sample_campaign`) on a board in tmp_path, under a real uvicorn
    (:class:`tests.support.board.LiveServer`): (server, judging, {assessor: token})."""
    from dsr.judging.campaigns import Judging

    board = make_board(f"sqlite:///{tmp_path / 'board.sqlite'}", tmp_path)
    judging = Judging(board.engine)
    _, tokens = sample_campaign(judging)
    with LiveServer(board) as server:
        yield server, judging, tokens
    board.close()
