"""The job queue's queries: claiming a queued job, ending it (with its evaluation, in
the same transaction), charging it with a failure of its own doing, and the servers
that run jobs, whose jobs are queued again when they are gone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Row

from evalproto.service import schema, store
from evalproto.service.database import insert_new, now
from evalproto.service.schema import DONE, FAILED, QUEUED, RUN, RUNNING, jobs, servers


@dataclass(frozen=True)
class Job:
    """What a worker needs to run a job."""

    id: int
    spec: str
    kind: str
    signature: str
    dataset_id: int
    dataset: str
    predictions_id: int
    model: str
    task: str
    attempts: int  # failures charged to it before this claim
    server: str  # the server that claimed it, and that alone ends it


@dataclass(frozen=True)
class Run:
    """What a worker needs to run a model on a dataset (a job of kind "run")."""

    id: int
    model_id: int
    model: str
    command: str
    timeout: Optional[float]
    dataset_id: int
    dataset: str
    task_id: int
    task: str
    input_keys: Optional[str]  # JSON lists, as the task keeps them
    output_keys: Optional[str]
    attempts: int
    server: str


def claim(connection: Connection, server: str) -> Optional[Job | Run]:
    """Take the oldest queued job, if any, for `server` (another server may take it
    first: then the next): a scoring job, or a run of a model. It is marked running;
    `finish`, `finish_run` or `fail` ends it."""
    while True:
        job_id = connection.execute(select(jobs.c.id).where(jobs.c.state == QUEUED)
                                    .order_by(jobs.c.id).limit(1)).scalar()
        if job_id is None:
            return None
        taken = connection.execute(update(jobs).where(
            jobs.c.id == job_id, jobs.c.state == QUEUED).values(
            state=RUNNING, started=now(), server=server))
        if taken.rowcount:
            break
    if connection.execute(select(jobs.c.kind).where(jobs.c.id == job_id)).scalar() == RUN:
        return _run(connection, job_id)
    found = connection.execute(
        select(jobs.c.id, schema.metrics.c.spec, schema.metrics.c.kind, schema.metrics.c.signature,
               schema.submissions.c.dataset_id, schema.datasets.c.name.label("dataset"),
               schema.submissions.c.predictions_id, schema.models.c.name.label("model"),
               schema.tasks.c.name.label("task"), jobs.c.attempts, jobs.c.server)
        .join(schema.metrics, schema.metrics.c.id == jobs.c.metric_id)
        .join(schema.submissions, schema.submissions.c.id == jobs.c.submission_id)
        .join(schema.datasets, schema.datasets.c.id == schema.submissions.c.dataset_id)
        .join(schema.models, schema.models.c.id == schema.submissions.c.model_id)
        .join(schema.tasks, schema.tasks.c.id == schema.metrics.c.task_id)
        .where(jobs.c.id == job_id)).one()
    return Job(**found._mapping)


def _run(connection: Connection, job_id: int) -> Run:
    found = connection.execute(
        select(jobs.c.id, schema.models.c.id.label("model_id"),
               schema.models.c.name.label("model"), schema.models.c.command,
               schema.models.c.timeout, schema.datasets.c.id.label("dataset_id"),
               schema.datasets.c.name.label("dataset"), schema.tasks.c.id.label("task_id"),
               schema.tasks.c.name.label("task"), schema.tasks.c.input_keys,
               schema.tasks.c.output_keys, jobs.c.attempts, jobs.c.server)
        .join(schema.models, schema.models.c.id == jobs.c.model_id)
        .join(schema.datasets, schema.datasets.c.id == jobs.c.dataset_id)
        .join(schema.tasks, schema.tasks.c.id == schema.models.c.task_id)
        .where(jobs.c.id == job_id)).one()
    return Run(**found._mapping)


def finish_run(connection: Connection, run: Run, predictions: bytes, throughput: float,
               memory: float) -> bool:
    """End a run with the submission its predictions make (with what it measured, and
    their scoring queued), in this transaction; whether it was still this server's to
    end (else nothing is stored: another server runs it now)."""
    ended = connection.execute(update(jobs).where(*_claimed(run)).values(
        state=DONE, finished=now()))
    if not ended.rowcount:
        return False
    submission, _ = store.add_submission(connection, run.task_id, run.model_id,
                                         run.dataset_id, predictions, throughput, memory)
    connection.execute(update(jobs).where(jobs.c.id == run.id).values(submission_id=submission))
    return True


def finish(connection: Connection, job: Job, rows: Optional[bytes] = None, segments: int = 0,
           score: Optional[float] = None, message: Optional[str] = None) -> None:
    """End a job: with its evaluation (written with the job's end, in this transaction,
    unless the same predictions, dataset and signature were scored before), or with
    none when they had been."""
    if rows is not None:
        insert_new(connection, schema.evaluations, {
            "dataset_id": job.dataset_id, "predictions_id": job.predictions_id,
            "signature": job.signature, "segments": segments, "rows": rows,
            "score": score, "created": now()},
            ["dataset_id", "predictions_id", "signature"])
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=DONE, finished=now(), message=message))


def fail(connection: Connection, job: Job | Run, message: str, charged: bool = False) -> None:
    """End a job as failed; `charged`: by a failure of its own doing (see charge)."""
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=FAILED, finished=now(), message=message,
        attempts=jobs.c.attempts + int(charged)))


def _claimed(job: Job | Run) -> Tuple[Any, ...]:
    """The job's row while it is still running under its claim: a server taken for
    dead, whose jobs another server has queued again and taken, ends none of them."""
    return jobs.c.id == job.id, jobs.c.state == RUNNING, jobs.c.server == job.server


# -- servers ------------------------------------------------------------------------------

STALE_SECONDS = 60.0
"""A server whose heartbeat is older than this is taken for dead."""


def register_server(connection: Connection, server: str, host: str, pid: int) -> None:
    """Record a server that runs jobs on this database."""
    connection.execute(insert(servers).values(id=server, host=host, pid=pid, started=now(),
                                              heartbeat=now()))


def beat(connection: Connection, server: str) -> None:
    """Say that a server lives."""
    connection.execute(update(servers).where(servers.c.id == server).values(heartbeat=now()))


def unregister_server(connection: Connection, server: str) -> None:
    """Forget a server that stopped cleanly."""
    connection.execute(delete(servers).where(servers.c.id == server))


def requeue_orphans(connection: Connection, alive: Callable[[Row], bool]) -> int:
    """Queue again the jobs left running by servers that are gone (a crash, kill -9):
    no longer registered, silent for STALE_SECONDS, or not `alive` (the caller knows
    the processes of its own machine); how many. Their registrations go too."""
    found = connection.execute(
        select(jobs.c.id, servers.c.id.label("server"), servers.c.host, servers.c.pid,
               servers.c.heartbeat)
        .select_from(jobs.outerjoin(servers, servers.c.id == jobs.c.server))
        .where(jobs.c.state == RUNNING)).all()
    orphans = [row.id for row in found if row.server is None
               or row.heartbeat < now() - STALE_SECONDS or not alive(row)]
    dead = {row.server for row in found if row.server is not None and row.id in orphans}
    if orphans:
        connection.execute(update(jobs).where(jobs.c.id.in_(orphans),
                                              jobs.c.state == RUNNING)
                           .values(state=QUEUED, started=None, server=None))
    if dead:
        connection.execute(delete(servers).where(servers.c.id.in_(sorted(dead))))
    return len(orphans)


def requeue(connection: Connection, job_ids: Sequence[int], server: str) -> None:
    """Queue these running jobs of `server` again (it is stopping, or could not run
    them); those another server has taken meanwhile are left alone."""
    connection.execute(update(jobs).where(jobs.c.id.in_(list(job_ids)),
                                          jobs.c.state == RUNNING, jobs.c.server == server)
                       .values(state=QUEUED, started=None, server=None))


def charge(connection: Connection, job: Job | Run) -> None:
    """Count a failure that the running job itself caused (its worker died of it, or it
    could not be sent), and queue it again. A job is charged only for its own doing:
    not for a server's restart, nor for a death of a worker that another job caused."""
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=QUEUED, started=None, server=None, attempts=jobs.c.attempts + 1))
