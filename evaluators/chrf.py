"""chrF and chrF++ (Popović 2015, 2017), identical to sacrebleu's CHRF.

The statistics are [hyp, ref, match] n-gram counts per character order, then per word
order. With several references the segment keeps the statistics of the reference with
the best segment-level F score, as sacrebleu does. The F computation below performs
sacrebleu's float operations in sacrebleu's order, so scores agree to the last bit.
Like BLEU's, the counting comes one segment at a time (for the protocol) and a corpus
at a time with numpy (`stats_batch`), with equal rows.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import click
import numpy as np

from evalproto.base.compiled import pure_python
from evalproto.base.errors import SetupError
from evalproto.evaluators.native import as_rows, kernels
from evalproto.metrics.evaluator import CountsEvaluator, Item
from evalproto.metrics.pairwise import Batches, all_pairs, as_matrix

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


class CHRF(CountsEvaluator):
    """chrF / chrF++ character n-gram F-score, identical to sacrebleu's."""

    name = "chrf"
    higher_is_better = True
    resample_dtype = np.float32  # as sacrebleu sums its bootstrap resamples
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

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        hyp_ngrams = self._ngrams(hyp)
        per_reference = []
        for ref_ngrams in self.references(refs):
            stats = []
            for hyp_counts, ref_counts in zip(hyp_ngrams, ref_ngrams):
                match = sum(min(count, ref_counts[ngram])
                            for ngram, count in hyp_counts.items() if ngram in ref_counts)
                stats += [sum(hyp_counts.values()) if ref_counts else 0,
                          sum(ref_counts.values()), match]
            per_reference.append(stats)
        if len(per_reference) == 1:
            return per_reference[0]
        return per_reference[int(np.argmax(self.f_scores(np.array(per_reference))))]

    def stats_columns(self, refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]
                      ) -> np.ndarray:
        """By the compiled kernel straight from the texts where it takes them as they are
        (not lowercased); otherwise, and for texts it refuses (stats_many then says which
        item and why), as the items."""
        if pure_python() or self.lowercase:
            return super().stats_columns(refs, hyps)
        try:
            rows = kernels().chrf_columns(refs, hyps, self.char_order, self.word_order,
                                          self.beta, self.whitespace, self.eps_smoothing)
        except (TypeError, ValueError):
            return super().stats_columns(refs, hyps)
        return as_rows(rows, len(self.stat_names))

    def stats_batch(self, items: Sequence[Item]) -> np.ndarray:
        """`stats` of many items: by the compiled kernel, or, with
        EVALPROTO_PURE_PYTHON=1, counted together with numpy (see bulk_ngrams)."""
        if not pure_python():
            rows = kernels().chrf_rows([self._cased(hyp) for _, hyp in items],
                                       [[self._cased(ref) for ref in refs] for refs, _ in items],
                                       self.char_order, self.word_order, self.beta,
                                       self.whitespace, self.eps_smoothing)
            return as_rows(rows, len(self.stat_names))
        from evalproto.evaluators.bulk_ngrams import References, Sequences, count_ngrams, matches

        references = References.of(items)
        owner, hyps = references.owner, len(items)
        texts = [self._cased(hyp) for _, hyp in items] + [
            self._cased(ref) for ref in references.texts]
        counts = []
        if self.char_order:
            chars = Sequences.of_characters(texts if self.whitespace
                                            else ["".join(text.split()) for text in texts])
            counts += count_ngrams(chars, self.char_order)
        if self.word_order:
            words = Sequences.of_tokens([split_punctuation(text) for text in texts])
            counts += count_ngrams(words, self.word_order)
        per_reference = np.zeros((len(owner), len(self.stat_names)))
        for i, order_counts in enumerate(counts):
            totals = np.bincount(order_counts.sequence, weights=order_counts.count,
                                 minlength=len(texts))
            ref_totals = totals[hyps + references.distinct]
            found = matches(order_counts, hyps, references)
            per_reference[:, 3 * i] = np.where(ref_totals > 0, totals[owner], 0)
            per_reference[:, 3 * i + 1] = ref_totals
            per_reference[:, 3 * i + 2] = np.bincount(found.reference, weights=found.count,
                                                      minlength=len(owner))
        # Each item keeps its first reference with the best F: sort by item, then by
        # descending F, then by position, and take the first of each item.
        ranked = np.lexsort((np.arange(len(owner)), -self.f_scores(per_reference), owner))
        return per_reference[ranked[np.searchsorted(owner[ranked], np.arange(hyps))]]

    def pairwise_scores(self, hyps: Batches, refs: Optional[Batches]) -> np.ndarray:
        """sacrebleu's sentence_score of every hypothesis of each batch against every
        reference of it (refs None: against the hypotheses), a (B, H, R) array: by the
        compiled kernel, which counts each text's n-grams once; with
        EVALPROTO_PURE_PYTHON=1, pair by pair (evalproto.metrics.pairwise.all_pairs)."""
        if pure_python():
            return all_pairs(self, hyps, refs)
        if self.lowercase:
            hyps, refs = _lowercased(hyps), None if refs is None else _lowercased(refs)
        cells = kernels().chrf_pairwise(hyps, refs, self.char_order, self.word_order,
                                        self.beta, self.whitespace, self.eps_smoothing)
        return as_matrix(cells, hyps, refs)

    def score(self, vector: np.ndarray) -> float:
        """sacrebleu's `CHRF._compute_f_score` with its operations in its order, on
        whatever scalars the row holds: float64 for a corpus score, float32 for a
        bootstrap resample, where sacrebleu computes in float32 too (its epsilon is a
        Python float, which numpy's rules then round to float32 or not, as they do for
        sacrebleu)."""
        factor = self.beta ** 2
        orders = self.char_order + self.word_order
        f_sum, matched_orders = 0.0, 0
        precision_sum, recall_sum = 0.0, 0.0
        for i in range(orders):
            hyp, ref, match = vector[3 * i], vector[3 * i + 1], vector[3 * i + 2]
            precision = match / hyp if hyp > 0 else _EPSILON
            recall = match / ref if ref > 0 else _EPSILON
            denominator = factor * precision + recall
            f_sum += (1 + factor) * precision * recall / denominator if denominator > 0 \
                else _EPSILON
            if hyp > 0 and ref > 0:
                precision_sum += precision
                recall_sum += recall
                matched_orders += 1
        if self.eps_smoothing:
            return 100 * f_sum / orders
        if matched_orders == 0:
            precision_sum = recall_sum = 0.0
        else:
            precision_sum /= matched_orders
            recall_sum /= matched_orders
        if not precision_sum + recall_sum:
            return 0.0
        f_score = (1 + factor) * precision_sum * recall_sum
        f_score /= (factor * precision_sum) + recall_sum
        return 100 * f_score

    @property
    def score_name(self) -> str:
        """sacrebleu's name: chrF2, chrF2++ (a + per word order), chrF1 with beta 1."""
        return f"chrF{self.beta}" + "+" * self.word_order

    def details(self, vector: np.ndarray) -> Dict[str, Any]:
        """sacrebleu's CHRFScore fields beside the score."""
        return {"char_order": self.char_order, "word_order": self.word_order,
                "beta": self.beta}

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """Matches are at most the n-grams on either side; a hypothesis n-gram counts
        only where the reference has n-grams of that order; longer n-grams are fewer."""
        yield from super().rules(rows, summed)
        names = self.stat_names
        orders = [("char", n) for n in range(1, self.char_order + 1)] + [
            ("word", n) for n in range(1, self.word_order + 1)]
        for i, (_, n) in enumerate(orders):
            hyp, ref, match = rows[:, 3 * i], rows[:, 3 * i + 1], rows[:, 3 * i + 2]
            yield match > np.minimum(hyp, ref), \
                f"{names[3 * i + 2]} <= min({names[3 * i]}, {names[3 * i + 1]})"
            yield (ref == 0) & (hyp != 0), f"{names[3 * i]} == 0 where {names[3 * i + 1]} == 0"
            if n > 1:
                for offset in (0, 1):
                    yield rows[:, 3 * i + offset] > rows[:, 3 * (i - 1) + offset], \
                        f"{names[3 * i + offset]} <= {names[3 * (i - 1) + offset]}"

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

    def _cased(self, text: str) -> str:
        return text.lower() if self.lowercase else text

    def _ngrams(self, text: str) -> Ngrams:
        text = self._cased(text)
        chars = text if self.whitespace else "".join(text.split())
        ngrams = [Counter(chars[i:i + n] for i in range(len(chars) - n + 1))
                  for n in range(1, self.char_order + 1)]
        if self.word_order:
            words = split_punctuation(text)
            ngrams += [Counter(zip(*(words[i:] for i in range(n))))  # type: ignore[arg-type]
                       for n in range(1, self.word_order + 1)]
        return ngrams

    def read_references(self, refs: Tuple[str, ...]) -> List[Ngrams]:
        return [self._ngrams(ref) for ref in refs]

    def f_scores(self, stats: np.ndarray) -> np.ndarray:
        """`score` of each row of a float64 array at once, for choosing each segment's
        best reference among thousands: float64 operations in sacrebleu's order, so the
        choices are sacrebleu's (for float64, numpy's arithmetic is Python's)."""
        factor = self.beta ** 2
        orders = self.char_order + self.word_order
        score, avg_precision, avg_recall = (np.zeros(len(stats)) for _ in range(3))
        effective_order = np.zeros(len(stats), dtype=np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):  # where masked out below
            for i in range(orders):
                n_hyp, n_ref, n_match = stats[:, 3 * i], stats[:, 3 * i + 1], stats[:, 3 * i + 2]
                precision = np.where(n_hyp > 0, n_match / n_hyp, _EPSILON)
                recall = np.where(n_ref > 0, n_match / n_ref, _EPSILON)
                denominator = factor * precision + recall
                score += np.where(denominator > 0,
                                  (1 + factor) * precision * recall / denominator, _EPSILON)
                both = (n_hyp > 0) & (n_ref > 0)
                avg_precision += np.where(both, precision, 0.0)
                avg_recall += np.where(both, recall, 0.0)
                effective_order += both
            if self.eps_smoothing:
                return 100 * score / orders
            avg_precision = np.where(effective_order > 0, avg_precision / effective_order, 0.0)
            avg_recall = np.where(effective_order > 0, avg_recall / effective_order, 0.0)
            f_score = (1 + factor) * avg_precision * avg_recall
            f_score /= (factor * avg_precision) + avg_recall
        return np.where(avg_precision + avg_recall != 0, 100 * f_score, 0.0)


def _lowercased(batches: Batches) -> List[List[str]]:
    return [[text.lower() for text in batch] for batch in batches]


if __name__ == "__main__":
    CHRF.main()
