"""Exact match accuracy with Dynabench's `get_accuracy` semantics.

A hit is a prediction equal, character for character, to the reference or to any of
several references. The score is the percentage of hits (Dynabench rounds it to two
decimals for display; here it is kept exact).
"""

from __future__ import annotations

from typing import Iterator, List, Sequence, Tuple

import numpy as np

from evalproto.metrics.evaluator import CountsEvaluator


class ExactMatch(CountsEvaluator):
    """Percentage of predictions equal to a reference (Dynabench accuracy)."""

    name = "exact-match"
    higher_is_better = True
    mean_of_rows = True  # each row is one segment (n == 1)

    def __init__(self) -> None:
        self.stat_names = ("hits", "n")

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        return [int(hyp in refs), 1]

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        yield from super().rules(rows, summed)
        yield rows[:, 0] > rows[:, 1], "hits <= n"
        if not summed:
            yield rows[:, 1] != 1, "n == 1"

    def score(self, vector: np.ndarray) -> float:
        hits, n = vector
        return 100 * hits / n if n else 0.0


if __name__ == "__main__":
    ExactMatch.main()
