"""The settings of an evaluation, declared once as :class:`~dsr.core.params.Param`\\ s.

``dsr.evaluate(...)``, :func:`dsr.evaluation.experiment.evaluate_runs` and ``dsr evaluate``
take these; ``dsr reproduce`` and :func:`dsr.reproduce` share the split and report ones.
Their defaults, checks and ``--help`` lines come from here (the flags:
``dsr.cli.common.add_param_flags``), so the command line and Python accept and refuse the
same values with the same message (``alpha`` in Python, ``--alpha`` on the command line).
"""

from __future__ import annotations

from dsr.core.params import Param, settings_type
from dsr.evaluation import significance as sig

#: the split protocol: generated splits and the measure tuned on val
SPLIT_PARAMS = (
    Param("n_splits", 50, "int", "splits to generate when the collection has none (default 50)", low=1, metavar="N"),
    Param("seed", 0, "int", "seed of generated splits and of the randomisation test (default 0)", low=0),
    Param("target", "nDCG@5", "str", "measure tuned on val (default nDCG@5)", metavar="M"),
)

#: significance against a baseline
TEST_PARAMS = (
    Param(
        "test",
        "t",
        "str",
        "test whose Holm-adjusted p marks the table (default t); JSON has both",
        choices=("t", "perm"),
    ),
    Param(
        "n_resamples",
        sig.DEFAULT_RESAMPLES,
        "int",
        "resamples of the randomisation test (default 10000; 0 skips it; not negative)",
        low=0,
        metavar="N",
        flags=("--permutations",),
    ),
    Param("alpha", sig.ALPHA, "float", "significance level, between 0 and 1 (default 0.05)", above=0, below=1),
)

#: how marks are corrected and intervals drawn (``dsr evaluate`` and ``dsr reproduce``)
REPORT_PARAMS = (
    Param(
        "correction",
        "holm",
        "str",
        "multiple-comparison correction of the marks (default holm)",
        choices=sig.CORRECTIONS,
    ),
    Param(
        "family",
        "runs",
        "str",
        "p-values corrected together (default runs: per subset and measure)",
        choices=sig.FAMILIES,
    ),
    Param(
        "ci",
        "auto",
        "str",
        "95% interval of each mean: auto (bootstrap for measures in [0, 1], t for "
        "counts; default), bootstrap over topics with --seed, or t (clipped to [0, 1])",
        choices=sig.INTERVALS,
    ),
    Param(
        "all_pairs",
        False,
        "bool",
        "test every pair of systems and show groups of systems that are not significantly different",
    ),
)

#: every setting of ``dsr.evaluate`` / ``dsr evaluate`` that has a value of its own
EVALUATE_PARAMS = SPLIT_PARAMS + TEST_PARAMS + REPORT_PARAMS

EvaluateSettings = settings_type(
    "EvaluateSettings",
    EVALUATE_PARAMS,
    "",
    "The settings of an evaluation (``EVALUATE_PARAMS``), each checked when made: an "
    "InputError naming the parameter (``alpha``) and what it accepts.",
)
