"""TER (Snover et al., 2006), identical to sacrebleu's TER.

The edit search is ter_search's, which gives sacrebleu's `translation_edit_rate`
results faster, and the tokenizer is sacrebleu's Tercom tokenizer; references are
tokenized once per distinct reference set and cached.
The statistics are the edits against the closest reference and the average reference
length.

sacrebleu's TER tokenizes references twice (when caching them, and again when reading
the cache) and hypotheses once. With --normalized the second pass can split more, e.g.
"Squire's" becomes "Squire 's", which changes reference lengths and edits, so the
references are tokenized twice here as well.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import click
import numpy as np
from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

from evalproto.base.compiled import pure_python
from evalproto.base.gcpause import paused_gc
from evalproto.evaluators.native import as_rows, kernels
from evalproto.evaluators.ter_search import translation_edit_rate
from evalproto.metrics.evaluator import Evaluator, Item
from evalproto.metrics.pairwise import Batches, all_pairs, shape_of


class TER(Evaluator):
    """Translation edit rate, identical to sacrebleu's."""

    name = "ter"
    higher_is_better = False
    resample_dtype = np.float32  # as sacrebleu sums its bootstrap resamples
    options = (
        click.Option(["--normalized"], is_flag=True,
                     help="Tercom normalization of punctuation and XML entities."),
        click.Option(["--no-punct"], is_flag=True, help="Remove punctuation."),
        click.Option(["--asian-support"], is_flag=True,
                     help="Split CJK characters (with --normalized) and remove CJK "
                          "punctuation (with --no-punct)."),
        click.Option(["--case-sensitive"], is_flag=True, help="Do not lowercase."),
    )

    def __init__(self, normalized: bool = False, no_punct: bool = False,
                 asian_support: bool = False, case_sensitive: bool = False) -> None:
        self.normalized = normalized
        self.no_punct = no_punct
        self.asian_support = asian_support
        self.case_sensitive = case_sensitive
        self.tokenizer = TercomTokenizer(normalized=normalized, no_punct=no_punct,
                                         asian_support=asian_support,
                                         case_sensitive=case_sensitive)
        self.stat_names = ("edits", "avg_ref_len")

    def stats(self, refs: Sequence[str], hyp: str) -> List[float]:
        hyp_words = self._words(hyp)
        best_edits = None
        total_ref_len = 0
        for ref_words in self.references(refs):
            edits, ref_len = translation_edit_rate(hyp_words, ref_words)
            total_ref_len += ref_len
            if best_edits is None or edits < best_edits:
                best_edits = edits
        return [float(best_edits or 0), total_ref_len / len(refs)]

    def stats_batch(self, items: Sequence[Item]) -> np.ndarray:
        """The rows by the compiled edit search, on the words of the Tercom tokenizer
        (references tokenized twice, as in `read_references`). With
        EVALPROTO_PURE_PYTHON=1, the rows one by one in Python, with the cyclic
        collector paused: the edit search makes many short-lived rows, none in a
        cycle, and passes over them took a tenth of the time."""
        if not pure_python():
            tokenize = self.tokenizer
            rows = kernels().ter_rows(
                [tokenize(hyp.rstrip()) for _, hyp in items],
                [[tokenize(tokenize(ref.rstrip()).rstrip()) for ref in refs] for refs, _ in items])
            return as_rows(rows, len(self.stat_names))
        with paused_gc():
            return super().stats_batch(items)

    def pairwise_scores(self, hyps: Batches, refs: Optional[Batches]) -> np.ndarray:
        """sacrebleu's sentence_score of every hypothesis of each batch against every
        reference of it (refs None: against the hypotheses), a (B, H, R) array: each text
        tokenized once (as a hypothesis, and again as a reference), every pair's edits
        found by the compiled search; with EVALPROTO_PURE_PYTHON=1, pair by pair
        (evalproto.metrics.pairwise.all_pairs)."""
        if pure_python():
            return all_pairs(self, hyps, refs)
        tokenize = self.tokenizer
        hyp_words = [[tokenize(hyp.rstrip()) for hyp in batch] for batch in hyps]
        ref_words = [[tokenize(tokenize(ref.rstrip()).rstrip()) for ref in batch]
                     for batch in (hyps if refs is None else refs)]
        rows = as_rows(kernels().ter_pairwise(hyp_words, ref_words), len(self.stat_names))
        return self.score_many(rows).reshape(shape_of(hyps, refs))

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        yield from super().rules(rows, summed)
        edits, ref_len = rows[:, 0], rows[:, 1]
        yield (edits < 0) | (edits != np.trunc(edits)), "edits is a whole number >= 0"
        yield ref_len < 0, "avg_ref_len >= 0"

    def score(self, vector: np.ndarray) -> float:
        """sacrebleu's TER of summed [edits, average reference length], in the row's
        float type (float32 for a bootstrap resample, as sacrebleu's)."""
        edits, ref_len = vector[0], vector[1]
        if ref_len > 0:
            rate = edits / ref_len
        elif edits > 0:
            rate = 1.0  # empty references: any hypothesis word is wrong
        else:
            rate = 0.0
        return 100 * rate

    @property
    def score_name(self) -> str:
        return "TER"

    def details(self, vector: np.ndarray) -> Dict[str, Any]:
        """sacrebleu's TERScore fields beside the score."""
        return {"num_edits": float(vector[0]), "ref_length": float(vector[1])}

    def signature_fields(self) -> dict[str, Any]:
        return {
            "case": "mixed" if self.case_sensitive else "lc",
            "tok": self.tokenizer.signature(),
            "norm": self.normalized,
            "punct": not self.no_punct,
            "asian": self.asian_support,
        }

    def _words(self, text: str) -> List[str]:
        return self.tokenizer(text.rstrip()).split()

    def read_references(self, refs: Tuple[str, ...]) -> List[List[str]]:
        return [self._words(self.tokenizer(ref.rstrip())) for ref in refs]


if __name__ == "__main__":
    TER.main()
