"""A Dynaboard's weights as the command line and a page's address give them:
`metric=weight,...`. Nothing here needs the database, so that the client reads them
as the server does."""

from __future__ import annotations

from typing import Dict, Mapping

from evalproto.base.numerals import parse_number
from evalproto.service.errors import Invalid

MAX_WEIGHT = 1e6


def parse_weights(text: str) -> Dict[str, float]:
    """Weights as the command line and a page's address give them: `metric=weight,...`
    (each weight a number of 0 or more, in ASCII)."""
    weights: Dict[str, float] = {}
    for part in (part.strip() for part in text.split(",") if part.strip()):
        metric, equals, value = part.rpartition("=")
        if not equals or not metric.strip():
            raise Invalid(f"weights: {part[:80]!r} is not METRIC=WEIGHT")
        try:
            weight = parse_number(value.strip())
        except ValueError:
            raise Invalid(f"weights: the weight of {metric.strip()[:80]!r} is not a number: "
                          f"{value.strip()[:40]!r}") from None
        if not 0 <= weight <= MAX_WEIGHT:
            raise Invalid(f"weights: the weight of {metric.strip()[:80]!r} is {value.strip()}; "
                          f"a weight is from 0 to {MAX_WEIGHT:g}")
        weights[metric.strip()] = weight
    return weights


def format_weights(weights: Mapping[str, float]) -> str:
    """Weights as parse_weights reads them (for a page's address)."""
    return ",".join(f"{metric}={weight:g}" for metric, weight in weights.items())
