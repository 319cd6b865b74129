"""Meta-evaluation's statistics (evalproto.stats.metaeval) equal mt-metrics-eval's.

Three kinds of evidence: the values that mt-metrics-eval's own tests publish
(stats_test.py, tau_optimization_test.py; their inputs and expected figures carried
over, with their precision), scipy where scipy has the statistic (to 1e-9, on the real
WMT21 MQM fixture and on generated tables with missing cells), and for what is random
(PERM-BOTH, PCE) the definition written out here, slowly, from scipy and the pairs,
drawing from the same seeded stream: equal draws, equal p-values. mt-metrics-eval's own
code is never needed here (bench/metaeval.py runs it side by side).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from evalproto.base.errors import UsageProblem
from evalproto.stats import correlation
from evalproto.stats import metaeval as me
from evalproto.stats.correlation import rows_of

DATA = Path(__file__).parent / "data" / "mqm21"


def table(num_sys, values):
    """An mt-metrics-eval vector (systems one after another, None: missing) as a
    systems x items table."""
    return np.array([math.nan if v is None else v for v in values], dtype=float).reshape(
        num_sys, -1)


def value(num_sys, gold, metric, statistic, average_by="none", **options):
    return me.measure(table(num_sys, gold), table(num_sys, metric),
                      me.Measure(statistic, average_by, **options)).value


def mqm():
    """The fixture's human (MQM) and metric (chrF, BLEU) tables, 4 systems x 50 items."""
    def read(name):
        scores = {}
        for line in (DATA / f"en-de.{name}.seg.score").read_text().splitlines():
            system, score = line.split("\t")
            scores.setdefault(system, []).append(math.nan if score == "None" else float(score))
        return np.array(list(scores.values()))
    return read("mqm"), read("chrf"), read("bleu")


# -- stats_test.py's published values ------------------------------------------------

GOLD, METRIC = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 3, 7]


@pytest.mark.parametrize("statistic, expected", [
    ("pearson", {"none": 0.776, "sys": 0.760, "item": 1.00}),
    ("kendall", {"none": 0.552, "sys": 0.575, "item": 1.00}),
    ("kendall-c", {"none": 0.556, "sys": 0.611, "item": 1.00}),
])
def test_correlations_by_every_averaging_are_the_published_ones(statistic, expected):
    for average_by, figure in expected.items():
        assert value(2, GOLD, METRIC, statistic, average_by) == pytest.approx(figure, abs=5e-4)


def test_kendall_like_is_the_published_one_with_missing_human_scores():
    assert value(1, [10, None, 100, 150], [2, 1, 4, 3], "kendall-like", threshold=1) == 1 / 3
    assert value(2, [10, 11, 100, 150], [2, 1, 4, 3], "kendall-like", "item", threshold=1) == 1
    assert value(2, [10, None, 100, 150], [2, 1, 4, 3], "kendall-like", "item",
                 threshold=1) == 1


def test_kendall_like_counts_pairs_as_wmt_did():
    """KendallLike(gold, metric) == (3/5, 0, 5, 4, 1), with thresh 1 (2/6, 0, 6, 4, 2): a
    metric tie is discordant, and pairs closer than the threshold do not count."""
    gold, metric = table(1, [10, 11, 100, 150]), table(1, [2, 1, 4, 3])
    for threshold, (tau, pairs) in ((25, (3 / 5, 5)), (1, (2 / 6, 6))):
        rows = rows_of(gold, "none")
        values, weights = correlation.row_values("kendall-like", metric.ravel(), rows,
                                                 threshold=threshold)
        assert (values[0, 0], weights[0, 0]) == (tau, pairs)


def test_kendall_variants_are_the_published_ones():
    gold, metric = [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3]
    assert value(1, gold, metric, "kendall") == pytest.approx(0.316227766, abs=5e-8)
    assert value(1, gold, metric, "kendall-c") == 0.32
    assert value(1, gold, metric, "tau23") == 0.2
    assert value(1, gold, metric, "acc23") == 0.6
    assert value(1, gold, metric, "acc23", epsilon=2) == 0.4


def test_tie_calibration_is_the_published_one():
    found = me.measure(table(1, [1, 2, 2, 3, 4]), table(1, [2, 1, 1.5, 5, 3]),
                       me.Measure("acc23-opt"))
    assert found.value == 0.7
    assert value(1, [1, 2, 2, 3, 4], [2, 1, 1.5, 5, 3], "acc23",
                 epsilon=found.epsilon) == 0.7


def test_soft_pairwise_accuracy_is_the_published_one():
    assert value(2, [1, 2, 3, 2, 3, 4], [2, 2, 4, 1, 3, 5], "pce") == pytest.approx(0.872,
                                                                                    abs=5e-4)


def test_soft_pairwise_accuracy_leaves_out_items_without_human_scores():
    """AverageCorrelation(PairwiseConfidenceError) of [1, None, 3, 4, None, 6] is PCE of
    the items that have them."""
    gold, metric = [1, None, 3, 4, None, 6], [2, 1, 8, 3, 5, 6]
    expected = me.soft_pairwise_accuracy(np.array([[1, 3], [4, 6.]]),
                                         np.array([[2, 8], [3, 6.]]))
    assert value(2, gold, metric, "pce") == expected


def test_soft_pairwise_accuracy_is_deterministic():
    scores = np.random.default_rng(1).random((10, 100))
    assert np.array_equal(me.pairwise_p_values(scores), me.pairwise_p_values(scores),
                          equal_nan=True)


# -- AverageCorrelationTest: averaging and missing cells, against scipy --------------


def test_a_missing_human_score_leaves_its_cell_out():
    expected = scipy.stats.pearsonr([1, 3, 4, 5, 6], [2, 4, 3, 5, 6])[0]
    assert value(1, [1, None, 3, 4, 5, 6], [2, 1, 4, 3, 5, 6], "pearson") == pytest.approx(
        expected, abs=1e-12)


def test_averages_by_system_and_by_item_are_means_of_rows():
    gold, metric = [1, 2, 3, 4, 5, 6], [2, 1, 8, 3, 5, 6]
    by_sys = np.mean([scipy.stats.pearsonr([1, 2, 3], [2, 1, 8])[0],
                      scipy.stats.pearsonr([4, 5, 6], [3, 5, 6])[0]])
    assert value(2, gold, metric, "pearson", "sys") == pytest.approx(by_sys, abs=1e-12)
    by_item = np.mean([scipy.stats.pearsonr(*pair)[0] for pair in
                       (([1, 4], [2, 3]), ([2, 5], [1, 5]), ([3, 6], [8, 6]))])
    assert value(2, gold, metric, "pearson", "item") == pytest.approx(by_item, abs=1e-12)
    # an item with one human score is left out
    assert value(2, [1, None, 3, 4, 5, 6], metric, "pearson", "item") == pytest.approx(
        np.mean([scipy.stats.pearsonr([1, 4], [2, 3])[0],
                 scipy.stats.pearsonr([3, 6], [8, 6])[0]]), abs=1e-12)


def test_a_constant_row_is_left_out_or_counted_as_zero():
    gold, metric = [1, 2, 3, 4, 5, 6], [2, 2, 2, 4, 5, 6]
    assert value(2, gold, metric, "pearson", "sys") == pytest.approx(1.0)
    assert value(2, gold, metric, "pearson", "sys", replace_nans_with_zeros=True) == \
        pytest.approx(0.5)


def test_kendall_b_and_c_are_scipys_to_the_bit():
    gold, metric = [7, 1, 2, 7, 4, 3, 2], [4, 1, 3, 6, 1, 5, 6]
    for statistic, variant in (("kendall", "b"), ("kendall-c", "c")):
        assert value(1, gold, metric, statistic) == scipy.stats.kendalltau(
            gold, metric, variant=variant)[0]


def test_tau23_and_acc23_count_ties_as_published():
    x, y = [1, 1, 1, 2, 2, 3, 4], [1, 1, 2, 2, 4, 3, 3]
    # 21 pairs: 4 ties in x (human), 3 in y (metric), 1 in both, 2 discordant, 13 concordant
    assert value(1, x, y, "tau23") == (13 + 1 - 2 - 3 - 2) / 21
    assert value(1, x, y, "acc23") == (13 + 1) / 21
    assert value(1, x, y, "tau23", epsilon=0.1) == (14 - 7) / 21
    # epsilon 1 ties 13 pairs of y: 3 in both, 1 discordant, 7 concordant
    assert value(1, x, y, "tau23", epsilon=1.0) == (7 + 3 - 1 - 10 - 0) / 21


def test_pairwise_accuracy_is_agreement_in_sign():
    """stats.Agreement([1, 2, 3, 3, 4], [1, 1, 2, 1, 2]) == (5, 10)."""
    assert value(1, [1, 2, 3, 3, 4], [1, 1, 2, 1, 2], "pairwise-accuracy") == 0.5


def test_tie_calibration_by_every_averaging_is_acc23_at_its_epsilon():
    gold, metric = [1, 2, 2, 3, 3, 4], [2, 1, 1.5, 5, 3, 2]
    for average_by, num_sys in (("none", 1), ("sys", 2), ("item", 2)):
        found = me.measure(table(num_sys, gold), table(num_sys, metric),
                           me.Measure("acc23-opt", average_by))
        assert found.value == pytest.approx(value(num_sys, gold, metric, "acc23", average_by,
                                                  epsilon=found.epsilon), abs=1e-12)


def test_rows_are_filtered_and_ordered_as_reshape_and_filter():
    gold = table(3, [1, 2, None, None, 5, None])
    for average_by, lengths, values in (("sys", [2, 1], [1, 2, 5]), ("item", [2, 1], [1, 5, 2]),
                                        ("none", [3], [1, 2, 5])):
        rows = rows_of(gold, average_by)
        assert rows.lengths.tolist() == lengths
        assert rows.human.tolist() == values


# -- tau_optimization_test.py ---------------------------------------------------------


def test_tie_calibration_sweeps_every_threshold():
    found = me.tie_calibration(np.array([[1, 2, 3, 4.]]), np.array([[0, 2, 6, 8.]]))
    assert found.thresholds.tolist() == [0, 2, 4, 6, 8]
    assert found.values == pytest.approx([6 / 6, 4 / 6, 3 / 6, 1 / 6, 0 / 6], abs=1e-12)
    assert (found.epsilon, found.value) == (0, 1.0)
    found = me.tie_calibration(np.array([[1, 1, 1, 4.]]), np.array([[0, 2, 6, 8.]]))
    assert found.values == pytest.approx([3 / 6, 3 / 6, 4 / 6, 4 / 6, 3 / 6], abs=1e-12)
    assert found.epsilon == 4
    assert found.value == pytest.approx(4 / 6, abs=1e-12)


def test_tie_calibration_samples_pairs_from_the_seeded_stream():
    """np.random.seed(123) and sample_rate=0.5 keep the pairs whose thresholds are
    [0, 6, 8, 14]."""
    found = me.tie_calibration(np.array([[1, 2, 3, 4.]]), np.array([[0, 2, 6, 14.]]),
                               sample_rate=0.5, random=np.random.RandomState(123))
    assert found.thresholds.tolist() == [0, 6, 8, 14]


@pytest.mark.parametrize("rate", [0.0, 1.1, -1])
def test_a_sample_rate_outside_0_1_is_refused(rate):
    with pytest.raises(UsageProblem, match="sample_rate"):
        me.Measure("acc23-opt", sample_rate=rate)


def test_tie_calibration_regression_example_with_missing_scores():
    nan = math.nan
    metric = np.array([[0, 5, 2, 3, 2], [nan, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1],
                       [nan] * 5])
    human = np.array([[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, nan, 3, 2],
                      [nan] * 5])
    found = me.tie_calibration(human, metric, "acc23", "sys")
    assert found.thresholds.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert found.values == pytest.approx([
        0.4666666666666667, 0.4916666666666668, 0.38333333333333347, 0.29166666666666674,
        0.2666666666666667, 0.2, 0.15833333333333335, 0.15833333333333335,
        0.1166666666666667], abs=1e-12)
    assert found.epsilon == 1
    assert found.value == pytest.approx(0.4916666666666668, abs=1e-12)


# -- scipy on the real fixture and on generated tables --------------------------------

SCIPY = {"pearson": scipy.stats.pearsonr, "spearman": scipy.stats.spearmanr,
         "kendall": scipy.stats.kendalltau,
         "kendall-c": lambda a, b: scipy.stats.kendalltau(a, b, variant="c")}


def scipy_average(human, metric, statistic, average_by, replace_nans_with_zeros=False):
    """AverageCorrelation written out: scipy on each row's cells with a human score, a
    constant row NaN for Pearson and Spearman, rows of fewer than two cells skipped."""
    systems = human.shape[0]
    gold = [None if math.isnan(v) else v for v in human.ravel()]
    if average_by == "none":
        rows = [(gold, list(metric.ravel()))]
    else:
        golds = [gold[s * human.shape[1]:(s + 1) * human.shape[1]] for s in range(systems)]
        metrics = [list(row) for row in metric]
        rows = list(zip(golds, metrics))
        if average_by == "item":
            rows = list(zip(zip(*golds), zip(*metrics)))
    total = count = 0
    for g, m in rows:
        kept = [(a, b) for a, b in zip(g, m) if a is not None]
        if len(kept) < 2:
            continue
        a, b = map(np.array, zip(*kept))
        if statistic in ("pearson", "spearman") and (np.all(a == a[0]) or np.all(b == b[0])):
            found = math.nan
        else:
            found = SCIPY[statistic](a, b)[0]
        if not math.isnan(found):
            total, count = total + found, count + 1
        elif replace_nans_with_zeros:
            count += 1
    return total / count if count else 0


@pytest.mark.parametrize("statistic", sorted(SCIPY))
@pytest.mark.parametrize("average_by", ["none", "sys", "item"])
def test_scipys_statistics_on_the_mqm_fixture(statistic, average_by):
    human, chrf, bleu = mqm()
    for metric in (chrf, bleu):
        assert me.measure(human, metric, me.Measure(statistic, average_by)).value == \
            pytest.approx(scipy_average(human, metric, statistic, average_by), abs=1e-9)


@pytest.mark.parametrize("statistic", sorted(SCIPY))
def test_scipys_statistics_on_generated_tables_with_ties_and_gaps(statistic):
    rng = np.random.default_rng(7)
    for trial in range(12):
        systems, items = int(rng.integers(1, 7)), int(rng.integers(1, 60))
        human = rng.integers(0, 4, (systems, items)).astype(float)
        human[rng.random(human.shape) < 0.3] = math.nan
        metric = rng.integers(0, 6, (systems, items)) * 0.5
        if trial % 3 == 0:
            metric[0] = 1.0  # a constant system
        for average_by in ("none", "sys", "item"):
            for zeros in (False, True):
                how = me.Measure(statistic, average_by, replace_nans_with_zeros=zeros)
                assert me.measure(human, metric, how).value == pytest.approx(
                    scipy_average(human, metric, statistic, average_by, zeros), abs=1e-9)


def pair_definition(gold, metric, statistic, epsilon=0.0, threshold=25.0):
    """tau23, acc23, WMT's Kendall-like and agreement, pair by pair, as stats.py's
    KendallVariants (matrix method), KendallLike and Agreement define them."""
    con = dis = metric_only = human_only = both = 0
    like_con = like_dis = 0
    for (g1, m1), (g2, m2) in itertools.combinations(zip(gold, metric), 2):
        metric_tie, human_tie = abs(m1 - m2) <= epsilon, g1 == g2
        if abs(g1 - g2) >= threshold:
            if (g1 > g2 and m1 > m2) or (g1 < g2 and m1 < m2):
                like_con += 1
            else:
                like_dis += 1
        if metric_tie and human_tie:
            both += 1
        elif metric_tie:
            metric_only += 1
        elif human_tie:
            human_only += 1
        elif (m1 > m2) == (g1 > g2):
            con += 1
        else:
            dis += 1
    total = con + dis + metric_only + human_only + both
    return {"tau23": (con + both - dis - metric_only - human_only) / total,
            "acc23": (con + both) / total,
            "pairwise-accuracy": (con + both) / total,
            "kendall-like": ((like_con - like_dis) / (like_con + like_dis)
                             if like_con + like_dis else 0)}[statistic]


@pytest.mark.parametrize("statistic, options", [
    ("tau23", {}), ("acc23", {}), ("tau23", {"epsilon": 1.5}), ("acc23", {"epsilon": 0.5}),
    ("kendall-like", {"threshold": 2}), ("kendall-like", {"threshold": 5}),
    ("kendall-like", {"threshold": 25}),
])
def test_pair_statistics_by_their_definition_on_the_mqm_fixture(statistic, options):
    human, chrf, _ = mqm()
    for average_by in ("none", "item"):
        rows = rows_of(human, average_by)
        values = [pair_definition(rows.human[b:e], chrf.ravel()[rows.cells][b:e], statistic,
                                  **options)
                  for b, e in zip(rows.starts[:-1], rows.starts[1:]) if e - b > 1]
        if statistic == "kendall-like":  # averaged over pairs, as Correlation.KendallLike
            expected = pair_weighted_kendall_like(rows, chrf, options["threshold"])
        else:
            expected = np.mean(values)
        found = me.measure(human, chrf, me.Measure(statistic, average_by, **options)).value
        assert found == pytest.approx(expected, abs=1e-9)


def pair_weighted_kendall_like(rows, metric, threshold):
    concordant = discordant = 0
    scores = metric.ravel()[rows.cells]
    for b, e in zip(rows.starts[:-1], rows.starts[1:]):
        for (g1, m1), (g2, m2) in itertools.combinations(zip(rows.human[b:e], scores[b:e]), 2):
            if abs(g1 - g2) >= threshold:
                if (g1 > g2 and m1 > m2) or (g1 < g2 and m1 < m2):
                    concordant += 1
                else:
                    discordant += 1
    pairs = concordant + discordant
    return (concordant - discordant) / pairs if pairs else 0  # MQM spans 25: no pair at 25


def test_pairwise_accuracy_averages_over_all_pairs():
    human = table(2, [1, 2, 3, 1, 1, 4])
    metric = table(2, [1, 3, 2, 2, 2, 5])
    # items: (1, 1) vs (1, 2): gold tie, metric not -> 0/1; (2, 1) vs (3, 2): agree;
    # (3, 4) vs (2, 5): agree. System rows: 3 pairs each.
    assert me.measure(human, metric, me.Measure("pairwise-accuracy", "item")).value == 2 / 3
    by_sys = (pair_definition([1, 2, 3], [1, 3, 2], "acc23") * 3 +
              pair_definition([1, 1, 4], [2, 2, 5], "acc23") * 3) / 6
    assert me.measure(human, metric, me.Measure("pairwise-accuracy", "sys")).value == \
        pytest.approx(by_sys, abs=1e-12)


# -- PERM-BOTH ------------------------------------------------------------------------

PERM_GOLD = [1, 2, 3, 4, 5, 5, 7, 8]
PERM_M1, PERM_M2 = [1, 2, 3, 3, 7, 3, 5, 5], [2, 1, 2, 6, 8, 8, 7, 6]


def perm(statistic, average_by, resamples=1000, early_stop=None, seed=1, **options):
    return me.perm_both(table(4, PERM_GOLD), table(4, PERM_M1), table(4, PERM_M2),
                        me.Measure(statistic, average_by, **options), resamples,
                        early_stop or me.EarlyStop(), np.random.RandomState(seed))


def test_perm_both_pearson_as_published():
    delta = (scipy.stats.pearsonr(PERM_M2, PERM_GOLD)[0] -
             scipy.stats.pearsonr(PERM_M1, PERM_GOLD)[0])
    test = perm("pearson", "none")
    assert test.p_value > 0
    assert test.delta == pytest.approx(delta, abs=1e-12)
    assert test.resamples == len(test.draws) == 1000
    assert np.mean(test.draws[:, 0] - test.draws[:, 1] >= test.delta) == test.p_value


def test_perm_both_stops_early_at_a_block_boundary():
    test = perm("pearson", "none", early_stop=me.EarlyStop(block_size=50, early_max=0.2))
    assert test.p_value > 0.2  # why it stopped
    assert test.resamples < 1000 and test.resamples % 50 == 0
    assert len(test.draws) == test.resamples
    assert np.mean(test.draws[:, 0] - test.draws[:, 1] >= test.delta) == test.p_value


@pytest.mark.parametrize("statistic, average_by, options", [
    ("pearson", "sys", {}), ("pearson", "sys", {"replace_nans_with_zeros": True}),
    ("pearson", "item", {}), ("kendall", "item", {}), ("kendall-c", "item", {}),
    ("tau23", "item", {}), ("acc23", "item", {}), ("acc23-opt", "item", {}),
])
def test_perm_both_delta_is_the_difference_of_values(statistic, average_by, options):
    how = me.Measure(statistic, average_by, **options)
    gold = table(4, PERM_GOLD)
    delta = (me.measure(gold, table(4, PERM_M2), how).value -
             me.measure(gold, table(4, PERM_M1), how).value)
    test = perm(statistic, average_by, **options)
    assert test.p_value > 0
    assert test.delta == pytest.approx(delta, abs=1e-12)


def test_perm_both_of_a_metric_against_itself_never_beats_it():
    gold, metric = table(4, PERM_GOLD), table(4, PERM_M1)
    test = me.perm_both(gold, metric, metric, me.Measure("acc23", "item"), 100)
    assert (test.delta, test.p_value, test.reverse_p_value) == (0.0, 1.0, 1.0)


def definition_of_perm_both(human, metric1, metric2, row_statistic, average_by, k, seed,
                            block_size=1000, early_min=0.02, early_max=0.5):
    """PermutationSigDiff written out: the filtered cells in mt-metrics-eval's order,
    z-scored by scipy; np.random.seed; per resample binomial(1, 0.5) swaps, the row
    statistic on each row, NaN rows dropped, np.average."""
    rows = rows_of(human, average_by)
    gold = rows.human
    s1 = scipy.stats.zscore(metric1.ravel()[rows.cells])
    s2 = scipy.stats.zscore(metric2.ravel()[rows.cells])
    bounds = list(zip(rows.starts[:-1], rows.starts[1:]))

    def corr(scores):
        values = np.array([row_statistic(gold[b:e], scores[b:e]) for b, e in bounds if e - b > 1])
        values = values[~np.isnan(values)]
        return np.average(values) if len(values) else 0

    np.random.seed(seed)
    delta = corr(s2) - corr(s1)
    draws, count, i = [], 0, 0
    for i in range(1, k + 1):
        w1 = np.random.binomial(1, 0.5, len(s1))
        w2 = 1 - w1
        c1, c2 = corr(w1 * s1 + w2 * s2), corr(w2 * s1 + w1 * s2)
        draws.append((c2, c1))
        count += c2 - c1 >= delta
        if i % block_size == 0 and not early_min <= count / i <= early_max:
            break
    return count / i, delta, i, np.array(draws)


def pearson_or_nan(gold, scores):
    if np.all(gold == gold[0]) or np.all(scores == scores[0]):
        return math.nan
    return scipy.stats.pearsonr(gold, scores)[0]


ROW_DEFINITIONS = {
    "pearson": pearson_or_nan,
    "kendall": lambda g, s: scipy.stats.kendalltau(g, s)[0],
    "acc23": lambda g, s: pair_definition(g, s, "acc23", epsilon=0.25),
    "tau23": lambda g, s: pair_definition(g, s, "tau23"),
}


@pytest.mark.parametrize("statistic", sorted(ROW_DEFINITIONS))
@pytest.mark.parametrize("average_by", ["none", "sys", "item"])
def test_perm_both_draws_as_the_definition_on_the_seeded_stream(statistic, average_by):
    human, chrf, bleu = mqm()
    chrf, bleu = chrf[:, :30], bleu[:, :30]
    human = human[:, :30]
    epsilon = 0.25 if statistic == "acc23" else 0.0
    test = me.perm_both(human, chrf, bleu, me.Measure(statistic, average_by, epsilon=epsilon),
                        60, me.EarlyStop(block_size=20), np.random.RandomState(5))
    p_value, delta, resamples, draws = definition_of_perm_both(
        human, chrf, bleu, ROW_DEFINITIONS[statistic], average_by, 60, 5, block_size=20)
    assert test.resamples == resamples
    assert test.draws == pytest.approx(draws, abs=1e-12)
    assert test.delta == pytest.approx(delta, abs=1e-12)
    assert test.p_value == p_value
    if statistic in ("acc23", "tau23", "kendall"):  # counts, divided as they are divided
        assert np.array_equal(test.draws, draws) and test.delta == delta


def test_perm_both_of_tie_calibration_draws_the_sampled_pairs_in_turn():
    """With sample_rate < 1, each resample draws its swaps, then the pairs sampled for
    the first mix, then those for the second, from the one stream."""
    human, chrf, bleu = mqm()
    human, chrf, bleu = human[:, :12], chrf[:, :12], bleu[:, :12]
    how = me.Measure("acc23-opt", "item", sample_rate=0.5)
    test = me.perm_both(human, chrf, bleu, how, 5, me.EarlyStop(), np.random.RandomState(9))
    random = np.random.RandomState(9)
    z1, z2 = (scipy.stats.zscore(m.ravel()) for m in (chrf, bleu))

    def calibrated(scores):
        return me.tie_calibration(human, scores.reshape(human.shape), "acc23", "item", 0.5,
                                  random).value

    delta = calibrated(z2) - calibrated(z1)
    expected = []
    for _ in range(5):
        w1 = random.binomial(1, 0.5, z1.size)
        c1 = calibrated(w1 * z1 + (1 - w1) * z2)
        c2 = calibrated((1 - w1) * z1 + w1 * z2)
        expected.append((c2, c1))
    assert test.delta == delta
    assert np.array_equal(test.draws, np.array(expected))


def test_perm_both_of_pce_mixes_the_complete_items():
    human, chrf, bleu = mqm()
    test = me.perm_both(human, chrf, bleu, me.Measure("pce", pce_permutations=200), 20,
                        random=np.random.RandomState(2))
    items = me.complete_items(human)
    z1, z2 = (scipy.stats.zscore(m[:, items].ravel()) for m in (chrf, bleu))
    random = np.random.RandomState(2)
    for c2, c1 in test.draws:
        w1 = random.binomial(1, 0.5, z1.size).reshape(4, -1)
        mixed1 = w1 * z1.reshape(4, -1) + (1 - w1) * z2.reshape(4, -1)
        mixed2 = (1 - w1) * z1.reshape(4, -1) + w1 * z2.reshape(4, -1)
        assert c1 == pytest.approx(me.soft_pairwise_accuracy(human[:, items], mixed1, 200),
                                   abs=1e-12)
        assert c2 == pytest.approx(me.soft_pairwise_accuracy(human[:, items], mixed2, 200),
                                   abs=1e-12)


def test_pce_p_values_equal_the_exact_permutation_test_in_distribution():
    """With many permutations the sign-flip p-values approach the exact ones, found by
    enumerating all 2**10 sign vectors."""
    rng = np.random.default_rng(11)
    scores = rng.normal(size=(3, 10)) + np.array([[0.3], [0.0], [-0.2]])
    estimated = me.pairwise_p_values(scores, permutations=40000)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=10)))
    for i, j in ((0, 1), (0, 2), (1, 2)):
        difference = scores[i] - scores[j]
        exact = np.mean(signs @ difference >= difference.sum() - 1e-12)
        assert estimated[i, j] == pytest.approx(exact, abs=0.012)
    assert np.isnan(estimated[1, 0]) and np.isnan(estimated[0, 0])


# -- Williams' test and ranks ------------------------------------------------------------


def test_williams_test_is_the_published_one():
    gold, m1, m2 = [1, 2, 3, 4, 5], [1.1, 2, 3.1, 4, 5.1], [1.5, 2, 3.1, 4, 5.5]
    p, r1, r2 = me.williams(table(5, gold), table(5, m1), table(5, m2), me.Measure())
    assert (p, r1, r2) == pytest.approx((0.019, 0.999, 0.987), abs=5e-4)


def test_williams_test_with_averaging_and_missing_cells_is_the_published_one():
    gold, m1, m2 = [1, None, 3, 4, 5, 6], [1, 2, 3, 3, 7, 3], [2, 1, 2, 6, 8, 8]
    p, r1, r2 = me.williams(table(3, gold), table(3, m1), table(3, m2),
                            me.Measure("pearson", "item"))
    assert (p, r1, r2) == pytest.approx((0.121, 0.982, 0.933), abs=5e-4)


def test_williams_two_sided_doubles_the_p_value():
    assert me.williams_p_value(0.9, 0.8, 0.7, 30, one_sided=False) == \
        2 * me.williams_p_value(0.9, 0.8, 0.7, 30)


def test_assign_ranks_starts_a_cluster_at_a_significant_loss():
    # 0 beats 2 significantly, no one beats 1; 3 is beaten by 2 (cluster {2, 3} starts at 2)
    significance = np.array([[1, 0.3, 0.01, 0.001],
                             [1, 1, 0.2, 0.04],
                             [1, 1, 1, 0.06],
                             [1, 1, 1, 1.0]])
    assert me.assign_ranks(significance) == [1, 1, 2, 2]
    assert me.rank_ranges([1, 1, 2, 2]) == [(1, 2), (1, 2), (3, 4), (3, 4)]
    assert me.assign_ranks(np.zeros((3, 3))) == [1, 2, 3]


def test_compare_metrics_orders_by_value_then_name_and_ranks_from_the_tests():
    human, chrf, bleu = mqm()
    metrics = {"bleu": bleu, "chrf": chrf, "copy": chrf.copy()}
    found = me.compare_metrics(human, metrics, me.Measure("kendall", "item"), resamples=200,
                               seed=3)
    values = {name: me.measure(human, m, me.Measure("kendall", "item")).value
              for name, m in metrics.items()}
    assert found.names == sorted(values, key=lambda name: (-values[name], name))
    assert found.names.index("chrf") == found.names.index("copy") - 1
    i, j = found.names.index("chrf"), found.names.index("copy")
    assert found.p_values[i, j] == found.p_values[j, i] == 1.0
    # every pair was tested higher against lower, from one stream in order
    random = np.random.RandomState(3)
    for (better, worse), test in found.tests.items():
        again = me.perm_both(human, metrics[worse], metrics[better],
                             me.Measure("kendall", "item"), 200, me.EarlyStop(), random)
        assert (again.p_value, again.resamples) == (test.p_value, test.resamples)
    assert found.ranks == me.assign_ranks(np.nan_to_num(found.p_values, nan=1.0))
    assert found.rank_ranges == me.rank_ranges(found.ranks)


# -- refusals -------------------------------------------------------------------------


@pytest.mark.parametrize("options, message", [
    ({"statistic": "kendal"}, "unknown statistic"),
    ({"average_by": "segment"}, "average_by"),
    ({"statistic": "pearson", "epsilon": 0.5}, "epsilon"),
    ({"statistic": "acc23", "epsilon": -1}, "epsilon"),
    ({"statistic": "acc23", "epsilon": math.inf}, "epsilon"),
    ({"statistic": "kendall-like", "threshold": 0}, "threshold"),
    ({"statistic": "pce", "average_by": "item"}, "pce"),
])
def test_impossible_measures_are_refused(options, message):
    with pytest.raises(UsageProblem, match=message):
        me.Measure(**options)


def test_pce_without_a_segment_that_every_system_has_is_refused():
    with pytest.raises(UsageProblem, match="there is none"):
        me.measure(table(2, [1, None, None, 4]), table(2, [1, 2, 3, 4]), me.Measure("pce"))


def test_pce_of_one_system_is_refused():
    with pytest.raises(UsageProblem, match="two systems"):
        me.measure(table(1, [1, 2, 3]), table(1, [1, 2, 3]), me.Measure("pce"))
