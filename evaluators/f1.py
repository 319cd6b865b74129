"""Macro-averaged F1 for classification over a label set declared up front.

Each item's reference is its gold label and its hypothesis the predicted label. The
statistics are [tp, fp, fn] for every declared label, so per-label F1 and the macro
average can be computed from any sum of rows. A label outside the declared set is an
error, never a silent miss. Scores agree with scikit-learn's
`f1_score(average="macro", labels=...)`, as a fraction.
"""

from __future__ import annotations

from typing import Iterator, List, Sequence, Tuple

import click
import numpy as np

from evalproto.base.errors import SetupError
from evalproto.metrics.evaluator import CountsEvaluator


class MacroF1(CountsEvaluator):
    """Macro-averaged F1 over declared labels, like scikit-learn's (a fraction)."""

    name = "f1"
    higher_is_better = True
    extra_decimals = 2  # a fraction: 0.609 where a percentage shows 60.9
    options = (
        click.Option(["--labels"], required=True, metavar="A,B,C",
                     help="The comma-separated label set; every label must be one of them."),
    )

    def __init__(self, labels: str | Sequence[str]) -> None:
        names = [label.strip() for label in labels.split(",")] if isinstance(labels, str) \
            else list(labels)
        if not all(names) or len(set(names)) != len(names):
            raise SetupError(f"the labels must be distinct and non-empty, got {labels!r}")
        self.labels = names
        self._index = {label: i for i, label in enumerate(names)}
        self.stat_names = tuple(f"{label}_{count}" for label in names
                                for count in ("tp", "fp", "fn"))

    def stats(self, refs: Sequence[str], hyp: str) -> List[int]:
        if len(refs) != 1:
            raise ValueError(f"f1 takes exactly one gold label per item, got {len(refs)}")
        gold = self._position(refs[0], "gold label")
        predicted = self._position(hyp, "prediction")
        row = [0] * len(self.stat_names)
        if gold == predicted:
            row[3 * gold] = 1
        else:
            row[3 * predicted + 1] = 1
            row[3 * gold + 2] = 1
        return row

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """Each item is one true positive, or one false positive with one false negative."""
        yield from super().rules(rows, summed)
        tp, fp, fn = rows[:, 0::3].sum(axis=1), rows[:, 1::3].sum(axis=1), rows[:, 2::3].sum(axis=1)
        yield fp != fn, "the false positives add up to the false negatives"
        if not summed:
            yield tp + fp != 1, "a row holds one true positive or one false positive"

    def score(self, vector: np.ndarray) -> float:
        counts = vector.reshape(len(self.labels), 3)
        scores = []
        for tp, fp, fn in counts:
            denominator = 2 * tp + fp + fn
            scores.append(2 * tp / denominator if denominator else 0.0)
        return float(np.mean(scores))

    def signature_fields(self) -> dict:
        return {"labels": ",".join(self.labels)}

    def _position(self, label: str, role: str) -> int:
        if label not in self._index:
            raise ValueError(f"{role} {label!r} is not one of the declared labels "
                             f"{','.join(self.labels)}")
        return self._index[label]


if __name__ == "__main__":
    MacroF1.main()
