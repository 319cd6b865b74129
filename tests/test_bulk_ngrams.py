"""Counting n-grams in bulk: the same counts as Counters, and BLEU and chrF rows equal
to the one-by-one path and to sacrebleu's segment statistics, on real text. This is
the pure-Python path (EVALPROTO_PURE_PYTHON=1); test_native checks the compiled one
against it."""

from collections import Counter

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, EN_DE_HYP, EN_DE_REFS, MULTI_HYP, MULTI_REFS, read_lines
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF

import evalproto.evaluators.bulk_ngrams as bulk_ngrams
from evalproto.base.compiled import PURE_PYTHON_VARIABLE
from evalproto.base.errors import EvaluatorError
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.bulk_ngrams import References, Sequences, count_ngrams, matches
from evalproto.evaluators.chrf import CHRF

CORPORA = {"de-en": (DE_EN_REFS, DE_EN_HYP), "en-de": (EN_DE_REFS, EN_DE_HYP),
           "multilingual": (MULTI_REFS, MULTI_HYP)}
BLEU_OPTIONS = [{}, {"tokenize": "intl", "lowercase": True}, {"tokenize": "zh"},
                {"tokenize": "char", "max_ngram_order": 6}, {"max_ngram_order": 1},
                {"tokenize": "none", "max_ngram_order": 2}]
CHRF_OPTIONS = [{}, {"word_order": 2}, {"char_order": 4, "word_order": 1, "beta": 1},
                {"lowercase": True, "whitespace": True}, {"char_order": 0, "word_order": 2}]
AWKWARD_ITEMS = [
    (["the cat sat on the mat"], ""),  # empty hypothesis
    ([""], "a hypothesis against an empty reference"),
    (["", ""], ""),
    (["a a a a a a", "a a"], "a a a a"),  # clipping takes the largest reference count
    (["x y z", "x y z w v", "x"], "x y z w"),  # closest length, ties to the shorter
    (["𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀 beyond the BMP", "ÜBER straße"], "über 😀 Straße 𝔘𝔫𝔦"),
    (["one"], "one"),
    (["Punctuation, (brackets) and \"quotes\"!"], "Punctuation (brackets), and quotes!!"),
    (["one"], "one one"),  # a reference repeated across items, as in n-best lists
    (["a b a b", "a b a b"], "a b a b a"),  # and twice within one item
]


@pytest.fixture(autouse=True)
def pure_python(monkeypatch):
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")


def counter_counts(sequences, n):
    return [Counter(zip(*(sequence[i:] for i in range(n)))) for sequence in sequences]


@pytest.mark.parametrize("key_limit", [bulk_ngrams._KEY_LIMIT, 2 ** 32],
                         ids=["packed", "renumbered"])
def test_counts_and_matches_equal_counters(monkeypatch, key_limit):
    """Each sequence's counts are its Counter's, and each reference slot's matches are
    the intersection of its text's and its item's hypothesis' Counters, which fails if
    two n-grams share a code, one n-gram gets two, or a slot finds the wrong text or
    item. Slots repeat texts across items and within one. With the lower key limit,
    codes are renumbered between orders."""
    monkeypatch.setattr(bulk_ngrams, "_KEY_LIMIT", key_limit)
    random = np.random.default_rng(7)
    sequences = [[f"w{value}" for value in random.zipf(1.5, size=random.integers(0, 30))]
                 for _ in range(300)]
    hyps = 100
    slots = 400
    owner = np.sort(random.integers(0, hyps, size=slots))
    references = References(texts=[], owner=owner,
                            rank=np.arange(slots) - np.searchsorted(owner, owner),
                            distinct=random.integers(0, len(sequences) - hyps, size=slots))
    for n, counts in enumerate(count_ngrams(Sequences.of_tokens(sequences), 5), 1):
        expected = counter_counts(sequences, n)
        got = [sorted(counts.count[counts.sequence == s].tolist()) for s in range(300)]
        assert got == [sorted(counter.values()) for counter in expected]
        found = matches(counts, hyps, references)
        per_slot = np.bincount(found.reference, weights=found.count, minlength=slots)
        assert per_slot.tolist() == [
            sum((expected[hyps + text] & expected[owner]).values())
            for owner, text in zip(references.owner, references.distinct)]


def test_references_keep_each_distinct_text_once():
    references = References.of([(["a", "b"], "h1"), (["b"], "h2"), (["a", "a"], "h3")])
    assert references.texts == ["a", "b"]
    assert references.owner.tolist() == [0, 0, 1, 2, 2]
    assert references.rank.tolist() == [0, 1, 0, 0, 1]
    assert references.distinct.tolist() == [0, 1, 1, 0, 0]


def test_a_batch_too_large_for_exact_codes_is_refused(monkeypatch):
    monkeypatch.setattr(bulk_ngrams, "_KEY_LIMIT", 2 ** 10)
    with pytest.raises(ValueError, match="too many tokens in one batch"):
        count_ngrams(Sequences.of_tokens([[f"w{i}" for i in range(100)]] * 20), 2)


def test_character_sequences_count_code_points():
    texts = ["abcab", "", "😀a😀a", "ab"]
    counts = count_ngrams(Sequences.of_characters(texts), 2)
    assert counts[0].count.sum() == sum(map(len, texts))
    bigrams = {(sequence, count) for sequence, count in zip(counts[1].sequence, counts[1].count)}
    assert bigrams == {(0, 2), (0, 1), (2, 2), (2, 1), (3, 1)}


def corpus_items(corpus):
    ref_paths, hyp_path = CORPORA[corpus]
    refs = [read_lines(path) for path in ref_paths]
    return refs, read_lines(hyp_path), list(zip(zip(*refs), read_lines(hyp_path)))


METRIC_CASES = ([(BLEU, SacreBLEU, options) for options in BLEU_OPTIONS]
                + [(CHRF, SacreCHRF, options) for options in CHRF_OPTIONS])


@pytest.mark.slow
@pytest.mark.parametrize("corpus", CORPORA)
@pytest.mark.parametrize("ours, theirs, options", METRIC_CASES,
                         ids=[f"{ours.name}{options}" for ours, _, options in METRIC_CASES])
def test_rows_equal_one_by_one_and_sacrebleu(corpus, ours, theirs, options):
    refs, hyps, items = corpus_items(corpus)
    metric = ours(**options)
    rows = metric.stats_many(items + AWKWARD_ITEMS)
    assert rows.tolist() == metric._stats_one_by_one(items + AWKWARD_ITEMS).tolist()
    expected = theirs(**options)._extract_corpus_statistics(hyps, refs)
    assert rows[:len(items)].tolist() == np.array(expected, dtype=np.float64).tolist()


@pytest.mark.parametrize("ours, theirs", [(BLEU, SacreBLEU), (CHRF, SacreCHRF)],
                         ids=["bleu", "chrf"])
def test_rows_of_an_nbest_load_equal_sacrebleu(ours, theirs):
    """Each of 40 real references with 25 real hypotheses, one after another, as a tuner
    sends them: the references repeat, and are counted once per batch."""
    refs, hyps, _ = corpus_items("de-en")
    nbest_refs = [ref for ref in refs[0][:40] for _ in range(25)]
    nbest_hyps = [hyps[(i * 7 + k) % len(hyps)] for i in range(40) for k in range(25)]
    items = [([ref], hyp) for ref, hyp in zip(nbest_refs, nbest_hyps)]
    rows = ours().stats_many(items)
    expected = theirs()._extract_corpus_statistics(nbest_hyps, [nbest_refs])
    assert rows.tolist() == np.array(expected, dtype=np.float64).tolist()


def test_chrf_keeps_the_first_of_equally_good_references():
    chrf = CHRF()
    same_f = ["the cat", "the cat"]  # equal F, different reference counts would show
    assert chrf.stats_many([(same_f, "the cat sat")]).tolist() == [
        chrf.stats(same_f, "the cat sat")]
    near, far = "the cat sat on the mat", "completely unrelated words"
    assert chrf.stats_many([([far, near], "the cat sat on a mat")]).tolist() == [
        chrf.stats([near], "the cat sat on a mat")]


@pytest.mark.parametrize("metric", [BLEU(), CHRF()], ids=["bleu", "chrf"])
def test_a_failing_item_in_a_batch_is_named(metric, monkeypatch):
    """A batch that fails is redone item by item, so that the error names the item
    (on the pure-Python path, which tokenizes through the patched method)."""
    cased = metric._tokens if hasattr(metric, "_tokens") else metric._cased

    def refuse_bad(text):
        if text == "BAD":
            raise ValueError("cannot read BAD")
        return cased(text)

    monkeypatch.setattr(metric, "_tokens" if hasattr(metric, "_tokens") else "_cased", refuse_bad)
    items = [(["a b c"], "a b"), (["d e"], "d"), (["f"], "BAD")]
    with pytest.raises(EvaluatorError,
                       match="item 3: evaluator .* failed: cannot read BAD") as caught:
        metric.stats_many(items)
    assert caught.value.item == 2


@pytest.mark.parametrize("metric", [BLEU(), CHRF()], ids=["bleu", "chrf"])
def test_an_item_without_references_is_a_value_error_that_names_it(metric):
    with pytest.raises(ValueError, match="segment 3: no reference"):
        metric.stats_many([(["a b c"], "a b"), (["d e"], "d"), ([], "no references")])
