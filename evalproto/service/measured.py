"""What the server measured of the models it runs, as a leaderboard shows it: the
metrics `throughput` (examples per second, higher is better) and `memory` (the peak
resident memory of the model's processes, GiB, lower is better), one entry per model
whose current submission its run made, without intervals (one run, one measurement),
ranked by value. A model whose run has not made a submission yet is on the board with
its run's state, and a failed run with its message."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from sqlalchemy.engine import Row

from evalproto.base.numerals import plain_data
from evalproto.service.schema import DONE

MEASURED = {"throughput": ("throughput", True, 1), "memory": ("memory", False, 3)}
"""Each measured metric: the submission's column, whether higher is better, and the
decimals it is shown with."""


def measured_records() -> List[Dict[str, Any]]:
    """The measured metrics as a leaderboard lists its metrics."""
    return [{"metric": name, "kind": "measured", "name": name, "higher_is_better": higher,
             "signature": None, "decimals": decimals}
            for name, (_, higher, decimals) in MEASURED.items()]


MEASURED_DIRECTIONS = {name: higher for name, (_, higher, _) in MEASURED.items()}


def value_entry(base: Dict[str, Any], metric: str, submission: int,
                value: float) -> Dict[str, Any]:
    """An entry of a metric that has a value and no interval (measured, or a mean)."""
    return plain_data({**base, "metric": metric, "name": metric, "submission": submission,
                       "status": DONE, "score": value, "signature": None, "n": None,
                       "mean": None, "half_width": None, "rank": None, "tags": {},
                       "message": None})


def measured_entries(base: Dict[str, Any], row: Row) -> List[Dict[str, Any]]:
    """A model's throughput and memory entries, from its current submission `row`
    (none if no run of the server made it); `base` holds what every entry of the
    model says (task, dataset, model, team...)."""
    values = {name: getattr(row, column) for name, (column, _, _) in MEASURED.items()}
    return [value_entry(base, name, row.id, value) for name, value in values.items()
            if value is not None]


def rank_by_value(entries: Sequence[Dict[str, Any]], metrics: Mapping[str, bool]) -> None:
    """Give each entry of these metrics (measured once, without an interval: {metric:
    whether higher is better}) its rank among the models (equal values share it)."""
    for name, higher in metrics.items():
        scored = [entry for entry in entries
                  if entry["metric"] == name and entry["score"] is not None]
        values = sorted((entry["score"] for entry in scored), reverse=higher)
        for entry in scored:
            first = values.index(entry["score"]) + 1
            entry["rank"] = [first, first + values.count(entry["score"]) - 1]


def run_entries(base: Dict[str, Any], run: Row,
                metrics: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The entries of a model whose run has made no submission yet: each metric of the
    board (its record) at the run's state (queued, running, failed with its message)."""
    return [plain_data({**base, "metric": metric["metric"], "name": metric["name"],
                        "submission": None, "status": run.state, "score": None,
                        "signature": None, "n": None, "mean": None, "half_width": None,
                        "rank": None, "tags": {}, "message": run.message})
            for metric in metrics]
