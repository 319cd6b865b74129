"""What the service shows, read from the database: tasks, datasets, leaderboards, a
model's submissions, one submission. The figures are standings (evalproto.service.
standings) of stored rows; this module gathers the rows' evaluations and says what is
still queued, running or failed. Every read of the service goes through here (and
evalproto.service.exports for exports), every write through evalproto.service.actions.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from sqlalchemy.engine import Connection, Engine, Row

from evalproto.api.board import Standing, read_upload
from evalproto.api.dynaboard import mean_delta
from evalproto.base.numerals import plain_data
from evalproto.service import results, store
from evalproto.service.cache import Kept
from evalproto.service.database import iso_time, reading
from evalproto.service.deltas import DELTA_METRICS, Deltas, delta_records
from evalproto.service.errors import NotFound, described
from evalproto.service.measured import (
    MEASURED_DIRECTIONS,
    measured_entries,
    measured_records,
    rank_by_value,
    run_entries,
    value_entry,
)
from evalproto.service.names import MAX_NUMBER, check_name
from evalproto.service.schema import DONE, QUEUED
from evalproto.service.standings import DatasetText, Placed, Standings, Wanted

log = logging.getLogger("evalproto.service")

RANKING = "ranking"
"""The status of an entry scored, whose interval and rank are being computed."""
KEPT_GATHERED = 64
"""Datasets' reads kept, by the version of their task they were read at."""
KEPT_SCORES = 1_000_000
"""Evaluations' scores kept in memory (a few dozen MB at most) before starting afresh."""


@dataclass(frozen=True)
class Gathered:
    """What a dataset's section of a leaderboard needs from the database, read in one
    transaction: its models' current submissions, their jobs (by submission and metric)
    and their evaluations (by metric and predictions)."""

    dataset: Row
    text: DatasetText
    current: List[Row]
    jobs: Dict[Tuple[int, int], Row]
    evaluations: Dict[int, Dict[int, Row]]
    runs: Dict[str, Row]  # the runs of the models the server runs, by model
    copies: List[Tuple[Row, Dict[str, Row]]]  # each perturbed copy, its submissions by model

    def scored(self, metric: Row) -> Dict[str, int]:
        """Each model's evaluation under the metric, by model, where there is one."""
        found = self.evaluations[metric.id]
        return {row.model: found[row.predictions_id].id for row in self.current
                if row.predictions_id in found}


class Boards:
    """Reads of one database."""

    def __init__(self, engine: Engine, standings: Standings, deltas: Deltas,
                 kept: Optional[Kept] = None) -> None:
        """Reads of the database behind `engine`, with its standings and deltas (and
        the pages' cache, whose load says how recent a version must be)."""
        self.engine = engine
        self.kept = kept or Kept()
        self.standings = standings
        self.deltas = deltas
        self._lock = threading.Lock()
        self._texts: Dict[int, DatasetText] = {}
        self._scores: Dict[int, Optional[float]] = {}
        self._gathered: OrderedDict[Tuple[Any, ...], Gathered] = OrderedDict()

    def scores(self, connection: Connection, evaluation_ids: Sequence[int]
               ) -> Dict[int, Optional[float]]:
        """The corpus scores stored with these evaluations, each read once: an
        evaluation is never changed, and reading its score reads its rows (see
        results.evaluations_of)."""
        with self._lock:
            found = {number: self._scores[number] for number in evaluation_ids
                     if number in self._scores}
        missing = [number for number in evaluation_ids if number not in found]
        if missing:
            read = results.evaluation_scores(connection, missing)
            with self._lock:
                if len(self._scores) > KEPT_SCORES:
                    self._scores.clear()
                self._scores.update(read)
            found.update(read)
        return found

    # -- tasks and datasets --------------------------------------------------------------

    def tasks(self) -> List[Dict[str, Any]]:
        """Every task with its metrics and datasets."""
        with reading(self.engine) as connection:
            return [task_record(task, store.task_metrics(connection, task.id),
                                store.task_datasets(connection, task.id))
                    for task in store.all_tasks(connection)]

    def index(self) -> List[Dict[str, Any]]:
        """Every task with its metrics, datasets, number of models and the time of its
        last submission (`models`, `last`: ISO 8601, or None)."""
        with reading(self.engine) as connection:
            activity = store.task_activity(connection)
            found = []
            for task in store.all_tasks(connection):
                models, last = activity.get(task.id, (0, None))
                found.append(dict(task_record(task, store.task_metrics(connection, task.id),
                                              store.task_datasets(connection, task.id)),
                                  models=models, last=iso_time(last) if last else None))
            return found

    def task(self, name: str) -> Dict[str, Any]:
        """A task, its metrics and datasets, and its jobs by state."""
        with reading(self.engine) as connection:
            row = store.task(connection, check_name(name, "task"))
            record = task_record(row, store.task_metrics(connection, row.id),
                                 store.task_datasets(connection, row.id))
            record["jobs"] = results.job_counts(connection, row.id)
        return record

    def datasets(self, task: str) -> List[Dict[str, Any]]:
        """A task's datasets, oldest first."""
        with reading(self.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            return [dataset_record(found) for found in store.task_datasets(connection, row.id)]

    def dataset(self, task: str, name: str) -> Dict[str, Any]:
        """A dataset's description."""
        with reading(self.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            return dataset_record(store.dataset(connection, row.id, check_name(name, "dataset")))

    def jobs(self, task: str) -> Dict[str, int]:
        """The task's jobs by state: queued, running, done, failed."""
        with reading(self.engine) as connection:
            row = store.task(connection, check_name(task, "task"))
            return results.job_counts(connection, row.id)

    def dataset_text(self, connection: Connection, dataset: Row) -> DatasetText:
        """A dataset's ids, tags and reference count, read once."""
        with self._lock:
            found = self._texts.get(dataset.id)
        if found is None:
            corpus = read_upload((f"{dataset.name}.jsonl",
                                  store.dataset_data(connection, dataset.id)))
            tags = corpus.tags if corpus.tags and any(corpus.tags) else None
            found = DatasetText(list(corpus.ids), tags, corpus.nrefs)
            with self._lock:
                self._texts[dataset.id] = found
        return found

    # -- leaderboards ----------------------------------------------------------------------

    def leaderboard(self, task_name: str, dataset_name: Optional[str] = None,
                    wait: bool = True) -> Dict[str, Any]:
        """A task's leaderboard (of one dataset, or of all): for each dataset, one entry
        per (model, metric), the models in the order of the perf metric's ranking.
        Without `wait`, entries whose standings are being computed have the status
        "ranking", with their score (see evalproto.service.standings)."""
        check_name(task_name, "task")
        if dataset_name is not None:
            check_name(dataset_name, "dataset")
        with reading(self.engine) as connection:
            task = store.task(connection, task_name)
            metric_rows = store.task_metrics(connection, task.id)
            every = store.task_datasets(connection, task.id)
            found = [store.dataset(connection, task.id, dataset_name)] if dataset_name else every
            version = store.task_version(connection, task.id)
            gathered = [self.gather(connection, dataset, metric_rows, version) for dataset in found]
            counts = results.job_counts(connection, task.id)
            runs = any(row.command for row in store.task_models(connection, task.id))
            kinds = {row.kind for row in every if row.kind}
        records = [metric_record(row) for row in metric_rows]
        records += measured_records() if runs else []
        records += [record for kind, record in delta_records().items() if kind in kinds]
        sections = [self._section(task, metric_rows, parts, records, wait)
                    for parts in gathered]
        return {"task": task.name, "perf": task.perf, "metrics": records,
                "datasets": sections, "jobs": counts}

    def gather(self, connection: Connection, dataset: Row, metric_rows: Sequence[Row],
               version: Optional[Tuple[Any, ...]] = None) -> Gathered:
        """What a dataset's section needs from the database, in the caller's
        transaction; read once per version of its task (the leaderboard, the exports
        and the Dynaboard of a version share it), which the caller may have read."""
        version = version or store.task_version(connection, dataset.task_id)
        key = (dataset.id, tuple(metric.id for metric in metric_rows), version)
        with self._lock:
            found = self._gathered.get(key)
        if found is None:
            found = self._gather(connection, dataset, metric_rows)
            with self._lock:
                self._gathered[key] = found
                while len(self._gathered) > KEPT_GATHERED:
                    self._gathered.popitem(last=False)
        return found

    def _gather(self, connection: Connection, dataset: Row, metric_rows: Sequence[Row]
                ) -> Gathered:
        """What a dataset's section needs, read from the database."""
        current = store.current_submissions(connection, dataset.id)
        predictions = [row.predictions_id for row in current]
        return Gathered(
            dataset, self.dataset_text(connection, dataset), current,
            results.job_states(connection, [row.id for row in current]),
            {metric.id: results.evaluations_of(connection, dataset.id, predictions,
                                             metric.signature) for metric in metric_rows},
            results.dataset_runs(connection, dataset.id),
            [(copy, {row.model: row for row in store.current_submissions(connection, copy.id)})
             for copy in store.dataset_copies(connection, dataset.id)])

    def _section(self, task: Row, metric_rows: Sequence[Row], gathered: Gathered,
                 records: Sequence[Dict[str, Any]], wait: bool) -> Dict[str, Any]:
        """A dataset's section of a leaderboard: its entries, models ranked by the
        perf metric's standings (or, while those are computed, by its scores)."""
        dataset, current, evaluations = gathered.dataset, gathered.current, gathered.evaluations
        wanted = [Wanted(metric, gathered.text, dataset.id, gathered.scored(metric))
                  for metric in metric_rows]
        asked = [item for item in wanted if item.scored]
        places: Dict[int, Placed] = {metric.id: {} for metric in metric_rows}
        places.update({item.metric.id: found
                       for item, found in zip(asked, self.standings.of(asked, wait))})
        perf = next((metric for metric in metric_rows if metric.spec == task.perf),
                    metric_rows[0])
        ranked = list(places[perf.id])
        order = sorted(current, key=lambda row: (
            ranked.index(row.model) if row.model in ranked else len(ranked), row.model))
        ranking = [evaluations[metric.id][row.predictions_id].id for metric in metric_rows
                   for row in current if row.predictions_id in evaluations[metric.id]
                   and row.model not in places[metric.id]]
        scores: Dict[int, Optional[float]] = {}
        if ranking:  # scored, not ranked yet (wait=False): shown by their scores
            with reading(self.engine) as connection:
                scores = self.scores(connection, ranking)
            perf_scores = {row.model: places[perf.id][row.model].score
                           if row.model in places[perf.id]
                           else scores[evaluations[perf.id][row.predictions_id].id]
                           for row in current if row.predictions_id in evaluations[perf.id]}
            order = _by_score(order, perf_scores, ranked, perf.higher_is_better)
        entries = []
        for row in order:
            for metric in metric_rows:
                evaluation = evaluations[metric.id].get(row.predictions_id)
                entries.append(_entry(task, dataset, row, metric, places[metric.id].get(row.model),
                                      gathered.jobs.get((row.id, metric.id)), evaluation,
                                      scores.get(evaluation.id) if evaluation else None))
            base = _base(task, dataset, row.model, row.team)
            entries += measured_entries(base, row)
            for copy, on_copy in gathered.copies:  # the delta metrics
                if row.model in on_copy:
                    rows = self.deltas.rows(perf, dataset, copy, row.predictions_id,
                                            on_copy[row.model].predictions_id)
                    entries.append(value_entry(base, str(copy.kind), row.id, mean_delta(rows)))
        submitted = {row.model for row in current}
        for model, run in sorted(gathered.runs.items()):
            if model not in submitted:  # its run has made no submission yet
                entries += run_entries(_base(task, dataset, model, run.team), run, records)
        rank_by_value(entries, {**MEASURED_DIRECTIONS,
                                **{metric: True for metric in DELTA_METRICS}})
        return {"dataset": dataset.name, "round": dataset.round, "n": dataset.examples,
                "nrefs": gathered.text.nrefs, "content_hash": dataset.content_hash,
                "perturbation_of": dataset.original, "kind": dataset.kind,
                "models": [_model_record(row) for row in order], "entries": entries}

    def warm(self, tasks: Optional[Set[str]] = None) -> None:
        """Compute the leaderboards of these tasks (of all by default), so that their
        standings are ready when someone reads them: the server calls it when its jobs
        have settled, and at start."""
        try:
            if tasks is None:
                with reading(self.engine) as connection:
                    tasks = {row.name for row in store.all_tasks(connection)}
            for task in sorted(tasks):
                self.leaderboard(task)
        except Exception as exc:  # a task removed meanwhile, a database away: next time
            log.warning("leaderboards not prepared: %s", described(exc))

    def version(self, task_name: str) -> Tuple[Any, ...]:
        """A task's version (store.task_version) with the standings computed so far:
        whatever its leaderboard shows is the same while this is. Under load, read once
        per cache.RECENT."""
        check_name(task_name, "task")

        def read() -> Tuple[Any, ...]:
            """The version, from the database."""
            with reading(self.engine) as connection:
                task = store.task(connection, task_name)
                found = store.task_version(connection, task.id)
            return (task.id, *found)

        return (*self.kept.recent(("version", task_name), read), self.standings.generation)

    # -- models and submissions ---------------------------------------------------------

    def model(self, task_name: str, model_name: str) -> Dict[str, Any]:
        """A model's submissions, oldest first, each with its scores and jobs."""
        with reading(self.engine) as connection:
            task = store.task(connection, check_name(task_name, "task"))
            model = store.model(connection, task.id, check_name(model_name, "model"))
            history = store.model_submissions(connection, model.id)
            records = _submission_records(connection, task.id, history, self.scores)
            runs = [_run_record(run) for run in results.model_runs(connection, model.id)]
        return {"task": task.name, "model": model.name, "team": model.team,
                "description": model.description, "url": model.url,
                "run_by_server": model.command is not None, "timeout": model.timeout,
                "runs": runs, "submissions": records}

    def submission(self, submission_id: int) -> Dict[str, Any]:
        """One submission, the current one of its model on its dataset or an earlier
        one, with its scores."""
        if not 0 <= submission_id <= MAX_NUMBER:  # beyond the database's integers
            raise NotFound(f"no submission {submission_id}")
        with reading(self.engine) as connection:
            row = store.submission(connection, submission_id)
            (record,) = _submission_records(connection, row.task_id, [row], self.scores)
            record["task"] = store.task_name(connection, row.task_id)
        return record


def task_record(task: Row, metrics: List[Row], datasets: List[Row]) -> Dict[str, Any]:
    """A task as the API shows it."""
    input_keys, output_keys = store.task_io(task)
    return {"task": task.name, "perf": task.perf, "created": iso_time(task.created),
            "input_keys": input_keys, "output_keys": output_keys,
            "metrics": [metric_record(metric) for metric in metrics],
            "datasets": [dataset_record(dataset) for dataset in datasets]}


def dataset_record(dataset: Row) -> Dict[str, Any]:
    """A dataset as the API shows it (never its examples)."""
    return {"dataset": dataset.name, "round": dataset.round, "examples": dataset.examples,
            "nrefs": dataset.nrefs, "content_hash": dataset.content_hash,
            "perturbation_of": dataset.original, "kind": dataset.kind,
            "created": iso_time(dataset.created)}


def metric_record(row: Row) -> Dict[str, Any]:
    """A metric as the API shows it."""
    return {"metric": row.spec, "kind": row.kind, "name": row.name,
            "higher_is_better": row.higher_is_better, "signature": row.signature}


def _by_score(rows: Sequence[Row], scores: Dict[str, Optional[float]], ranked: List[str],
              higher_is_better: bool) -> List[Row]:
    """Models with a perf score by it, best first (ties: ranked ones in their order),
    then the others in the given order."""
    def key(row: Row) -> Tuple[float, int, int]:
        """Best score first; ties in ranking order, then as given."""
        score = scores[row.model]
        signed = math.inf if score is None else -score if higher_is_better else score
        place = ranked.index(row.model) if row.model in ranked else len(ranked)
        return signed, place, rows.index(row)

    return (sorted((row for row in rows if row.model in scores), key=key)
            + [row for row in rows if row.model not in scores])


def _entry(task: Row, dataset: Row, row: Row, metric: Row, standing: Optional[Standing],
           job: Optional[Row], evaluation: Optional[Row] = None,
           score: Optional[float] = None) -> Dict[str, Any]:
    """One (model, dataset, metric) of a leaderboard: scored and ranked ("done"), scored
    and not ranked yet ("ranking"), or its job's state."""
    record: Dict[str, Any] = {**_base(task, dataset, row.model, row.team),
                              "metric": metric.spec, "name": metric.name, "submission": row.id}
    message = job.message if job is not None else None
    if standing is not None:
        record.update(status=DONE, score=standing.score, signature=standing.signature,
                      n=standing.n, mean=standing.mean, half_width=standing.half_width,
                      rank=list(standing.rank), tags=standing.tags, message=message)
    elif evaluation is not None:
        record.update(status=RANKING, score=score, signature=metric.signature,
                      n=evaluation.segments, mean=None, half_width=None, rank=None, tags={},
                      message=message)
    else:
        record.update(status=job.state if job is not None else QUEUED, score=None,
                      signature=None, n=None, mean=None, half_width=None, rank=None,
                      tags={}, message=message)
    return plain_data(record)


def _model_record(row: Row) -> Dict[str, Any]:
    """A model of a dataset's section: its current submission, when it came, and what
    its team says of it."""
    return {"model": row.model, "team": row.team, "submission": row.id,
            "submitted": iso_time(row.created), "description": row.description,
            "url": row.url}


def _run_record(run: Row) -> Dict[str, Any]:
    """A model's run on a dataset: its state (and why it failed), when it ran, and what
    it measured."""
    return plain_data({
        "dataset": run.dataset, "status": run.state, "message": run.message,
        "started": iso_time(run.started) if run.started else None,
        "finished": iso_time(run.finished) if run.finished else None,
        "submission": run.submission_id, "throughput": run.throughput,
        "memory": run.memory})


def _base(task: Row, dataset: Row, model: str, team: str) -> Dict[str, Any]:
    """What every entry of a model on a dataset starts with."""
    return {"task": task.name, "dataset": dataset.name, "round": dataset.round,
            "model": model, "team": team}


def _submission_records(connection: Connection, task_id: int, rows: Sequence[Row],
                        read_scores: Callable[[Connection, Sequence[int]],
                                         Dict[int, Optional[float]]]
                        ) -> List[Dict[str, Any]]:
    """Submissions with each metric's corpus score (as stored with the rows, read by
    `read_scores`) or job."""
    metric_rows = store.task_metrics(connection, task_id)
    states = results.job_states(connection, [row.id for row in rows])
    among = results.evaluations_among(
        connection, sorted({row.dataset_id for row in rows}),
        [row.predictions_id for row in rows], [metric.signature for metric in metric_rows])
    found = {(row.id, metric.id): among.get((row.dataset_id, row.predictions_id,
                                             metric.signature))
             for row in rows for metric in metric_rows}
    stored = read_scores(connection, [evaluation.id for evaluation in found.values()
                                      if evaluation is not None])
    records = []
    for row in rows:
        scores = []
        for metric in metric_rows:
            job = states.get((row.id, metric.id))
            evaluation = found[row.id, metric.id]
            scores.append(plain_data({
                "metric": metric.spec, "name": metric.name,
                "status": DONE if evaluation else (job.state if job else QUEUED),
                "score": stored[evaluation.id] if evaluation else None,
                "message": job.message if job else None}))
        records.append({"submission": row.id, "model": row.model, "team": row.team,
                        "dataset": row.dataset, "submitted": iso_time(row.created),
                        "scores": scores})
    return records
