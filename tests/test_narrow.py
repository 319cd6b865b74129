"""Rows held in the narrowest type that keeps them exact (evalproto.base.narrow) give
every figure that float64 rows give, to the bit: corpus scores, intervals, paired
bootstrap, approximate randomization, groups, segment scores, the t-test. The float64
side is reduced by numpy alone (EVALPROTO_PURE_PYTHON=1), the narrow side by the compiled
sums wherever they apply."""

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS, EN_DE_HYP, EN_DE_REFS

from evalproto.base.compiled import PURE_PYTHON_VARIABLE
from evalproto.base.narrow import WHOLE_TYPES, RowStore, as_whole, narrowest, wider
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.chrf import CHRF
from evalproto.evaluators.exact_match import ExactMatch
from evalproto.evaluators.ter import TER
from evalproto.readers.text import read_corpus
from evalproto.sources.base import corpus_rows
from evalproto.stats.reductions import Analysis, analyse, segment_scores
from evalproto.stats.resampling import column_sums
from evalproto.stats.table import StatsTable


@pytest.mark.parametrize("values, kind", [
    ([[0, 255]], np.uint8), ([[-1, 127]], np.int8), ([[0, 256]], np.uint16),
    ([[-129, 5]], np.int16), ([[0, 70000]], np.uint32), ([[-40000, 1]], np.int32),
    ([[0, 2.0 ** 32]], np.float64), ([[0.5, 1]], np.float64), ([[np.nan, 1]], np.float64),
    ([[np.inf, 1]], np.float64), ([[-0.0, 1]], np.float64), ([[0.0, 3.0]], np.uint8),
])
def test_the_narrowest_type_holds_every_value_exactly(values, kind):
    rows = np.array(values, dtype=np.float64)
    assert narrowest(rows) == kind
    narrowed = rows.astype(kind)
    assert np.array_equal(narrowed.astype(np.float64), rows, equal_nan=True)
    assert np.array_equal(np.signbit(narrowed.astype(np.float64)), np.signbit(rows))


def test_a_chunk_that_needs_more_widens_the_whole_store():
    store = RowStore(6, 2, narrow=True)
    store.put(0, np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert store.rows.dtype == np.uint8 and store.rows.flags.f_contiguous
    store.put(2, np.array([[300.0, 0.0]]))
    store.put(3, np.array([[-1.0, 0.0]]))  # uint16 and int8: int32 holds both
    assert store.rows.dtype == np.int32 and store.rows.flags.f_contiguous
    store.put(4, np.array([[0.25, 7.0]]))
    assert store.rows.dtype == np.float64
    assert store.rows[:5].tolist() == [[1, 2], [3, 4], [300, 0], [-1, 0], [0.25, 7]]
    float64 = RowStore(2, 2, narrow=False)
    float64.put(0, np.array([[1.0, 2.0]]))
    assert float64.rows.dtype == np.float64


def test_every_pair_of_whole_types_widens_to_one_that_holds_both():
    for first in WHOLE_TYPES:
        for second in WHOLE_TYPES:
            joined = wider(first, second)
            for kind in (first, second):
                limits = np.iinfo(kind)
                extremes = np.array([limits.min, limits.max], dtype=kind)
                assert np.array_equal(extremes.astype(joined).astype(np.int64),
                                      extremes.astype(np.int64))


def test_as_whole_takes_only_the_given_types():
    rows = np.array([[1.0, 300.0]])
    assert as_whole(rows, (np.dtype(np.uint8),)) is None
    assert as_whole(rows).dtype == np.uint16
    own = np.zeros((2, 2), np.uint8)
    assert as_whole(own) is own


def test_whole_sums_are_float64s_sums_and_fractions_add_row_after_row():
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 200, size=(5000, 4)).astype(np.float64)
    for kind in (np.uint8, np.int16, np.uint32):
        narrowed = np.asfortranarray(rows.astype(kind))
        assert column_sums(narrowed).tolist() == column_sums(rows).tolist()
        assert column_sums(narrowed).dtype == np.float64
    huge = np.full((3, 2), 2 ** 31 - 1, np.int32)  # sums beyond 2**53 would round: as float64
    assert column_sums(huge).tolist() == column_sums(huge.astype(np.float64)).tolist()


def tables(metric, refs, systems, narrow):
    corpus = read_corpus(refs, systems)
    rows = corpus_rows(metric, corpus.refs, corpus.systems, narrow=narrow)
    return StatsTable("metric", metric, rows, corpus.ids, nrefs=len(refs))


def by_numpy(monkeypatch, tables, analysis):
    """analyse() with numpy's products and draws only, as the reference."""
    with monkeypatch.context() as patched:
        patched.setenv(PURE_PYTHON_VARIABLE, "1")
        return analyse(tables, analysis)


def plain(results):
    return [(r.system, r.group, r.score, r.mean, r.ci, r.p_value, r.stats.tolist(),
             dict(r.pairs), None if r.resampled is None else r.resampled.tolist())
            for r in results]


@pytest.mark.parametrize("metric, refs", [
    (BLEU(), DE_EN_REFS), (CHRF(word_order=2), DE_EN_REFS), (TER(), DE_EN_REFS[:1]),
    (TER(), DE_EN_REFS),  # averages of two lengths: halves, held in float64
])
@pytest.mark.parametrize("analysis", [
    Analysis(resamples=300), Analysis(paired="bs", paired_n=300, all_pairs=True),
    Analysis(paired="ar", paired_n=700, all_pairs=True), Analysis(resamples=50, seed=None),
])
def test_narrow_rows_give_float64s_figures_to_the_bit(monkeypatch, metric, refs, analysis):
    systems = [DE_EN_HYP, DE_EN_HYP2, DE_EN_REFS[1]]
    wide, narrow = (tables(metric, refs, systems, narrow) for narrow in (False, True))
    kinds = {rows.dtype for rows in narrow.rows.values()}
    assert kinds <= set(WHOLE_TYPES) or kinds == {np.dtype(np.float64)}
    assert all(np.array_equal(narrow.rows[name], wide.rows[name]) for name in wide.rows)
    if analysis.seed is None:  # unseeded draws differ run to run: the figures not drawn
        assert [r.score for r in analyse([narrow], analysis)] == [
            r.score for r in analyse([wide], analysis)]
        return
    assert plain(analyse([narrow], analysis)) == plain(by_numpy(monkeypatch, [wide], analysis))


def test_narrow_rows_give_the_same_groups_and_segment_scores(monkeypatch):
    narrow, wide = (tables(BLEU(), EN_DE_REFS, [EN_DE_HYP, EN_DE_REFS[1]], narrow)
                    for narrow in (True, False))
    for table in (narrow, wide):
        table.groups = [["odd" if i % 2 else "even"] for i in range(len(table.ids))]
    analysis = Analysis(resamples=100, paired="bs", paired_n=100)
    assert plain(analyse([narrow], analysis)) == plain(by_numpy(monkeypatch, [wide], analysis))
    assert [s.scores.tolist() for s in segment_scores([narrow])] == [
        s.scores.tolist() for s in segment_scores([wide])]


def test_narrow_rows_give_the_same_paired_t_test():
    narrow, wide = (tables(ExactMatch(), DE_EN_REFS[:1], [DE_EN_HYP, DE_EN_REFS[1]], narrow)
                    for narrow in (True, False))
    assert next(iter(narrow.rows.values())).dtype == np.uint8
    analysis = Analysis(paired="ttest")
    assert plain(analyse([narrow], analysis)) == plain(analyse([wide], analysis))
