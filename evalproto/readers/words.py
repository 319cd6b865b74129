"""Which word of the original sentence each token belongs to, so that a word's surprisal
is the sum of its tokens' (as psycholinguistic studies with LM Zoo models do).

The rule, documented in docs/lm-zoo.md: a sentence's words are its text split at
whitespace; its tokens, in order, must spell the words' characters (the whitespace
aside), each token within one word. A token spells the first of these that matches the
text where the last one ended:

1. the token without its tokenizer's markers: a leading SentencePiece `▁` or WordPiece
   `##`, a trailing BPE `@@`;
2. the bytes it stands for in GPT-2's byte-level BPE (`Ġ` is a space; `Ã©` is é);
3. what PTB or Moses tokenizers write for the text (`-LRB-` for `(`, two backquotes for
   `"`, `&amp;` for `&`, `@-@` for `-`).

Matching is exact, or ignores case when the model's spec says its tokenizer is uncased.
A token that matches nothing is a marker of its own (`▁` alone: it goes with the next
word), an unknown token (flagged by unkify, or one of the spec's unk_types, `<unk>` by
default: it stands for the longest stretch of its word that leaves the next token a
match, or the rest of the word), or a special token (the spec's prefix, suffix and
special types; without a spec, `<...>` or `[...]`, as `<s>`, `</s>`, `<|endoftext|>`:
it belongs to no word). Anything else is an error that names the sentence.
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from evalproto.base.errors import InputError

UNKNOWN = frozenset({"<unk>", "<UNK>", "[UNK]"})
SPECIAL = re.compile(r"<[^<>\s]+>|\[[^\[\]\s]+\]")
"""Special tokens when there is no spec: `<s>`, `</s>`, `<eos>`, `<|endoftext|>`, `[CLS]`."""
PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}",
       "``": '"', "''": '"', "@-@": "-", "@,@": ",", "@.@": "."}


def _byte_table() -> Dict[str, int]:
    """GPT-2's byte-level BPE alphabet: the character that stands for each byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    others = [byte for byte in range(256) if byte not in printable]
    table = {chr(byte): byte for byte in printable}
    table.update({chr(256 + n): byte for n, byte in enumerate(others)})
    return table


BYTES = _byte_table()


@dataclass(frozen=True)
class TokenRules:
    """What a model's spec says about its tokens: casing, unknown and special types
    (None: the default pattern)."""

    cased: bool = True
    unk_types: FrozenSet[str] = UNKNOWN
    special_types: Optional[FrozenSet[str]] = None

    def is_special(self, token: str) -> bool:
        if self.special_types is None:
            return SPECIAL.fullmatch(token) is not None
        return token in self.special_types

    def spellings(self, token: str) -> List[Tuple[bytes, bool]]:
        """The texts a token may spell, as UTF-8, in the order they are tried, each with
        whether the token then opens a word (it was marked with `▁` or `Ġ`)."""
        bare = token
        if bare.startswith("▁") or (bare.startswith("##") and len(bare) > 2):
            bare = bare[1 if bare.startswith("▁") else 2:]
        if bare.endswith("@@") and len(bare) > 2:
            bare = bare[:-2]
        opens = token.startswith("▁")
        found = [(self._encoded(bare.replace("▁", " ").strip()), opens),
                 (self._encoded(PTB.get(token, html.unescape(bare))), opens)]
        if all(character in BYTES for character in token):
            spelled = bytes(BYTES[character] for character in token).strip()
            found.insert(1, (spelled if self.cased else spelled.lower(), token.startswith("Ġ")))
        return list(dict.fromkeys(found))

    def _encoded(self, text: str) -> bytes:
        return (text if self.cased else text.lower()).encode("utf-8")


@dataclass
class Word:
    """A word of a sentence: the sentence's name, the word's place in it (from 0) and
    its text."""

    sentence: str
    index: int
    text: str


def align(tokens: Sequence[str], unknown: Sequence[bool], text: str, rules: TokenRules,
          where: str) -> List[Optional[int]]:
    """For each token, the index of the word of `text` it belongs to, or None; an
    InputError (placed by `where`) when the tokens do not spell the text."""
    words = text.split()
    spelled = [word.encode("utf-8") if rules.cased else word.lower().encode("utf-8")
               for word in words]
    target, ends = b"".join(spelled), list(accumulate(len(word) for word in spelled))
    starts = {0, *ends}
    spellings = [rules.spellings(token) for token in tokens]
    owners: List[Optional[int]] = []
    position = 0
    for number, token in enumerate(tokens):
        word = bisect_right(ends, position)  # the word that holds the next character
        found = next(((text, opens) for text, opens in spellings[number]
                      if text and target.startswith(text, position)), None)
        if found is not None:
            if position + len(found[0]) > ends[word]:
                raise _mismatch(where, number, token, "runs past the end of", word, words[word],
                                target[position:ends[word]])
            if found[1] and position not in starts:
                raise _mismatch(where, number, token, "opens a word inside", word, words[word],
                                target[position:ends[word]])
            owners.append(word)
            position += len(found[0])
        elif any(not text for text, _ in spellings[number]):  # a marker alone: a word starts
            owners.append(word if word < len(words) else None)
        elif unknown[number] or token in rules.unk_types:
            if word == len(words):
                raise InputError(f"{where}: token {number} {token!r} is unknown, but the "
                                 f"text has ended")
            following = [text for text, _ in spellings[number + 1]] \
                if number + 1 < len(tokens) else []
            position = _unknown_end(target, position, ends[word], following)
            owners.append(word)
        elif rules.is_special(token):
            owners.append(None)
        elif word == len(words):
            raise InputError(f"{where}: token {number} {token!r} comes after the end of the "
                             f"text, and is not a special token")
        else:
            raise _mismatch(where, number, token, "does not match", word, words[word],
                            target[position:ends[word]])
    if position < len(target):
        word = bisect_right(ends, position)
        raise InputError(f"{where}: the tokens end before the text does, at word {word} "
                         f"{words[word]!r}")
    return owners


def _unknown_end(target: bytes, position: int, end: int, following: List[bytes]) -> int:
    """Where an unknown token's text ends: the last place in its word (after at least a
    character) where the next token matches, or the word's end."""
    for stop in range(end - 1, position, -1):
        if any(text and target.startswith(text, stop) for text in following):
            return stop
    return end


def _mismatch(where: str, number: int, token: str, what: str, word: int, text: str,
              rest: bytes) -> InputError:
    """The error of a token that does not fit `rest`, the rest of word `word`."""
    return InputError(f"{where}: token {number} {token!r} {what} word {word} {text!r}, at "
                      f"{rest.decode('utf-8', errors='replace')!r}")


def word_groups(sentences: Sequence[Tuple[str, List[str], Sequence[bool], str, str]],
                rules: TokenRules) -> Tuple[List[List[str]], Dict[str, Word]]:
    """For (name, tokens, unknown flags, text, where) of each sentence: each token's
    group (its word's label, "sentence:word", or none) and the words by label."""
    groups: List[List[str]] = []
    words: Dict[str, Word] = {}
    for name, tokens, unknown, text, where in sentences:
        owners = align(tokens, unknown, text, rules, where)
        for index, word in enumerate(text.split()):
            words[f"{name}:{index}"] = Word(name, index, word)
        groups += [[] if owner is None else [f"{name}:{owner}"] for owner in owners]
    return groups, words

