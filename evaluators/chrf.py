"""chrF and chrF++ (Popović 2015, 2017), identical to sacrebleu's CHRF.

The statistics are [hyp, ref, match] n-gram counts per character order, then per word
order. With several references the segment keeps the statistics of the reference with
the best segment-level F score, as sacrebleu does. The F computation below performs
sacrebleu's float operations in sacrebleu's order, so scores agree to the last bit.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any, List, Sequence, Tuple

import click
import numpy as np

from evalproto.errors import SetupError
from evalproto.evaluator import REFERENCE_CACHE_SIZE, Evaluator

PUNCTUATION = frozenset('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')
_EPSILON = 1e-16

Ngrams = List[Counter]


def split_punctuation(text: str) -> List[str]:
    """Words, with one punctuation mark split off the end (else the start) of each, as
    chrF++ does for its word n-grams."""
    words: List[str] = []
    for word in text.split():
        if len(word) > 1 and word[-1] in PUNCTUATION:
            words += [word[:-1], word[-1]]
        elif len(word) > 1 and word[0] in PUNCTUATION:
            words += [word[0], word[1:]]
        else:
            words.append(word)
    return words


class CHRF(Evaluator):
    """chrF / chrF++ character n-gram F-score, identical to sacrebleu's."""

    name = "chrf"
    higher_is_better = True
    options = (
        click.Option(["--char-order", "-cc"], type=click.IntRange(min=0), default=6,
                     show_default=True, help="Character n-gram order."),
        click.Option(["--word-order", "-cw"], type=click.IntRange(min=0), default=0,
                     show_default=True, help="Word n-gram order (2 gives chrF++)."),
        click.Option(["--beta"], type=click.IntRange(min=0), default=2, show_default=True,
                     help="Weight of recall relative to precision."),
        click.Option(["--lowercase", "-lc"], is_flag=True, help="Lowercase before scoring."),
        click.Option(["--whitespace"], is_flag=True,
                     help="Keep whitespace in character n-grams."),
        click.Option(["--eps-smoothing"], is_flag=True,
                     help="Epsilon smoothing as in chrF++.py, NLTK and Moses, instead of "
                          "the effective order."),
    )

    def __init__(self, char_order: int = 6, word_order: int = 0, beta: int = 2,
                 lowercase: bool = False, whitespace: bool = False,
                 eps_smoothing: bool = False) -> None:
        if char_order + word_order == 0:
            raise SetupError("chrF needs a character or a word order above 0")
        self.char_order = char_order
        self.word_order = word_order
        self.beta = beta
        self.lowercase = lowercase
        self.whitespace = whitespace
        self.eps_smoothing = eps_smoothing
        self.stat_names = tuple(
            f"{kind}{n}_{count}"
            for kind, orders in (("char", char_order), ("word", word_order))
            for n in range(1, orders + 1) for count in ("hyp", "ref", "match"))
        self._reference_ngrams = lru_cache(maxsize=REFERENCE_CACHE_SIZE)(self._read_references)

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        hyp_ngrams = self._ngrams(hyp)
        best_stats: List[int] = []
        best_f = -1.0
        for ref_ngrams in self._reference_ngrams(tuple(refs)):
            stats = []
            for hyp_counts, ref_counts in zip(hyp_ngrams, ref_ngrams):
                match = sum(min(count, ref_counts[ngram])
                            for ngram, count in hyp_counts.items() if ngram in ref_counts)
                stats += [sum(hyp_counts.values()) if ref_counts else 0,
                          sum(ref_counts.values()), match]
            f_score = self._f_score(stats)
            if f_score > best_f:
                best_f, best_stats = f_score, stats
        return best_stats

    def score(self, vector: np.ndarray) -> float:
        if (vector < 0).any():
            raise ValueError("chrF statistics are counts and cannot be negative")
        return self._f_score(vector.tolist())

    def signature_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "case": "lc" if self.lowercase else "mixed",
            "eff": not self.eps_smoothing,
            "nc": self.char_order,
            "nw": self.word_order,
            "space": self.whitespace,
        }
        if self.beta != 2:  # sacrebleu names beta in the metric (chrF2), not the signature
            fields["beta"] = self.beta
        return fields

    def _ngrams(self, text: str) -> Ngrams:
        if self.lowercase:
            text = text.lower()
        chars = text if self.whitespace else "".join(text.split())
        ngrams = [Counter(chars[i:i + n] for i in range(len(chars) - n + 1))
                  for n in range(1, self.char_order + 1)]
        if self.word_order:
            words = split_punctuation(text)
            ngrams += [Counter(zip(*(words[i:] for i in range(n))))
                       for n in range(1, self.word_order + 1)]
        return ngrams

    def _read_references(self, refs: Tuple[str, ...]) -> List[Ngrams]:
        return [self._ngrams(ref) for ref in refs]

    def _f_score(self, stats: Sequence[float]) -> float:
        """sacrebleu's chrF from [hyp, ref, match] triples, operation for operation."""
        factor = self.beta ** 2
        score = 0.0
        avg_precision = avg_recall = 0.0
        effective_order = 0
        for i in range(self.char_order + self.word_order):
            n_hyp, n_ref, n_match = stats[3 * i:3 * i + 3]
            precision = n_match / n_hyp if n_hyp > 0 else _EPSILON
            recall = n_match / n_ref if n_ref > 0 else _EPSILON
            denominator = factor * precision + recall
            score += ((1 + factor) * precision * recall / denominator) if denominator > 0 \
                else _EPSILON
            if n_hyp > 0 and n_ref > 0:
                avg_precision += precision
                avg_recall += recall
                effective_order += 1
        if self.eps_smoothing:
            return 100 * score / (self.char_order + self.word_order)
        if effective_order == 0:
            avg_precision = avg_recall = 0.0
        else:
            avg_precision /= effective_order
            avg_recall /= effective_order
        if avg_precision + avg_recall:
            score = (1 + factor) * avg_precision * avg_recall
            score /= (factor * avg_precision) + avg_recall
            return 100 * score
        return 0.0


if __name__ == "__main__":
    CHRF.main()
