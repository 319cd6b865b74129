"""The Dynaboard as a task's page shows it, as named data for the templates: its
metrics with their weights and directions, a row per model with each figure's share
before the weights (what the page's script re-weighs), and the sliders that set the
weights. Made from the API's own JSON (evalproto.service.dynaboard)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

from evalproto.reports.report import decimals, fixed
from evalproto.service.views import Directed


@dataclass
class DynaMetric(Directed):
    """A metric of a Dynaboard: its weight, direction and the places it is shown with."""

    metric: str
    weight: float
    higher_is_better: bool
    places: int


@dataclass
class DynaCell:
    """A model's figure on a metric of a Dynaboard, and its share before the weights
    (what the page's script re-weighs)."""

    metric: str
    value: float
    share: float
    text: str


@dataclass
class DynaLine:
    """A model's row of a Dynaboard."""

    rank: int
    model: str
    team: str
    dynascore: float
    interval: List[float]
    cells: List[DynaCell]

    @property
    def dynascore_text(self) -> str:
        """Its Dynascore, as shown."""
        return fixed(self.dynascore, 2, "n/a")

    @property
    def interval_text(self) -> str:
        """Its interval, as shown."""
        return f"{fixed(self.interval[0], 2, 'n/a')}–{fixed(self.interval[1], 2, 'n/a')}"


@dataclass
class Dynaboard:
    """A dataset's Dynaboard as its page shows it (from the API's JSON), or why there
    is none."""

    dataset: str
    metrics: List[DynaMetric] = field(default_factory=list)
    lines: List[DynaLine] = field(default_factory=list)
    left_out: List[str] = field(default_factory=list)
    samples: int = 0
    problem: Optional[str] = None

    @property
    def weights_text(self) -> str:
        """Its weights, as the note says them."""
        return ", ".join(f"{metric.metric} {metric.weight:g}" for metric in self.metrics)


def dynaboard(found: Mapping[str, Any]) -> Dynaboard:
    """A Dynaboard's view, from what the API answers."""
    metrics = [DynaMetric(metric["metric"], metric["weight"], metric["higher_is_better"],
                          decimals([model["scores"][metric["metric"]]
                                    for model in found["models"]], 1))
               for metric in found["metrics"]]
    lines = [DynaLine(model["rank"], model["model"], model["team"], model["dynascore"],
                      model["interval"],
                      [DynaCell(metric.metric, model["scores"][metric.metric],
                                model["normalized"][metric.metric],
                                fixed(model["scores"][metric.metric], metric.places, "n/a"))
                       for metric in metrics]) for model in found["models"]]
    left_out = [f"{item['model']} ({item['team']}), without {', '.join(item['without'])}"
                for item in found["left_out"]]
    return Dynaboard(found["dataset"], metrics, lines, left_out, found["samples"])


@dataclass
class Slider:
    """A weight's slider: its metric and where it starts (0 to MAX_SLIDER)."""

    metric: str
    weight: float


MAX_SLIDER = 5
"""The sliders' range, as Dynabench's: 0 to 5."""


def sliders(boards: Sequence[Dynaboard]) -> List[Slider]:
    """A slider for each metric of these Dynaboards (in their order), at its weight."""
    found: Dict[str, float] = {}
    for board in boards:
        for metric in board.metrics:
            found.setdefault(metric.metric, min(metric.weight, MAX_SLIDER))
    return [Slider(metric, weight) for metric, weight in found.items()]
