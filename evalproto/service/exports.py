"""What leaves the service whole: an export of a dataset's stored rows as stats files
(for `evalproto reduce` and `report --stats`), and the full `evalproto report` page of a
dataset's models. Both hold each model's current submission under the metrics that
scored all of them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from sqlalchemy.engine import Connection, Row

from evalproto.api.board import report_page, rows_from_bytes, stats_file_text
from evalproto.base.errors import EvalprotoError
from evalproto.service import results, store
from evalproto.service.boards import Boards
from evalproto.service.database import reading
from evalproto.service.errors import Conflict, NotFound, Refused
from evalproto.service.loaded import LoadedMetrics
from evalproto.service.names import check_name
from evalproto.service.schema import FAILED
from evalproto.service.standings import DatasetText
from evalproto.sources.specs import MetricSpec

KEPT_REPORTS = 8


@dataclass(frozen=True)
class Plan:
    """What an export of a dataset holds: the current submissions (`current`) under the
    metrics that scored all of them (`chosen`); the task's other metrics (`left_out`);
    the models left out because their scoring failed (`failed`)."""

    dataset: Row
    text: DatasetText
    evaluations: Dict[int, Dict[int, Row]]
    current: List[Row]
    chosen: List[Row]
    left_out: List[str]
    failed: List[str]

    def evaluation(self, metric: Row, row: Row) -> int:
        """The id of a model's evaluation under a chosen metric."""
        return int(self.evaluations[metric.id][row.predictions_id].id)


class Exports:
    """Exports and report pages of one database."""

    def __init__(self, boards: Boards, loaded: LoadedMetrics) -> None:
        """Exports of the boards' database; `loaded` writes stats files."""
        self.boards = boards
        self.loaded = loaded
        self._lock = threading.Lock()
        self._reports: OrderedDict[Any, Future] = OrderedDict()

    def export(self, task: str, dataset: str) -> Dict[str, Any]:
        """Which models and metrics an export of a dataset holds."""
        with reading(self.boards.engine) as connection:
            plan = self._plan(connection, task, dataset)
        return {"models": [row.model for row in plan.current],
                "metrics": [metric.spec for metric in plan.chosen], "left_out": plan.left_out,
                "failed_models": plan.failed}

    def stats_file(self, task: str, dataset: str, model: str) -> str:
        """The stats file of a model's current submission on a dataset, under the
        export's metrics."""
        check_name(model, "model")
        with reading(self.boards.engine) as connection:
            plan = self._plan(connection, task, dataset)
            row = next((row for row in plan.current if row.model == model), None)
            if row is None:
                raise NotFound(f"the model {model!r} has no submission on {dataset!r}")
            stored = results.evaluation_rows(connection, [plan.evaluation(metric, row)
                                                        for metric in plan.chosen])
        loaded = [self.loaded.get(MetricSpec(metric.kind, metric.spec)) for metric in plan.chosen]
        rows = [rows_from_bytes(stored[plan.evaluation(metric, row)], len(plan.text.ids))
                for metric in plan.chosen]
        return stats_file_text(row.model, plan.text.nrefs, loaded, plan.text.ids, rows)

    def _plan(self, connection: Connection, task_name: str, dataset_name: str) -> Plan:
        """What an export holds. When no metric has scored every submission, the models
        a job of which failed are left out (`failed`), since waiting would not score
        them."""
        task = store.task(connection, check_name(task_name, "task"))
        dataset = store.dataset(connection, task.id, check_name(dataset_name, "dataset"))
        metric_rows = store.task_metrics(connection, task.id)
        gathered = self.boards.gather(connection, dataset, metric_rows)
        current = gathered.current
        if not current:
            raise Conflict(f"no model has submitted to {dataset_name!r} yet")

        def scoring_all(rows: List[Row]) -> List[Row]:
            """The metrics that have scored every one of these submissions."""
            return [metric for metric in metric_rows if all(
                row.predictions_id in gathered.evaluations[metric.id] for row in rows)]

        chosen: List[Row] = scoring_all(current)
        failed: List[str] = []
        if not chosen:
            failed = [row.model for row in current if any(
                job.state == FAILED for (submission, _), job in gathered.jobs.items()
                if submission == row.id)]
            current = [row for row in current if row.model not in failed]
            if not current:
                raise Conflict(f"the scoring of every model's submission to "
                               f"{dataset_name!r} failed ({', '.join(failed)}): see "
                               f"evalproto board leaderboard {task_name}")
            chosen = scoring_all(current)
        if not chosen:
            raise Conflict(f"no metric has scored every submission to {dataset_name!r} yet "
                           f"(wait with: evalproto board leaderboard {task_name} --wait)")
        left_out = [metric.spec for metric in metric_rows if metric not in chosen]
        return Plan(dataset, gathered.text, gathered.evaluations, current, chosen, left_out,
                    failed)

    def report(self, task: str, dataset: str, wait: bool = True) -> Optional[Tuple[str, str]]:
        """The `evalproto report` page of a dataset's models and its Content Security
        Policy: the export's models and metrics, in the leaderboard's order (the first
        is the report's baseline). Made once per set of evaluations, in a worker
        process; without `wait`, None while it is being made (its making started)."""
        (section,) = self.boards.leaderboard(task, dataset)["datasets"]
        order = list(dict.fromkeys(entry["model"] for entry in section["entries"]))
        with reading(self.boards.engine) as connection:
            plan = self._plan(connection, task, dataset)
        current = sorted(plan.current, key=lambda row: order.index(row.model)
                         if row.model in order else len(order))
        scored = [[(row.model, plan.evaluation(metric, row)) for row in current]
                  for metric in plan.chosen]
        key = (plan.dataset.id, tuple(metric.signature for metric in plan.chosen),
               tuple(tuple(pairs) for pairs in scored))
        with self._lock:
            future = self._reports.get(key)
            mine = future is None
            if future is None:
                future = self._reports[key] = Future()
                while len(self._reports) > KEPT_REPORTS:
                    self._reports.popitem(last=False)
        if mine and wait:
            self._make_report(key, future, plan, scored)
        elif mine:
            threading.Thread(target=self._make_report, args=(key, future, plan, scored),
                             name="evalproto-report", daemon=True).start()
        if not wait and not future.done():
            return None
        try:
            page: Tuple[str, str] = future.result()
            return page
        except Refused:
            raise
        except EvalprotoError as exc:  # a tag the report cannot show, say
            raise Conflict(f"no report of {dataset!r}: {exc}") from None

    def _make_report(self, key: Any, future: Future, plan: Plan,
                     scored: List[List[Tuple[str, int]]]) -> None:
        """Make a report page in a worker process, for everyone awaiting `future`."""
        try:
            with reading(self.boards.engine) as connection:
                stored = results.evaluation_rows(connection, [
                    evaluation for pairs in scored for _, evaluation in pairs])
            rows = [{model: rows_from_bytes(stored[evaluation], len(plan.text.ids))
                     for model, evaluation in pairs} for pairs in scored]
            specs = [MetricSpec(metric.kind, metric.spec) for metric in plan.chosen]
            standings = self.boards.standings
            future.set_result(standings.submit(
                report_page, specs, rows, plan.text.ids, plan.text.tags, plan.text.nrefs,
                standings.samples, standings.seed).result())
        except BaseException as exc:  # those waiting learn why; the next one tries again
            with self._lock:
                self._reports.pop(key, None)
            future.set_exception(exc)
