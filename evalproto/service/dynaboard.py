"""A dataset's Dynaboard: each model's Dynascore (Dynabench's, evalproto.stats.dynascore)
over the task's perf metric, the delta metrics of the dataset's perturbed copies
(fairness, robustness) and, on a task whose models the server runs, the throughput and
memory it measured; with each Dynascore's 95% bootstrap interval from the stored rows
(evalproto.api.dynaboard). The weights are the user's, else the task's, else
Dynabench's (the perf metric 4, the others 1). As on Dynabench, a model that lacks one
of these metrics (no predictions on a copy yet) is left out, and said so: one team's
missing copy does not take a metric from everyone's board.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np
from sqlalchemy.engine import Row

from evalproto.api.board import rows_from_bytes
from evalproto.api.dynaboard import (
    Converted,
    board_of_columns,
    convert,
    default_weights,
    delta_columns,
    perf_columns,
    weigh,
)
from evalproto.base.numerals import plain_data
from evalproto.service import results, store
from evalproto.service.boards import Boards, Gathered
from evalproto.service.cache import Kept
from evalproto.service.database import reading
from evalproto.service.errors import Invalid
from evalproto.service.measured import MEASURED
from evalproto.service.names import check_name
from evalproto.sources.specs import MetricSpec

KEPT_BOARDS = 64
"""Boards' contributions kept (by the columns they are made of): a version of the task
that changes none of them (another metric's job) reuses them."""
KEPT_ANSWERS = 256
"""Answers kept, by their prepared board and weights (readers share a view's)."""
KEPT_COLUMNS = 8192
"""Resampled columns kept (a model's perf or delta metric on each resample: 8 KB each
at 1,000 resamples)."""


@dataclass
class Prepared:
    """A Dynaboard before the reader's weights, kept while its task's version holds."""

    converted: Converted  # its metrics in Dynabench's order
    directions: Dict[str, float]
    offsets: Dict[str, float]
    left_out: List[Dict[str, Any]]
    teams: Dict[str, str]
    task_weights: Dict[str, float]  # the task's own, or Dynabench's


class Dynaboards:
    """The Dynaboards of one database: each model's resampled figures computed in the
    standings' workers once (a new model costs its own), the board assembled and
    weighed as each reader asks."""

    def __init__(self, boards: Boards, instance_memory: float, kept: Kept) -> None:
        self.boards = boards
        self.kept = kept
        self.instance_memory = instance_memory
        self._computing = threading.Lock()
        self._lock = threading.Lock()
        self._answers: OrderedDict[Tuple[Any, ...], Tuple[Prepared, Dict[str, Any]]] = (
            OrderedDict())
        self._columns: OrderedDict[Tuple[Any, ...], np.ndarray] = OrderedDict()
        self._converted: OrderedDict[Tuple[Any, ...], Converted] = OrderedDict()

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
        version = self.boards.version(task_name)
        prepared: Prepared = self.kept.get(
            ("dynaboard", task_name, dataset_name), version,
            lambda: self._prepare(task_name, dataset_name), earlier=True)
        metrics = prepared.converted.metrics
        if others and weights is not None:
            weights = {metric: weights[metric] for metric in metrics if metric in weights}
        chosen = self._weights(prepared.task_weights, metrics, weights)
        key = (id(prepared), tuple(chosen.items()))
        with self._lock:
            found = self._answers.get(key)
        if found is not None and found[0] is prepared:
            return found[1]
        answer = self._answer(task_name, dataset_name, prepared, chosen)
        with self._lock:
            self._answers[key] = (prepared, answer)
            while len(self._answers) > KEPT_ANSWERS:
                self._answers.popitem(last=False)
        return answer

    def _answer(self, task_name: str, dataset_name: str, prepared: Prepared,
                chosen: Dict[str, float]) -> Dict[str, Any]:
        """A prepared Dynaboard weighed, as the API answers it."""
        metrics = prepared.converted.metrics
        lines = weigh(prepared.converted, chosen)
        standings = self.boards.standings
        return plain_data({
            "task": task_name, "dataset": dataset_name, "perf": metrics[0],
            "metrics": [{"metric": metric, "weight": chosen[metric],
                         "direction": prepared.directions.get(metric, 1.0),
                         "offset": prepared.offsets.get(metric, 0.0),
                         "higher_is_better": prepared.directions.get(metric, 1.0) > 0}
                        for metric in metrics],
            "left_out": prepared.left_out, "samples": standings.samples,
            "seed": standings.seed,
            "models": [{"model": line.model, "team": prepared.teams[line.model],
                        "rank": number, "dynascore": line.dynascore,
                        "interval": line.interval, "scores": line.scores,
                        "normalized": line.normalized}
                       for number, line in enumerate(lines, 1)]})

    def _prepare(self, task_name: str, dataset_name: str) -> Prepared:
        """What a dataset's Dynaboard is weighed from, as the database holds it now."""
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
            runs = any(row.command for row in store.task_models(connection, task.id))
            perf_scores = self.boards.scores(connection, list(scored.values()))
        finite = {number: score for number, score in perf_scores.items() if score is not None}
        scored = {model: number for model, number in scored.items() if number in finite}
        copies = sorted(gathered.copies, key=lambda pair: str(pair[0].kind))
        measured_names = list(MEASURED) if runs else []
        models, left_out = [], []
        for row in gathered.current:  # Dynabench's: only models with every metric
            lacking = ([perf.spec] if row.model not in scored else []) + [
                name for name in measured_names
                if getattr(row, MEASURED[name][0]) is None] + [
                str(copy.kind) for copy, on_copy in copies if row.model not in on_copy]
            if lacking:
                left_out.append({"model": row.model, "team": row.team, "without": lacking})
            else:
                models.append(row)
        # Dynabench's order: perf, throughput, memory, fairness, robustness
        names = [perf.spec, *measured_names, *(str(copy.kind) for copy, _ in copies)]
        if not models:
            raise Invalid(f"no model of {dataset_name!r} has every metric of its Dynaboard "
                          f"yet ({', '.join(names)})")
        measured = {name: [float(getattr(row, MEASURED[name][0])) for row in models]
                    for name in measured_names}
        copies_of = [(copy, [on_copy[row.model].predictions_id for row in models])
                     for copy, on_copy in copies]
        directions = {metric: -1.0 for metric in names if metric == "memory"}
        if not perf.higher_is_better:
            directions[perf.spec] = -1.0
        offsets = {"memory": self.instance_memory} if "memory" in names else {}
        key = (perf.signature, tuple(names), tuple(offsets.items()),
               tuple((row.model, scored[row.model], row.predictions_id) for row in models),
               tuple((copy.id, tuple(ids)) for copy, ids in copies_of),
               tuple(tuple(values) for values in measured.values()))
        with self._computing:  # one reader computes what is missing; the next finds it
            converted = self._converted.get(key)
            if converted is None:
                converted = self._convert(perf, dataset, gathered, models, scored, finite,
                                          copies_of, measured, names, directions, offsets)
                self._converted[key] = converted
                while len(self._converted) > KEPT_BOARDS:
                    self._converted.popitem(last=False)
        return Prepared(converted, directions, offsets, left_out,
                        {row.model: row.team for row in models},
                        json.loads(task.weights) if task.weights else
                        default_weights(perf.spec, names))

    def _convert(self, perf: Row, dataset: Row, gathered: Gathered, models: List[Row],
                 scored: Dict[str, int], finite: Dict[int, float],
                 copies_of: List[Tuple[Row, List[int]]], measured: Dict[str, List[float]],
                 names: List[str], directions: Dict[str, float],
                 offsets: Dict[str, float]) -> Converted:
        """The board's contributions at its point and on each resample, its metrics in
        the order of `names`."""
        resampled = board_of_columns(
            [row.model for row in models], perf.spec,
            [finite[scored[row.model]] for row in models],
            self._perf_columns(perf, gathered, models, scored),
            {str(copy.kind): self._delta_columns(perf, dataset, copy, models, ids)
             for copy, ids in copies_of},  # one copy of each kind
            measured, self.boards.standings.samples)
        converted = convert(resampled, directions, offsets)
        order = [resampled.metrics.index(name) for name in names]
        return Converted(converted.models, names, converted.point[:, order],
                         converted.point_shares[:, order],
                         converted.resampled_shares[..., order])

    def _perf_columns(self, perf: Row, gathered: Gathered, models: List[Row],
                      scored: Dict[str, int]) -> List[np.ndarray]:
        """Each model's perf figure on each resample, computed once per evaluation (the
        draws depend on the dataset alone: see evalproto.api.dynaboard.perf_columns)."""
        keys = [("perf", scored[row.model]) for row in models]
        missing = [key for key in dict.fromkeys(keys) if key not in self._columns]
        if missing:
            with reading(self.boards.engine) as connection:
                stored = results.evaluation_rows(connection, [key[1] for key in missing])
            rows = [rows_from_bytes(stored[key[1]], len(gathered.text.ids)) for key in missing]
            standings = self.boards.standings
            found = standings.submit(perf_columns, MetricSpec(perf.kind, perf.spec), rows,
                                     standings.samples, standings.seed).result()
            self._keep(zip(missing, found))
        return [self._columns[key] for key in keys]

    def _delta_columns(self, perf: Row, dataset: Row, copy: Row, models: List[Row],
                       copy_predictions: List[int]) -> Tuple[List[np.ndarray],
                                                             List[np.ndarray]]:
        """Each model's (delta, has copies) rows on a copy, and its delta metric on each
        resample, computed once per pair of predictions."""
        rows = [self.boards.deltas.rows(perf, dataset, copy, row.predictions_id, on_copy)
                for row, on_copy in zip(models, copy_predictions)]
        keys = [("delta", perf.signature, copy.id, row.predictions_id, on_copy)
                for row, on_copy in zip(models, copy_predictions)]
        missing = {key: found for key, found in zip(keys, rows) if key not in self._columns}
        if missing:
            standings = self.boards.standings
            computed = standings.submit(delta_columns, list(missing.values()),
                                        standings.samples, standings.seed).result()
            self._keep(zip(missing, computed))
        return rows, [self._columns[key] for key in keys]

    def _keep(self, found: Any) -> None:
        """Keep these (key, column) pairs, the oldest let go beyond KEPT_COLUMNS."""
        for key, column in found:
            self._columns[key] = column
            self._columns.move_to_end(key)
        while len(self._columns) > KEPT_COLUMNS:
            self._columns.popitem(last=False)

    @staticmethod
    def _weights(task_weights: Mapping[str, float], metrics: List[str],
                 given: Optional[Mapping[str, float]]) -> Dict[str, float]:
        """The weights of these metrics: given, else the task's (its own, or
        Dynabench's); a metric a weight leaves out weighs 0."""
        chosen = dict(given) if given is not None else dict(task_weights)
        unknown = [metric for metric in chosen if metric not in metrics]
        if unknown and given is not None:
            raise Invalid(f"weights: {unknown[0]!r} is not a metric of this Dynaboard "
                          f"({', '.join(metrics)})")
        chosen = {metric: float(chosen.get(metric, 0.0)) for metric in metrics}
        if sum(chosen.values()) <= 0:
            raise Invalid("weights: they must not all be 0")
        return chosen

