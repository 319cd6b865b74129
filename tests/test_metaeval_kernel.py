"""The compiled pair counts (native/kendall.cpp) equal the pure-Python reference
(evalproto.stats.correlation.reference_pair_counts, every pair compared by numpy) on
short rows (counted pair by pair) and long ones (O(n log n)), with ties, thresholds on
either side, and several resamples and threads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalproto.base.compiled import compiled
from evalproto.stats import correlation
from evalproto.stats import metaeval as me
from evalproto.stats.correlation import Rows, reference_pair_counts

KERNEL = compiled("evalproto.stats._kendall")


def rows_of_lengths(rng, lengths):
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    human = (rng.integers(0, 7, starts[-1]) * 0.5 + rng.random(starts[-1]) *
             (rng.random(starts[-1]) < 0.5))
    return Rows(starts, np.arange(starts[-1]), human)


def kernel_counts(metric, rows, epsilon, threshold, threads=1, distinct=True):
    out = np.empty((metric.shape[0], rows.count, 7), dtype=np.int64)
    KERNEL.pair_counts(np.ascontiguousarray(metric), rows.human, rows.starts, epsilon,
                       threshold, out, threads=threads, distinct=distinct)
    return out


@pytest.mark.parametrize("epsilon, threshold", [(0.0, 0.0), (0.5, 0.0), (0.0, 1.0),
                                                (0.26, 0.75), (3.0, 25.0)])
def test_compiled_counts_equal_the_reference_on_short_and_long_rows(epsilon, threshold):
    rng = np.random.default_rng(int(epsilon * 100 + threshold))
    rows = rows_of_lengths(rng, [0, 1, 2, 3, 15, 47, 48, 49, 64, 200, 333])
    metric = rng.integers(0, 9, (3, rows.starts[-1])) * 0.25
    metric[1] += rng.random(rows.starts[-1])  # mostly distinct
    metric[2, :] = np.round(metric[2, :] * 1e8) / 3.0  # differences that round
    reference = reference_pair_counts(metric, rows, epsilon, threshold)
    assert np.array_equal(kernel_counts(metric, rows, epsilon, threshold), reference)
    # without distinct, only short rows' distinct metric scores are left out (as 0)
    partial = kernel_counts(metric, rows, epsilon, threshold, distinct=False)
    short = (rows.lengths >= 2) & (rows.lengths <= 48)
    assert np.array_equal(np.delete(partial, correlation.METRIC_VALUES, axis=2),
                          np.delete(reference, correlation.METRIC_VALUES, axis=2))
    assert (partial[:, short, correlation.METRIC_VALUES] == 0).all()
    assert np.array_equal(partial[:, ~short, correlation.METRIC_VALUES],
                          reference[:, ~short, correlation.METRIC_VALUES])


def test_counts_on_the_mqm_fixture_equal_the_reference():
    data = Path(__file__).parent / "data" / "mqm21"
    human = [float(line.split("\t")[1]) for line in
             (data / "en-de.mqm.seg.score").read_text().splitlines()
             if not line.endswith("None")]
    chrf = [float(line.split("\t")[1]) for line, gold in zip(
        (data / "en-de.chrf.seg.score").read_text().splitlines(),
        (data / "en-de.mqm.seg.score").read_text().splitlines()) if not gold.endswith("None")]
    rows = Rows(np.array([0, len(human)], dtype=np.int64), np.arange(len(human)),
                np.array(human))
    metric = np.array([chrf])
    for epsilon, threshold in ((0.0, 0.0), (2.0, 0.0), (0.0, 5.0)):
        assert np.array_equal(kernel_counts(metric, rows, epsilon, threshold),
                              reference_pair_counts(metric, rows, epsilon, threshold))


def test_threads_share_the_rows_without_changing_a_count():
    rng = np.random.default_rng(3)
    rows = rows_of_lengths(rng, rng.integers(0, 80, 60))
    metric = rng.integers(0, 5, (7, rows.starts[-1])) * 1.0
    one = kernel_counts(metric, rows, 1.0, 0.5)
    assert np.array_equal(kernel_counts(metric, rows, 1.0, 0.5, threads=3), one)
    assert np.array_equal(kernel_counts(metric, rows, 1.0, 0.5, threads=1000), one)


def test_statistics_are_the_same_in_pure_python(monkeypatch):
    rng = np.random.default_rng(4)
    human = rng.integers(0, 5, (5, 70)).astype(float)
    human[rng.random(human.shape) < 0.2] = np.nan
    metric = rng.integers(0, 9, (5, 70)) * 0.5
    statistics = ["kendall", "kendall-c", "tau23", "acc23", "kendall-like",
                  "pairwise-accuracy"]
    compiled_values = [me.measure(human, metric, me.Measure(s, "item", threshold=2)).value
                       for s in statistics]
    monkeypatch.setenv("EVALPROTO_PURE_PYTHON", "1")
    assert [me.measure(human, metric, me.Measure(s, "item", threshold=2)).value
            for s in statistics] == compiled_values


@pytest.mark.parametrize("bad", ["nan metric", "nan human", "short starts", "out shape",
                                 "descending", "negative epsilon", "int metric"])
def test_the_kernel_refuses_what_it_cannot_count(bad):
    rows = Rows(np.array([0, 2, 4], dtype=np.int64), np.arange(4), np.array([1.0, 2, 3, 4]))
    metric, human, starts = np.ones((1, 4)), rows.human.copy(), rows.starts.copy()
    out, epsilon = np.empty((1, 2, 7), dtype=np.int64), 0.0
    if bad == "nan metric":
        metric[0, 1] = np.nan
    elif bad == "nan human":
        human[2] = np.nan
    elif bad == "short starts":
        starts = np.array([0, 3], dtype=np.int64)
    elif bad == "out shape":
        out = np.empty((1, 3, 7), dtype=np.int64)
    elif bad == "descending":
        starts = np.array([0, 3, 2, 4], dtype=np.int64)
        out = np.empty((1, 3, 7), dtype=np.int64)
    elif bad == "negative epsilon":
        epsilon = -1.0
    elif bad == "int metric":
        metric = np.ones((1, 4), dtype=np.int64)
    with pytest.raises(ValueError):
        KERNEL.pair_counts(metric, human, starts, epsilon, 0.0, out)


def test_row_values_leave_out_rows_of_one_cell():
    rows = Rows(np.array([0, 1, 3], dtype=np.int64), np.arange(3), np.array([1.0, 1, 2]))
    values, weights = correlation.row_values("acc23", np.array([[5.0, 1, 2]]), rows)
    assert np.isnan(values[0, 0]) and weights[0, 0] == 0
    assert (values[0, 1], weights[0, 1]) == (1.0, 1.0)
