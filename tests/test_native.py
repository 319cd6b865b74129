"""The compiled kernels (evalproto.evaluators._native) give the pure-Python reference code's rows
(EVALPROTO_PURE_PYTHON=1) and sacrebleu's, bit for bit, and sacrebleu's corpus scores,
on real text for every option, on generated text, and, for TER, at the edit search's
limits."""

import math
import random
import sys
import threading
import time
from functools import lru_cache
from itertools import product
from types import SimpleNamespace
from typing import Any, Callable, List, Tuple

import numpy as np
import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, EN_DE_HYP, EN_DE_REFS, MULTI_HYP, MULTI_REFS, read_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF
from sacrebleu.metrics import TER as SacreTER
from sacrebleu.metrics import lib_ter
from sacrebleu.metrics import ter as sacre_ter
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

import evalproto.evaluators
from evalproto.base.compiled import PURE_PYTHON_VARIABLE, NativeMissingError
from evalproto.base.errors import SetupError
from evalproto.evaluators import _native, ter_search
from evalproto.evaluators import bleu as bleu_module
from evalproto.evaluators import chrf as chrf_module
from evalproto.evaluators import ter as ter_module
from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.chrf import CHRF
from evalproto.evaluators.native import as_rows
from evalproto.evaluators.ter import TER
from evalproto.metrics.evaluator import Evaluator, Item
from evalproto.readers import lmlogs

CORPORA = {"de-en": (DE_EN_REFS, DE_EN_HYP), "en-de": (EN_DE_REFS, EN_DE_HYP),
           "multilingual": (MULTI_REFS, MULTI_HYP)}


@lru_cache(maxsize=None)
def corpus(name: str, references: int) -> Tuple[List[List[str]], List[str]]:
    """(reference streams, hypotheses) of a test corpus with its first 1 or 2 references."""
    ref_paths, hyp_path = CORPORA[name]
    return [read_lines(path) for path in ref_paths[:references]], read_lines(hyp_path)


def items_of(streams: List[List[str]], hyps: List[str]) -> List[Item]:
    """Items (refs, hyp) from reference streams and hypotheses."""
    return [(list(refs), hyp) for refs, hyp in zip(zip(*streams), hyps)]


@pytest.fixture
def kernel_calls(monkeypatch: pytest.MonkeyPatch) -> List[int]:
    """Counts the evaluators' calls for the kernels, so that a test of the compiled
    path fails if the evaluators quietly took the Python one."""
    calls = []
    for module in (bleu_module, chrf_module, ter_module):
        original = module.kernels
        monkeypatch.setattr(module, "kernels",
                            lambda original=original: calls.append(1) or original())
    return calls


@pytest.fixture
def both_paths(monkeypatch: pytest.MonkeyPatch, kernel_calls: List[int]) -> Callable:
    """rows(metric, items) -> (compiled rows, pure-Python rows)."""

    def rows(metric: Evaluator, items: List[Item]) -> Tuple[np.ndarray, np.ndarray]:
        monkeypatch.delenv(PURE_PYTHON_VARIABLE, raising=False)
        calls = len(kernel_calls)
        native = metric.stats_many(items)
        assert len(kernel_calls) == calls + 1, "the compiled kernel was not used"
        monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
        python = metric.stats_many(items)
        assert len(kernel_calls) == calls + 1, "EVALPROTO_PURE_PYTHON=1 still used the kernel"
        monkeypatch.delenv(PURE_PYTHON_VARIABLE)
        return native, python

    return rows


def check_parity(both_paths: Callable, ours: Evaluator, theirs: Any, name: str,
                 references: int) -> None:
    """Compiled rows == pure-Python rows == sacrebleu's, and the corpus score == sacrebleu's."""
    streams, hyps = corpus(name, references)
    native, python = both_paths(ours, items_of(streams, hyps))
    assert native.dtype == np.float64 and native.shape == (len(hyps), len(ours.stat_names))
    assert np.array_equal(native, python)
    assert np.array_equal(native, np.array(theirs._extract_corpus_statistics(hyps, streams),
                                           dtype=np.float64))
    summed, expected = native.sum(axis=0), theirs.corpus_score(hyps, streams).score
    assert theirs._compute_score_from_stats(summed.tolist()).score == expected
    if isinstance(ours, BLEU):
        # Our BLEU score (not a kernel's work) takes numpy's exp, which on AVX-512
        # machines can differ from math.exp in the last bit.
        assert math.isclose(ours.score(summed), expected, rel_tol=1e-14)
    else:
        assert ours.score(summed) == expected


# ---------------------------------------------------------------- real text, every option

@pytest.mark.slow
@pytest.mark.parametrize("references", [1, 2])
@pytest.mark.parametrize("name", CORPORA)
@pytest.mark.parametrize("tokenize, lowercase", list(product(["13a", "none", "char", "intl"],
                                                             [False, True])))
def test_bleu_rows_on_real_text(both_paths, name, references, tokenize, lowercase):
    for order in range(1, 6):
        options = {"tokenize": tokenize, "lowercase": lowercase, "max_ngram_order": order}
        check_parity(both_paths, BLEU(**options), SacreBLEU(**options), name, references)


@pytest.mark.slow
@pytest.mark.parametrize("tokenize", ["zh", "ja-mecab", "ko-mecab"])
def test_bleu_rows_with_other_python_tokenizers(both_paths, tokenize):
    """Tokenizers the kernel does not have tokenize in Python; the kernel splits their
    output ('none')."""
    try:
        BLEU(tokenize=tokenize)
    except SetupError:
        pytest.skip(f"the {tokenize} tokenizer's extra is not installed")
    for name, references, lowercase in product(CORPORA, [1, 2], [False, True]):
        options = {"tokenize": tokenize, "lowercase": lowercase}
        check_parity(both_paths, BLEU(**options), SacreBLEU(**options), name, references)


CHRF_OPTIONS = [
    {},
    {"word_order": 2},
    {"char_order": 1},
    {"char_order": 3, "word_order": 2, "beta": 1},
    {"char_order": 0, "word_order": 2},
    {"char_order": 0, "word_order": 1, "beta": 3},
    {"beta": 0},
    {"beta": 3, "word_order": 2},
    {"whitespace": True},
    {"whitespace": True, "word_order": 2, "lowercase": True},
    {"eps_smoothing": True},
    {"eps_smoothing": True, "word_order": 2, "char_order": 4},
    {"lowercase": True},
    {"lowercase": True, "word_order": 2, "eps_smoothing": True, "whitespace": True, "beta": 1},
]


@pytest.mark.slow
@pytest.mark.parametrize("references", [1, 2])
@pytest.mark.parametrize("name", CORPORA)
def test_chrf_rows_on_real_text(both_paths, name, references):
    for options in CHRF_OPTIONS:
        check_parity(both_paths, CHRF(**options), SacreCHRF(**options), name, references)


def remembering(function: Callable) -> Callable:
    """`function(hyp, ref)` remembering its results per (hyp words, ref words)."""
    remembered = lru_cache(maxsize=None)(lambda hyp, ref: function(list(hyp), list(ref)))
    return lambda hyp, ref: remembered(tuple(hyp), tuple(ref))


REMEMBERED_EDITS = [(sacre_ter, remembering(lib_ter.translation_edit_rate)),
                    (ter_module, remembering(ter_search.translation_edit_rate))]


@pytest.fixture
def remembered_edits(monkeypatch: pytest.MonkeyPatch) -> None:
    """sacrebleu's and the Python reference's edit searches remember their results
    across option sets, many of which tokenize a line alike: both are pure functions,
    so the rows they give are the same, sooner."""
    for module, remembered in REMEMBERED_EDITS:
        monkeypatch.setattr(module, "translation_edit_rate", remembered)


@pytest.mark.slow
@pytest.mark.parametrize("references", [1, 2])
@pytest.mark.parametrize("name", CORPORA)
def test_ter_rows_on_real_text(both_paths, remembered_edits, name, references):
    for flags in product([False, True], repeat=4):
        options = dict(zip(("normalized", "no_punct", "asian_support", "case_sensitive"), flags))
        check_parity(both_paths, TER(**options), SacreTER(**options), name, references)


@pytest.mark.parametrize("options", [{"normalized": True}, {"normalized": True, "no_punct": True,
                                                          "case_sensitive": True}])
def test_ter_tokenizes_references_twice_as_sacrebleu_does(both_paths, options):
    """A second Tercom pass splits "Squire's" once more; sacrebleu makes it on references."""
    hyps = ["Die Kette Squire's berichtet, dass 30 Prozent planen.", "Squire's, also"]
    streams = [["Squire's, eine andere Kette, meldet, dass 30 Prozent planen.", "Squire's, too"]]
    native, python = both_paths(TER(**options), items_of(streams, hyps))
    assert np.array_equal(native, python)
    sacre = SacreTER(**options)._extract_corpus_statistics(hyps, streams)
    assert np.array_equal(native, np.array(sacre, dtype=np.float64))
    once = TER(**options).tokenizer
    assert native[1, 1] != len(once(streams[0][1]).split())  # the case is one that differs


@pytest.mark.slow
def test_a_batch_of_several_corpora_with_varying_reference_counts(both_paths):
    """Segments with one, two or three references (a repeated one among them) in one
    batch, as a tuning load or a merged corpus gives."""
    items = []
    for number, name in enumerate(CORPORA):
        streams, hyps = corpus(name, 2)
        for line, (refs, hyp) in enumerate(items_of(streams, hyps)):
            items.append((refs[:1 + (line + number) % 3] + refs[:(line % 3 == 2)], hyp))
    for metric in (BLEU(), BLEU(tokenize="char", max_ngram_order=3), CHRF(word_order=2),
                   CHRF(whitespace=True, lowercase=True), TER(normalized=True)):
        native, python = both_paths(metric, items)
        assert np.array_equal(native, python)


# ---------------------------------------------------------------- generated text

PIECES = ["a", "b", "the", "Cat", "ÉTÉ", "ß", "İ", "Σ", "ς", "1", "9", "0", ".", ",", "-", "'",
          "...", ",,", "--", "!?", "(", ")", "[", "]", "$", "%", "/", ":", "@", "`", "{", "~",
          "\\", '"', "&", "&quot;", "&amp;", "&lt;", "&gt;", "&amp;quot;", "<skipped>", "\n",
          "-\n", "3.14", "1,000", "2-3", "10-", "-5", "e\u0301", "\u0301", "\u0308", "漢", "字",
          "日本語", "。", "，", "한국어", "Москва", "😀", "𝔘", " ", "  ", "\t", "\r", "\x0b",
          "\x1c", "\x1f", "\x85", "\xa0", "\u1680", "\u2000", "\u200a", "\u200b", "\u2028",
          "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "Squire's", "'s", "n't",
          "\udcff", "\ud800"]  # lone surrogates: Python's str holds them, and so must we
texts = st.one_of(
    st.lists(st.sampled_from(PIECES), max_size=30).map("".join),
    st.text(max_size=40),
    st.just(""),
    st.lists(st.sampled_from(PIECES[:20] + [" "] * 10), min_size=150, max_size=300).map("".join),
)
generated_items = st.lists(st.tuples(st.lists(texts, min_size=1, max_size=4), texts),
                           min_size=1, max_size=6)
short_texts = st.one_of(st.lists(st.sampled_from(PIECES), max_size=30).map("".join),
                        st.text(max_size=40))
short_items = st.lists(st.tuples(st.lists(short_texts, min_size=1, max_size=4), short_texts),
                       min_size=1, max_size=6)
"""For TER, whose Python reference is slow on long lines (the word tests below have
long ones)."""


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(generated_items, st.sampled_from(["13a", "none", "char", "intl"]), st.booleans(),
       st.integers(min_value=1, max_value=5))
def test_bleu_rows_on_generated_text(items, tokenize, lowercase, order):
    bleu = BLEU(tokenize=tokenize, lowercase=lowercase, max_ngram_order=order)
    assert np.array_equal(native_rows(bleu, items), python_rows(bleu, items))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(generated_items, st.lists(texts, min_size=1, max_size=4),
       st.sampled_from(["13a", "none", "char"]), st.integers(min_value=1, max_value=5))
def test_bleu_rows_of_systems_that_share_references(items, other_hyps, tokenize, order):
    """Each segment's very reference objects with several hypotheses in a row, as
    corpus_rows sends the systems of a segment (the kernel then builds one table for
    them): the rows of references given as copies, and the Python code's."""
    items = [([ref.strip() for ref in refs], hyp.strip()) for refs, hyp in items]
    shared = [(refs, hyp) for refs, first in items for hyp in [first, *other_hyps]]
    copies = [["#" + ref for ref in refs] for refs, _ in shared]
    copies = [[ref[1:] for ref in refs] for refs in copies]
    hyps = [hyp for _, hyp in shared]
    rows = as_rows(_native.bleu_rows(hyps, [refs for refs, _ in shared], order, tokenize),
                   2 + 2 * order)
    assert np.array_equal(rows, as_rows(_native.bleu_rows(hyps, copies, order, tokenize),
                                        2 + 2 * order))
    bleu = BLEU(tokenize=tokenize, max_ngram_order=order)
    assert np.array_equal(rows, python_rows(bleu, shared))


TRICKY_13A = ["word-\n", "word-\n \t", "co-\noperate", "a -\n\n", "1-\n", "<skip<skipped>ped>",
              "<SKIPPED>", "x<skipped>-\ny", "&amp;quot;", "&amp;lt;b&amp;gt;", "&quot;&quot;",
              "&&amp;",
              "1.5,2 .3 ,4 a.b,c 5-6 7- -8 9.-", "..,,.", "end.", ".start", "1,000.50-2",
              "\u3000a\u2028b\x85", "\x1c\x1d-\n", "", " ", "-\n", "\n-"]


@pytest.mark.parametrize("line", TRICKY_13A)
def test_13a_on_lines_where_its_steps_interact(line):
    """rstrip before the line rules (a final "-\n" stays "-"), replacements in
    sacrebleu's order, one pass each."""
    assert _native.tokenize_13a(line) == Tokenizer13a()(line.rstrip())


def test_13a_on_every_short_line_of_the_characters_its_rules_match():
    """Every line of up to five characters among a letter, a digit, a period, a comma, a
    dash, a parenthesis (of the first rule's class) and whitespace: where the rules'
    matches meet and consume each other's characters, and where the kernel tokenizes a
    word on its own."""
    tokenize = Tokenizer13a()
    lines = ["".join(chars) for length in range(6) for chars in product("a1.,-( \t\n",
                                                                         repeat=length)]
    assert [_native.tokenize_13a(line) for line in lines] == \
        [tokenize(line.rstrip()) for line in lines]


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_13a_tokenizes_any_text_as_sacrebleu(lines):
    """The kernel's 13a tokens are sacrebleu's, and so are its rows against sacrebleu's
    13a tokens given to the kernel as 'none'."""
    tokenized = [Tokenizer13a()(line.rstrip()) for line in lines]
    assert [_native.tokenize_13a(line) for line in lines] == tokenized
    refs = [[line] for line in reversed(lines)]
    tokenized_refs = [[Tokenizer13a()(line.rstrip())] for line in reversed(lines)]
    assert np.array_equal(as_rows(_native.bleu_rows(lines, refs, 4, "13a"), 10),
                          as_rows(_native.bleu_rows(tokenized, tokenized_refs, 4, "none"), 10))
    own = as_rows(_native.bleu_rows(lines, [[line] for line in lines], 1, "13a"), 4)
    assert own[:, 0].tolist() == [len(tokens.split()) for tokens in tokenized]
    assert np.array_equal(own[:, 2], own[:, 0])  # every token matches itself


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(generated_items, st.integers(min_value=0, max_value=6),
       st.integers(min_value=0, max_value=3), st.integers(min_value=0, max_value=3),
       st.booleans(), st.booleans(), st.booleans())
def test_chrf_rows_on_generated_text(items, char_order, word_order, beta, whitespace,
                                     eps_smoothing, lowercase):
    if char_order + word_order == 0:
        char_order = 6
    chrf = CHRF(char_order=char_order, word_order=word_order, beta=beta, whitespace=whitespace,
                eps_smoothing=eps_smoothing, lowercase=lowercase)
    assert np.array_equal(native_rows(chrf, items), python_rows(chrf, items))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(short_items, st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_ter_rows_on_generated_text(items, normalized, no_punct, asian_support, case_sensitive):
    ter = TER(normalized=normalized, no_punct=no_punct, asian_support=asian_support,
              case_sensitive=case_sensitive)
    assert np.array_equal(native_rows(ter, items), python_rows(ter, items))


def native_rows(metric: Evaluator, items: List[Item]) -> np.ndarray:
    """stats_many by the kernel (hypothesis' tests cannot take function fixtures)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(PURE_PYTHON_VARIABLE, raising=False)
        return metric.stats_many(items)


def python_rows(metric: Evaluator, items: List[Item]) -> np.ndarray:
    """stats_many by the pure-Python reference code."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(PURE_PYTHON_VARIABLE, "1")
        return metric.stats_many(items)


def ter_native(hyp: List[str], refs: List[List[str]]) -> List[float]:
    """The kernel's [edits, avg_ref_len] of one segment given as word lists."""
    return as_rows(_native.ter_rows([hyp], [refs]), 2)[0].tolist()


few_words = st.lists(st.sampled_from("abcde"), max_size=40)
many_words = st.lists(st.sampled_from("abcdefgh"), max_size=130)


@settings(max_examples=200, deadline=None)
@given(few_words, few_words)
def test_ter_search_on_generated_words_equals_lib_ter(hyp, ref):
    """Five words: many equal spans, so many shift candidates and shifts."""
    assert ter_native(hyp, [ref]) == [*lib_ter.translation_edit_rate(hyp, ref)]


@settings(max_examples=200, deadline=None)
@given(many_words, many_words, st.integers(min_value=0, max_value=3))
def test_ter_search_on_long_generated_words_equals_the_reference(hyp, ref, cut):
    """Up to 130 words: references beyond 64 words, narrow beams, very unequal
    lengths (a cut shortens one side to a few words)."""
    if cut == 1:
        hyp = hyp[:3]
    elif cut == 2:
        ref = ref[:3]
    assert ter_native(hyp, [ref]) == [*ter_search.translation_edit_rate(hyp, ref)]


def test_ter_takes_words_as_lists_or_as_text():
    streams, hyps = corpus("de-en", 2)
    words = [hyp.lower().split() for hyp in hyps]
    ref_words = [[ref.lower().split() for ref in refs] for refs in zip(*streams)]
    as_lists = as_rows(_native.ter_rows(words, ref_words), 2)
    texts = [tuple(" \t".join(w) for w in refs) for refs in ref_words]
    as_text = as_rows(_native.ter_rows([" ".join(w) for w in words], texts), 2)
    assert np.array_equal(as_lists, as_text)
    assert as_lists[:, 0].sum() > 0


# ---------------------------------------------------------------- TER at its limits

def test_the_limits_are_lib_ters():
    assert (_native.MAX_SHIFT_SIZE, _native.MAX_SHIFT_DIST, _native.BEAM_WIDTH,
            _native.MAX_SHIFT_CANDIDATES) == (lib_ter._MAX_SHIFT_SIZE, lib_ter._MAX_SHIFT_DIST,
                                              lib_ter._BEAM_WIDTH, lib_ter._MAX_SHIFT_CANDIDATES)


@pytest.mark.parametrize("distance, edits", [(50, 1), (51, 8)])
def test_ter_shift_distance_edge(distance, edits):
    """A block of four words moved `distance` words ahead: one shift within
    MAX_SHIFT_DIST (50), beyond it deletions and insertions instead."""
    ref = [f"w{i}" for i in range(70)]
    hyp = ref[distance:distance + 4] + ref[:distance] + ref[distance + 4:]
    assert [*lib_ter.translation_edit_rate(hyp, ref)] == [edits, 70]
    assert ter_native(hyp, [ref]) == [edits, 70]


def random_words(seed: int) -> Tuple[List[str], List[str]]:
    """A hypothesis and a reference of 40 to 99 words out of three."""
    generator = random.Random(seed)
    hyp = [generator.choice("abc") for _ in range(generator.randrange(40, 100))]
    return hyp, [generator.choice("abc") for _ in range(generator.randrange(40, 100))]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 3])
def test_ter_candidate_cap_and_full_cache(monkeypatch, seed):
    """Three words in long sentences: lib_ter stops at 1000 candidates, which here
    changes the edits (without the cap it finds fewer), and its prefix cache of rows
    fills up; the kernel gives lib_ter's capped result."""
    hyp, ref = random_words(seed)
    caches = []

    class Recorded(lib_ter.BeamEditDistance):
        def __init__(self, words_ref):
            super().__init__(words_ref)
            caches.append(self)

    monkeypatch.setattr(lib_ter, "BeamEditDistance", Recorded)
    expected = [*lib_ter.translation_edit_rate(hyp, ref)]
    assert caches[-1]._cache_size >= lib_ter._MAX_CACHE_SIZE
    assert ter_native(hyp, [ref]) == expected
    monkeypatch.setattr(lib_ter, "_MAX_SHIFT_CANDIDATES", 10 ** 9)
    assert lib_ter.translation_edit_rate(hyp, ref)[0] < expected[0]


@pytest.mark.slow
def test_lib_ters_row_cache_does_not_change_its_results(monkeypatch):
    """Why the kernel needs no copy of lib_ter's cache: every hypothesis one search
    sees is a shift of the first, of the same length and so the same beam, and a
    cached row is the row its prefix gets anyway. Without a cache, the same edits."""
    cases = [random_words(seed) for seed in (1, 3)]
    cases.append(corpus_words("en-de"))
    expected = [lib_ter.translation_edit_rate(hyp, ref) for hyp, ref in cases]
    monkeypatch.setattr(lib_ter, "_MAX_CACHE_SIZE", 0)
    assert [lib_ter.translation_edit_rate(hyp, ref) for hyp, ref in cases] == expected
    assert [ter_native(hyp, [ref]) for hyp, ref in cases] == [[*pair] for pair in expected]


def corpus_words(name: str) -> Tuple[List[str], List[str]]:
    """The longest hypothesis of a corpus and its first reference, as words."""
    streams, hyps = corpus(name, 1)
    line = max(range(len(hyps)), key=lambda i: len(hyps[i].split()))
    return hyps[line].lower().split(), streams[0][line].lower().split()


@pytest.mark.slow
def test_ter_beam_edges():
    """Very unequal lengths (the beam widens past ratio 50), empty sides, and a long
    pair whose beam is narrower than the reference."""
    generator = random.Random(11)
    cases = [(["a", "b"], [generator.choice("abc") for _ in range(300)]),
             ([generator.choice("abc") for _ in range(300)], ["a", "b"]),
             ([], ["a", "b"]), (["a", "b"], []), ([], []),
             ([generator.choice("abcdefghij") for _ in range(150)],
              [generator.choice("abcdefghij") for _ in range(140)])]
    for hyp, ref in cases:
        assert ter_native(hyp, [ref]) == [*ter_search.translation_edit_rate(hyp, ref)]


def shifted_blocks(common: int, before: int, after: int,
                   swap: bool) -> Tuple[List[str], List[str]]:
    """A reference with `before` words in front of a shared run and a hypothesis with
    `after` words behind it (or the other way round): the best alignment runs about
    `before` cells off the diagonal, at the edge of the 25-cell beam."""
    shared = [f"c{i}" for i in range(common)]
    ref = [f"x{i}" for i in range(before)] + shared
    hyp = shared + [f"y{i}" for i in range(after)]
    return (ref, hyp) if swap else (hyp, ref)


@pytest.mark.slow
@pytest.mark.parametrize("common, before, after, swap", [(56, 24, 25, False), (79, 24, 26, True)])
def test_ter_alignment_along_the_beams_edge(monkeypatch, common, before, after, swap):
    """Where the beam's diagonal floor(i * ratio) lands decides these edits: rounding
    it instead changes lib_ter's result."""
    hyp, ref = shifted_blocks(common, before, after, swap)
    expected = [*lib_ter.translation_edit_rate(hyp, ref)]
    assert ter_native(hyp, [ref]) == expected
    monkeypatch.setattr(lib_ter, "math", SimpleNamespace(floor=round, ceil=math.ceil))
    assert [*lib_ter.translation_edit_rate(hyp, ref)] != expected


def test_ter_takes_the_fewest_edits_and_the_mean_reference_length():
    hyp = "a b c d".split()
    refs = ["a b c d e f".split(), "a b x d".split(), "b".split()]
    assert ter_native(hyp, refs) == [1, (6 + 4 + 1) / 3]


# ---------------------------------------------------------------- the module itself

def test_whitespace_is_what_str_split_splits_on():
    """Every code point str.isspace() calls whitespace, and those below U+3100 that
    it does not, split (or do not split) a 'none' token in two."""
    spaces = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    points = sorted(set(spaces) | set(range(0x3100)))
    texts = [f"a{chr(c)}b" for c in points]
    rows = as_rows(_native.bleu_rows(texts, [["x"]] * len(texts), 1, "none"), 4)
    assert rows[:, 0].tolist() == [2.0 if chr(c).isspace() else 1.0 for c in points]
    chrf = as_rows(_native.chrf_rows(texts, [["ab"]] * len(texts), 1, 0, 2, False, False), 3)
    assert chrf[:, 0].tolist() == [2.0 if chr(c).isspace() else 3.0 for c in points]


def test_rows_are_float64_arrays_over_the_kernels_buffer():
    buffer = _native.chrf_rows(["a b", "c"], [["a b"], ["c", "d"]], 6, 2, 2, False, False)
    rows = as_rows(buffer, 24)
    assert isinstance(buffer, bytearray) and rows.shape == (2, 24)
    assert rows.base is not None and rows.flags.writeable
    rows[0, 0] = 99
    assert np.frombuffer(buffer, dtype=np.float64)[0] == 99
    assert as_rows(_native.bleu_rows([], [], 4, "13a"), 10).shape == (0, 10)


@pytest.mark.parametrize("call, error, message", [
    (lambda: _native.bleu_rows(["a"], [[]], 4, "13a"), ValueError, "no reference"),
    (lambda: _native.bleu_rows(["a"], [["a"], ["b"]], 4, "13a"), ValueError, "1 hypotheses but 2"),
    (lambda: _native.bleu_rows(["a"], [["a"]], 4, "intl"), ValueError, "tokenizer"),
    (lambda: _native.bleu_rows(["a"], [["a"]], 0, "13a"), ValueError, "max_order"),
    (lambda: _native.bleu_rows([None], [["a"]], 4, "13a"), TypeError, r"hyps\[0\]"),
    (lambda: _native.bleu_rows(["a"], ["ab"], 4, "13a"), TypeError, r"refs\[0\] must be a list"),
    (lambda: _native.bleu_rows(["a"], [["a", 3]], 4, "13a"), TypeError, r"refs\[0\]\[1\]"),
    (lambda: _native.chrf_rows(["a"], [["a"]], 0, 0, 2, False, False), ValueError, "orders"),
    (lambda: _native.chrf_rows(["a"], [["a"]], 6, 0, -1, False, False), ValueError, "beta"),
    (lambda: _native.ter_rows([["a", 1]], [["a"]]), TypeError, r"hyps\[0\]\[1\]"),
    (lambda: _native.ter_rows(["a"], [[]]), ValueError, "no reference"),
    (lambda: _native.ter_rows(["a"], ["ab"]), TypeError, r"refs\[0\] must be a list"),
    (lambda: _native.ter_rows(["a"], [["a"], ["b"]]), ValueError, "1 hypotheses but 2"),
])
def test_bad_arguments_are_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_bad_item_is_named_by_the_evaluator():
    with pytest.raises(ValueError, match="segment 2: no reference"):
        BLEU().stats_many([(["a"], "a"), ([], "b")])


def test_a_missing_extension_is_explained(monkeypatch):
    monkeypatch.delenv(PURE_PYTHON_VARIABLE, raising=False)
    monkeypatch.setitem(sys.modules, "evalproto.evaluators._native", None)
    monkeypatch.delattr(evalproto.evaluators, "_native")
    for metric in (BLEU(), CHRF(), TER()):
        with pytest.raises(NativeMissingError, match=r"pip install -e \..*C\+\+ compiler|"
                                                     r"C\+\+ compiler.*pip install -e \."):
            metric.stats_many([(["a b"], "a b")])
    monkeypatch.setenv(PURE_PYTHON_VARIABLE, "1")
    assert BLEU().stats_many([(["a b"], "a b")]).tolist() == [[2, 2, 2, 1, 0, 0, 2, 1, 0, 0]]


@pytest.mark.slow
def test_kernels_release_the_gil_and_run_in_threads_alike():
    """While one thread is inside a kernel, another runs Python code; rows computed in
    two threads at once are the rows computed alone."""
    generator = random.Random(2)
    hyps = [[generator.choice("abcdef") for _ in range(60)] for _ in range(1000)]
    refs = [[[generator.choice("abcdef") for _ in range(60)]] for _ in range(1000)]
    alone = as_rows(_native.ter_rows(hyps, refs), 2)
    entered, results = threading.Event(), [None, None]

    def work(slot: int) -> None:
        entered.set()
        results[slot] = as_rows(_native.ter_rows(hyps, refs), 2)

    worker = threading.Thread(target=work, args=(0,))
    start = time.perf_counter()
    worker.start()
    entered.wait()
    steps = 0
    while worker.is_alive():
        steps += 1
    took = time.perf_counter() - start
    assert took < 0.05 or steps > 1000, (took, steps)
    pair = [threading.Thread(target=work, args=(slot,)) for slot in (0, 1)]
    for thread in pair:
        thread.start()
    for thread in pair:
        thread.join()
    assert all(np.array_equal(result, alone) for result in results)


def test_a_batch_split_across_threads_gives_each_segments_own_rows():
    """A large batch runs on several threads (native/module.cpp's kernel_threads), each
    over a range of segments; every row equals the segment scored alone, also where
    runs of equal references cross a range's start (BLEU shares their table)."""
    generator = random.Random(5)
    words = ["a", "b", "c", "d.", "e,", "f"]
    refs, hyps = [], []
    for _ in range(300):
        shared = [" ".join(generator.choices(words, k=generator.randint(0, 12)))
                  for _ in range(generator.randint(1, 3))]
        for _ in range(generator.randint(1, 5)):  # each system of one segment
            refs.append(list(shared))
            hyps.append(" ".join(generator.choices(words, k=generator.randint(0, 12))))
    calls = [(lambda h, r: _native.bleu_rows(h, r, 4, "13a"), 10),
             (lambda h, r: _native.chrf_rows(h, r, 6, 2, 2, False, False), 24),
             (lambda h, r: _native.ter_rows(h, r), 2)]
    for call, width in calls:
        whole = as_rows(call(hyps, refs), width)
        alone = np.vstack([as_rows(call([hyp], [ref]), width) for hyp, ref in zip(hyps, refs)])
        assert len(hyps) >= 600 and np.array_equal(whole, alone)


def test_the_thread_limit_is_set_checked_and_changes_no_row():
    hyps = [f"a b c {i % 7}" for i in range(2000)]
    refs = [[f"a c b {i % 5}", "c"] for i in range(2000)]
    threaded = as_rows(_native.bleu_rows(hyps, refs, 4, "13a"), 10)
    previous = _native.set_threads(1)
    try:
        assert _native.set_threads(1) == 1
        assert np.array_equal(as_rows(_native.bleu_rows(hyps, refs, 4, "13a"), 10), threaded)
        for bad in (0, 9, -1):
            with pytest.raises(ValueError, match=r"threads must be in \[1, 8\]"):
                _native.set_threads(bad)
        with pytest.raises(TypeError):
            _native.set_threads("2")
    finally:
        _native.set_threads(previous)


def test_a_bad_item_deep_in_a_large_batch_is_named():
    hyps, refs = ["a"] * 5000, [["a"]] * 5000
    refs[4321] = ["a", b"b"]
    with pytest.raises(TypeError, match=r"refs\[4321\]\[1\] must be a str, not bytes"):
        _native.bleu_rows(hyps, refs, 4, "13a")


# -- LM Challenge logs: the compiled per-event loops (native/lmlog.cpp) ----------------

# one-, two- and four-byte characters, so that a word's tail is often stored narrower
# than the word itself
LM_WORDS = st.text(alphabet="ab\u00e9\u20ac\U0001F600", max_size=5)
NO_SURROGATES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=70)


@st.composite
def completion_events(draw: Callable) -> Tuple[Any, str]:
    """(completions or None, target), the completions often holding the target's tails."""
    target = draw(LM_WORDS)
    if draw(st.booleans()):
        return None, target
    candidates = st.one_of(LM_WORDS, st.integers(0, 6).map(lambda i: target[i:]))
    return draw(st.lists(st.lists(candidates, max_size=4), min_size=1, max_size=8)), target


def both_ways(function: Callable, *args: Any) -> Tuple[Any, Any]:
    """`function(*args)` by the kernel, then by the pure-Python reference code."""
    results = []
    for pure in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            if pure:
                patch.setenv(PURE_PYTHON_VARIABLE, "1")
                patch.setattr(lmlogs, "_compiled", lambda: pytest.fail("the kernel was used"))
            else:
                patch.delenv(PURE_PYTHON_VARIABLE, raising=False)
            results.append(function(*args))
    return results[0], results[1]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(completion_events(), max_size=20))
def test_prediction_ranks_are_the_reference_code(events):
    completions, targets = [event[0] for event in events], [event[1] for event in events]
    (ranks, starts), (python_ranks, python_starts) = both_ways(
        lmlogs.prediction_ranks, completions, targets)
    assert ranks.tolist() == python_ranks.tolist()
    assert starts.tolist() == python_starts.tolist()


def test_prediction_ranks_rank_completions_and_tails():
    completions = [[["x", "y", "abc"], ["bc"]], [["x", "abc"]], [["x"], ["zz", "q", "bc"], ["c"]],
                   [["x"], ["bc", "q"]], None, [[], [], [], [], [""]]]
    ranks, starts = lmlogs.prediction_ranks(completions, ["abc"] * 6)
    assert ranks.tolist() == [3, 2, 0, 0, 0, 0]
    assert starts.tolist() == [1, 0, 2, 1, -1, 4]  # a third completion is not counted


@settings(max_examples=200, deadline=None)
@given(st.lists(NO_SURROGATES, max_size=20))
def test_string_fingerprints_are_the_reference_code(values):
    native, python = both_ways(lmlogs.event_hashes, values)
    assert native.tolist() == python.tolist()


def test_the_lm_loops_refuse_what_is_not_a_decoded_event():
    loops = lmlogs._compiled()
    with pytest.raises(TypeError, match="each target must be a str"):
        loops.prediction_ranks([None], [3])
    with pytest.raises(TypeError, match="completions\\[1\\] must be a list"):
        loops.prediction_ranks([[["a"], "b"]], ["a"])
    with pytest.raises(ValueError, match="1 completions but 2 targets"):
        loops.prediction_ranks([None], ["a", "b"])
    with pytest.raises(TypeError, match="each value must be a str"):
        loops.md5_prefixes(["a", None])
    with pytest.raises(UnicodeEncodeError):
        loops.md5_prefixes(["\ud800"])


# -- a chunk of columns: every system's item of each segment, no item made --------------

TEXTS = st.text(st.sampled_from("ab .,-<&;\u00e9\u3002 \t\u2028\n"), max_size=12)


@given(st.lists(st.tuples(st.lists(TEXTS, min_size=1, max_size=3),
                          st.lists(TEXTS, min_size=3, max_size=3)), max_size=15),
       st.sampled_from(["13a", "none", "char", "intl"]), st.booleans())
@settings(max_examples=200, deadline=None)
def test_bleu_columns_are_the_rows_of_the_items(segments, tokenize, lowercase):
    """BLEU.stats_columns, by the kernel straight from the texts (or the items' way for
    tokenizers it does not take and lowercasing), gives stats_many's rows of the items
    segment by segment, system by system."""
    refs = [segment_refs for segment_refs, _ in segments]
    columns = [[hyps[j] for _, hyps in segments] for j in range(3)]
    bleu = BLEU(tokenize=tokenize, lowercase=lowercase)
    items = [(segment_refs, column[i]) for i, segment_refs in enumerate(refs)
             for column in columns]
    expected = bleu.stats_many(items) if items else np.zeros((0, 10))
    assert np.array_equal(bleu.stats_columns(refs, columns).reshape(-1, 10), expected)


@given(st.lists(st.tuples(st.lists(TEXTS, min_size=1, max_size=3),
                          st.lists(TEXTS, min_size=2, max_size=2)), max_size=15),
       st.sampled_from([(6, 0), (6, 2), (0, 2), (2, 1)]), st.booleans(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_chrf_columns_are_the_rows_of_the_items(segments, orders, lowercase, whitespace):
    """CHRF.stats_columns, by the kernel straight from the texts (or the items' way
    when lowercasing), gives stats_many's rows of the items segment by segment, system
    by system."""
    refs = [segment_refs for segment_refs, _ in segments]
    columns = [[hyps[j] for _, hyps in segments] for j in range(2)]
    chrf = CHRF(char_order=orders[0], word_order=orders[1], lowercase=lowercase,
                whitespace=whitespace)
    width = len(chrf.stat_names)
    items = [(segment_refs, column[i]) for i, segment_refs in enumerate(refs)
             for column in columns]
    expected = chrf.stats_many(items) if items else np.zeros((0, width))
    assert np.array_equal(chrf.stats_columns(refs, columns).reshape(-1, width), expected)


@pytest.mark.parametrize("metric", [BLEU, CHRF])
@pytest.mark.parametrize("refs, columns, message", [
    ([["a"], ["b"]], [["a", 7]], r"segment 2: the hypothesis is of type int; expected str"),
    ([["a"], []], [["a", "b"]], r"segment 2: .*no reference"),
    ([["a"], "b"], [["a", "b"]], r"segment 2: .*"),
])
def test_columns_refused_are_named_as_the_items_are(metric, refs, columns, message):
    evaluator = metric()
    items = [(segment_refs, column[i]) for i, segment_refs in enumerate(refs)
             for column in columns]
    with pytest.raises((TypeError, ValueError)) as by_items:
        evaluator.stats_many(items)
    with pytest.raises(type(by_items.value), match=message) as by_columns:
        evaluator.stats_columns(refs, columns)
    assert str(by_columns.value) == str(by_items.value)


@pytest.mark.parametrize("call", [
    lambda refs, hyps: _native.bleu_columns(refs, hyps, 4, "13a"),
    lambda refs, hyps: _native.chrf_columns(refs, hyps, 6, 0, 2, False, False),
])
def test_columns_of_columns_of_other_lengths_are_refused(call):
    with pytest.raises(ValueError, match=r"2 reference lists but 1 hypotheses in hyps\[1\]"):
        call([["a"], ["b"]], [["a", "b"], ["a"]])
