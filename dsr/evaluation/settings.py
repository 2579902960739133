"""The settings of an evaluation: static records whose fields carry their
:class:`~dsr.core.params.Param` (:func:`~dsr.core.params.setting`).

:func:`dsr.evaluate` (:func:`dsr.evaluation.evaluate.evaluate`), ``dsr evaluate`` and
:func:`~dsr.evaluation.experiment.evaluate_runs` take an :class:`EvaluateSettings` whole;
``dsr reproduce`` and :func:`dsr.reproduce` share the split and report parts. Their
defaults, checks and ``--help`` lines come from here (the flags:
``dsr.cli.common.add_param_flags``), so the command line and Python accept and refuse the
same values with the same message (``alpha`` in Python, ``--alpha`` on the command line).
"""

from __future__ import annotations

from dataclasses import dataclass

from dsr.core.params import Settings, setting
from dsr.evaluation import significance as sig
from dsr.evaluation.trec_eval import TrecEvalRules


@dataclass(frozen=True, kw_only=True)
class SplitSettings(Settings):
    """The split protocol: generated splits and the measure tuned on val."""

    n_splits: int = setting(50, "splits to generate when the collection has none (default 50)", low=1, metavar="N")
    seed: int = setting(0, "seed of generated splits and of the randomisation test (default 0)", low=0)
    target: str = setting("nDCG@5", "measure tuned on val (default nDCG@5)", metavar="M")


@dataclass(frozen=True, kw_only=True)
class SignificanceSettings(Settings):
    """Significance against a baseline."""

    test: str = setting("t", "test whose Holm-adjusted p marks the table (default t); JSON has both", choices=("t", "perm"))
    n_resamples: int = setting(
        sig.DEFAULT_RESAMPLES,
        "resamples of the randomisation test (default 10000; 0 skips it; not negative)",
        low=0,
        metavar="N",
        flags=("--permutations",),
    )
    alpha: float = setting(sig.ALPHA, "significance level, between 0 and 1 (default 0.05)", above=0, below=1)


@dataclass(frozen=True, kw_only=True)
class ReportSettings(Settings):
    """How marks are corrected, intervals drawn and comparisons made (``dsr evaluate`` and
    ``dsr reproduce``)."""

    correction: str = setting("holm", "multiple-comparison correction of the marks (default holm)", choices=sig.CORRECTIONS)
    family: str = setting("runs", "p-values corrected together (default runs: per subset and measure)", choices=sig.FAMILIES)
    ci: str = setting(
        "auto",
        "95% interval of each mean: auto (bootstrap for measures in [0, 1], t for "
        "counts; default), bootstrap over topics with --seed, or t (clipped to [0, 1])",
        choices=sig.INTERVALS,
    )
    all_pairs: bool = setting(False, "test every pair of systems and show groups of systems that are not significantly different")
    primary: str | None = setting(
        None,
        "the measure comparisons, legends and the main figure are on (default: nDCG@5 when "
        "measured, else the first of --measures)",
        metavar="M",
    )


#: ``protocol``'s values: every dialogue once, or the val/test splits
PROTOCOLS = ("official", "all")


@dataclass(frozen=True, kw_only=True)
class EvaluateSettings(TrecEvalRules, ReportSettings, SignificanceSettings, SplitSettings):
    """Every setting of an evaluation (``dsr.evaluate``, ``dsr evaluate``), each checked when
    made: an InputError naming the field (``alpha``) and what it accepts. The rules between
    them (a protocol and its splits, trec_eval's ``-l`` and the measures) are checked by
    :func:`dsr.evaluation.evaluate.evaluate`, once for both doors."""

    measures: tuple[str, ...] | None = setting(
        None,
        "ir_measures strings, space or comma separated (default: RR nDCG@1 nDCG@3 nDCG@5 nDCG@10 P@1 P@5 AP R@10)",
        metavar="M",
    )
    subsets: tuple[str, ...] | None = setting(
        None,
        "only this subset (repeatable; 'all' for every dialogue; default: all and each of the collection's subsets)",
        metavar="S",
        flags=("--subset",),
        repeated=True,
    )
    protocol: str | None = setting(
        None, "official (val/test splits) or all (every dialogue once); default: see below", choices=PROTOCOLS
    )
    splits: str | None = setting(None, 'val/test split file (JSON lines {"val": [...], "test": [...]})', metavar="FILE")
    baseline: str | None = setting(None, "run (name or path) or family tested against", metavar="RUN")


#: every field of :class:`EvaluateSettings` as a Param
EVALUATE_PARAMS = EvaluateSettings.params()
SPLIT_PARAMS = SplitSettings.params()
TEST_PARAMS = SignificanceSettings.params()
REPORT_PARAMS = ReportSettings.params()
