"""The small outputs of an LM Zoo model that go with its predictions file: `spec` (JSON:
the model's name, tokenizer and vocabulary), `unkify` (a line of 0/1 flags per sentence,
1 for a token the model does not know) and `tokenize` (a line of tokens per sentence).
Each is checked against the predictions file it describes, naming the line that differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.numerals import shorten
from evalproto.readers.predictions import Predictions
from evalproto.readers.text import decoded_text, read_bytes, read_lines

TOKENIZERS = ("word", "subword", "character")


@dataclass(frozen=True)
class ModelSpec:
    """What lm-score takes from a model's spec: its name, tokenizer type and casing, the
    size of its vocabulary, and its unknown and special (boundary) token types."""

    path: str
    name: str
    tokenizer: str
    cased: bool
    vocabulary_size: int
    unk_types: FrozenSet[str]
    special_types: FrozenSet[str]

    def signed(self) -> List[Tuple[str, str]]:
        """The spec's part of a signature."""
        return [("model", self.name), ("tokenizer", self.tokenizer)]

    def check(self, predictions: Predictions) -> None:
        """The predictions must come from a vocabulary of the spec's size."""
        if self.vocabulary_size != len(predictions.vocabulary):
            raise InputError(f"{self.path}: the model's vocabulary has {self.vocabulary_size} "
                             f"items, but /vocabulary of {predictions.path} has "
                             f"{len(predictions.vocabulary)}: not this model's predictions?")


def read_spec(path: str) -> ModelSpec:
    """A model's spec, as LM Zoo's schema (language_model_spec.json) has it."""
    try:
        spec = json.loads(decoded_text(path, read_bytes(path)))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not an LM Zoo model spec (JSON): {exc}") from None
    name = _field(path, spec, "name", str)
    vocabulary = _field(path, spec, "vocabulary", dict)
    tokenizer = _field(path, spec, "tokenizer", dict)
    items = _field(path, vocabulary, "items", list, "vocabulary.")
    kind = _field(path, tokenizer, "type", str, "tokenizer.")
    if kind not in TOKENIZERS:
        raise InputError(f"{path}: tokenizer.type is {shorten(kind)}; expected one of "
                         f"{', '.join(TOKENIZERS)}")
    cased = _field(path, tokenizer, "cased", bool, "tokenizer.")
    types = {key: frozenset(_strings(path, vocabulary, key)) for key in
             ("unk_types", "prefix_types", "suffix_types", "special_types")}
    return ModelSpec(path, name, kind, cased, len(items), types["unk_types"],
                     types["prefix_types"] | types["suffix_types"] | types["special_types"])


def _field(path: str, tree: Any, key: str, kind: type, prefix: str = "") -> Any:
    if not isinstance(tree, dict) or key not in tree:
        raise InputError(f"{path}: the spec has no {prefix}{key}")
    if not isinstance(tree[key], kind):
        raise InputError(f"{path}: the spec's {prefix}{key} is not a{'n' if kind is dict else ''}"
                         f" {_KINDS[kind]}")
    return tree[key]


_KINDS: Dict[type, str] = {str: "string", dict: "object", list: "array", bool: "boolean"}


def _strings(path: str, vocabulary: Dict[str, Any], key: str) -> List[str]:
    values = vocabulary.get(key, [])
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise InputError(f"{path}: the spec's vocabulary.{key} is not an array of strings")
    return values


def read_unknown(path: str, predictions: Predictions) -> np.ndarray:
    """`unkify` output as one flag per row of the predictions: a line per sentence, as
    many 0/1 flags as the sentence has tokens."""
    lines = _lines_per_sentence(path, predictions, "a line of 0/1 flags")
    flags: List[bool] = []
    for number, line in enumerate(lines):
        fields = line.split()
        bad = next((field for field in fields if field not in ("0", "1")), None)
        if bad is not None:
            raise InputError(f"{path}: line {number + 1}: {shorten(bad)} is not a flag (0 or 1)")
        tokens = predictions.starts[number + 1] - predictions.starts[number]
        if len(fields) != tokens:
            raise InputError(f"{path}: line {number + 1}: {len(fields)} flags, but sentence "
                             f"{number} of {predictions.path} has {tokens} tokens")
        flags += [field == "1" for field in fields]
    return np.array(flags, dtype=bool)


def check_tokens(path: str, predictions: Predictions) -> None:
    """`tokenize` output must be the tokens of the predictions, sentence by sentence."""
    lines = _lines_per_sentence(path, predictions, "a line of tokens")
    for number, line in enumerate(lines):
        ours, theirs = line.split(), predictions.tokens(number)
        at = first_difference(ours, theirs)
        if at is not None:
            here = shorten(ours[at]) if at < len(ours) else "the end of the line"
            there = shorten(theirs[at]) if at < len(theirs) else "the end of the sentence"
            raise InputError(f"{path}: line {number + 1}: the tokens differ from sentence "
                             f"{number} of {predictions.path} at token {at}: {here} here, "
                             f"{there} there")


def first_difference(ours: Sequence[str], theirs: Sequence[str]) -> Optional[int]:
    """Where two token sequences first differ (the shorter one's length if one is the
    other's start), or None if they are the same."""
    if ours == theirs:
        return None
    return next((j for j, (a, b) in enumerate(zip(ours, theirs)) if a != b),
                min(len(ours), len(theirs)))


def read_sentences(path: str, predictions: Predictions) -> List[str]:
    """The original text: a line per sentence of the predictions."""
    return _lines_per_sentence(path, predictions, "a line")


def _lines_per_sentence(path: str, predictions: Predictions, what: str) -> List[str]:
    lines = read_lines(path)
    if len(lines) != predictions.sentences:
        raise InputError(f"{path} has {len(lines)} lines, but {predictions.path} has "
                         f"{predictions.sentences} sentences; expected {what} per sentence")
    return lines
