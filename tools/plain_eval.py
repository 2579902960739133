"""An independent, plain evaluator: trec_eval's definitions written out by hand.

The reference the package's evaluator is checked against (by the tests, and by
``tools/crosscheck_eval.py`` on real runs), so it shares no code with it.
"""

from __future__ import annotations

import math


def plain_measure(measure: str, ranked: list[str], labels: dict[str, int]) -> float:
    """trec_eval's definitions written out plainly: ``measure`` (RR, AP, P@k, R@k, nDCG@k
    with gain = label and a log2(rank + 1) discount) of the ranking ``ranked``."""
    gains = [labels.get(d, 0) for d in ranked]
    n_rel = sum(1 for g in labels.values() if g >= 1)
    if measure == "RR":
        return next((1 / (i + 1) for i, g in enumerate(gains) if g >= 1), 0.0)
    if measure == "AP":
        hits, total = 0, 0.0
        for i, g in enumerate(gains):
            if g >= 1:
                hits += 1
                total += hits / (i + 1)
        return total / n_rel if n_rel else 0.0
    name, k = measure.split("@")
    k = int(k)
    if name == "P":
        return sum(1 for g in gains[:k] if g >= 1) / k
    if name == "R":
        return sum(1 for g in gains[:k] if g >= 1) / n_rel if n_rel else 0.0
    if name == "nDCG":  # trec_eval: gain = label, discount log2(rank + 1)
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k]))
        ideal = sorted(labels.values(), reverse=True)[:k]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        return dcg / idcg if idcg > 0 else 0.0
    raise AssertionError(measure)
