"""A weighted sum of other metrics, like cdec's COMB and Moses' InterpolatedScorer.

Spelled `combine bleu=0.5 ter=-0.5`; a part may carry options when quoted whole,
`combine "bleu --tokenize intl=0.5" ter=-0.5` (the weight follows the last `=`).
The statistics are the parts' statistics side by side, so the combination stays
additive, and the score is the weighted sum of the parts' scores.
"""

from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Tuple

import click
import numpy as np

from evalproto.base.errors import SetupError
from evalproto.base.numerals import parse_number
from evalproto.metrics.evaluator import Evaluator
from evalproto.metrics.registry import from_spec


def parse_part(text: str) -> Tuple[str, float]:
    """"SPEC=WEIGHT" into (SPEC, WEIGHT)."""
    spec, equals, weight = text.rpartition("=")
    try:
        if not (equals and spec.strip()):
            raise ValueError
        return spec.strip(), parse_number(weight.strip())
    except ValueError:
        raise SetupError(f"a combine part is SPEC=WEIGHT with a finite number for WEIGHT, "
                         f"e.g. bleu=0.5; got {text!r}") from None


class Combine(Evaluator):
    """Weighted sum of other metrics' scores (cdec COMB, Moses InterpolatedScorer)."""

    name = "combine"
    higher_is_better = True
    options = (click.Argument(["parts"], nargs=-1, required=True),)

    def __init__(self, parts: Sequence[str]) -> None:
        if not parts:
            raise SetupError("combine needs at least one part, e.g. combine bleu=0.5 ter=-0.5")
        self.specs: List[str] = []
        self.weights: List[float] = []
        self.parts: List[Evaluator] = []
        for text in parts:
            spec, weight = parse_part(text)
            self.specs.append(spec)
            self.weights.append(weight)
            self.parts.append(from_spec(spec))
        self.extra_decimals = max(part.extra_decimals for part in self.parts)
        bounds = np.cumsum([0] + [len(part.stat_names) for part in self.parts])
        self._slices = [slice(start, end) for start, end in zip(bounds[:-1], bounds[1:])]
        self.stat_names = tuple(f"{part.name}{i}.{stat}" for i, part in enumerate(self.parts, 1)
                                for stat in part.stat_names)

    def stats(self, refs: Sequence[str], hyp: str) -> List[float]:
        row: List[float] = []
        for part in self.parts:
            row += part.checked_stats(refs, hyp)
        return row

    def rules(self, rows: np.ndarray, summed: bool) -> Iterator[Tuple[np.ndarray, str]]:
        """Each part's rules, on its own columns."""
        yield from super().rules(rows, summed)
        for number, (part, piece) in enumerate(zip(self.parts, self._slices), 1):
            for broken, rule in part.rules(rows[:, piece], summed):
                yield broken, f"{rule} (part {number}, {self.specs[number - 1]})"

    def score(self, vector: np.ndarray) -> float:
        return sum([weight * part.checked_score(list(vector[piece]))
                    for weight, part, piece in zip(self.weights, self.parts, self._slices)],
                   0.0)

    def signature_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "parts": ",".join(f"{spec}={weight:g}"
                              for spec, weight in zip(self.specs, self.weights))}
        for i, part in enumerate(self.parts, 1):
            fields.update({f"{part.name}{i}.{key}": value
                           for key, value in part.signature_fields().items()})
        return fields


if __name__ == "__main__":
    Combine.main()
