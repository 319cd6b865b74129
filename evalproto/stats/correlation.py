"""Row correlations of meta-evaluation: how well one row of metric scores agrees with
the same row of human scores, for every row of a table at once, and for many resamples
of the metric scores at once (the permutation test's).

A table is systems x items, human scores missing where people gave none (NaN). mt-metrics-
eval reads it in rows three ways (`average_by`): "none", one row of every cell, system by
system; "sys", a row per system; "item", a row per item. A row keeps the cells that have
a human score. Each statistic gives a value per row (NaN where it is undefined, as for
a constant row) and a weight for the average: 1, or the pairs counted for the two that
mt-metrics-eval averages over pairs (WMT's Kendall-like, pairwise accuracy).

The definitions are mt-metrics-eval's (stats.py): Pearson and Spearman as scipy computes
them, NaN for a constant row; Kendall's tau b and c as scipy's kendalltau; tau_23 and
acc_23 with a metric tie threshold epsilon (Deutsch et al. 2023); WMT's Kendall-like with
its human threshold; pairwise accuracy (its `Agreement`). The Kendall-style ones are
counts of pairs, by the compiled kernel (native/kendall.cpp) or, with
EVALPROTO_PURE_PYTHON=1, by `reference_pair_counts`, which the tests compare it with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from evalproto.base.compiled import compiled, kernel_threads, pure_python

AVERAGES = ("none", "sys", "item")
"""mt-metrics-eval's average_by: one row of all cells, a row per system, a row per item."""

MACRO, MICRO = "macro", "micro"

STATISTICS = {
    "pearson": MACRO, "spearman": MACRO, "kendall": MACRO, "kendall-c": MACRO,
    "kendall-like": MICRO, "tau23": MACRO, "acc23": MACRO, "pairwise-accuracy": MICRO,
}
"""The statistics computed row by row, and how their rows are averaged: macro (each row
counts once) or micro (each row by its pairs)."""

CONCORDANT, DISCORDANT, METRIC_TIES, HUMAN_TIES, BOTH_TIES, METRIC_VALUES, HUMAN_VALUES = range(7)


@dataclass(frozen=True)
class Rows:
    """The cells of a table that have a human score, row by row: row r is
    cells[starts[r]:starts[r + 1]] (indices into the table read system by system), and
    `human` their human scores. Rows without a cell are left out."""

    starts: np.ndarray
    cells: np.ndarray
    human: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)


def rows_of(human: np.ndarray, average_by: str) -> Rows:
    """The rows of a systems x items table of human scores (NaN: none), as
    mt-metrics-eval's `_ReshapeAndFilter` orders them."""
    systems, items = human.shape
    cells = np.arange(systems * items, dtype=np.int64)
    if average_by == "none":
        row = np.zeros(len(cells), dtype=np.int64)
    elif average_by == "sys":
        row = cells // items
    elif average_by == "item":
        cells = cells.reshape(systems, items).T.ravel()
        row = cells % items
    else:
        raise ValueError(f"average_by must be one of {', '.join(AVERAGES)}, not {average_by!r}")
    flat = human.ravel()
    kept = ~np.isnan(flat[cells])
    cells, row = cells[kept], row[kept]
    lengths = np.bincount(row, minlength=1 if average_by == "none" else
                          (systems if average_by == "sys" else items))
    lengths = lengths[lengths > 0]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Rows(starts, cells, np.ascontiguousarray(flat[cells], dtype=np.float64))


def pair_counts(metric: np.ndarray, rows: Rows, epsilon: float = 0.0,
                threshold: float = 0.0, distinct: bool = True) -> np.ndarray:
    """(k, rows, 7) counts of each row's pairs (see native/kendall.cpp) for k resamples of
    the rows' metric scores, `metric` (k, cells) or (cells,): concordant, discordant,
    metric ties only, human ties only, ties in both, distinct metric and human scores. A
    metric tie is |difference| <= epsilon; a human tie equal scores or |difference| <
    threshold. Without `distinct`, the distinct metric scores of a short row may be left
    at 0 (only tau c needs them)."""
    metric = np.ascontiguousarray(np.atleast_2d(metric), dtype=np.float64)
    if pure_python():
        return reference_pair_counts(metric, rows, epsilon, threshold)
    out = np.empty((metric.shape[0], rows.count, 7), dtype=np.int64)
    compiled("evalproto.stats._kendall").pair_counts(
        metric, rows.human, rows.starts, float(epsilon), float(threshold), out,
        threads=kernel_threads(), distinct=distinct)
    return out


def reference_pair_counts(metric: np.ndarray, rows: Rows, epsilon: float,
                          threshold: float) -> np.ndarray:
    """pair_counts by numpy, comparing every pair (mt-metrics-eval's matrix method): the
    reference the compiled kernel is tested against."""
    out = np.zeros((metric.shape[0], rows.count, 7), dtype=np.int64)
    for row, (begin, end) in enumerate(zip(rows.starts[:-1], rows.starts[1:])):
        human = rows.human[begin:end]
        upper = np.triu(np.ones((end - begin, end - begin), dtype=bool), 1)
        human_difference = human[None, :] - human[:, None]
        human_tie = (human_difference == 0) | (np.abs(human_difference) < threshold)
        for resample, scores in enumerate(metric[:, begin:end]):
            difference = scores[None, :] - scores[:, None]
            metric_tie = np.abs(difference) <= epsilon
            same = (difference > 0) == (human_difference > 0)
            out[resample, row, :5] = [
                np.sum(upper & ~metric_tie & ~human_tie & same),
                np.sum(upper & ~metric_tie & ~human_tie & ~same),
                np.sum(upper & metric_tie & ~human_tie),
                np.sum(upper & ~metric_tie & human_tie),
                np.sum(upper & metric_tie & human_tie)]
            out[resample, row, METRIC_VALUES] = len(np.unique(scores))
        out[:, row, HUMAN_VALUES] = len(np.unique(human))
    return out


def _segment_sums(values: np.ndarray, rows: Rows) -> np.ndarray:
    """Each row's sum of `values` (k, cells) -> (k, rows)."""
    return np.add.reduceat(values, rows.starts[:-1], axis=1)


def constant_rows(values: np.ndarray, rows: Rows) -> np.ndarray:
    """(k, rows): whether every cell of a row equals its first, as mt-metrics-eval checks
    (a constant row has no Pearson or Spearman correlation)."""
    first = np.repeat(values[:, rows.starts[:-1]], rows.lengths, axis=1)
    return _segment_sums((values != first).astype(np.int64), rows) == 0


def _unit_offsets(values: np.ndarray, rows: Rows) -> np.ndarray:
    """Each cell's offset from its row's mean, over the row's length (Euclidean)."""
    lengths = rows.lengths
    means = _segment_sums(values, rows) / lengths
    offsets = values - np.repeat(means, lengths, axis=1)
    norms = np.sqrt(_segment_sums(offsets * offsets, rows))
    with np.errstate(divide="ignore", invalid="ignore"):
        return offsets / np.repeat(norms, lengths, axis=1)


def pearson_rows(metric: np.ndarray, human: np.ndarray, rows: Rows) -> np.ndarray:
    """(k, rows) Pearson correlations of metric (k, cells) with human (cells,), as
    scipy.stats.pearsonr computes them (centred, each side scaled to unit length,
    clipped to [-1, 1]); NaN for a constant row."""
    human = np.atleast_2d(human)
    with np.errstate(invalid="ignore"):
        values = np.clip(_segment_sums(_unit_offsets(metric, rows) *
                                       _unit_offsets(human, rows), rows), -1.0, 1.0)
    constant = constant_rows(metric, rows) | constant_rows(human, rows)
    return np.where(constant | (rows.lengths < 2), np.nan, values)


def average_ranks(values: np.ndarray, rows: Rows) -> np.ndarray:
    """(k, cells): each cell's rank within its row (1 is the lowest), ties given the
    mean of their ranks, as scipy.stats.rankdata's "average" method."""
    resamples, width = values.shape
    row = np.repeat(np.arange(rows.count), rows.lengths)
    group = (np.arange(resamples)[:, None] * rows.count + row[None, :]).ravel()
    flat = values.ravel()
    order = np.lexsort((flat, group))
    ordered, ordered_group = flat[order], group[order]
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = (ordered[1:] != ordered[:-1]) | (ordered_group[1:] != ordered_group[:-1])
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], len(order))
    row_start = np.concatenate([[0], np.cumsum(np.tile(rows.lengths, resamples))])[:-1]
    first_of_group = np.repeat(row_start, np.tile(rows.lengths, resamples))
    run_rank = (starts + ends - 1) / 2.0 + 1.0  # the mean of 1-based positions in the run
    ranks = np.empty(len(order))
    ranks[order] = np.repeat(run_rank, ends - starts) - first_of_group
    return ranks.reshape(resamples, width)


def spearman_rows(metric: np.ndarray, human: np.ndarray, rows: Rows) -> np.ndarray:
    """(k, rows) Spearman correlations: Pearson's of the average ranks, as
    scipy.stats.spearmanr; NaN for a constant row (whose ranks are constant too)."""
    return pearson_rows(average_ranks(metric, rows),
                        average_ranks(np.atleast_2d(human), rows)[0], rows)


def kendall_values(statistic: str, counts: np.ndarray, lengths: np.ndarray
                   ) -> Tuple[np.ndarray, np.ndarray]:
    """(values, weights) of a Kendall-style statistic from pair counts (k, rows, 7)."""
    con, dis = counts[..., CONCORDANT], counts[..., DISCORDANT]
    metric_only, human_only, both = (counts[..., METRIC_TIES], counts[..., HUMAN_TIES],
                                     counts[..., BOTH_TIES])
    total = (lengths * (lengths - 1) // 2)[None, :]
    ones = np.ones(con.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        if statistic in ("kendall", "kendall-c"):
            metric_ties, human_ties = metric_only + both, human_only + both
            undefined = (metric_ties == total) | (human_ties == total)
            if statistic == "kendall":
                # scipy's order of operations, the human scores being its x
                tau = (con - dis) / np.sqrt(total - human_ties) / np.sqrt(total - metric_ties)
            else:
                classes = np.minimum(counts[..., METRIC_VALUES], counts[..., HUMAN_VALUES])
                tau = 2 * (con - dis) / (lengths[None, :] ** 2 * (classes - 1) / classes)
            return np.where(undefined, np.nan, np.clip(tau, -1.0, 1.0)), ones
        if statistic == "tau23":
            return (con + both - dis - metric_only - human_only) / total, ones
        if statistic == "acc23":
            return (con + both) / total, ones
        if statistic == "kendall-like":
            pairs = con + dis + metric_only  # a metric tie is discordant
            return np.where(pairs > 0, (con - dis - metric_only) / pairs, 0.0), pairs
        if statistic == "pairwise-accuracy":
            return (con + both) / total, np.broadcast_to(total, con.shape).astype(float)
    raise ValueError(f"not a Kendall-style statistic: {statistic!r}")


def row_values(statistic: str, metric: np.ndarray, rows: Rows, epsilon: float = 0.0,
               threshold: float = 25.0) -> Tuple[np.ndarray, np.ndarray]:
    """(values, weights), each (k, rows), of a row statistic for k resamples of the
    rows' metric scores (`metric`, (k, cells)). Rows of fewer than two cells have no
    value and weigh nothing, as mt-metrics-eval skips them."""
    metric = np.atleast_2d(np.asarray(metric, dtype=np.float64))
    if statistic in ("pearson", "spearman"):
        correlate = pearson_rows if statistic == "pearson" else spearman_rows
        values, weights = correlate(metric, rows.human, rows), np.ones((len(metric), rows.count))
    else:
        counts = pair_counts(metric, rows, epsilon if statistic in ("tau23", "acc23") else 0.0,
                             threshold if statistic == "kendall-like" else 0.0,
                             distinct=statistic == "kendall-c")
        values, weights = kendall_values(statistic, counts, rows.lengths)
    short = rows.lengths[None, :] < 2
    return np.where(short, np.nan, values), np.where(short, 0.0, weights)


def average(values: np.ndarray, weights: np.ndarray, replace_nans_with_zeros: bool = False
            ) -> np.ndarray:
    """(k,) averages of row values (k, rows) by their weights, as mt-metrics-eval's
    AverageCorrelation: a NaN row is left out, or counts as 0 with
    `replace_nans_with_zeros`; 0 when no row counts."""
    undefined = np.isnan(values)
    counted = weights if replace_nans_with_zeros else np.where(undefined, 0.0, weights)
    totals = np.sum(np.where(undefined, 0.0, values * weights), axis=1)
    denominators = np.sum(counted, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominators > 0, totals / denominators, 0.0)
