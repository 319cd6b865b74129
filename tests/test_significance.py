"""All-pairs paired tests, clusters and the paired t-test: every pair is tested as a test
of that pair alone would test it; the t-test's p-values are scipy's ttest_rel's, and it
is refused where it would not test the corpus score."""

import math

import numpy as np
import pytest
from conftest import DATA, DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, json_rows, run_cli
from scipy import stats as scipy_stats

from evalproto.evaluators.bleu import BLEU
from evalproto.stats import resampling
from evalproto.stats.reductions import Analysis, analyse
from evalproto.stats.significance import clusters, paired_ttest, pairs_of
from evalproto.stats.table import StatsTable

SYSTEMS = [DE_EN_HYP, DE_EN_HYP2, str(DATA / "de-en.ref.B.en")]


def bleu_table(systems=SYSTEMS, refs=DE_EN_REFS[:1]):
    from evalproto.readers.text import read_corpus
    from evalproto.sources.base import corpus_rows
    corpus = read_corpus(refs, systems)
    metric = BLEU()
    return StatsTable("bleu", metric, corpus_rows(metric, corpus.refs, corpus.systems),
                      corpus.ids, nrefs=len(refs))


def test_all_pairs_are_each_pairs_own_paired_bootstrap():
    table = bleu_table()
    results = analyse([table], Analysis(paired="bs", paired_n=300, all_pairs=True))
    names = table.systems

    def tested_alone(i: int, j: int):
        return resampling.paired_bootstrap(table.rows[names[i]], table.rows[names[j]],
                                           table.figures, 300, 12345, table.resample_dtype)

    for i, j in pairs_of(3, True):
        alone = tested_alone(i, j)
        assert results[i].pairs[names[j]] == results[j].pairs[names[i]] == alone["score"].p_value
        # and the same pair's test with its systems the other way round
        assert tested_alone(j, i)["score"].p_value == alone["score"].p_value
    # the intervals are those of the tests against the first system, and its own
    for j in (1, 2):
        alone = tested_alone(0, j)
        assert (results[j].mean, results[j].ci, results[j].p_value) == (
            alone["score"].mean, alone["score"].ci, alone["score"].p_value)
        assert len(results[j].resampled) == 300
    assert results[0].p_value is None and results[0].baseline


def test_all_pairs_are_each_pairs_own_approximate_randomization():
    table = bleu_table()
    results = analyse([table], Analysis(paired="ar", paired_n=500, all_pairs=True))
    names = table.systems
    for i, j in pairs_of(3, True):
        alone = resampling.approximate_randomization(table.rows[names[i]], table.rows[names[j]],
                                                     table.figures, 500, 12345)
        assert results[i].pairs[names[j]] == alone["score"].p_value
        assert results[j].pairs[names[i]] == alone["score"].p_value


def test_all_pairs_do_not_change_the_tests_against_the_first_system():
    table = bleu_table()
    for test, n in (("bs", 200), ("ar", 300)):
        only = analyse([table], Analysis(paired=test, paired_n=n))
        every = analyse([table], Analysis(paired=test, paired_n=n, all_pairs=True))
        assert [(r.score, r.mean, r.ci, r.p_value) for r in only] == [
            (r.score, r.mean, r.ci, r.p_value) for r in every]
        assert set(only[1].pairs) == {table.systems[0]}
        assert set(every[1].pairs) == {table.systems[0], table.systems[2]}


def test_the_draw_order_budget_counts_a_system(monkeypatch):
    """Sums in sacrebleu's draw order (statistics not exact in float32) are spent up to
    MAX_DRAWN row gathers per system: a pass over three systems decides as a test of two
    does, so its sums are the pair tests' in every case."""
    rows = [np.random.default_rng(k).integers(1, 30, size=(40, 3)) / 3 for k in range(3)]

    def figures(sums):
        return {"score": sums[:, 0] / np.maximum(sums[:, 1], 1)}

    for budget in (40 * 50, 40 * 50 - 1):  # a system just in or just out of it
        monkeypatch.setattr(resampling, "MAX_DRAWN", budget)
        every = resampling.resampled_figures(rows, figures, 50, 3, np.float32)
        for j in (1, 2):
            pair = resampling.resampled_figures([rows[0], rows[j]], figures, 50, 3, np.float32)
            assert np.array_equal(every[j]["score"], pair[1]["score"])
            assert np.array_equal(every[0]["score"], pair[0]["score"])


@pytest.mark.parametrize("seed", range(6))
def test_paired_ttest_equals_scipy_ttest_rel(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    a = rng.normal(0.8, 0.1, n).round(int(rng.integers(2, 8)))
    b = a + rng.normal(rng.choice([0, 0.001, 0.02]), 0.05, n)
    expected = scipy_stats.ttest_rel(b, a).pvalue
    assert paired_ttest(a, b) == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert paired_ttest(b, a) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's, on identical samples
def test_paired_ttest_is_undefined_where_scipys_is():
    same = np.array([0.5, 0.25, 1.0])
    with np.errstate(all="ignore"):
        assert math.isnan(scipy_stats.ttest_rel(same, same).pvalue)
        assert math.isnan(paired_ttest(same, same))
        assert scipy_stats.ttest_rel(same + 1, same).pvalue == paired_ttest(same, same + 1) == 0
        assert math.isnan(paired_ttest([1.0], [2.0]))


@pytest.mark.parametrize("scores, p, higher, expected", [
    # 0 and 1 tie statistically, both beat 2 and 3, which tie
    ([40, 39, 30, 29], [[0, .3, .01, .01], [.3, 0, .01, .01], [.01, .01, 0, .5],
                        [.01, .01, .5, 0]], True, [[0, 1], [2, 3]]),
    # the ranking, not the given order, decides; lower is better
    ([30, 10, 20], [[0, .01, .01], [.01, 0, .01], [.01, .01, 0]], False, [[1], [2], [0]]),
    # 0 ~ 1 and 1 ~ 2 but 0 differs from 2: one cluster (no line can be drawn)
    ([3, 2, 1], [[0, .2, .01], [.2, 0, .2], [.01, .2, 0]], True, [[0, 1, 2]]),
    # NaN (undefined) is not significant
    ([2, 1], [[0, float("nan")], [float("nan"), 0]], True, [[0, 1]]),
    ([5.0], [[0]], True, [[0]]),
    # identical systems get sacrebleu's p = 1/(N+1), but equal scores are not told apart
    ([7, 7, 3], [[0, .001, .001], [.001, 0, .001], [.001, .001, 0]], True, [[0, 1], [2]]),
])
def test_clusters_follow_the_rule(scores, p, higher, expected):
    assert clusters(scores, np.array(p, dtype=float), higher) == expected


def imported(tmp_path, name, values):
    path = tmp_path / f"{name}.txt"
    path.write_text("".join(f"{float(value)!r}\n" for value in values))
    out = tmp_path / f"{name}.stats"
    result = run_cli("import-scores", str(path), "--metric", "COMET", "--system", name,
                     "-o", str(out))
    assert result.exit_code == 0, result.output
    return str(out)


def test_reduce_paired_ttest_equals_scipy_on_imported_scores(tmp_path):
    rng = np.random.default_rng(4)
    a = rng.uniform(0.3, 0.95, 500).round(4)
    b = (a + rng.normal(0.004, 0.03, 500)).round(4)
    files = [imported(tmp_path, "A", a), imported(tmp_path, "B", b)]
    rows = json_rows(run_cli("reduce", *files, "--paired-ttest", "-f", "json").output)
    assert rows[1]["p_value"] == pytest.approx(scipy_stats.ttest_rel(b, a).pvalue, rel=1e-12)
    assert rows[0]["baseline"] is True and "p_value" not in rows[0]
    assert rows[1]["score"] == pytest.approx(b.mean(), rel=1e-12)
    assert "seed" not in rows[1]["signature"]


def test_corpus_score_paired_ttest_of_exact_match_equals_scipy(tmp_path):
    refs = ["yes", "no", "maybe", "yes", "no", "yes", "a", "b"]
    a = ["yes", "no", "no", "yes", "yes", "yes", "a", "c"]
    b = ["yes", "yes", "maybe", "no", "no", "yes", "b", "b"]
    paths = []
    for name, lines in (("ref", refs), ("a", a), ("b", b)):
        paths.append(tmp_path / name)
        paths[-1].write_text("\n".join(lines) + "\n")
    rows = json_rows(run_cli("corpus-score", str(paths[0]), "-i", str(paths[1]), str(paths[2]),
                             "-m", "exact-match", "--paired-ttest", "-f", "json").output)
    hits = [[100.0 * (h == r) for h, r in zip(hyps, refs)] for hyps in (a, b)]
    assert rows[1]["p_value"] == pytest.approx(scipy_stats.ttest_rel(*hits).pvalue, rel=1e-12)


@pytest.mark.parametrize("metric, reason", [
    ("bleu", "is not the mean of its segment scores"),
    ("chrf", "is not the mean of its segment scores"),
    ("ter", "is not the mean of its segment scores"),
])
def test_paired_ttest_is_refused_for_metrics_that_are_not_means(metric, reason):
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2, "-m", metric,
                     "--paired-ttest")
    assert result.exit_code == 2
    assert reason in result.output and "test with the paired bootstrap" in result.output
    assert "Traceback" not in result.output


def test_paired_ttest_is_refused_for_an_external_evaluator():
    from conftest import script
    result = run_cli("corpus-score", *DE_EN_REFS, "-i", DE_EN_HYP, DE_EN_HYP2, "-e",
                     script("bleu-evaluator"), "--paired-ttest")
    assert result.exit_code == 2 and "does not declare" in result.output
