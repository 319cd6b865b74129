"""What the server measured of the models it runs, as a leaderboard shows it: the
metrics `throughput` (examples per second, higher is better) and `memory` (the peak
resident memory of the model's processes, GiB, lower is better), one entry per model
whose current submission its run made, without intervals (one run, one measurement),
ranked by value. A model whose run has not made a submission yet is on the board with
its run's state, and a failed run with its message."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

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


def measured_entries(base: Dict[str, Any], row: Row) -> List[Dict[str, Any]]:
    """A model's throughput and memory entries, from its current submission `row`
    (none if no run of the server made it); `base` holds what every entry of the
    model says (task, dataset, model, team...)."""
    entries = []
    for name, (column, _, _) in MEASURED.items():
        value: Optional[float] = getattr(row, column)
        if value is None:
            continue
        entries.append(plain_data({
            **base, "metric": name, "name": name, "submission": row.id, "status": DONE,
            "score": value,
            "signature": None, "n": None, "mean": None, "half_width": None, "rank": None,
            "tags": {}, "message": None}))
    return entries


def rank_measured(entries: Sequence[Dict[str, Any]]) -> None:
    """Give each measured entry its rank among the models (equal values share it)."""
    for name, (_, higher, _) in MEASURED.items():
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
