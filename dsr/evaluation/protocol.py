"""The split protocol: tune on val, report the test halves' mean and sd over N splits.

The SIGIR 2022 protocol: 50 random val/test splits (423/423) of the 846
dialogues. For each split, each ranker family picks the configuration with the
best *target* measure (default nDCG@5) on the val half; that configuration's
value on the test half is the split's result; the report is the mean and the
standard deviation over the 50 test halves.

Rules a reader of a paper needs:

* **Ties between configurations** on val (equal after rounding to 12 decimals,
  so float summation order cannot decide) go to the configuration given
  first (grid order; on the command line, the order of the runs).
* **Standard deviation** is the *sample* sd over splits (``ddof=1``).
* **Subsets inside splits**: the configuration is chosen on the whole val half
  (one system, as it would be deployed); its test-half values are then reported
  for all dialogues and for each subset's dialogues within the test half.
* **Untuned runs** are reported the same way: their mean and sd over the test
  halves (no choice to make).
* Splits come from ``--splits FILE``, else the collection's own (a source that ships them),
  else a seeded generator (:func:`generate_splits`: N splits, val gets
  ``floor(n/2)`` dialogues, the seed is recorded in every report).

Per-topic values are computed once per configuration; a split is a row of a
0/1 weight matrix, so the means of all splits are one matrix product.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dsr.core.errors import InputError
from dsr.core.splits import check_splits, read_split_file

if TYPE_CHECKING:
    from dsr.core.data import Collection

#: decimals to which val means are rounded before choosing (see module docstring)
TIE_DECIMALS = 12
SD_DDOF = 1


@dataclass
class Splits:
    """Val/test splits and where they came from (recorded in every report)."""

    pairs: list[tuple[list[str], list[str]]]
    source: str  # "file", "collection" or "generated"
    path: str | None = None
    seed: int | None = None

    def __len__(self) -> int:
        return len(self.pairs)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "n": len(self.pairs)}
        if self.path is not None:
            out["path"] = self.path
        if self.seed is not None:
            out["seed"] = self.seed
        if self.pairs:
            out["val_size"] = sorted({len(v) for v, _ in self.pairs})
            out["test_size"] = sorted({len(t) for _, t in self.pairs})
        return out


def config_name(params: Mapping[str, Any]) -> str:
    """A configuration's name in reports and run files: ``k1=0.9,b=0.4`` (``default`` when empty)."""
    return ",".join(f"{k}={v}" for k, v in params.items()) or "default"


def grid_configs(grid: Mapping[str, Sequence[Any]], first: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Configuration name -> parameters over the product of ``grid``: the grid's keys in order,
    each one's values in order, so the order is the tie rule's (the first configuration wins
    ties on val). ``first`` (e.g. a ranker's ``DEFAULTS``; only the grid's keys are read) goes
    first, wherever the product has it."""
    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]
    if first is not None:
        chosen = {k: first[k] for k in keys}
        points = [chosen, *(p for p in points if p != chosen)]
    return {config_name(p): p for p in points}


def generate_splits(ids: Sequence[str], n: int = 50, seed: int = 0) -> Splits:
    """``n`` random val/test halves of ``ids`` (val gets floor(len/2)), reproducible from ``seed``."""
    if n < 1:
        raise InputError(f"the number of splits must be at least 1, got {n}", field="n_splits")
    ids = list(ids)
    if len(ids) < 2:
        raise InputError(f"cannot split {len(ids)} dialogue(s) into val and test halves")
    rng = np.random.default_rng(seed)
    half = len(ids) // 2
    pairs = []
    for _ in range(n):
        order = rng.permutation(len(ids))
        pairs.append(([ids[i] for i in order[:half]], [ids[i] for i in order[half:]]))
    return Splits(pairs, "generated", seed=seed)


def read_splits(path: str | Path, ids: Sequence[str] | None = None) -> Splits:
    """A split file: JSON Lines, one ``{"val": [ids], "test": [ids]}`` per split.

    With ``ids`` (the collection's dialogue ids), every id must be one of them.
    The reader and the partition check are :mod:`dsr.core.splits`', so a split
    file is read the same way by the loaders and the evaluator.
    """

    path = Path(path)
    pairs = [(list(v), list(t)) for v, t in read_split_file(path)]
    if ids is not None:
        check_splits(pairs, ids, path)
    return Splits(pairs, "file", path=str(path))


def resolve_splits(collection: Collection, path: str | Path | None = None, n: int = 50, seed: int = 0) -> Splits:
    """``path`` if given, else the collection's own splits, else ``n`` generated with ``seed``."""
    if path is not None:
        return read_splits(path, collection.ids)
    if collection.splits:
        return Splits([(list(v), list(t)) for v, t in collection.splits], "collection")
    return generate_splits(collection.ids, n, seed)


@dataclass
class SplitIndex:
    """Splits as 0/1 matrices over the topics (one row per split, per half and subset).

    ``mask(half, subset)[0] @ values`` sums every split's topics at once;
    ``means`` divides by the counts.
    """

    splits: Splits
    topics: list[str]
    subsets: dict[str, np.ndarray]  # subset -> topic indices
    member: dict[str, np.ndarray] = field(init=False)  # half -> (n_splits, n_topics) bool

    def __post_init__(self) -> None:
        position = {t: i for i, t in enumerate(self.topics)}
        self.member = {}
        for h, half in enumerate(("val", "test")):
            matrix = np.zeros((len(self.splits), len(self.topics)), dtype=bool)
            for s, pair in enumerate(self.splits.pairs):
                try:
                    matrix[s, [position[t] for t in pair[h]]] = True
                except KeyError as err:
                    raise InputError(
                        f"dialogue id {err.args[0]!r} is not in the collection", path=self.splits.path, line=s + 1, field=half
                    ) from None
            self.member[half] = matrix
        self._masks: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def mask(self, half: str, subset: str = "all") -> tuple[np.ndarray, np.ndarray]:
        """(n_splits, n_topics) 0/1 matrix of the subset's topics in each split's half, and the counts."""
        key = (half, subset)
        if key not in self._masks:
            in_subset = np.zeros(len(self.topics), dtype=bool)
            in_subset[self.subsets[subset]] = True
            chosen = (self.member[half] & in_subset).astype(float)
            self._masks[key] = (chosen, chosen.sum(axis=1))
        return self._masks[key]

    def means(self, values: np.ndarray, half: str = "test", subset: str = "all") -> np.ndarray:
        """(n_splits, n_measures): each split's mean of ``values`` (topics x measures).

        Sum, then divide by the count (as trec_eval averages); a split whose
        half holds no topic of the subset has no mean (NaN).
        """
        chosen, counts = self.mask(half, subset)
        return _divide(chosen @ values, counts)

    def test_counts(self) -> np.ndarray:
        """How many splits hold each topic in their test half."""
        return self.member["test"].sum(axis=0)


def choose(val_target: np.ndarray) -> np.ndarray:
    """Index of the chosen configuration per split from (n_splits, n_configs) val means.

    The highest value after rounding to TIE_DECIMALS; ties go to the first.
    """
    return np.argmax(np.round(val_target, TIE_DECIMALS), axis=1)


@dataclass
class Tuned:
    """One ranker family tuned per split."""

    configs: list[str]
    chosen: np.ndarray  # (n_splits,) index into configs
    val_target: np.ndarray  # (n_splits, n_configs) val mean of the target
    test: dict[str, np.ndarray]  # subset -> (n_splits, n_measures)
    per_topic: np.ndarray  # (n_topics, n_measures), see tune()

    @property
    def chosen_names(self) -> list[str]:
        return [self.configs[i] for i in self.chosen]

    def choice_counts(self) -> dict[str, int]:
        counts = np.bincount(self.chosen, minlength=len(self.configs))
        return {c: int(k) for c, k in zip(self.configs, counts) if k}


def tune(index: SplitIndex, configs: list[str], values: np.ndarray, target: int) -> Tuned:
    """Tune over configurations with per-topic ``values`` (n_configs, n_topics, n_measures).

    ``per_topic`` holds, for each topic, the mean over the splits whose test
    half holds it of the chosen configuration's value on it: every value is
    out of sample (chosen without that topic), which is what significance
    tests pair by topic. A topic never in a test half gets NaN.
    """
    if values.shape[0] != len(configs):
        raise ValueError("one value matrix per configuration")
    val_target = index.means(values[:, :, target].T, "val")  # (n_splits, n_configs)
    chosen = choose(val_target)
    test = {}
    for subset in index.subsets:
        mask, counts = index.mask("test", subset)  # (n_splits, n_topics)
        # every configuration's test sums, then each split's chosen one, then the mean
        sums = np.einsum("st,ctm->scm", mask, values)
        test[subset] = _divide(sums[np.arange(len(chosen)), chosen], counts)
    member = index.member["test"].astype(float)  # (n_splits, n_topics)
    per_config = np.stack([member[chosen == c].sum(axis=0) for c in range(len(configs))])
    counts = member.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_topic = np.einsum("ct,ctm->tm", per_config, values) / counts[:, None]
    per_topic[counts == 0] = np.nan
    return Tuned(list(configs), chosen, val_target, test, per_topic)


def _divide(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = sums / counts[:, None]
    out[counts == 0] = np.nan
    return out


def summarise(split_means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample sd (ddof=1) over splits, per measure; splits without a mean are skipped."""
    split_means = np.asarray(split_means, dtype=float)
    valid = ~np.isnan(split_means)
    n = valid.sum(axis=0)
    filled = np.where(valid, split_means, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / n
        sq = np.where(valid, (split_means - mean) ** 2, 0.0).sum(axis=0)
        sd = np.sqrt(sq / (n - SD_DDOF))
    mean[n == 0] = np.nan
    sd[n <= SD_DDOF] = np.nan
    return mean, sd
