"""The delta metrics of a dataset that has perturbed copies (Dynabench's fairness and
robustness): for each model with predictions on the dataset and on a copy, the perf
metric of its predictions on each example's copies against its own prediction on the
example, averaged over the examples that have copies. Computed from the stored
predictions in a worker process (evalproto.api.board.delta_rows), once per pair of
prediction files, and kept: the leaderboard shows the mean, the Dynaboard resamples
the examples' deltas."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Dict, Tuple

import numpy as np
from sqlalchemy.engine import Engine, Row

from evalproto.api.board import delta_rows
from evalproto.service import results, store
from evalproto.service.database import reading
from evalproto.service.standings import Standings
from evalproto.sources.specs import MetricSpec

KEPT_DELTAS = 512
DELTA_METRICS = ("fairness", "robustness")
"""The delta metrics, named by the kind of copy that gives each: higher is better."""


def delta_records() -> Dict[str, Dict[str, Any]]:
    """Each delta metric as a leaderboard lists its metrics."""
    return {kind: {"metric": kind, "kind": "delta", "name": kind, "higher_is_better": True,
                   "signature": None, "decimals": 2} for kind in DELTA_METRICS}


class Deltas:
    """The delta rows of a database's models, computed in the standings' workers."""

    def __init__(self, engine: Engine, standings: Standings) -> None:
        self.engine = engine
        self.standings = standings
        self._lock = threading.Lock()
        self._kept: OrderedDict[Tuple[Any, ...], np.ndarray] = OrderedDict()

    def rows(self, perf: Row, original: Row, copy: Row, original_predictions: int,
             copy_predictions: int) -> np.ndarray:
        """A model's (delta, has copies) rows over the original's examples, under the
        perf metric (its stored row), from its predictions on the original and on the
        copy (by their ids)."""
        key = (perf.signature, original.id, copy.id, original_predictions, copy_predictions)
        with self._lock:
            found = self._kept.get(key)
        if found is not None:
            return found
        with reading(self.engine) as connection:
            files = (store.dataset_data(connection, original.id),
                     results.predictions_data(connection, original_predictions),
                     store.dataset_data(connection, copy.id),
                     results.predictions_data(connection, copy_predictions))
        found = self.standings.submit(
            delta_rows, MetricSpec(perf.kind, perf.spec),
            (f"{original.name}.jsonl", files[0]), (f"{original.name}.predictions.jsonl",
                                                    files[1]),
            (f"{copy.name}.jsonl", files[2]), (f"{copy.name}.predictions.jsonl", files[3])
        ).result()
        with self._lock:
            self._kept[key] = found
            while len(self._kept) > KEPT_DELTAS:
                self._kept.popitem(last=False)
        return found
