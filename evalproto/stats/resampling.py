"""Bootstrap confidence intervals and paired significance tests over stats rows.

Every test uses sacrebleu's random draws, so for the same seed and sample count the
figures are sacrebleu's: `default_rng(seed).choice(n, (N, n))` picks the segments of
N bootstrap resamples, and `default_rng(seed).integers(2, (N, n), dtype=bool)` the
swaps of N approximate-randomization trials. What differs is the arithmetic: a
resampled sum is `counts @ rows` in float64, computed for a chunk of resamples at a
time, so memory grows with chunk × n instead of sacrebleu's float32 N × n × d tensor.
numpy continues a stream exactly across chunked calls, provided each chunk of boolean
draws holds a multiple of 32 values, which is why chunks are multiples of 32 rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import EvalprotoError

DEFAULT_SEED = 12345
_VALUES_PER_CHUNK = 2 ** 18  # small enough to stay in cache: faster, and little memory

ScoreMany = Callable[[np.ndarray], np.ndarray]
"""Scores of a (k, d) array of summed statistics, as a (k,) array."""


def column_sums(rows: np.ndarray) -> np.ndarray:
    """The sum of each column, added row after row, as sacrebleu adds segment statistics
    (`sum_of_lists`): for fractional statistics (TER's average reference lengths) numpy's
    pairwise summation of a contiguous column would differ in the last bits. numpy
    reduces the first axis of a C-ordered array of two or more columns row by row;
    tests/test_statistics.py checks that it still does."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    if rows.ndim == 2 and rows.shape[1] == 1:
        return column_sums(np.hstack([rows, np.zeros_like(rows)]))[:1]
    return rows.sum(axis=0)


def checked_total(rows: np.ndarray, stat_names: Sequence[str], what: str) -> np.ndarray:
    """`column_sums`, refusing a sum that overflows a double (rows of 1e308 each): no
    score can be computed from it, and it must not become one."""
    with np.errstate(over="ignore"):  # an overflow is reported below, as an error
        total = column_sums(rows)
    overflowed = np.flatnonzero(~np.isfinite(total))
    if len(overflowed):
        name = stat_names[overflowed[0]] if overflowed[0] < len(stat_names) else "a statistic"
        raise EvalprotoError(f"{what}: the statistic {name} adds up beyond the largest "
                             f"number a double holds; no score can be computed")
    return total


def _chunks(samples: int, n: int) -> Iterator[int]:
    """Sizes of successive chunks of resamples: multiples of 32 rows, about 256k values."""
    rows = max(32, _VALUES_PER_CHUNK // max(n, 1) // 32 * 32)
    for start in range(0, samples, rows):
        yield min(rows, samples - start)


def bootstrap_counts(n: int, samples: int, seed: Optional[int]) -> Iterator[np.ndarray]:
    """(k, n) arrays: how often each segment is drawn in each of the next k resamples."""
    rng = np.random.default_rng(seed)
    for k in _chunks(samples, n):
        picks = rng.choice(n, size=(k, n), replace=True)
        picks += np.arange(k)[:, None] * n
        yield np.bincount(picks.ravel(), minlength=k * n).reshape(k, n)


def bootstrap_scores(rows: np.ndarray, score_many: ScoreMany, samples: int,
                     seed: Optional[int]) -> np.ndarray:
    """The score of each of `samples` bootstrap resamples of the rows."""
    return np.concatenate([score_many(counts @ rows)
                           for counts in bootstrap_counts(len(rows), samples, seed)])


def estimate_ci(scores: np.ndarray) -> Tuple[float, float]:
    """Mean and half-width of the 95% interval, as sacrebleu computes them."""
    ordered = np.sort(scores)
    lower = len(ordered) // 40
    upper = len(ordered) - lower - 1
    return float(ordered.mean()), float(0.5 * (ordered[upper] - ordered[lower]))


def p_value(sample_statistics: np.ndarray, observed: float, inclusive: bool = False) -> float:
    """The share of samples above the observed statistic, with add-one smoothing.
    sacrebleu counts samples strictly above it; `inclusive` counts ties too, the usual
    Monte Carlo estimate, which gives identical systems p = 1 instead of 1/(N+1)."""
    above = sample_statistics >= observed if inclusive else sample_statistics > observed
    return (int(np.sum(above)) + 1) / (len(sample_statistics) + 1)


@dataclass
class PairedResult:
    p_value: float
    mean: Optional[float] = None
    ci: Optional[float] = None


def paired_bootstrap(baseline: np.ndarray, system: np.ndarray, score_many: ScoreMany,
                     samples: int, seed: Optional[int], inclusive: bool = False) -> PairedResult:
    """Paired bootstrap resampling (Koehn 2004), as sacrebleu's --paired-bs: both
    systems are scored on the same resamples; the p-value is that of the centred
    absolute score differences exceeding the observed difference."""
    baseline_scores, system_scores = [], []
    for counts in bootstrap_counts(len(baseline), samples, seed):
        baseline_scores.append(score_many(counts @ baseline))
        system_scores.append(score_many(counts @ system))
    differences = np.abs(np.concatenate(system_scores) - np.concatenate(baseline_scores))
    observed = abs(_score(score_many, baseline) - _score(score_many, system))
    mean, ci = estimate_ci(np.concatenate(system_scores))
    return PairedResult(p_value(differences - differences.mean(), observed, inclusive), mean, ci)


def approximate_randomization(baseline: np.ndarray, system: np.ndarray,
                              score_many: ScoreMany, trials: int, seed: Optional[int],
                              inclusive: bool = False) -> PairedResult:
    """Paired approximate randomization (Riezler and Maxwell 2005), as sacrebleu's
    --paired-ar: each trial swaps each segment's rows between the systems with
    probability 1/2."""
    rng = np.random.default_rng(seed)
    differences = []
    for k in _chunks(trials, len(baseline)):
        swap = rng.integers(2, size=(k, len(baseline)), dtype=bool)
        keep = (~swap).astype(np.float64)
        swapped = swap.astype(np.float64)
        first = score_many(swapped @ baseline + keep @ system)
        second = score_many(keep @ baseline + swapped @ system)
        differences.append(np.abs(first - second))
    observed = abs(_score(score_many, baseline) - _score(score_many, system))
    return PairedResult(p_value(np.concatenate(differences), observed, inclusive))


def _score(score_many: ScoreMany, rows: np.ndarray) -> float:
    return float(score_many(column_sums(rows)[None, :])[0])
