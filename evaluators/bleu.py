"""BLEU with sacrebleu 2.x's statistics, smoothing, tokenizers and signature.

The tokenizers and `compute_bleu` are sacrebleu's own; the n-gram counting is ours,
with the same semantics (clipped counts against the per-n-gram maximum over the
references, the closest reference length with ties going to the shorter one). It
comes twice: one segment at a time for the protocol, with reference preprocessing
cached so that a tuner sending the same references with a hundred hypotheses pays for
them once, and a corpus at a time with numpy (`stats_batch`, see bulk_ngrams).
tests/test_bulk_ngrams.py checks the two give equal rows.
"""

from __future__ import annotations

import importlib
import math
from collections import Counter
from itertools import chain, repeat
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import click
import numpy as np

from evalproto.base.compiled import pure_python
from evalproto.base.errors import SetupError
from evalproto.evaluators.fast_13a import FastTokenizer13a
from evalproto.evaluators.native import as_rows, kernels
from evalproto.metrics.evaluator import CountsEvaluator, Evaluator, Item
from evalproto.metrics.pairwise import Batches, all_pairs, as_matrix

TOKENIZERS = {
    "13a": "tokenizer_13a.Tokenizer13a",
    "intl": "tokenizer_intl.TokenizerV14International",
    "zh": "tokenizer_zh.TokenizerZh",
    "ja-mecab": "tokenizer_ja_mecab.TokenizerJaMecab",
    "ko-mecab": "tokenizer_ko_mecab.TokenizerKoMecab",
    "char": "tokenizer_char.TokenizerChar",
    "none": "tokenizer_none.NoneTokenizer",
}
EXTRAS = {"ja-mecab": "ja", "ko-mecab": "ko"}
SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}
"""sacrebleu's BLEU.SMOOTH_DEFAULTS (tests/test_bleu_parity.py checks), copied so that
the default BLEU never imports sacrebleu, whose import costs a tenth of a second."""
SMOOTH_METHODS = tuple(SMOOTH_DEFAULTS)
COMPENSATED_SUM = sum([1e16, 1.0, -1e16]) == 1.0
"""Whether this Python's sum() of floats compensates rounding (Neumaier's, from 3.12 on),
which compute_bleu's sum of log precisions does: the BLEU kernels add as it does."""
TOKENIZED_LINES = 100
"""sacrebleu warns when this many hypotheses or more end in a tokenized period (" .")."""


def load_tokenizer(name: str) -> Any:
    """A sacrebleu tokenizer by its sacrebleu name; a missing extra is named in the error."""
    if name == "13a":
        return FastTokenizer13a()
    module_name, class_name = TOKENIZERS[name].rsplit(".", 1)
    module = importlib.import_module(f"sacrebleu.tokenizers.{module_name}")
    try:
        return getattr(module, class_name)()
    except RuntimeError:  # sacrebleu's way of saying MeCab or its dictionary is missing
        extra = EXTRAS[name]
        raise SetupError(
            f"the {name} tokenizer needs the optional '{extra}' dependencies: "
            f"pip install 'evalproto[{extra}]'") from None


class BLEU(CountsEvaluator):
    """BLEU (Papineni et al., 2002), identical to sacrebleu's."""

    name = "bleu"
    higher_is_better = True
    resample_dtype = np.float32  # as sacrebleu sums its bootstrap resamples
    options = (
        click.Option(["--tokenize", "-tok"], type=click.Choice(list(TOKENIZERS)),
                     default="13a", show_default=True, help="sacrebleu tokenizer."),
        click.Option(["--smooth-method", "-s"], type=click.Choice(SMOOTH_METHODS),
                     default="exp", show_default=True, help="Smoothing method."),
        click.Option(["--smooth-value", "-sv"], type=float, default=None,
                     help="Value for floor (default 0.1) and add-k (default 1) smoothing."),
        click.Option(["--lowercase", "-lc"], is_flag=True, help="Lowercase before scoring."),
        click.Option(["--max-ngram-order"], type=click.IntRange(min=1), default=4,
                     show_default=True, help="Largest n-gram order."),
        click.Option(["--effective-order"], is_flag=True,
                     help="Ignore n-gram orders with no hypothesis n-grams (for sentence BLEU)."),
        click.Option(["--force"], is_flag=True,
                     help="Do not warn when a system's hypotheses look tokenized (sacrebleu's "
                          "--force). Only corpus scoring warns; scores do not change."),
    )

    def __init__(self, tokenize: str = "13a", smooth_method: str = "exp",
                 smooth_value: Optional[float] = None, lowercase: bool = False,
                 max_ngram_order: int = 4, effective_order: bool = False,
                 force: bool = False) -> None:
        if tokenize not in TOKENIZERS:
            raise SetupError(f"unknown tokenizer {tokenize!r}; choose from {', '.join(TOKENIZERS)}")
        if smooth_method not in SMOOTH_METHODS:
            raise SetupError(
                f"unknown smooth method {smooth_method!r}; choose from {', '.join(SMOOTH_METHODS)}")
        self.tokenizer = load_tokenizer(tokenize)
        self.smooth_method = smooth_method
        self.smooth_value = smooth_value
        self.lowercase = lowercase
        self.max_order = max_ngram_order
        self.effective_order = effective_order
        self.force = force
        orders = range(1, max_ngram_order + 1)
        self.stat_names = ("hyp_len", "ref_len", *(f"correct_{n}" for n in orders),
                           *(f"total_{n}" for n in orders))

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        ref_counts, ref_lens = self.references(refs)
        tokens = self._tokens(hyp)
        hyp_len = len(tokens)
        hyp_counts = self._ngram_counts(tokens)
        correct = [0] * self.max_order
        for ngram in hyp_counts.keys() & ref_counts.keys():
            correct[len(ngram) - 1] += min(hyp_counts[ngram], ref_counts[ngram])
        total = [max(hyp_len - n, 0) for n in range(self.max_order)]
        closest_ref_len = min(ref_lens, key=lambda length: (abs(hyp_len - length), length))
        return [hyp_len, closest_ref_len, *correct, *total]

    def stats_columns(self, refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]
                      ) -> np.ndarray:
        """By the compiled kernel straight from the texts where it takes them as they are
        (13a, none or char tokens, not lowercased); otherwise, and for texts it refuses
        (stats_many then says which item and why), as the items."""
        tokenizer = self.tokenizer.signature()
        if pure_python() or self.lowercase or tokenizer not in ("13a", "none", "char"):
            return super().stats_columns(refs, hyps)
        try:
            rows = kernels().bleu_columns(refs, hyps, self.max_order, tokenizer)
        except (TypeError, ValueError):
            return super().stats_columns(refs, hyps)
        return as_rows(rows, len(self.stat_names))

    def stats_batch(self, items: Sequence[Item]) -> np.ndarray:
        """`stats` of many items: by the compiled kernel, which tokenizes 13a, char and
        none itself and takes other tokenizers' output as none; or, with
        EVALPROTO_PURE_PYTHON=1, counted together with numpy (see bulk_ngrams)."""
        if not pure_python():
            prepare, tokenizer = self._for_kernel()
            hyps, refs = [hyp for _, hyp in items], [segment for segment, _ in items]
            if prepare is not _as_given:
                hyps = [prepare(hyp) for hyp in hyps]
                refs = [tuple(prepare(ref) for ref in segment) for segment in refs]
            rows = kernels().bleu_rows(hyps, refs, self.max_order, tokenizer)
            return as_rows(rows, len(self.stat_names))
        from evalproto.evaluators.bulk_ngrams import References, Sequences, count_ngrams, matches

        references = References.of(items)
        segments = len(items)
        sequences = Sequences.of_tokens([self._tokens(hyp) for _, hyp in items]
                                        + [self._tokens(ref) for ref in references.texts])
        hyp_len = sequences.lengths[:segments]
        ref_len = sequences.lengths[segments:][references.distinct]
        rows = np.zeros((segments, len(self.stat_names)))
        rows[:, 0] = hyp_len
        rows[:, 1] = closest_lengths(hyp_len, ref_len, references.owner)
        for n, counts in enumerate(count_ngrams(sequences, self.max_order)):
            found = matches(counts, segments, references)
            # A hypothesis n-gram counts up to its largest count in any reference. The
            # matches of one rank (every item's first reference, ...) are of distinct pairs.
            clipped = np.zeros(len(found.hyp_sequence))
            rank = references.rank[found.reference]
            for r in range(int(rank.max(initial=-1)) + 1):
                pairs, count = found.hyp_pair[rank == r], found.count[rank == r]
                clipped[pairs] = np.maximum(clipped[pairs], count)
            rows[:, 2 + n] = np.bincount(found.hyp_sequence, weights=clipped, minlength=segments)
            rows[:, 2 + self.max_order + n] = np.maximum(hyp_len - n, 0)
        return rows

    def pairwise_scores(self, hyps: Batches, refs: Optional[Batches]) -> np.ndarray:
        """sacrebleu's sentence_bleu (effective order, see `for_sentences`) of every
        hypothesis of each batch against every reference of it (refs None: against the
        hypotheses), a (B, H, R) array: by the compiled kernel, which counts each text's
        n-grams once and computes compute_bleu's floats in its order; with
        EVALPROTO_PURE_PYTHON=1, pair by pair (evalproto.metrics.pairwise.all_pairs)."""
        if pure_python():
            return all_pairs(self, hyps, refs)
        prepare, tokenizer = self._for_kernel()
        if prepare is not _as_given:
            hyps = [[prepare(text) for text in batch] for batch in hyps]
            refs = None if refs is None else [[prepare(text) for text in batch] for batch in refs]
        scorer = self.for_sentences()
        assert isinstance(scorer, BLEU)
        cells = kernels().bleu_pairwise(hyps, refs, self.max_order, tokenizer,
                                        self.smooth_method, self._smooth_value(),
                                        scorer.effective_order, COMPENSATED_SUM)
        return as_matrix(cells, hyps, refs)

    def _for_kernel(self) -> Tuple[Callable[[str], str], str]:
        """How a text goes to the compiled kernel, and the tokenizer the kernel applies:
        as given where it tokenizes (13a, none, char); otherwise lowercased and tokenized
        here first, the kernel splitting the tokens (none)."""
        tokenizer = self.tokenizer.signature()
        in_python = tokenizer not in ("13a", "none", "char")
        if not (self.lowercase or in_python):
            return _as_given, tokenizer

        def prepare(text: str) -> str:
            text = text.lower() if self.lowercase else text
            return self.tokenizer(text.rstrip()) if in_python else text

        return prepare, "none" if in_python else tokenizer

    def score(self, vector: np.ndarray) -> float:
        return self._computed(vector)[0]

    def _smooth_value(self) -> float:
        """The smoothing value compute_bleu uses: the given one or the method's default
        (none and exp take no value: 0)."""
        return float((SMOOTH_DEFAULTS[self.smooth_method] if self.smooth_value is None
                      else self.smooth_value) or 0.0)

    def input_warnings(self, hyps: Sequence[str]) -> List[str]:
        """sacrebleu's check for text that was not detokenized: at least 100 hypotheses
        that end in " ." (unless --force). A text file's lines count it from their bytes."""
        if self.force:
            return []
        count_endings = getattr(hyps, "count_endings", None)
        tokenized = (count_endings(" .") if count_endings
                     else sum(map(str.endswith, hyps, repeat(" ."))))
        if tokenized < TOKENIZED_LINES:
            return []
        return [f"{tokenized} of {len(hyps)} lines end in a tokenized period (' .'): it "
                f"looks like you forgot to detokenize, which may hurt BLEU (sacrebleu's "
                f"warning; --force silences it)"]

    @property
    def score_name(self) -> str:
        return "BLEU"

    def details(self, vector: np.ndarray) -> Dict[str, Any]:
        """sacrebleu's BLEUScore fields: precisions, bp, ratio, sys_len, ref_len."""
        return self._computed(vector)[1]

    def verbose_score(self, vector: np.ndarray) -> str:
        """What sacrebleu prints after BLEU: "77.5/52.2/36.1/24.7 (BP = 1.000 ...)"."""
        details = self._computed(vector)[1]
        precisions = "/".join(f"{p:.1f}" for p in details["precisions"])
        return (f"{precisions} (BP = {details['bp']:.3f} ratio = {details['ratio']:.3f} "
                f"hyp_len = {details['sys_len']:d} ref_len = {details['ref_len']:d})")

    def _computed(self, vector: np.ndarray) -> Tuple[float, Dict[str, Any]]:
        """sacrebleu's `BLEU.compute_bleu` with its operations in its order, so that the
        score is sacrebleu's to the bit: given a float64 row, in float64; given a
        float32 row (a bootstrap resample), with float32 precisions as sacrebleu's
        resamples have (the lengths, logarithms and exponentials are float64 in both).
        Lengths are truncated to integers, an order with no n-grams ends the product,
        and a zero precision contributes a log of -9999999999."""
        order = self.max_order
        sys_len, ref_len = int(vector[0]), int(vector[1])
        correct, total = list(vector[2:2 + order]), list(vector[2 + order:2 + 2 * order])
        value = self._smooth_value()
        bp = 1.0
        if sys_len < ref_len:
            bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
        precisions: List[Any] = [0.0] * order
        score = 0.0
        if any(correct):
            doubling, orders = 1., order
            for n in range(order):
                if self.smooth_method == "add-k" and n > 0:
                    correct[n] += value
                    total[n] += value
                if total[n] == 0:
                    break
                if self.effective_order:
                    orders = n + 1
                if correct[n] != 0:
                    precisions[n] = 100. * correct[n] / total[n]
                elif self.smooth_method == "exp":
                    doubling *= 2
                    precisions[n] = 100. / (doubling * total[n])
                elif self.smooth_method == "floor":
                    precisions[n] = 100. * value / total[n]
            score = bp * math.exp(sum([_log(p) for p in precisions[:orders]]) / orders)
        return score, {"precisions": [float(p) for p in precisions], "bp": bp,
                       "ratio": sys_len / ref_len if ref_len else 0.0,
                       "sys_len": sys_len, "ref_len": ref_len}

    def for_sentences(self) -> Evaluator:
        """This BLEU with effective order, as sacrebleu scores sentences (its `-sl` turns
        it on: otherwise a sentence of fewer than four words would score 0)."""
        return self if self.effective_order else self.with_changes(effective_order=True)

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """An n-gram matches at most once per occurrence; a hypothesis of L tokens has L
        unigrams, and a segment's L - n + 1 n-grams of order n (fewer as n grows)."""
        yield from super().rules(rows, summed)
        order = self.max_order
        hyp_len, correct, total = rows[:, 0], rows[:, 2:2 + order], rows[:, 2 + order:]
        yield total[:, 0] != hyp_len, "total_1 == hyp_len"
        for n in range(order):
            yield correct[:, n] > total[:, n], f"correct_{n + 1} <= total_{n + 1}"
        for n in range(1, order):
            yield total[:, n] > total[:, n - 1], f"total_{n + 1} <= total_{n}"
            if not summed:
                yield total[:, n] != np.maximum(hyp_len - n, 0), \
                    f"total_{n + 1} == max(hyp_len - {n}, 0)"

    def signature_fields(self) -> dict[str, Any]:
        smooth = self.smooth_method
        default_value = SMOOTH_DEFAULTS[smooth]
        if default_value is not None:
            value = default_value if self.smooth_value is None else self.smooth_value
            smooth += f"[{value:.2f}]"
        fields = {
            "case": "lc" if self.lowercase else "mixed",
            "eff": "yes" if self.effective_order else "no",
            "tok": self.tokenizer.signature(),
            "smooth": smooth,
        }
        if self.max_order != 4:  # sacrebleu leaves this out; scores differ, so we do not
            fields["order"] = self.max_order
        return fields

    def _tokens(self, text: str) -> List[str]:
        if self.lowercase:
            text = text.lower()
        return self.tokenizer(text.rstrip()).split()

    def _ngram_counts(self, tokens: List[str]) -> Counter:
        """The n-grams of every order up to max_order, as tuples, in one Counter."""
        return Counter(chain.from_iterable(zip(*(tokens[i:] for i in range(n)))
                                           for n in range(1, self.max_order + 1)))

    def read_references(self, refs: Tuple[str, ...]) -> Tuple[Counter, List[int]]:
        """Each n-gram's largest count in any reference, and every reference's length."""
        merged: Counter = Counter()
        lengths = []
        for ref in refs:
            tokens = self._tokens(ref)
            lengths.append(len(tokens))
            counts = self._ngram_counts(tokens)
            if not merged:
                merged = counts
                continue
            for ngram, count in counts.items():
                if count > merged[ngram]:
                    merged[ngram] = count
        return merged, lengths


def _as_given(text: str) -> str:
    return text


def closest_lengths(hyp_len: np.ndarray, ref_len: np.ndarray,
                    ref_owner: np.ndarray) -> np.ndarray:
    """Per hypothesis, the length of the reference closest to it, the shorter on a tie;
    reference r belongs to hypothesis ref_owner[r] (a non-decreasing array)."""
    preference = np.lexsort((ref_len, np.abs(hyp_len[ref_owner] - ref_len), ref_owner))
    firsts = np.searchsorted(ref_owner[preference], np.arange(len(hyp_len)))
    return ref_len[preference][firsts]


def _log(precision: float) -> float:
    """sacrebleu's floored log; a negative precision (from a negative smoothing value)
    is NaN, which checked_score refuses."""
    if precision == 0.0:
        return -9999999999
    return math.log(precision) if precision > 0 else math.nan


if __name__ == "__main__":
    BLEU.main()
