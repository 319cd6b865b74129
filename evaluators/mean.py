"""The mean of segment scores computed elsewhere (COMET, BLEURT, MetricX, human
judgements), as a metric with additive statistics.

A metric whose corpus score is the mean of its segment scores needs only (sum, sum of
squares, count) per segment: summed, they give the mean (and the spread), so such
scores get bootstrap intervals, paired tests, the paired t-test and groups like any
other metric. Each hypothesis is one segment's score, a number; `evalproto
import-scores` writes stats files of this metric from a metric's output.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import click
import numpy as np

from evalproto.base.numerals import parse_number, shorten
from evalproto.metrics.evaluator import Evaluator


class Mean(Evaluator):
    """Mean of segment scores computed elsewhere (each hypothesis is a number)."""

    name = "mean"
    higher_is_better = True
    mean_of_rows = True  # each row is one segment (count == 1)
    options = (
        click.Argument(["label"], required=False, default="mean"),
        click.Option(["--signature"], default="", metavar="TEXT",
                     help="The signature of the metric that computed the scores (its "
                          "model and version), so that only comparable scores are reduced "
                          "together."),
        click.Option(["--lower-is-better"], is_flag=True,
                     help="A lower score is better (an error count, MetricX)."),
        click.Option(["--extra-decimals"], type=click.IntRange(0, 20), default=2,
                     show_default=True,
                     help="Decimals shown beyond a percentage's: COMET's 0-1 means read "
                          "0.512 and 0.634, as WER's, where one decimal would show 0.5 and "
                          "0.6."),
    )

    def __init__(self, label: Optional[str] = "mean", signature: str = "",
                 lower_is_better: bool = False, extra_decimals: int = 2) -> None:
        self.label = label or "mean"
        self.metric_signature = signature
        self.higher_is_better = not lower_is_better  # type: ignore[misc]
        self.extra_decimals = extra_decimals
        self.stat_names = ("sum", "sumsq", "count")

    @property
    def score_name(self) -> str:
        return self.label

    def stats(self, refs: Sequence[str], hyp: str) -> List[float]:
        try:
            value = parse_number(hyp.strip())
        except ValueError:
            raise ValueError(f"the hypothesis {shorten(hyp)} is not a number: the mean "
                             f"metric reads one segment score per hypothesis") from None
        return [value, value * value, 1]

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        yield from super().rules(rows, summed)
        count = rows[:, 2]
        yield (count < 0) | (count != np.trunc(count)), "count is a whole number >= 0"
        yield rows[:, 1] < 0, "sumsq >= 0"
        if not summed:
            yield count != 1, "count == 1"
            yield rows[:, 1] != rows[:, 0] * rows[:, 0], "sumsq == sum * sum"

    def score(self, vector: np.ndarray) -> float:
        total, _, count = vector
        return float(total / count) if count else 0.0

    def details(self, vector: np.ndarray) -> Dict[str, Any]:
        """The sample standard deviation of the segment scores, and their count."""
        total, squares, count = (float(value) for value in vector)
        spread = (squares - total * total / count) / (count - 1) if count > 1 else 0.0
        return {"n": int(count), "std": max(spread, 0.0) ** 0.5}

    def signature_fields(self) -> Dict[str, Any]:
        fields: Dict[str, Any] = {"mean": self.label}
        if self.metric_signature:
            fields["of"] = self.metric_signature
        if not self.higher_is_better:
            fields["lower"] = True
        return fields


if __name__ == "__main__":
    Mean.main()
