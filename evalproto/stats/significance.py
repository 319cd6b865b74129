"""Significance beyond one baseline: the paired t-test of segment scores, the pairs a
comparison tests, and clusters of systems that are not significantly different.

The resampling tests themselves (paired bootstrap, approximate randomization) are in
evalproto.stats.resampling; this module adds what a comparison of N systems needs.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import UsageProblem

SIGNIFICANCE_LEVEL = 0.05
"""p <= this is significant, in every report."""

CLUSTER_RULE = (
    "Systems are ranked by score. A line is drawn between two neighbours in the ranking "
    "when every system above it scores better than, and is significantly different "
    f"(paired bootstrap, p <= {SIGNIFICANCE_LEVEL}) from, every system below it; the "
    "systems between two lines form a cluster, whose members are not told apart by the "
    "test. (WMT's rule for its rankings, with the paired bootstrap in place of the "
    "Wilcoxon rank-sum test.)")


def pairs_of(count: int, all_pairs: bool) -> List[Tuple[int, int]]:
    """The (i, j) pairs of systems to test: every pair, or the first against each other."""
    if all_pairs:
        return [(i, j) for i in range(count) for j in range(i + 1, count)]
    return [(0, j) for j in range(1, count)]


def ttest_refusal(metric: Any, label: str) -> Optional[str]:
    """Why the paired t-test does not apply to a metric, or None if it does: the test
    compares mean segment scores, so it tests the corpus score only of a metric whose
    corpus score is that mean (Evaluator.mean_of_rows)."""
    mean = getattr(metric, "mean_of_rows", None)
    if mean:
        return None
    if mean is None:
        return (f"{label}: the paired t-test needs a metric whose corpus score is the mean "
                f"of its segment scores, and this one does not declare that it is (an "
                f"external evaluator cannot); test with the paired bootstrap or approximate "
                f"randomization instead")
    return (f"{label}: the paired t-test compares mean segment scores, but this metric's "
            f"corpus score is not the mean of its segment scores (it is computed from "
            f"summed statistics), so the test would not test it; test with the paired "
            f"bootstrap or approximate randomization instead")


def check_ttest(metric: Any, label: str) -> None:
    """Refuse the paired t-test for a metric it does not apply to, saying why."""
    reason = ttest_refusal(metric, label)
    if reason is not None:
        raise UsageProblem(reason)


def paired_ttest(baseline: np.ndarray, system: np.ndarray) -> float:
    """The two-sided p-value of the paired t-test of two systems' segment scores, as
    `scipy.stats.ttest_rel` computes it (what comet-compare reports): t is the mean
    difference over its standard error, with n - 1 degrees of freedom. NaN when it is
    undefined (fewer than two segments, or no difference at all), as scipy's."""
    from scipy.special import stdtr  # scipy is a dependency; its special functions load fast

    differences = np.asarray(system, dtype=np.float64) - np.asarray(baseline, dtype=np.float64)
    n = len(differences)
    if n < 2:
        return math.nan
    mean = differences.mean()
    variance = np.mean((differences - mean) ** 2) * (n / (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.divide(mean, np.sqrt(variance / n))
    return float(2 * stdtr(n - 1, -np.abs(t)))


def clusters(scores: Sequence[float], p_values: np.ndarray, higher_is_better: bool,
             level: float = SIGNIFICANCE_LEVEL) -> List[List[int]]:
    """Systems (as indices) in clusters by `CLUSTER_RULE`, best cluster first, each in
    ranking order; ties in score keep the given order. `p_values[i, j]` is the p-value
    of the pair; NaN counts as not significant, and so do equal scores (sacrebleu's
    p-value of two identical systems is 1 / (N + 1), "significant")."""
    order = sorted(range(len(scores)),
                   key=lambda i: -scores[i] if higher_is_better else scores[i])
    groups: List[List[int]] = [[]]
    for position, system in enumerate(order):
        groups[-1].append(system)
        above, below = order[:position + 1], order[position + 1:]
        if below and all(p_values[i, j] <= level and scores[i] != scores[j]
                         for i in above for j in below):
            groups.append([])
    return groups


def rank_ranges(ordered: Sequence[Sequence[Any]]) -> Dict[Any, Tuple[int, int]]:
    """Each system's rank range (first, last; 1 is the best) from clusters in ranking
    order, as WMT's tables give it: a system ranks anywhere among its cluster's places,
    since the test tells none of its members apart."""
    ranges: Dict[Any, Tuple[int, int]] = {}
    first = 1
    for cluster in ordered:
        for system in cluster:
            ranges[system] = (first, first + len(cluster) - 1)
        first += len(cluster)
    return ranges
