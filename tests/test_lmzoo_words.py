"""Which word each token belongs to (evalproto.readers.words): the tokenizers of LM Zoo's
models (word-level with PTB or Moses escapes, SentencePiece, GPT-2's byte-level BPE,
subword-nmt BPE, WordPiece, characters), unknown and special tokens, and the errors."""

import pytest

from evalproto.base.errors import InputError
from evalproto.readers.words import TokenRules, align, word_groups

RULES = TokenRules()


def owners(tokens, text, unknown=(), rules=RULES):
    flags = [i in unknown for i in range(len(tokens))]
    return align(tokens, flags, text, rules, "s.txt: line 1")


@pytest.mark.parametrize("tokens, text, expected", [
    # SentencePiece: ▁ opens a word; a lone ▁ goes with the next word
    (["▁The", "▁c", "at", "▁", "✓", "."], "The cat ✓.", [0, 1, 1, 2, 2, 2]),
    # GPT-2's byte-level BPE: Ġ is a space, é is Ã© (and may be split across tokens)
    (["The", "Ġcaf", "Ã", "©", "Ġis", "Ġopen", "."], "The café is open.",
     [0, 1, 1, 1, 2, 3, 3]),
    (["Ġæĺ", "¥", "æĹ¥"], "春日", [0, 0, 0]),
    # subword-nmt BPE (@@ continues a word) and WordPiece (## continues one)
    (["un@@", "believ@@", "able", "story"], "unbelievable story", [0, 0, 0, 1]),
    (["[CLS]", "un", "##believ", "##able", "story", "[SEP]"], "unbelievable story",
     [None, 0, 0, 0, 1, None]),
    # word-level, Moses and PTB escapes, split clitics, and boundary tokens
    (["<s>", "I", "did", "n't", "say", "&quot;", "hi", "&quot;", "@-@", "x", "</s>"],
     'I didn\'t say "hi"-x', [None, 0, 1, 1, 2, 3, 3, 3, 3, 3, None]),
    (["-LRB-", "a", "-RRB-", "``", "b", "''"], '(a) "b"', [0, 0, 0, 1, 1, 1]),
    # characters
    (["h", "i", "▁", "y", "o", "u"], "hi you", [0, 0, 1, 1, 1, 1]),
    # a token spelled by the text wins over a special-looking reading
    (["<b>", "x"], "<b>x", [0, 0]),
])
def test_tokens_are_assigned_to_the_words_they_spell(tokens, text, expected):
    assert owners(tokens, text) == expected


@pytest.mark.parametrize("tokens, text, unknown, expected", [
    (["<unk>", "sat"], "Zorg sat", (), [0, 1]),  # a whole word
    (["<unk>", "'s", "cat"], "Zorg's cat", (), [0, 0, 1]),  # less a piece that follows
    (["▁na", "<unk>", "ve"], "naïve", (), [0, 0, 0]),  # inside a word
    (["<unk>", "<unk>"], "Zorg Blarg", (), [0, 1]),
    (["a", "???", "b"], "a xyz b", (1,), [0, 1, 2]),  # flagged by unkify, whatever it reads
])
def test_unknown_tokens_stand_for_text_they_do_not_spell(tokens, text, unknown, expected):
    assert owners(tokens, text, unknown) == expected


def test_the_spec_decides_casing_and_which_tokens_are_unknown_or_special():
    uncased = TokenRules(cased=False, unk_types=frozenset({"UNK"}),
                         special_types=frozenset({"<eos>"}))
    assert owners(["the", "UNK", "sat", "<eos>"], "The Cat sat", rules=uncased) == [
        0, 1, 2, None]
    with pytest.raises(InputError, match="token 0 'the' does not match word 0 'The', at 'The'"):
        owners(["the", "cat"], "The cat")
    with pytest.raises(InputError, match="token 2 '<pad>' comes after the end of the text"):
        owners(["a", "b", "<pad>"], "a b", rules=uncased)  # <pad> is not in its special types


@pytest.mark.parametrize("tokens, text, message", [
    (["ab", "c"], "a bc", "token 0 'ab' runs past the end of word 0 'a', at 'a'"),
    (["a", "x"], "a b", "token 1 'x' does not match word 1 'b', at 'b'"),
    (["▁a", "▁b"], "ab", "token 1 '▁b' opens a word inside word 0 'ab', at 'b'"),
    (["a"], "a b", "the tokens end before the text does, at word 1 'b'"),
    (["a", "<unk>"], "a", "token 1 '<unk>' is unknown, but the text has ended"),
    (["a", "b"], "a", "token 1 'b' comes after the end of the text, and is not a special token"),
])
def test_tokens_that_do_not_spell_the_text_are_errors(tokens, text, message):
    with pytest.raises(InputError) as failure:
        owners(tokens, text)
    assert str(failure.value) == f"s.txt: line 1: {message}"


def test_word_groups_label_each_token_with_its_sentence_and_word():
    groups, words = word_groups([("0", ["<s>", "▁a", "b", "▁c"], [False] * 4, "ab c", "w"),
                                 ("1", ["▁d"], [False], "d", "w")], RULES)
    assert groups == [[], ["0:0"], ["0:0"], ["0:1"], ["1:0"]]
    assert [(w.sentence, w.index, w.text) for w in words.values()] == [
        ("0", 0, "ab"), ("0", 1, "c"), ("1", 0, "d")]
