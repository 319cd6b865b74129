"""Exact match accuracy with Dynabench's `get_accuracy` semantics.

A hit is a prediction equal, character for character, to the reference or to any of
several references. The score is the percentage of hits (Dynabench rounds it to two
decimals for display; here it is kept exact).
"""

from __future__ import annotations

from typing import List, Sequence

import numpy as np

from evalproto.evaluator import Evaluator


class ExactMatch(Evaluator):
    """Percentage of predictions equal to a reference (Dynabench accuracy)."""

    name = "exact-match"
    higher_is_better = True

    def __init__(self) -> None:
        self.stat_names = ("hits", "n")

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        return [int(hyp in refs), 1]

    def score(self, vector: np.ndarray) -> float:
        hits, n = vector
        if hits < 0 or n < 0 or hits > n:
            raise ValueError("exact-match statistics need 0 <= hits <= n")
        return 100 * hits / n if n else 0.0


if __name__ == "__main__":
    ExactMatch.main()
