"""LM Zoo `get_surprisals` tables: one row per token, surprisal in bits (base 2).

The table is tab-separated with the header `sentence_id token_id token surprisal`,
which is how lm-score recognises it. Each token becomes a row of the LMZoo metric
(evalproto.metrics.lm): [bits, 1, 1 if it opens a sentence]; sentences are runs of
equal sentence ids. Some backends report each sentence's first token with surprisal 0
(it has no context), so it can be left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np

from evalproto.base.errors import InputError
from evalproto.base.numerals import parse_number, shorten
from evalproto.readers.text import split_lines

HEADER = ["sentence_id", "token_id", "token", "surprisal"]


def is_surprisal_table(data: bytes) -> bool:
    end = data.find(b"\n")
    first = data[:None if end < 0 else end].decode("utf-8", errors="replace").lstrip("\ufeff")
    return first.rstrip("\r").split("\t") == HEADER


@dataclass
class SurprisalTable:
    path: str
    sentence_ids: List[str]
    rows: np.ndarray  # [bits, 1, opens a sentence] per token


def parse_surprisals(path: str, data: bytes, skip_first_token: bool = False) -> SurprisalTable:
    lines = split_lines(path, data)
    if lines:
        lines[0] = lines[0].lstrip("\ufeff")
    sentence_ids, bits = [], []
    previous = None
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(HEADER):
            raise InputError(f"{path}: line {number}: expected {len(HEADER)} tab-separated "
                             f"fields ({' '.join(HEADER)}), got {len(fields)}")
        sentence, _, _, surprisal = fields
        try:
            value = parse_number(surprisal)
        except ValueError:
            value = -1.0
        if value < 0:
            raise InputError(f"{path}: line {number}: surprisal {shorten(surprisal)} is not a "
                             f"non-negative finite number of bits")
        first_of_sentence = sentence != previous
        previous = sentence
        if skip_first_token and first_of_sentence:
            continue
        sentence_ids.append(sentence)
        bits.append(value)
    if not bits:
        raise InputError(f"{path}: the surprisal table has no tokens to score")
    opens = [i == 0 or sentence != sentence_ids[i - 1] for i, sentence in enumerate(sentence_ids)]
    rows = np.column_stack([np.array(bits, dtype=np.float64), np.ones(len(bits)),
                            np.array(opens, dtype=np.float64)])
    return SurprisalTable(path, sentence_ids, rows)
