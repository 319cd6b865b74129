"""Word and character error rates, identical to jiwer 4's `wer` and `cer`.

Text is split as jiwer's default transforms split it (runs of two or more whitespace
characters become one space, the ends are stripped, words are what lies between
spaces; CER uses every character of the stripped text), and the alignment is the one
jiwer uses, rapidfuzz's Levenshtein opcodes, so the substitution, deletion and
insertion counts agree with jiwer's too.

With several references, each segment is scored against the reference that needs the
fewest edits; on a tie the earlier reference wins. The corpus rate is total edits over
total length of the chosen references, as jiwer computes it over a list of sentences.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from typing import Dict, Iterator, List, Sequence, Tuple

import click
import numpy as np
from rapidfuzz.distance import Levenshtein

from evalproto.metrics.evaluator import CountsEvaluator

_SPACE_RUNS = re.compile(r"\s\s+")
_OPCODE_STATS = {"replace": 0, "delete": 1, "insert": 2}


@lru_cache(maxsize=1)
def _punctuation_remover() -> dict:
    """A str.translate table deleting every Unicode punctuation character, as jiwer's
    RemovePunctuation does; built on first use because it scans all of Unicode."""
    return str.maketrans("", "", "".join(
        chr(code) for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)).startswith("P")))


def edit_counts(ref: Sequence[str], hyp: Sequence[str]) -> List[int]:
    """[substitutions, deletions, insertions] of jiwer's alignment of hyp to ref."""
    ids: Dict[str, int] = {}
    ref_ids = [ids.setdefault(unit, len(ids)) for unit in ref]
    hyp_ids = [ids.setdefault(unit, len(ids)) for unit in hyp]
    counts = [0, 0, 0]
    for opcode in Levenshtein.opcodes(ref_ids, hyp_ids):
        if opcode.tag in _OPCODE_STATS:
            counts[_OPCODE_STATS[opcode.tag]] += (
                opcode.dest_end - opcode.dest_start if opcode.tag == "insert"
                else opcode.src_end - opcode.src_start)
    return counts


class WER(CountsEvaluator):
    """Word error rate, identical to jiwer's (a fraction)."""

    name = "wer"
    higher_is_better = False
    extra_decimals = 2  # a fraction: 0.609 where a percentage shows 60.9
    options = (
        click.Option(["--lowercase"], is_flag=True, help="Lowercase before aligning."),
        click.Option(["--remove-punctuation"], is_flag=True,
                     help="Delete Unicode punctuation (category P*) before aligning."),
    )

    def __init__(self, lowercase: bool = False, remove_punctuation: bool = False) -> None:
        self.lowercase = lowercase
        self.remove_punctuation = remove_punctuation
        self.stat_names = ("substitutions", "deletions", "insertions", "ref_len")

    def units(self, text: str) -> List[str]:
        """The words of a text, as jiwer's default WER transform makes them."""
        return [word for word in _SPACE_RUNS.sub(" ", text).strip().split(" ") if word]

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        hyp_units = self.units(self._normalize(hyp))
        best: List[int] = []
        for ref in refs:
            ref_units = self.units(self._normalize(ref))
            row = [*edit_counts(ref_units, hyp_units), len(ref_units)]
            if not best or sum(row[:3]) < sum(best[:3]):
                best = row
        return best

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """Counts; substitutions and deletions are of reference units."""
        yield from super().rules(rows, summed)
        yield rows[:, 0] + rows[:, 1] > rows[:, 3], "substitutions + deletions <= ref_len"

    def score(self, vector: np.ndarray) -> float:
        substitutions, deletions, insertions, ref_len = vector
        if ref_len == 0:
            return float(insertions)  # jiwer's value when every reference is empty
        return float(substitutions + deletions + insertions) / float(ref_len)

    def signature_fields(self) -> dict:
        return {"case": "lc" if self.lowercase else "mixed", "punct": not self.remove_punctuation}

    def _normalize(self, text: str) -> str:
        if self.lowercase:
            text = text.lower()
        if self.remove_punctuation:
            text = text.translate(_punctuation_remover())
        return text


class CER(WER):
    """Character error rate, identical to jiwer's (a fraction)."""

    name = "cer"

    def units(self, text: str) -> List[str]:
        """The characters of a text, as jiwer's default CER transform makes them."""
        return list(text.strip())


if __name__ == "__main__":
    WER.main()
