"""The fast 13a tokenizer gives sacrebleu's Tokenizer13a output, character for character."""

import pytest
from conftest import DATA, read_lines
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

from evalproto.evaluators.bleu import BLEU
from evalproto.evaluators.fast_13a import CONTEXT_RULES, FIRST_RULE, FastTokenizer13a

SACREBLEU = Tokenizer13a()
FAST = FastTokenizer13a()

# Characters around which the 13a rules differ: digits, the punctuation of every rule,
# entities, <skipped>, line breaks, and a few others.
PIECES = ["a", "Z", "1", "9", ".", ",", "-", " ", "'", "&", "&quot;", "&amp;", "&lt;", "&gt;",
          "<skipped>", "\n", "-\n", "$", "(", ")", "/", ":", "@", "[", "`", "{", "~", "é", "漢",
          "\t", "\u00a0", "\u2028", "%", "!", "?", ";", "_", "|", "\\", '"', "+", "=", "<", ">"]


def test_the_installed_sacrebleu_has_the_rules_reimplemented_here():
    rules = [(pattern.pattern, template) for pattern, template in TokenizerRegexp()._re]
    assert rules == [(FIRST_RULE, r' \1 '), *(rule for rule, _ in CONTEXT_RULES)]
    assert isinstance(BLEU().tokenizer, FastTokenizer13a)
    assert FAST.signature() == SACREBLEU.signature()


def test_real_text_tokenizes_identically():
    for path in sorted(DATA.glob("*.*")):
        if path.suffix == ".md":
            continue
        for line in read_lines(str(path)):
            assert FAST(line) == SACREBLEU(line), line


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_generated_text_tokenizes_identically(text):
    assert FAST(text) == SACREBLEU(text)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_unicode_tokenizes_identically(text):
    assert FAST(text) == SACREBLEU(text)
