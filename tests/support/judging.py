"""Shared set-up for the judging tests: campaigns on real pools, simulated assessors.

The helpers are ``tools/judging_harness.py``'s (the benchmarks use them too); they are
re-exported here for the tests.
"""

from __future__ import annotations

from tools.judging_harness import ASSESSORS, as_pool, assignments, noisy, sample_campaign, simulate, true_grade, truth_of

__all__ = ["ASSESSORS", "as_pool", "assignments", "noisy", "sample_campaign", "simulate", "true_grade", "truth_of"]
