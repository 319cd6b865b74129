"""The queries of the service's records: settings, tasks and their metrics, datasets,
teams, models, submissions (with the jobs each queues) and evaluations. A request the
records refuse (an unknown name, one that is there already, another team's model) is
a StoreError, which the application maps to its status (see deps.status_of)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection, Row

from evalproto.base.errors import EvalprotoError
from evalproto.service import results
from evalproto.service.database import content_hash, insert_new, now
from evalproto.service.names import About
from evalproto.service.schema import (
    QUEUED,
    RUN,
    datasets,
    jobs,
    metrics,
    models,
    predictions,
    settings,
    snapshots,
    submissions,
    tasks,
    teams,
)


class StoreError(EvalprotoError):
    """A request that the records refuse; its message names what was at fault."""


class Missing(StoreError):
    """No such task, dataset, model or submission."""


class Taken(StoreError):
    """A task, team, dataset or metric of that name (or signature) is there already."""


class NotYours(StoreError):
    """A model that belongs to another team."""


# -- settings ------------------------------------------------------------------------------

def setting(connection: Connection, key: str) -> Optional[str]:
    """A setting's value, or None."""
    return connection.execute(select(settings.c.value).where(settings.c.key == key)).scalar()


def set_setting_once(connection: Connection, key: str, value: str) -> str:
    """Set a setting if it has no value yet; the value it has."""
    insert_new(connection, settings, {"key": key, "value": value}, ["key"])
    return str(setting(connection, key))


# -- tasks and metrics ---------------------------------------------------------------------

@dataclass(frozen=True)
class MetricEntry:
    """A metric as a task registers it (evalproto.api.board.describe_metric)."""

    spec: str
    kind: str
    name: str
    signature: str
    higher_is_better: bool


def add_task(connection: Connection, name: str, entries: Sequence[MetricEntry],
             perf: str, input_keys: Sequence[str] = (),
             output_keys: Sequence[str] = (),
             weights: Optional[Dict[str, float]] = None) -> None:
    """Add a task with its metrics, and the I/O of its models (none: the task takes
    only predictions that teams submit); a name taken is refused."""
    values = {"name": name, "perf": perf, "created": now(),
              "input_keys": json.dumps(list(input_keys)) if input_keys else None,
              "output_keys": json.dumps(list(output_keys)) if output_keys else None,
              "weights": json.dumps(weights) if weights is not None else None}
    if not insert_new(connection, tasks, values, ["name"]):
        raise Taken(f"there is a task {name!r} already")
    task_id = task(connection, name).id
    for entry in entries:
        _insert_metric(connection, task_id, entry)


def _insert_metric(connection: Connection, task_id: int, entry: MetricEntry) -> int:
    """Add one metric of a task; its id. A spec, or a signature, that the task
    has already is refused."""
    same = connection.execute(select(metrics.c.spec).where(
        metrics.c.task_id == task_id, metrics.c.signature == entry.signature)).scalar()
    if same is not None:
        raise Taken(f"the task has the metric {same!r} already, with the same signature "
                       f"as {entry.spec!r} ({entry.signature})")
    if not insert_new(connection, metrics, {"task_id": task_id, **asdict(entry),
                                            "created": now()}, ["task_id", "spec"]):
        raise Taken(f"the task has the metric {entry.spec!r} already")
    return int(connection.execute(select(metrics.c.id).where(
        metrics.c.task_id == task_id, metrics.c.spec == entry.spec)).scalar_one())


def lock_task(connection: Connection, task_id: int) -> None:
    """Hold the task's row until the transaction ends (PostgreSQL's SELECT ... FOR
    UPDATE; SQLite's writers take turns anyway), so that a metric added and a
    submission made at once each see the other: else the submission is queued for
    the metrics it read, and the metric for the submissions it read, and neither
    reads the other's, nor two metrics of one signature each other."""
    connection.execute(select(tasks.c.id).where(tasks.c.id == task_id).with_for_update())


def task(connection: Connection, name: str) -> Row:
    """A task by name, or Missing."""
    found = connection.execute(select(tasks).where(tasks.c.name == name)).first()
    if found is None:
        raise Missing(f"no task {name!r}")
    return found


def task_io(task: Row) -> Tuple[List[str], List[str]]:
    """A task's input keys and output keys (empty: its models' I/O is not declared)."""
    return (json.loads(task.input_keys) if task.input_keys else [],
            json.loads(task.output_keys) if task.output_keys else [])


def task_name(connection: Connection, task_id: int) -> str:
    """A task's name by id."""
    return str(connection.execute(select(tasks.c.name).where(tasks.c.id == task_id)).scalar_one())


def all_tasks(connection: Connection) -> List[Row]:
    """Every task, oldest first."""
    return list(connection.execute(select(tasks).order_by(tasks.c.id)))


def task_metrics(connection: Connection, task_id: int) -> List[Row]:
    """The task's metrics in the order they were added."""
    return list(connection.execute(
        select(metrics).where(metrics.c.task_id == task_id).order_by(metrics.c.id)))


def add_metric(connection: Connection, task_id: int, entry: MetricEntry) -> int:
    """Add a metric to a task and queue its scoring of every submission the task holds;
    the number of jobs queued."""
    lock_task(connection, task_id)
    metric_id = _insert_metric(connection, task_id, entry)
    found = connection.execute(
        select(submissions.c.id).join(models, models.c.id == submissions.c.model_id)
        .where(models.c.task_id == task_id).order_by(submissions.c.id)).scalars().all()
    _queue(connection, [(submission, metric_id) for submission in found])
    return len(found)


# -- datasets ------------------------------------------------------------------------------

def add_dataset(connection: Connection, task_id: int, name: str, round_: Optional[int],
                data: bytes, examples: int, nrefs: int | str,
                perturbation_of: Optional[int] = None, kind: Optional[str] = None) -> int:
    """Add a dataset's bytes to a task, and queue a run of every model the server runs
    for the task on it (Dynabench's trigger); the runs queued. A name taken is
    refused."""
    lock_task(connection, task_id)  # a model added meanwhile runs on it too
    values = {"task_id": task_id, "name": name, "round": round_,
              "content_hash": content_hash(data), "data": data, "examples": examples,
              "nrefs": str(nrefs), "perturbation_of": perturbation_of, "kind": kind,
              "created": now()}
    if not insert_new(connection, datasets, values, ["task_id", "name"]):
        raise Taken(f"the task has a dataset {name!r} already")
    dataset_id = dataset(connection, task_id, name).id
    runnable = [row.id for row in task_models(connection, task_id) if row.command]
    _queue_runs(connection, [(model_id, dataset_id) for model_id in runnable])
    return len(runnable)


_ORIGINAL = datasets.alias("original")
_DATASET_INFO = [datasets.c.id, datasets.c.task_id, datasets.c.name, datasets.c.round,
                 datasets.c.content_hash, datasets.c.examples, datasets.c.nrefs,
                 datasets.c.perturbation_of, datasets.c.kind, datasets.c.created,
                 select(_ORIGINAL.c.name).where(_ORIGINAL.c.id == datasets.c.perturbation_of)
                 .scalar_subquery().label("original")]


def dataset(connection: Connection, task_id: int, name: str) -> Row:
    """A dataset of the task, without its bytes (see dataset_data)."""
    found = connection.execute(select(*_DATASET_INFO).where(
        datasets.c.task_id == task_id, datasets.c.name == name)).first()
    if found is None:
        raise Missing(f"the task has no dataset {name!r}")
    return found


def task_datasets(connection: Connection, task_id: int) -> List[Row]:
    """A task's datasets, without their bytes, oldest first."""
    return list(connection.execute(select(*_DATASET_INFO).where(
        datasets.c.task_id == task_id).order_by(datasets.c.id)))


def dataset_copies(connection: Connection, dataset_id: int) -> List[Row]:
    """The perturbed copies of a dataset (without their bytes), oldest first."""
    return list(connection.execute(select(*_DATASET_INFO).where(
        datasets.c.perturbation_of == dataset_id).order_by(datasets.c.id)))


def dataset_data(connection: Connection, dataset_id: int) -> bytes:
    """A dataset's bytes."""
    return bytes(connection.execute(select(datasets.c.data).where(
        datasets.c.id == dataset_id)).scalar_one())


# -- teams, models, submissions ------------------------------------------------------------

def add_team(connection: Connection, name: str, token_hash: str) -> None:
    """Add a team with the hash of its token; a name taken is refused."""
    if not insert_new(connection, teams, {"name": name, "token_hash": token_hash,
                                          "created": now()}, ["name"]):
        raise Taken(f"there is a team {name!r} already")


def team_by_token(connection: Connection, token_hash: str) -> Optional[Row]:
    """The team of a token's hash, or None."""
    return connection.execute(select(teams).where(teams.c.token_hash == token_hash)).first()


def team(connection: Connection, name: str) -> Row:
    """A team by name, or Missing."""
    found = connection.execute(select(teams.c.id, teams.c.name).where(
        teams.c.name == name)).first()
    if found is None:
        raise Missing(f"there is no team {name!r}")
    return found


def describe_model(connection: Connection, model_id: int, about: Optional[About]) -> None:
    """Set what `about` gives of a model's description and link."""
    given = {column: value or None for column, value in (
        ("description", about.description if about else None),
        ("url", about.url if about else None)) if value is not None}
    if given:
        connection.execute(update(models).where(models.c.id == model_id).values(**given))


def add_model(connection: Connection, task_id: int, team_id: int, name: str, command: str,
              timeout: Optional[float], about: Optional[About] = None) -> Tuple[int, int]:
    """Add a model that the server runs (its command, run as the server's user) for a
    team, and queue its run on every dataset of the task; (its id, runs queued). A
    name taken, by a team's submissions or another model, is refused."""
    lock_task(connection, task_id)
    if not insert_new(connection, models, {
            "task_id": task_id, "team_id": team_id, "name": name, "command": command,
            "timeout": timeout, "created": now()}, ["task_id", "name"]):
        raise Taken(f"the task has a model {name!r} already")
    model_id = model(connection, task_id, name).id
    describe_model(connection, model_id, about)
    found = [row.id for row in task_datasets(connection, task_id)]
    _queue_runs(connection, [(model_id, dataset_id) for dataset_id in found])
    return int(model_id), len(found)


def task_models(connection: Connection, task_id: int) -> List[Row]:
    """A task's models, oldest first, with their commands (None: a team's predictions)."""
    return list(connection.execute(select(models.c.id, models.c.name, models.c.command,
                                          models.c.timeout).where(
        models.c.task_id == task_id).order_by(models.c.id)))


def _queue_runs(connection: Connection, pairs: Sequence[Tuple[int, int]]) -> None:
    """Queue a run of each (model, dataset)."""
    if pairs:
        created = now()
        connection.execute(insert(jobs), [
            {"kind": RUN, "model_id": model_id, "dataset_id": dataset_id, "state": QUEUED,
             "attempts": 0, "created": created} for model_id, dataset_id in pairs])


def submit(connection: Connection, task_id: int, team_id: int, model: str, dataset_id: int,
           data: bytes, about: Optional[About] = None) -> Tuple[int, int]:
    """Record a submission of a team's model (made on its first submission; `about`
    sets its description and link) and queue its scoring under every metric of the
    task; (the submission's id, jobs queued). Predictions are kept once however often
    they are submitted."""
    lock_task(connection, task_id)
    insert_new(connection, models, {"task_id": task_id, "team_id": team_id, "name": model,
                                    "created": now()}, ["task_id", "name"])
    owner = connection.execute(
        select(models.c.id, models.c.team_id, teams.c.name).join(
            teams, teams.c.id == models.c.team_id)
        .where(models.c.task_id == task_id, models.c.name == model)).one()
    if owner.team_id != team_id:
        submitter = connection.execute(select(teams.c.name).where(teams.c.id == team_id)
                                       ).scalar_one()
        raise NotYours(f"the model {model!r} belongs to team {owner.name!r}; team "
                       f"{submitter!r} submits only its own models")
    describe_model(connection, owner.id, about)
    return add_submission(connection, task_id, owner.id, dataset_id, data)


def add_submission(connection: Connection, task_id: int, model_id: int, dataset_id: int,
                   data: bytes, throughput: Optional[float] = None,
                   memory: Optional[float] = None) -> Tuple[int, int]:
    """Record predictions of a model on a dataset (with what the server measured, if
    its run made them) and queue their scoring under every metric of the task;
    (the submission's id, jobs queued). Predictions are kept once however often they
    come."""
    digest = content_hash(data)
    insert_new(connection, predictions, {"content_hash": digest, "data": data,
                                         "created": now()}, ["content_hash"])
    predictions_id = connection.execute(select(predictions.c.id).where(
        predictions.c.content_hash == digest)).scalar_one()
    submission_id = connection.execute(insert(submissions).values(
        model_id=model_id, dataset_id=dataset_id, predictions_id=predictions_id,
        throughput=throughput, memory=memory, created=now()).returning(submissions.c.id)
    ).scalar_one()
    metric_ids = [metric.id for metric in task_metrics(connection, task_id)]
    _queue(connection, [(submission_id, metric_id) for metric_id in metric_ids])
    return int(submission_id), len(metric_ids)


def _queue(connection: Connection, pairs: Sequence[Tuple[int, int]]) -> None:
    """Queue a job for each (submission, metric)."""
    if pairs:
        created = now()
        connection.execute(insert(jobs), [
            {"submission_id": submission, "metric_id": metric, "state": QUEUED,
             "attempts": 0, "created": created} for submission, metric in pairs])


def task_activity(connection: Connection) -> Dict[int, Tuple[int, Optional[float]]]:
    """Each task's number of models and the time of its last submission, by task id
    (a task without submissions is not in it)."""
    counted = connection.execute(select(models.c.task_id, func.count()).group_by(
        models.c.task_id))
    last = dict(connection.execute(
        select(models.c.task_id, func.max(submissions.c.created))
        .join(submissions, submissions.c.model_id == models.c.id).group_by(models.c.task_id)
    ).all())
    return {int(task_id): (int(count), last.get(task_id)) for task_id, count in counted}


def task_version(connection: Connection, task_id: int) -> Tuple[Any, ...]:
    """What changes whenever what a task's pages show may change: its metrics and
    datasets, its newest submission and snapshot, and its jobs by state (a job's end
    adds its evaluation). Cheap to read, so that a page made at the same version is reused."""
    metric_ids = select(func.max(metrics.c.id)).where(metrics.c.task_id == task_id)
    dataset_ids = select(func.max(datasets.c.id)).where(datasets.c.task_id == task_id)
    newest = select(func.max(submissions.c.id)).join(
        models, models.c.id == submissions.c.model_id).where(models.c.task_id == task_id)
    snapshot_ids = select(func.max(snapshots.c.id)).where(snapshots.c.task_id == task_id)
    found = connection.execute(select(metric_ids.scalar_subquery(),
                                      dataset_ids.scalar_subquery(),
                                      newest.scalar_subquery(),
                                      snapshot_ids.scalar_subquery())).one()
    return (*found, *sorted(results.job_counts(connection, task_id).items()))


def model(connection: Connection, task_id: int, name: str) -> Row:
    """A model of a task, with its team's name, or Missing."""
    found = connection.execute(
        select(models.c.id, models.c.name, models.c.command, models.c.timeout,
               models.c.description, models.c.url, teams.c.name.label("team"))
        .join(teams, teams.c.id == models.c.team_id)
        .where(models.c.task_id == task_id, models.c.name == name)).first()
    if found is None:
        raise Missing(f"the task has no model {name!r}")
    return found


_SUBMISSION = select(
    submissions.c.id, submissions.c.created, submissions.c.predictions_id,
    submissions.c.dataset_id, models.c.name.label("model"), teams.c.name.label("team"),
    datasets.c.name.label("dataset"), models.c.task_id, submissions.c.throughput,
    submissions.c.memory, models.c.description, models.c.url,
).join(models, models.c.id == submissions.c.model_id).join(
    teams, teams.c.id == models.c.team_id).join(
    datasets, datasets.c.id == submissions.c.dataset_id)


def submission(connection: Connection, submission_id: int) -> Row:
    """A submission by id, with its model, team and dataset, or Missing."""
    found = connection.execute(_SUBMISSION.where(submissions.c.id == submission_id)).first()
    if found is None:
        raise Missing(f"no submission {submission_id}")
    return found


def model_submissions(connection: Connection, model_id: int) -> List[Row]:
    """Every submission of a model, oldest first."""
    return list(connection.execute(_SUBMISSION.where(submissions.c.model_id == model_id)
                                   .order_by(submissions.c.id)))


def current_submissions(connection: Connection, dataset_id: int) -> List[Row]:
    """Each model's last submission on a dataset: the one its leaderboard entry shows."""
    last = (select(func.max(submissions.c.id)).where(submissions.c.dataset_id == dataset_id)
            .group_by(submissions.c.model_id))
    return list(connection.execute(_SUBMISSION.where(submissions.c.id.in_(last))
                                   .order_by(models.c.name)))


# -- snapshots -----------------------------------------------------------------------------

def add_snapshot(connection: Connection, task_id: int, data: bytes) -> Row:
    """Keep a frozen copy of a task's boards (`data`, their JSON); its id and time."""
    return connection.execute(insert(snapshots).values(
        task_id=task_id, data=data, created=now()).returning(
        snapshots.c.id, snapshots.c.created)).one()


def snapshot(connection: Connection, snapshot_id: int) -> Row:
    """A snapshot by id, with its task's name and its data, or Missing."""
    found = connection.execute(
        select(snapshots.c.id, snapshots.c.created, snapshots.c.data,
               tasks.c.name.label("task"))
        .join(tasks, tasks.c.id == snapshots.c.task_id)
        .where(snapshots.c.id == snapshot_id)).first()
    if found is None:
        raise Missing(f"no snapshot {snapshot_id}")
    return found


def task_snapshots(connection: Connection, task_id: int) -> List[Row]:
    """A task's snapshots, oldest first, without their data."""
    return list(connection.execute(select(snapshots.c.id, snapshots.c.created).where(
        snapshots.c.task_id == task_id).order_by(snapshots.c.id)))
