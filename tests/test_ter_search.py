"""The TER edit search gives sacrebleu lib_ter's edits and traces, on real and
generated text, through its beam, cache and candidate limits."""

import random

import pytest
from conftest import DE_EN_HYP, DE_EN_REFS, EN_DE_HYP, EN_DE_REFS, MULTI_HYP, MULTI_REFS, read_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics import lib_ter
from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

from evaluators import ter_search


def test_the_limits_are_lib_ters():
    assert (ter_search.MAX_SHIFT_SIZE, ter_search.MAX_SHIFT_DIST, ter_search.BEAM_WIDTH,
            ter_search.MAX_CACHE_SIZE, ter_search.MAX_SHIFT_CANDIDATES, ter_search.INFINITY) == (
        lib_ter._MAX_SHIFT_SIZE, lib_ter._MAX_SHIFT_DIST, lib_ter._BEAM_WIDTH,
        lib_ter._MAX_CACHE_SIZE, lib_ter._MAX_SHIFT_CANDIDATES, lib_ter._INT_INFINITY)


@pytest.mark.slow
@pytest.mark.parametrize("refs, hyp", [(DE_EN_REFS, DE_EN_HYP), (EN_DE_REFS, EN_DE_HYP),
                                       (MULTI_REFS, MULTI_HYP)], ids=["de-en", "en-de", "multi"])
@pytest.mark.parametrize("normalized", [False, True])
def test_real_text_gets_lib_ters_edits(refs, hyp, normalized):
    tokenize = TercomTokenizer(normalized=normalized)
    hyps = [tokenize(line).split() for line in read_lines(hyp)]
    for path in refs:
        for hyp_words, ref_line in zip(hyps, read_lines(path)):
            ref_words = tokenize(ref_line).split()
            assert ter_search.translation_edit_rate(hyp_words, ref_words) == \
                lib_ter.translation_edit_rate(hyp_words, ref_words), (hyp_words, ref_words)


words = st.lists(st.sampled_from("abcde"), max_size=40)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(words, words)
def test_generated_text_gets_lib_ters_edits(hyp, ref):
    """A five-word vocabulary gives many equal spans, so many shift candidates."""
    assert ter_search.translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)


@pytest.mark.slow
def test_candidate_limit_and_wide_beams():
    generator = random.Random(3)
    cases = [([generator.choice("ab") for _ in range(120)],
              [generator.choice("ab") for _ in range(120)]),  # the candidate limit ends it
             (["a", "b"], [generator.choice("abc") for _ in range(300)]),  # beam widened
             ([generator.choice("abc") for _ in range(300)], ["a", "b"]),
             ([], ["a"]), (["a"], [])]
    ref = [f"w{i}" for i in range(70)]
    for distance in (50, 51):  # a block moved just within, and just beyond, shift range
        cases.append((ref[distance:distance + 4] + ref[:distance] + ref[distance + 4:], ref))
    for hyp, ref in cases:
        assert ter_search.translation_edit_rate(hyp, ref) == lib_ter.translation_edit_rate(hyp, ref)


def test_cached_rows_are_reused_until_the_cache_is_full():
    """One reference and many hypotheses of one length, as the shifts of a hypothesis
    are: rows are reused by shared prefixes until the cache is full, and distances and
    traces stay lib_ter's throughout."""
    generator = random.Random(5)
    ref = [generator.choice("abcdef") for _ in range(60)]
    ours, theirs = ter_search.BeamEditDistance(ref), lib_ter.BeamEditDistance(ref)
    for _ in range(400):
        shared = generator.randrange(40)
        hyp = ref[:shared] + [generator.choice("abcdefg") for _ in range(50 - shared)]
        assert ours(hyp) == theirs(hyp)
    assert theirs._cache_size >= lib_ter._MAX_CACHE_SIZE
    assert ours._cache_size == theirs._cache_size
