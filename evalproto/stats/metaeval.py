"""Meta-evaluation: how well a metric's scores agree with people's, and whether one
metric agrees significantly better than another, as Google's mt-metrics-eval defines it
(stats.py, tau_optimization.py, pce.py and data.py's CompareMetrics and AssignRanks).

Scores are systems x items tables (numpy arrays): the human table has NaN where people
gave no score, which leaves the cell out, and a metric's table is complete where the
human one has a score. A `Measure` names the statistic and its options; `measure`
gives its value, `perm_both` the PERM-BOTH permutation test between two metrics
(Deutsch et al. 2021) with mt-metrics-eval's early stopping, and `compare_metrics` the
whole comparison: values, the significance matrix, and rank clusters.

The random draws are mt-metrics-eval's, from numpy's legacy stream
(`numpy.random.RandomState(seed)` is `numpy.random.seed(seed)`): the test's binomial
swaps, and the pairs that tie calibration samples, in the same order. So with the same
seed and the same order of systems, a Kendall-style test's p-values are its p-values,
to the bit. Soft pairwise accuracy's permutations come from `default_rng(4)`, as in
pce.py, so it is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import UsageProblem
from evalproto.stats import correlation
from evalproto.stats.correlation import AVERAGES, Rows, average, row_values, rows_of

CALIBRATED = {"acc23-opt": "acc23", "tau23-opt": "tau23"}
"""Tie calibration (mt-metrics-eval's KendallWithTiesOpt) of each *23 variant."""

STATISTICS = (*correlation.STATISTICS, *CALIBRATED, "pce")
"""Every statistic by its command-line name."""

PCE_SEED = 4
"""pce.compute_pairwise_p_values' seed: soft pairwise accuracy is deterministic."""

SIGNIFICANCE_LEVEL = 0.05
"""mt-metrics-eval's pval: p <= this separates two rank clusters."""

_CELLS_AT_ONCE = 1 << 22
"""Resampled cells held at once (32 MiB of float64 for each of the two mixes)."""


@dataclass(frozen=True)
class Measure:
    """A statistic and its options, as mt-metrics-eval takes them: `average_by` (none,
    sys, item); `epsilon`, the metric tie threshold of tau23 and acc23; `threshold`,
    WMT's human threshold of kendall-like; `sample_rate`, the share of pairs that tie
    calibration samples; `replace_nans_with_zeros`, a row without a value (a constant
    row's Pearson) averaged as 0 instead of left out; `pce_permutations`."""

    statistic: str = "pearson"
    average_by: str = "none"
    epsilon: float = 0.0
    threshold: float = 25.0
    sample_rate: float = 1.0
    replace_nans_with_zeros: bool = False
    pce_permutations: int = 1000

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise UsageProblem(f"unknown statistic {self.statistic!r}; choose one of "
                               f"{', '.join(STATISTICS)}")
        if self.average_by not in AVERAGES:
            raise UsageProblem(f"`average_by` must be one of {', '.join(AVERAGES)}, not "
                               f"{self.average_by!r}")
        if not (math.isfinite(self.epsilon) and self.epsilon >= 0):
            raise UsageProblem(f"`epsilon` must be a number >= 0, not {self.epsilon!r}")
        if self.epsilon and self.statistic not in ("tau23", "acc23"):
            raise UsageProblem(f"`epsilon` is the tie threshold of tau23 and acc23 (and "
                               f"{', '.join(CALIBRATED)} choose their own), not of "
                               f"{self.statistic}")
        if not (math.isfinite(self.threshold) and self.threshold > 0):
            raise UsageProblem(f"`threshold` must be a number > 0, not {self.threshold!r}")
        if not (0 < self.sample_rate <= 1):
            raise UsageProblem(f"`sample_rate` must be in (0, 1], not {self.sample_rate!r}")
        if self.statistic == "pce" and self.average_by != "none":
            raise UsageProblem("pce is a system-level statistic computed from segment scores, "
                               "with no averaging: `average_by` must be none")
        if self.pce_permutations < 1:
            raise UsageProblem("`pce_permutations` must be >= 1")


@dataclass
class Value:
    """A metric's value under a Measure; `epsilon`, the tie threshold that tie
    calibration chose (None for other statistics)."""

    value: float
    epsilon: Optional[float] = None


def legacy_stream(seed: Optional[int]) -> np.random.RandomState:
    """numpy's legacy random stream, seeded as numpy.random.seed(seed) seeds it (None:
    from the operating system)."""
    return np.random.RandomState(seed)


def measure(human: np.ndarray, metric: np.ndarray, how: Measure,
            random: Optional[np.random.RandomState] = None) -> Value:
    """The value of `how` for a metric's table against the human table. `random`
    draws tie calibration's sampled pairs (sample_rate < 1)."""
    if how.statistic in CALIBRATED:
        calibration = tie_calibration(human, metric, CALIBRATED[how.statistic],
                                      how.average_by, how.sample_rate, random)
        return Value(calibration.value, calibration.epsilon)
    if how.statistic == "pce":
        return Value(soft_pairwise_accuracy(human, metric, how.pce_permutations))
    rows = rows_of(human, how.average_by)
    values, weights = row_values(how.statistic, metric.ravel()[rows.cells], rows,
                                 how.epsilon, how.threshold)
    return Value(float(average(values, weights, how.replace_nans_with_zeros)[0]))


# -- tie calibration --------------------------------------------------------------


@dataclass
class Calibration:
    """Tie calibration's sweep (mt-metrics-eval's TauOptimizationResult): each
    threshold tried and the average row value with metric ties up to it; the best
    (`epsilon`, the smallest threshold that reaches it) and its value."""

    thresholds: np.ndarray
    values: np.ndarray
    epsilon: float
    value: float


_TIE_SCORES = {"acc23": (1, 0, 0, 0, 1), "tau23": (1, -1, -1, -1, 1)}
"""What a pair adds to a row's numerator: concordant, discordant, metric tie only,
human tie only, tie in both."""


def _pairs_of(rows: Rows, begin: int, end: int) -> Tuple[np.ndarray, np.ndarray]:
    """Cell indices (into the rows' cells) of every pair of rows [begin, end), in
    mt-metrics-eval's order: row by row, (i, j) for i < j, i first."""
    firsts, seconds = [], []
    for row in range(begin, end):
        start, length = int(rows.starts[row]), int(rows.lengths[row])
        i, j = np.triu_indices(length, 1)
        firsts.append(i + start)
        seconds.append(j + start)
    if not firsts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(firsts), np.concatenate(seconds)


MOST_PAIRS = 20_000_000
"""The most pairs tie calibration sorts (about 1 GB): more is a usage error that asks for
a sample rate."""


def _sampled_pairs(rows: Rows, sample_rate: float, random: Optional[np.random.RandomState]
                   ) -> Iterator[Tuple[np.ndarray, np.ndarray]]:
    """The pairs that tie calibration looks at, a bounded number at a time: all, or each
    with probability `sample_rate`, drawn as tau_optimization draws them
    (np.random.random() <= rate for each pair in turn)."""
    stream = random if random is not None else legacy_stream(None)
    row = 0
    while row < rows.count:
        end, pairs = row, 0
        while end < rows.count and (end == row or pairs < _CELLS_AT_ONCE):
            pairs += int(rows.lengths[end]) * (int(rows.lengths[end]) - 1) // 2
            end += 1
        first, second = _pairs_of(rows, row, end)
        if sample_rate < 1:
            kept = stream.random_sample(len(first)) <= sample_rate
            first, second = first[kept], second[kept]
        yield first, second
        row = end


def tie_calibration(human: np.ndarray, metric: np.ndarray, variant: str = "acc23",
                    average_by: str = "none", sample_rate: float = 1.0,
                    random: Optional[np.random.RandomState] = None) -> Calibration:
    """Deutsch et al.'s tie calibration (mt-metrics-eval's KendallWithTiesOpt): the
    metric tie threshold that maximises the average over rows of tau23 or acc23, and
    that maximum, over the pairs of each row (a random share `sample_rate` of them)."""
    if variant not in _TIE_SCORES:
        raise UsageProblem(f"tie calibration optimises tau23 or acc23, not {variant!r}")
    # tau_optimization leaves out a cell without a human or without a metric score
    rows = rows_of(np.where(np.isnan(metric), np.nan, human), average_by)
    lengths = rows.lengths.astype(np.int64)
    expected = float(np.sum(lengths * (lengths - 1) // 2)) * sample_rate
    if expected > MOST_PAIRS:
        most = MOST_PAIRS / expected * sample_rate
        places = 2 - math.floor(math.log10(most))  # three significant digits, rounded down
        raise UsageProblem(f"tie calibration averaged by {average_by} would sort "
                           f"{expected:,.0f} pairs, more than {MOST_PAIRS:,}: choose a "
                           f"`sample_rate` of {math.floor(most * 10 ** places) / 10 ** places:g}"
                           f" or less, or average by item")
    scores = metric.ravel()[rows.cells]
    row_of_cell = np.repeat(np.arange(rows.count, dtype=np.int32), rows.lengths)
    parts = []
    for first, second in _sampled_pairs(rows, sample_rate, random):
        human_tie = rows.human[first] == rows.human[second]
        difference = scores[first] - scores[second]
        same = (difference > 0) == (rows.human[first] > rows.human[second])
        kind = np.where(difference == 0, np.where(human_tie, 4, 2),
                        np.where(human_tie, 3, np.where(same, 0, 1))).astype(np.int8)
        # the kind of the pair made a metric tie
        tied = np.where(human_tie, 4, 2).astype(np.int8)
        parts.append((row_of_cell[first], kind, tied, np.abs(difference)))
    row, kind, tied, distance = (np.concatenate([part[column] for part in parts])
                                 for column in range(4))
    pairs_per_row = np.bincount(row, minlength=rows.count)
    counted = pairs_per_row > 0
    if not counted.any():
        return Calibration(np.array([0.0]), np.array([math.nan]), 0.0, math.nan)
    numerator = np.asarray(_TIE_SCORES[variant])
    base = np.bincount(row, weights=numerator[kind], minlength=rows.count)
    start = float(np.sum(base[counted] / pairs_per_row[counted]))
    order = np.argsort(distance, kind="stable")
    totals = start + np.cumsum(((numerator[tied] - numerator[kind]) / pairs_per_row[row])[order])
    sorted_distance = distance[order]
    del order
    last = np.flatnonzero(np.append(sorted_distance[1:] != sorted_distance[:-1], True))
    thresholds, values = sorted_distance[last], totals[last]
    if len(thresholds) == 0 or thresholds[0] != 0.0:
        thresholds, values = np.append(0.0, thresholds), np.append(start, values)
    values = values / np.count_nonzero(counted)
    # the first best: values that differ only by the rounding of the running sum are equal
    best = int(np.flatnonzero(values >= np.max(values) - 1e-12)[0])
    epsilon = float(thresholds[best])
    # its value again, row by row as acc23 (tau23) with this epsilon averages them, so
    # that equal values are equal to the bit
    final = np.where(distance <= epsilon, tied, kind)
    numerators = np.bincount(row, weights=numerator[final], minlength=rows.count)
    value = float(np.mean(numerators[counted] / pairs_per_row[counted]))
    return Calibration(thresholds, values, epsilon, value)


# -- soft pairwise accuracy ---------------------------------------------------------


def _permutation_signs(segments: int, permutations: int) -> np.ndarray:
    """pce.py's (permutations, segments) matrix of +1 and -1: uniform float32 draws from
    default_rng(4), rounded to 0 or 1."""
    draws = np.random.default_rng(PCE_SEED).random((permutations, segments), dtype=np.float32)
    return np.rint(draws).astype(np.float64) * 2.0 - 1.0


def pairwise_p_values(scores: np.ndarray, permutations: int = 1000,
                      signs: Optional[np.ndarray] = None) -> np.ndarray:
    """(k, systems, systems) p-values of paired permutation tests between the systems of
    each of k (systems x segments) tables: [i, j] is the share of sign flips under which
    system i's summed lead over j is at least the observed one (pce.py's
    compute_pairwise_p_values, in float64); NaN on and below the diagonal."""
    scores = np.asarray(scores, dtype=np.float64)
    tables = scores if scores.ndim == 3 else scores[None]
    if signs is None:
        signs = _permutation_signs(tables.shape[2], permutations)
    totals = tables.sum(axis=2)
    partial = np.matmul(signs[None], np.transpose(tables, (0, 2, 1)))  # (k, permutations, systems)
    systems = tables.shape[1]
    p_values = np.full((len(tables), systems, systems), np.nan)
    for i in range(systems):
        for j in range(i + 1, systems):
            null = partial[:, :, i] - partial[:, :, j]
            observed = (totals[:, i] - totals[:, j])[:, None]
            p_values[:, i, j] = np.count_nonzero(null >= observed, axis=1) / len(signs)
    return p_values if scores.ndim == 3 else p_values[0]


def complete_items(human: np.ndarray) -> np.ndarray:
    """The items that every system has a human score for: soft pairwise accuracy
    compares whole systems, segment by segment (a UsageProblem if there is none)."""
    items = np.flatnonzero(~np.isnan(human).any(axis=0))
    if not len(items):
        raise UsageProblem("pce compares systems on the segments that every system has a "
                           "human score for, and there is none")
    return items


def soft_pairwise_accuracy(human: np.ndarray, metric: np.ndarray, permutations: int = 1000
                           ) -> float:
    """1 - PCE (Thompson et al. 2024; mt-metrics-eval's PairwiseConfidenceError): one
    minus the mean distance between the p-values that human and metric scores give each
    pair of systems, over the items every system has a human score for."""
    if human.shape[0] < 2:
        raise UsageProblem("pce compares pairs of systems: it needs two systems or more")
    items = complete_items(human)
    signs = _permutation_signs(len(items), permutations)
    return float(_one_minus_pce(pairwise_p_values(human[:, items], signs=signs),
                                pairwise_p_values(metric[:, items], signs=signs)))


def _one_minus_pce(human_p: np.ndarray, metric_p: np.ndarray) -> np.ndarray:
    upper = np.triu_indices(human_p.shape[-1], 1)
    return 1.0 - np.mean(np.abs(human_p[..., upper[0], upper[1]] -
                                metric_p[..., upper[0], upper[1]]), axis=-1)


# -- PERM-BOTH ----------------------------------------------------------------------


@dataclass(frozen=True)
class EarlyStop:
    """mt-metrics-eval's PermutationSigDiffParams: every `block_size` resamples, stop if
    the p-value so far is below `early_min` or above `early_max` (a block size of the
    resamples asked for: no early stop)."""

    block_size: int = 1000
    early_min: float = 0.02
    early_max: float = 0.5

    def stops(self, count: int, done: int) -> bool:
        """Whether a test stops after `done` resamples, `count` of them at least the
        observed difference."""
        return done % self.block_size == 0 and not (
            self.early_min <= count / done <= self.early_max)


DEFAULT_EARLY_STOP = EarlyStop()


@dataclass
class PermutationTest:
    """A PERM-BOTH test of metric 2 against metric 1: `p_value` for "metric 2 agrees
    better", `delta` (metric 2's value minus metric 1's, on z-scores), the `resamples`
    drawn (fewer after an early stop), and each resample's (metric 2, metric 1) values
    in `draws`."""

    p_value: float
    delta: float
    resamples: int
    draws: np.ndarray = field(repr=False)

    @property
    def reverse_p_value(self) -> float:
        """The p-value for "metric 1 agrees better", from the same resamples."""
        differences = self.draws[:, 1] - self.draws[:, 0]
        return float(np.count_nonzero(differences >= -self.delta) / self.resamples)


def zscores(values: np.ndarray) -> np.ndarray:
    """scipy.stats.zscore, as PERM-BOTH standardises each metric's scores; NaN cells (no
    score) stay NaN and count for nothing, and a constant metric's scores become 0."""
    from scipy.stats import zscore

    present = ~np.isnan(values)
    if not present.any():
        return values
    scaled = zscore(values) if present.all() else zscore(values, nan_policy="omit")
    if not np.all(np.isfinite(scaled[present])):  # no spread: centred only
        scaled = values - np.mean(values[present])
    return np.asarray(scaled, dtype=np.float64)


class _Averaged:
    """A Measure's value of resampled metric cells, (k, cells) -> (k,), averaged as
    PERM-BOTH averages: rows without a value left out one resample at a time, so that
    the sums are numpy's own over the values that remain, as in mt-metrics-eval."""

    def __init__(self, rows: Rows, how: Measure) -> None:
        self.rows, self.how = rows, how

    def __call__(self, metric: np.ndarray) -> np.ndarray:
        values, weights = row_values(self.how.statistic, metric, self.rows, self.how.epsilon,
                                     self.how.threshold)
        if correlation.STATISTICS[self.how.statistic] == correlation.MICRO:
            return average(values, weights, self.how.replace_nans_with_zeros)
        counted = weights > 0
        if self.how.replace_nans_with_zeros:
            values = np.where(np.isnan(values), 0.0, values)
        else:
            counted &= ~np.isnan(values)
        if counted.all():
            return np.mean(values, axis=1)
        return np.array([np.mean(own[kept]) if kept.any() else 0.0
                         for own, kept in zip(values, counted)])


class _Pce:
    """Soft pairwise accuracy of resampled tables of complete items, (k, cells) ->
    (k,), the human p-values computed once."""

    def __init__(self, human: np.ndarray, permutations: int) -> None:
        self.shape = human.shape
        self.signs = _permutation_signs(human.shape[1], permutations)
        self.human_p = pairwise_p_values(human, signs=self.signs)

    def __call__(self, metric: np.ndarray) -> np.ndarray:
        tables = metric.reshape(len(metric), *self.shape)
        return _one_minus_pce(self.human_p[None], pairwise_p_values(tables, signs=self.signs))


def perm_both(human: np.ndarray, metric1: np.ndarray, metric2: np.ndarray, how: Measure,
              resamples: int = 1000, early_stop: EarlyStop = DEFAULT_EARLY_STOP,
              random: Optional[np.random.RandomState] = None) -> PermutationTest:
    """PERM-BOTH (mt-metrics-eval's PermutationSigDiff): whether metric 2 agrees with
    people significantly better than metric 1. Both metrics' scores are z-scored, then
    each resample swaps each cell between the two with probability 1/2, and the p-value
    is the share of resamples whose difference is at least the observed one."""
    if resamples < 1:
        raise UsageProblem("PERM-BOTH needs at least one resample")
    if early_stop.block_size < 1:
        raise UsageProblem("the early stop's block size must be >= 1")
    random = random if random is not None else legacy_stream(None)
    statistic: Callable[[np.ndarray], np.ndarray]
    if how.statistic in CALIBRATED:
        return _perm_both_calibrated(human, metric1, metric2, how, resamples, early_stop,
                                     random)
    if how.statistic == "pce":
        items = complete_items(human)
        if human.shape[0] < 2:
            raise UsageProblem("pce compares pairs of systems: it needs two systems or more")
        statistic = _Pce(human[:, items], how.pce_permutations)
        scores1, scores2 = (zscores(metric[:, items].ravel()) for metric in (metric1, metric2))
    else:
        rows = rows_of(human, how.average_by)
        statistic = _Averaged(rows, how)
        scores1, scores2 = (zscores(metric.ravel()[rows.cells]) for metric in (metric1, metric2))
    delta = float(statistic(scores2[None])[0] - statistic(scores1[None])[0])
    draws: List[np.ndarray] = []
    count = done = 0
    at_once = max(1, _CELLS_AT_ONCE // max(1, len(scores1)))
    while done < resamples:
        block_end = min(resamples, (done // early_stop.block_size + 1) * early_stop.block_size)
        while done < block_end:
            size = min(at_once, block_end - done)
            swapped = random.random_sample((size, len(scores1))) > 0.5  # binomial(1, 0.5)
            mixed1 = np.where(swapped, scores1, scores2)
            mixed2 = np.where(swapped, scores2, scores1)
            values1, values2 = statistic(mixed1), statistic(mixed2)
            count += int(np.count_nonzero(values2 - values1 >= delta))
            draws.append(np.stack([values2, values1], axis=1))
            done += size
        if early_stop.stops(count, done):
            break
    return PermutationTest(count / done, delta, done, np.concatenate(draws))


def _perm_both_calibrated(human: np.ndarray, metric1: np.ndarray, metric2: np.ndarray,
                          how: Measure, resamples: int, early_stop: EarlyStop,
                          random: np.random.RandomState) -> PermutationTest:
    """PERM-BOTH of tie-calibrated statistics, as mt-metrics-eval runs it: every cell's
    metric scores z-scored and swapped (not only those with a human score), and the
    calibration run again on each resample."""
    variant = CALIBRATED[how.statistic]

    def value(scores: np.ndarray) -> float:
        return tie_calibration(human, scores.reshape(human.shape), variant, how.average_by,
                               how.sample_rate, random).value

    scores1, scores2 = zscores(metric1.ravel()), zscores(metric2.ravel())
    delta = value(scores2) - value(scores1)
    draws = np.empty((resamples, 2))
    count = 0
    done = 0
    for done in range(1, resamples + 1):
        swapped = random.random_sample(len(scores1)) > 0.5
        value1 = value(np.where(swapped, scores1, scores2))
        value2 = value(np.where(swapped, scores2, scores1))
        draws[done - 1] = value2, value1
        count += value2 - value1 >= delta
        if early_stop.stops(count, done):
            break
    return PermutationTest(count / done, delta, done, draws[:done])


# -- Williams' test -----------------------------------------------------------------


def williams_p_value(r12: float, r13: float, r23: float, n: int,
                     one_sided: bool = True) -> float:
    """Williams' test (Graham & Baldwin 2014; mt-metrics-eval's WilliamsTest) of whether
    r12, the human scores' correlation with one metric, is greater than r13, theirs with
    another, given r23, the two metrics' correlation with each other, over n cells; the
    one-sided p-value is that of |t|, so the same for either order of the metrics."""
    from scipy.stats import t

    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r23 * r13
    mean = (r12 + r13) / 2
    numerator = (r12 - r13) * math.sqrt((n - 1) * (1 + r23))
    denominator = math.sqrt(2 * (n - 1) / (n - 3) * k + mean ** 2 * (1 - r23) ** 3)
    p_value = float(t.sf(abs(numerator / denominator), n - 3))
    return p_value if one_sided else 2 * p_value


def williams(human: np.ndarray, metric1: np.ndarray, metric2: np.ndarray, how: Measure,
             one_sided: bool = True) -> Tuple[float, float, float]:
    """mt-metrics-eval's WilliamsSigDiff: (p-value, metric 1's value, metric 2's) of
    Williams' test between two metrics' values under a row statistic (Pearson's, as the
    test assumes; others as mt-metrics-eval allows them), r23 being the value of metric 2
    against metric 1 and n every cell of the table, as it counts them."""
    if how.statistic not in correlation.STATISTICS:
        raise UsageProblem(f"Williams' test compares correlations of rows, not {how.statistic}")
    value1, value2 = measure(human, metric1, how).value, measure(human, metric2, how).value
    between = measure(metric1, metric2, how).value
    return williams_p_value(value1, value2, between, human.size, one_sided), value1, value2


# -- comparing metrics --------------------------------------------------------------


def assign_ranks(significance: np.ndarray, level: float = SIGNIFICANCE_LEVEL) -> List[int]:
    """mt-metrics-eval's AssignRanks: metrics in order of decreasing value get rank
    clusters 1, 2, ...; a new cluster starts at a metric that some metric of the current
    cluster beats significantly (significance[i, j], i < j: the p-value for i agreeing
    better than j, <= `level`)."""
    ranks, current, start = [], 1, 0
    for i in range(significance.shape[0]):
        if np.any(significance[start:i, i] <= level):
            current, start = current + 1, i
        ranks.append(current)
    return ranks


def rank_ranges(ranks: Sequence[int]) -> List[Tuple[int, int]]:
    """Each position's rank range (first, last; 1 is the best): the places of its
    cluster, since the test tells none of its members apart."""
    ranges = []
    for rank in ranks:
        places = [place for place, own in enumerate(ranks, 1) if own == rank]
        ranges.append((places[0], places[-1]))
    return ranges


@dataclass
class MetricComparison:
    """CompareMetrics' results: the metrics in order of decreasing value (then name),
    each one's `Value`; with a test, `p_values[i, j]`, the p-value for metric i agreeing
    better than metric j (from the test of the pair, whichever way), the clusters
    (`ranks`, 1 the best) and each metric's rank range."""

    names: List[str]
    values: List[Value]
    p_values: Optional[np.ndarray] = None
    tests: Dict[Tuple[str, str], PermutationTest] = field(default_factory=dict, repr=False)
    ranks: Optional[List[int]] = None
    rank_ranges: Optional[List[Tuple[int, int]]] = None


def compare_metrics(human: np.ndarray, metrics: Dict[str, np.ndarray], how: Measure,
                    resamples: int = 0, early_stop: EarlyStop = DEFAULT_EARLY_STOP,
                    seed: Optional[int] = None, level: float = SIGNIFICANCE_LEVEL
                    ) -> MetricComparison:
    """mt-metrics-eval's CompareMetrics: each metric's value (in the given order, which
    is the order of any sampling draws), the metrics sorted by decreasing value and then
    name, and with `resamples` > 0 a PERM-BOTH test of every pair, higher against lower,
    from one random stream seeded with `seed`, and the rank clusters at `level`."""
    random = legacy_stream(seed)
    values = {name: measure(human, metric, how, random) for name, metric in metrics.items()}
    names = sorted(values, key=lambda name: (-values[name].value, name))
    comparison = MetricComparison(names, [values[name] for name in names])
    if not resamples:
        return comparison
    count = len(names)
    p_values = np.full((count, count), np.nan)
    for i in range(count):
        for j in range(i + 1, count):
            test = perm_both(human, metrics[names[j]], metrics[names[i]], how, resamples,
                             early_stop, random)
            comparison.tests[names[i], names[j]] = test
            p_values[i, j], p_values[j, i] = test.p_value, test.reverse_p_value
    comparison.p_values = p_values
    comparison.ranks = assign_ranks(np.where(np.isnan(p_values), 1.0, p_values), level)
    comparison.rank_ranges = rank_ranges(comparison.ranks)
    return comparison
