"""What the service shows, made from stored rows: leaderboards, a model's submissions,
and stats files for export. The figures come from evalproto.api.board; this module only
gathers the rows and says what is still queued, running or failed.

Standings are kept in memory by the evaluations they were computed from: stored rows
never change, so a standing is recomputed only when an entry gets new rows. The API
waits for that computation; the pages need not (`wait=False`): they show the standings
last computed, the newer results "ranking" with their scores, while one computation per
dataset and metric brings them up to date in the background.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from sqlalchemy.engine import Connection, Engine, Row

from evalproto.api.board import (
    Standing,
    describe_metric,
    read_upload,
    report_page,
    rows_from_bytes,
    standings_of,
    stats_file_text,
)
from evalproto.api.scoring import Metric
from evalproto.base.errors import EvalprotoError
from evalproto.base.numerals import plain_data
from evalproto.service import store
from evalproto.service.errors import Conflict, Invalid, NotFound, Refused, described
from evalproto.service.jobs import Workers
from evalproto.sources.specs import MetricSpec
from evalproto.stats.resampling import DEFAULT_SEED

log = logging.getLogger("evalproto.service")

SAMPLES = 1000
"""Bootstrap resamples behind every interval and test: corpus-score --confidence's and
the report's default, with their default seed."""
KEPT_STANDINGS = 256
RANKING = "ranking"
"""The status of an entry scored, whose interval and rank are being computed."""
KEPT_REPORTS = 8


@dataclass(frozen=True)
class DatasetText:
    """What the figures need of a dataset: its segment ids, tags and references per
    segment."""

    ids: List[str]
    tags: Optional[List[List[str]]]
    nrefs: int | str


class Boards:
    """Leaderboards and exports of one database."""

    def __init__(self, engine: Engine, samples: int = SAMPLES,
                 seed: Optional[int] = DEFAULT_SEED) -> None:
        self.engine = engine
        self.samples = samples
        self.seed = seed
        self._lock = threading.Lock()
        self._metrics: Dict[MetricSpec, Metric] = {}
        self._datasets: Dict[int, DatasetText] = {}
        self._standings: OrderedDict[Any, List[Standing]] = OrderedDict()
        self._computing: Dict[Any, Future] = {}
        self._reports: OrderedDict[Any, Future] = OrderedDict()
        # each (dataset, signature)'s standings last computed, with {model: evaluation}
        self._latest: Dict[Tuple[int, str], Tuple[Dict[str, int], List[Standing]]] = {}
        self._wanted: OrderedDict[Tuple[int, str],
                                  Tuple[Row, DatasetText, int, Dict[str, int]]] = OrderedDict()
        self._refresher: Optional[threading.Thread] = None
        self._generation = 0  # standings computed so far
        self._workers: Optional[Workers] = None

    # -- what is kept at hand ----------------------------------------------------------

    def metric(self, spec: MetricSpec) -> Metric:
        """A metric loaded here, to check it and describe it (an evaluator command runs
        once for the server)."""
        with self._lock:
            if spec not in self._metrics:
                self._metrics[spec] = Metric(spec)
            return self._metrics[spec]

    def close(self) -> None:
        """Stop the evaluator commands started for leaderboards."""
        with self._lock:
            for metric in self._metrics.values():
                metric.close()
            self._metrics.clear()

    def dataset_text(self, connection: Connection, dataset: Row) -> DatasetText:
        if dataset.id not in self._datasets:
            corpus = read_upload((f"{dataset.name}.jsonl",
                                  store.dataset_data(connection, dataset.id)))
            tags = corpus.tags if corpus.tags and any(corpus.tags) else None
            self._datasets[dataset.id] = DatasetText(list(corpus.ids), tags, corpus.nrefs)
        return self._datasets[dataset.id]

    def start(self, workers: Workers) -> None:
        """Compute standings in these worker processes (several metrics at once) from
        now on, instead of in the calling thread."""
        self._workers = workers

    def standings(self, wanted: Sequence[Tuple[Row, DatasetText, int, Dict[str, int]]],
                  wait: bool = True) -> List[Dict[str, Standing]]:
        """For each (metric, dataset's text, dataset id, {model: evaluation id}), every
        model's standing from its evaluation's rows: computed once per set of
        evaluations (their rows are read only then), the missing ones side by side in
        the worker processes; a computation under way for another reader is awaited.
        Without `wait`, a set not computed yet gets the standings last computed for its
        dataset and metric, of the models whose evaluation is the same (the others are
        left out), and is computed in the background."""
        keys = [(dataset_id, metric.signature, tuple(sorted(scored.items())))
                for metric, _, dataset_id, scored in wanted]
        if not wait:
            return self._latest_standings(keys, wanted)
        mine: List[Tuple[Any, Future, Tuple[Row, DatasetText, int, Dict[str, int]]]] = []
        waiting: Dict[Any, Future] = {}
        with self._lock:
            for key, item in zip(keys, wanted):
                if key in self._standings or key in waiting:
                    continue
                if key not in self._computing:
                    self._computing[key] = Future()
                    mine.append((key, self._computing[key], item))
                waiting[key] = self._computing[key]
        if mine:
            self._compute(mine)
        for future in waiting.values():
            future.result()
        with self._lock:
            found = [self._standings[key] for key in keys]
        return [{standing.system: standing for standing in standings}
                for standings in found]

    def _latest_standings(self, keys: Sequence[Any],
                          wanted: Sequence[Tuple[Row, DatasetText, int, Dict[str, int]]]
                          ) -> List[Dict[str, Standing]]:
        found: List[Dict[str, Standing]] = []
        later = []
        with self._lock:
            for key, item in zip(keys, wanted):
                if key in self._standings:
                    found.append({standing.system: standing
                                  for standing in self._standings[key]})
                    continue
                scored, standings = self._latest.get((key[0], key[1]), ({}, []))
                found.append({standing.system: standing for standing in standings
                              if scored.get(standing.system) == item[3].get(standing.system)})
                later.append(item)
        for item in later:
            self._refresh(item)
        return found

    def _refresh(self, item: Tuple[Row, DatasetText, int, Dict[str, int]]) -> None:
        """Compute these standings in the background, on one thread for all: it takes
        the (dataset, metric) asked for longest ago, computes the newest set of
        evaluations asked for it (a newer one replaces the one waiting: sets that came
        and went meanwhile are never computed), and so on until none is left. Readers
        that do not wait cost the server then at most one computation at a time."""
        slot = (item[2], item[0].signature)
        with self._lock:
            self._wanted[slot] = item
            if self._refresher is not None:
                return
            self._refresher = threading.Thread(target=self._refreshing,
                                               name="evalproto-standings", daemon=True)
            self._refresher.start()

    def _refreshing(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._refresher = None
                    return
                _, item = self._wanted.popitem(last=False)
            try:
                self.standings([item])
            except Exception as exc:  # the next read asks again
                log.warning("standings not computed: %s", described(exc))

    def _arguments(self, item: Tuple[Row, DatasetText, int, Dict[str, int]],
                   stored: Dict[int, bytes]) -> Tuple[Any, ...]:
        """standings_of's arguments for one (metric, dataset, evaluations)."""
        metric, text, _, scored = item
        arrays = {model: rows_from_bytes(stored[evaluation], len(text.ids))
                  for model, evaluation in sorted(scored.items())}
        return (MetricSpec(metric.kind, metric.spec), arrays, text.ids, text.tags,
                text.nrefs, self.samples, self.seed)

    def _submit(self, arguments: Tuple[Any, ...]) -> Future:
        """standings_of(*arguments) in a worker process, or here without one."""
        workers = self._workers
        if workers is not None:
            return workers.submit_anew(standings_of, *arguments)
        done: Future = Future()
        done.set_result(standings_of(*arguments))
        return done

    def _compute(self, mine: Sequence[Tuple[Any, Future, Tuple[Row, DatasetText, int,
                                                                  Dict[str, int]]]]) -> None:
        """Compute these standings (each has its Future, which others may await)."""
        try:
            with store.reading(self.engine) as connection:
                stored = store.evaluation_rows(connection, [
                    evaluation for *_, (_, _, _, scored) in mine
                    for evaluation in scored.values()])
            running = []
            for _, _, item in mine:
                arguments = self._arguments(item, stored)
                running.append(self._submit(arguments))
            results = []
            for future, (_, _, item) in zip(running, mine):
                try:
                    results.append(future.result())
                except BrokenProcessPool:  # a worker died: new workers, and once more
                    log.error("a leaderboard process died; its workers are started anew")
                    results.append(self._submit(self._arguments(item, stored)).result())
        except BaseException as exc:  # those waiting for them learn why
            with self._lock:
                for key, future, _ in mine:
                    self._computing.pop(key, None)
                    future.set_exception(exc)
            raise
        with self._lock:
            self._generation += 1
            for (key, future, item), found in zip(mine, results):
                self._standings[key] = found
                self._latest[key[0], key[1]] = (dict(item[3]), found)
                self._computing.pop(key, None)
                future.set_result(None)
            while len(self._standings) > KEPT_STANDINGS:
                self._standings.popitem(last=False)

    # -- leaderboards -------------------------------------------------------------------

    def leaderboard(self, task_name: str, dataset_name: Optional[str] = None,
                    wait: bool = True) -> Dict[str, Any]:
        """A task's leaderboard (of one dataset, or of all): for each dataset, one entry
        per (model, metric), the models in the order of the perf metric's ranking.
        Without `wait`, entries whose standings are being computed have the status
        "ranking", with their score (see `standings`)."""
        with store.reading(self.engine) as connection:
            task = store.task(connection, task_name)
            metric_rows = store.task_metrics(connection, task.id)
            found = ([store.dataset(connection, task.id, dataset_name)] if dataset_name
                     else store.task_datasets(connection, task.id))
            gathered = [self._gather(connection, dataset, metric_rows) for dataset in found]
            counts = store.job_counts(connection, task.id)
        sections = [self._section(task, metric_rows, *parts, wait=wait) for parts in gathered]
        return {"task": task.name, "perf": task.perf,
                "metrics": [_metric_record(row) for row in metric_rows],
                "datasets": sections, "jobs": counts}

    def _gather(self, connection: Connection, dataset: Row, metric_rows: Sequence[Row]
                ) -> Tuple[Row, DatasetText, List[Row], Dict[Tuple[int, int], Row],
                           Dict[int, Dict[int, Row]]]:
        """What a dataset's section needs from the database, read in one transaction."""
        text = self.dataset_text(connection, dataset)
        current = store.current_submissions(connection, dataset.id)
        states = store.job_states(connection, [row.id for row in current])
        predictions = [row.predictions_id for row in current]
        evaluations = {metric.id: store.evaluations_of(connection, dataset.id, predictions,
                                                       metric.signature)
                       for metric in metric_rows}
        return dataset, text, current, states, evaluations

    def _section(self, task: Row, metric_rows: Sequence[Row], dataset: Row,
                 text: DatasetText, current: List[Row], states: Dict[Tuple[int, int], Row],
                 evaluations: Dict[int, Dict[int, Row]], wait: bool = True) -> Dict[str, Any]:
        wanted = []
        for metric in metric_rows:
            scored = {row.model: evaluations[metric.id][row.predictions_id].id
                      for row in current if row.predictions_id in evaluations[metric.id]}
            wanted.append((metric, text, dataset.id, scored))
        found = self.standings([item for item in wanted if item[3]], wait)
        places: Dict[int, Dict[str, Standing]] = {metric.id: {} for metric in metric_rows}
        places.update({item[0].id: standings for item, standings in
                       zip([item for item in wanted if item[3]], found)})
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
            with store.reading(self.engine) as connection:
                scores = store.evaluation_scores(connection, ranking)
            perf_scores = {row.model: places[perf.id][row.model].score
                           if row.model in places[perf.id]
                           else scores[evaluations[perf.id][row.predictions_id].id]
                           for row in current if row.predictions_id in evaluations[perf.id]}
            order = _by_score(order, perf_scores, ranked, perf.higher_is_better)
        entries = []
        for row in order:
            for metric in metric_rows:
                standing = places[metric.id].get(row.model)
                job = states.get((row.id, metric.id))
                evaluation = evaluations[metric.id].get(row.predictions_id)
                entries.append(_entry(task, dataset, row, metric, standing, job, evaluation,
                                      scores.get(evaluation.id) if evaluation else None))
        return {"dataset": dataset.name, "round": dataset.round, "n": dataset.examples,
                "nrefs": text.nrefs, "content_hash": dataset.content_hash,
                "entries": entries}

    def prepare(self, tasks: Optional[Set[str]] = None) -> None:
        """Compute the leaderboards of these tasks (of all by default), so that their
        standings are ready when someone reads them: the server calls it when its jobs
        have settled, and at start."""
        try:
            if tasks is None:
                with store.reading(self.engine) as connection:
                    tasks = {row.name for row in store.all_tasks(connection)}
            for task in sorted(tasks):
                self.leaderboard(task)
        except Exception as exc:  # a task removed meanwhile, a database away: next time
            log.warning("leaderboards not prepared: %s", described(exc))

    def version(self, task_name: str) -> Tuple[Any, ...]:
        """A task's version (store.task_version) with the standings computed so far:
        whatever its leaderboard shows is the same while this is."""
        with store.reading(self.engine) as connection:
            task = store.task(connection, task_name)
            found = store.task_version(connection, task.id)
        return (task.id, *found, self._generation)

    # -- models and submissions ---------------------------------------------------------

    def model(self, task_name: str, model_name: str) -> Dict[str, Any]:
        """A model's submissions, oldest first, each with its scores and jobs."""
        with store.reading(self.engine) as connection:
            task = store.task(connection, task_name)
            model = store.model(connection, task.id, model_name)
            history = store.model_submissions(connection, model.id)
            records = _submission_records(connection, task.id, history)
        return {"task": task.name, "model": model.name, "team": model.team,
                "submissions": records}

    def submission(self, submission_id: int) -> Dict[str, Any]:
        """One submission, the current one of its model on its dataset or an earlier
        one, with its scores."""
        with store.reading(self.engine) as connection:
            row = store.submission(connection, submission_id)
            (record,) = _submission_records(connection, row.task_id, [row])
            record["task"] = store.task_name(connection, row.task_id)
        return record

    # -- exports -------------------------------------------------------------------------

    def export(self, task_name: str, dataset_name: str) -> Dict[str, Any]:
        """Which models and metrics an export of a dataset holds: each model's current
        submission, under every metric all of them have been scored with."""
        with store.reading(self.engine) as connection:
            plan = self._export_plan(connection, task_name, dataset_name)
        _, _, _, current, chosen, left_out, failed = plan
        return {"models": [row.model for row in current],
                "metrics": [metric.spec for metric in chosen], "left_out": left_out,
                "failed_models": failed}

    def stats_file(self, task_name: str, dataset_name: str, model_name: str) -> str:
        """The stats file of a model's current submission on a dataset, under the
        export's metrics (see `export`)."""
        with store.reading(self.engine) as connection:
            plan = self._export_plan(connection, task_name, dataset_name)
            dataset, text, evaluations, current, chosen, _, _ = plan
            row = next((row for row in current if row.model == model_name), None)
            if row is None:
                raise NotFound(f"the model {model_name!r} has no submission on "
                                     f"{dataset_name!r}")
        loaded = [self.metric(MetricSpec(metric.kind, metric.spec)) for metric in chosen]
        with store.reading(self.engine) as connection:
            stored = store.evaluation_rows(connection, [
                evaluations[metric.id][row.predictions_id].id for metric in chosen])
        rows = [rows_from_bytes(stored[evaluations[metric.id][row.predictions_id].id],
                                len(text.ids)) for metric in chosen]
        return stats_file_text(row.model, text.nrefs, loaded, text.ids, rows)

    def _export_plan(self, connection: Connection, task_name: str, dataset_name: str
                     ) -> Tuple[Row, DatasetText, Dict[int, Dict[int, Row]], List[Row],
                                List[Row], List[str], List[str]]:
        """What an export holds: the current submissions under the metrics that scored
        all of them. When no metric has, the models a job of which failed are left out
        (the last value), since waiting would not score them."""
        task = store.task(connection, task_name)
        dataset = store.dataset(connection, task.id, dataset_name)
        metric_rows = store.task_metrics(connection, task.id)
        _, text, current, states, evaluations = self._gather(connection, dataset, metric_rows)
        if not current:
            raise Conflict(f"no model has submitted to {dataset_name!r} yet")

        def scoring_all(rows: List[Row]) -> List[Row]:
            return [metric for metric in metric_rows
                    if all(row.predictions_id in evaluations[metric.id] for row in rows)]

        chosen, failed = scoring_all(current), []
        if not chosen:
            failed = [row.model for row in current if any(
                job.state == store.FAILED for (submission, _), job in states.items()
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
        return dataset, text, evaluations, current, chosen, left_out, failed

    # -- report pages --------------------------------------------------------------------

    def report(self, task_name: str, dataset_name: str) -> Tuple[str, str]:
        """The `evalproto report` page of a dataset's models and its Content Security
        Policy: their current submissions under the metrics that scored all of them (an
        export's), in the leaderboard's order (the first is the report's baseline). Made
        once per set of evaluations, in a worker process."""
        (section,) = self.leaderboard(task_name, dataset_name)["datasets"]
        order = list(dict.fromkeys(entry["model"] for entry in section["entries"]))
        with store.reading(self.engine) as connection:
            dataset, text, evaluations, current, chosen, _, _ = self._export_plan(
                connection, task_name, dataset_name)
        current = sorted(current, key=lambda row: order.index(row.model)
                         if row.model in order else len(order))
        scored = [[(row.model, evaluations[metric.id][row.predictions_id].id)
                   for row in current] for metric in chosen]
        key = (dataset.id, tuple(metric.signature for metric in chosen),
               tuple(tuple(pairs) for pairs in scored))
        with self._lock:
            future = self._reports.get(key)
            mine = future is None
            if future is None:
                future = self._reports[key] = Future()
                while len(self._reports) > KEPT_REPORTS:
                    self._reports.popitem(last=False)
        if mine:
            try:
                with store.reading(self.engine) as connection:
                    stored = store.evaluation_rows(connection, [
                        evaluation for pairs in scored for _, evaluation in pairs])
                rows = [{model: rows_from_bytes(stored[evaluation], len(text.ids))
                         for model, evaluation in pairs} for pairs in scored]
                specs = [MetricSpec(metric.kind, metric.spec) for metric in chosen]
                arguments = (specs, rows, text.ids, text.tags, text.nrefs, self.samples,
                             self.seed)
                workers = self._workers
                page = (workers.submit_anew(report_page, *arguments).result()
                        if workers is not None else report_page(*arguments))
                future.set_result(page)
            except BaseException as exc:  # those waiting learn why; the next one tries again
                with self._lock:
                    self._reports.pop(key, None)
                future.set_exception(exc)
        try:
            return future.result()
        except Refused:
            raise
        except EvalprotoError as exc:  # a tag the report cannot show, say
            raise Conflict(f"no report of {dataset_name!r}: {exc}") from None

    # -- registering metrics ---------------------------------------------------------------

    def entry(self, spec: MetricSpec) -> store.MetricEntry:
        """A metric as a task registers it, loaded here to check it and read its
        signature (a bad spec or a command that does not start is refused)."""
        try:
            metric = self.metric(spec)
        except (EvalprotoError, ValueError, TypeError) as exc:
            raise Invalid(f"metric {spec.spec!r}: {exc}") from None
        described = describe_metric(metric)
        return store.MetricEntry(spec.spec, spec.kind, str(described["name"]),
                                 str(described["signature"]),
                                 bool(described["higher_is_better"]))


def _metric_record(row: Row) -> Dict[str, Any]:
    return {"metric": row.spec, "kind": row.kind, "name": row.name,
            "higher_is_better": row.higher_is_better, "signature": row.signature}


def _by_score(rows: Sequence[Row], scores: Dict[str, Optional[float]], ranked: List[str],
              higher_is_better: bool) -> List[Row]:
    """Models with a perf score by it, best first (ties: ranked ones in their order),
    then the others in the given order."""
    def key(row: Row) -> Tuple[float, int, int]:
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
    and not ranked yet ("ranking", see Boards.standings), or its job's state."""
    record: Dict[str, Any] = {
        "task": task.name, "dataset": dataset.name, "round": dataset.round,
        "model": row.model, "team": row.team, "metric": metric.spec, "name": metric.name,
        "submission": row.id}
    if standing is not None:
        record.update(status=store.DONE, score=standing.score, signature=standing.signature,
                      n=standing.n, mean=standing.mean, half_width=standing.half_width,
                      rank=list(standing.rank), tags=standing.tags,
                      message=job.message if job is not None else None)
    elif evaluation is not None:
        record.update(status=RANKING, score=score, signature=metric.signature,
                      n=evaluation.segments, mean=None, half_width=None, rank=None, tags={},
                      message=job.message if job is not None else None)
    else:
        record.update(status=job.state if job is not None else store.QUEUED, score=None,
                      signature=None, n=None, mean=None, half_width=None, rank=None,
                      tags={}, message=job.message if job is not None else None)
    return plain_data(record)


def _submission_records(connection: Connection, task_id: int,
                        rows: Sequence[Row]) -> List[Dict[str, Any]]:
    """Submissions with each metric's corpus score (as stored with the rows) or job."""
    metric_rows = store.task_metrics(connection, task_id)
    states = store.job_states(connection, [row.id for row in rows])
    found = {(row.id, metric.id): store.evaluations_of(
        connection, row.dataset_id, [row.predictions_id], metric.signature).get(
        row.predictions_id) for row in rows for metric in metric_rows}
    stored = store.evaluation_scores(connection, [evaluation.id for evaluation in
                                                  found.values() if evaluation is not None])
    records = []
    for row in rows:
        scores = []
        for metric in metric_rows:
            job = states.get((row.id, metric.id))
            evaluation = found[row.id, metric.id]
            scores.append(plain_data({
                "metric": metric.spec, "name": metric.name,
                "status": store.DONE if evaluation else (job.state if job else store.QUEUED),
                "score": stored[evaluation.id] if evaluation else None,
                "message": job.message if job else None}))
        records.append({"submission": row.id, "model": row.model, "team": row.team,
                        "dataset": row.dataset, "submitted": store.iso_time(row.created),
                        "scores": scores})
    return records
