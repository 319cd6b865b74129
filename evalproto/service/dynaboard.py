"""A dataset's Dynaboard: each model's Dynascore (Dynabench's, evalproto.stats.dynascore)
over the task's perf metric and what else every model of the board has: the delta
metrics of the dataset's perturbed copies (fairness, robustness), and the throughput
and memory the server measured of the models it runs; with each Dynascore's 95%
bootstrap interval from the stored rows (evalproto.api.dynaboard). The weights are the
user's, else the task's, else Dynabench's (the perf metric 4, the others 1). A metric
that some models lack is left out, and said so.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Tuple

from sqlalchemy.engine import Row

from evalproto.api.board import rows_from_bytes
from evalproto.api.dynaboard import (
    BoardInputs,
    Resampled,
    default_weights,
    resample_board,
    weigh,
)
from evalproto.base.numerals import plain_data
from evalproto.service import store
from evalproto.service.boards import Boards, Gathered
from evalproto.service.database import reading
from evalproto.service.errors import Invalid
from evalproto.service.measured import MEASURED
from evalproto.service.names import check_name
from evalproto.service.standings import Wanted
from evalproto.sources.specs import MetricSpec

KEPT_BOARDS = 64


class Dynaboards:
    """The Dynaboards of one database: their resamples computed in the standings'
    workers and kept by what they were computed from, weighed as each reader asks."""

    def __init__(self, boards: Boards, instance_memory: float) -> None:
        self.boards = boards
        self.instance_memory = instance_memory
        self._lock = threading.Lock()
        self._kept: OrderedDict[Any, Resampled] = OrderedDict()

    def board(self, task_name: str, dataset_name: str,
              weights: Optional[Mapping[str, float]] = None,
              others: bool = False) -> Dict[str, Any]:
        """The Dynaboard of a dataset (an original, not a perturbed copy): its models
        by Dynascore, best first, each with its interval, its figures and their shares
        before the weights (which the page re-ranks by); the weights, each metric's
        direction and offset, and what was left out. With `others`, weights of metrics
        this board lacks are let be (a page's weights are for all its Dynaboards)."""
        check_name(task_name, "task")
        check_name(dataset_name, "dataset")
        with reading(self.boards.engine) as connection:
            task = store.task(connection, task_name)
            dataset = store.dataset(connection, task.id, dataset_name)
            if dataset.perturbation_of is not None:
                raise Invalid(f"the dataset {dataset_name!r} is a {dataset.kind} copy of "
                              f"{dataset.original!r}: the Dynaboard is the original's")
            metric_rows = store.task_metrics(connection, task.id)
            gathered = self.boards.gather(connection, dataset, metric_rows)
            perf = next(row for row in metric_rows if row.spec == task.perf)
            scored = gathered.scored(perf)
        models = [row for row in gathered.current if row.model in scored]
        if not models:
            raise Invalid(f"no model has been scored on {dataset_name!r} yet: the Dynaboard "
                          f"has nothing to weigh")
        left_out: List[Dict[str, Any]] = []
        copies = []
        for copy, on_copy in sorted(gathered.copies, key=lambda pair: str(pair[0].kind)):
            lacking = [row.model for row in models if row.model not in on_copy]
            if lacking:
                left_out.append({"metric": copy.kind, "models_without": lacking})
            else:
                copies.append((copy, [on_copy[row.model].predictions_id for row in models]))
        measured: Dict[str, List[float]] = {}
        for name, (column, _, _) in MEASURED.items():
            values = [getattr(row, column) for row in models]
            if all(value is not None for value in values):
                measured[name] = values
            elif any(value is not None for value in values):
                left_out.append({"metric": name, "models_without": [
                    row.model for row, value in zip(models, values) if value is None]})
        # Dynabench's order: perf, throughput, memory, fairness, robustness.
        metrics = [perf.spec, *measured, *(str(copy.kind) for copy, _ in copies)]
        if others and weights is not None:
            weights = {metric: weights[metric] for metric in metrics if metric in weights}
        chosen = self._weights(task, metrics, weights)
        directions = {metric: -1.0 for metric in metrics if metric == "memory"}
        if not perf.higher_is_better:
            directions[perf.spec] = -1.0
        offsets = {"memory": self.instance_memory} if "memory" in metrics else {}
        standings = self.boards.standings
        key = (dataset.id, perf.signature, standings.samples, standings.seed,
               tuple((row.model, row.predictions_id, scored[row.model]) for row in models),
               tuple((copy.id, tuple(ids)) for copy, ids in copies),
               tuple((name, tuple(values)) for name, values in measured.items()))
        with self._lock:
            resampled = self._kept.get(key)
        if resampled is None:
            inputs = self._inputs(perf, dataset, gathered, models, scored, copies, measured)
            resampled = standings.submit(resample_board, inputs, standings.samples,
                                         standings.seed).result()
            with self._lock:
                self._kept[key] = resampled
                while len(self._kept) > KEPT_BOARDS:
                    self._kept.popitem(last=False)
        lines = weigh(resampled, chosen, directions, offsets)
        teams = {row.model: row.team for row in models}
        return plain_data({
            "task": task.name, "dataset": dataset.name, "perf": perf.spec,
            "metrics": [{"metric": metric, "weight": chosen.get(metric, 0.0),
                         "direction": directions.get(metric, 1.0),
                         "offset": offsets.get(metric, 0.0),
                         "higher_is_better": directions.get(metric, 1.0) > 0}
                        for metric in metrics],
            "left_out": left_out, "samples": standings.samples, "seed": standings.seed,
            "models": [{"model": line.model, "team": teams[line.model], "rank": number,
                        "dynascore": line.dynascore, "interval": line.interval,
                        "scores": line.scores, "normalized": line.normalized}
                       for number, line in enumerate(lines, 1)]})

    def _inputs(self, perf: Row, dataset: Row, gathered: Gathered, models: List[Row],
                scored: Dict[str, int], copies: List[Tuple[Row, List[int]]],
                measured: Dict[str, List[float]]) -> BoardInputs:
        """What a Dynaboard is computed from: the perf metric's stored rows and scores,
        each complete copy's delta rows, the measured values."""
        with reading(self.boards.engine) as connection:
            stored = store.evaluation_rows(connection, list(scored.values()))
        (placed,) = self.boards.standings.of([Wanted(perf, gathered.text, dataset.id, scored)])
        inputs = BoardInputs(MetricSpec(perf.kind, perf.spec), perf.spec,
                             [row.model for row in models],
                             [rows_from_bytes(stored[scored[row.model]], len(gathered.text.ids))
                              for row in models],
                             [placed[row.model].score for row in models], measured=measured)
        for copy, ids in copies:
            inputs.deltas[str(copy.kind)] = [
                self.boards.deltas.rows(perf, dataset, copy, row.predictions_id, on_copy)
                for row, on_copy in zip(models, ids)]
        return inputs

    @staticmethod
    def _weights(task: Any, metrics: List[str],
                 given: Optional[Mapping[str, float]]) -> Dict[str, float]:
        """The weights of these metrics: given, else the task's, else Dynabench's (a
        metric a weight leaves out weighs 0)."""
        chosen = dict(given) if given is not None else (
            json.loads(task.weights) if task.weights else default_weights(task.perf, metrics))
        unknown = [metric for metric in chosen if metric not in metrics]
        if unknown and given is not None:
            raise Invalid(f"weights: {unknown[0]!r} is not a metric of this Dynaboard "
                          f"({', '.join(metrics)})")
        chosen = {metric: float(chosen.get(metric, 0.0)) for metric in metrics}
        if sum(chosen.values()) <= 0:
            raise Invalid("weights: they must not all be 0")
        return chosen

