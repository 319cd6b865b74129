"""SQuAD v1.1 token F1 and exact match, as the official evaluation script defines them.

Answers are normalized by lowercasing, deleting ASCII punctuation, deleting the
articles a/an/the, and collapsing whitespace. F1 is the harmonic mean of token
precision and recall over the multiset of shared tokens; both take the maximum over
the references. The statistics are [sum of F1, sum of exact match, n], so the
corpus score is the mean, in percent, like the official script's.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterator, List, Sequence, Tuple

import click
import numpy as np

from evalproto.metrics.evaluator import Evaluator

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_DELETE_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    text = text.lower().translate(_DELETE_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    shared = sum((Counter(predicted) & Counter(expected)).values())
    if shared == 0:
        return 0.0
    precision = shared / len(predicted)
    recall = shared / len(expected)
    return (2 * precision * recall) / (precision + recall)


class SQuAD(Evaluator):
    """SQuAD v1.1 token F1 (or exact match) over normalized answers, in percent."""

    name = "squad"
    higher_is_better = True
    mean_of_rows = True  # each row is one segment (n == 1)
    options = (
        click.Option(["--measure"], type=click.Choice(["f1", "exact-match"]), default="f1",
                     show_default=True, help="Which of the two statistics is the score."),
    )

    def __init__(self, measure: str = "f1") -> None:
        self.measure = measure
        self.stat_names = ("f1_sum", "exact_match_sum", "n")

    def stats(self, refs: Sequence[str], hyp: str) -> List[float]:
        prediction = normalize_answer(hyp)
        return [max(token_f1(hyp, ref) for ref in refs),
                float(any(prediction == normalize_answer(ref) for ref in refs)), 1]

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """Each segment adds an F1 and an exact match between 0 and 1, and 1 to n."""
        yield from super().rules(rows, summed)
        f1_sum, exact_sum, n = rows[:, 0], rows[:, 1], rows[:, 2]
        yield np.asarray((rows < 0).any(axis=1)), "every statistic >= 0"
        yield (exact_sum != np.trunc(exact_sum)) | (n != np.trunc(n)), \
            "exact_match_sum and n are whole numbers"
        yield np.maximum(f1_sum, exact_sum) > n, "f1_sum <= n and exact_match_sum <= n"
        if not summed:
            yield n != 1, "n == 1"

    def score(self, vector: np.ndarray) -> float:
        f1_sum, exact_sum, n = vector
        return 100 * (f1_sum if self.measure == "f1" else exact_sum) / n if n else 0.0

    def signature_fields(self) -> dict:
        return {"measure": self.measure}


if __name__ == "__main__":
    SQuAD.main()
