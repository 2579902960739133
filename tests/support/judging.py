"""Shared set-up for the judging tests: campaigns on real pools, simulated assessors.

The helpers are ``tools/judging_harness.py``'s (the benchmarks use them too); they are
re-exported here for the tests.
"""

from __future__ import annotations

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
