"""The queries of what scoring and running produced: evaluations (their ids, scores and
rows), predictions' bytes, jobs by state and the runs of the models the server runs.
Reads only; written by evalproto.service.jobstore as jobs end."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from sqlalchemy import func, or_, select
from sqlalchemy.engine import Connection, Row

from evalproto.service.schema import (
    DONE,
    FAILED,
    QUEUED,
    RUN,
    RUNNING,
    datasets,
    evaluations,
    jobs,
    metrics,
    models,
    predictions,
    submissions,
    teams,
)


def evaluations_of(connection: Connection, dataset_id: int,
                   predictions_ids: Sequence[int], signature: str) -> Dict[int, Row]:
    """The evaluations of these prediction files on a dataset under a signature, by
    predictions id: their ids and segments, without their rows (evaluation_rows) or
    score (evaluation_scores; SQLite keeps the score after the rows in its record, so
    reading it reads the rows too: a leaderboard's read would take 30 times longer)."""
    columns = [evaluations.c.id, evaluations.c.predictions_id, evaluations.c.segments]
    found = connection.execute(select(*columns).where(
        evaluations.c.dataset_id == dataset_id, evaluations.c.signature == signature,
        evaluations.c.predictions_id.in_(list(predictions_ids))))
    return {row.predictions_id: row for row in found}


def evaluations_among(connection: Connection, dataset_ids: Sequence[int],
                      predictions_ids: Sequence[int], signatures: Sequence[str]
                      ) -> Dict[Tuple[int, int, str], Row]:
    """The evaluations of these prediction files on these datasets under these
    signatures, by (dataset id, predictions id, signature), in one query (as
    evaluations_of, for a model's submissions on several datasets at once)."""
    columns = [evaluations.c.id, evaluations.c.dataset_id, evaluations.c.predictions_id,
               evaluations.c.signature, evaluations.c.segments]
    found = connection.execute(select(*columns).where(
        evaluations.c.dataset_id.in_(list(dataset_ids)),
        evaluations.c.predictions_id.in_(list(predictions_ids)),
        evaluations.c.signature.in_(list(signatures))))
    return {(row.dataset_id, row.predictions_id, row.signature): row for row in found}


def evaluation_scores(connection: Connection, evaluation_ids: Sequence[int]
                      ) -> Dict[int, Optional[float]]:
    """The corpus scores stored with evaluations, by id."""
    found = connection.execute(select(evaluations.c.id, evaluations.c.score).where(
        evaluations.c.id.in_(list(evaluation_ids))))
    return {row.id: row.score for row in found}


def predictions_data(connection: Connection, predictions_id: int) -> bytes:
    """A prediction file's bytes."""
    return bytes(connection.execute(select(predictions.c.data).where(
        predictions.c.id == predictions_id)).scalar_one())


def evaluation_rows(connection: Connection, evaluation_ids: Sequence[int]) -> Dict[int, bytes]:
    """The stored rows of evaluations, by id."""
    found = connection.execute(select(evaluations.c.id, evaluations.c.rows).where(
        evaluations.c.id.in_(list(evaluation_ids))))
    return {row.id: bytes(row.rows) for row in found}


def job_states(connection: Connection, submission_ids: Sequence[int]) -> Dict[Tuple[int, int], Row]:
    """The job of each (submission, metric), by those ids."""
    found = connection.execute(select(jobs).where(jobs.c.submission_id.in_(
        list(submission_ids))))
    return {(row.submission_id, row.metric_id): row for row in found}


def job_counts(connection: Connection, task_id: Optional[int] = None) -> Dict[str, int]:
    """Jobs by state, of one task or of all."""
    query = select(jobs.c.state, func.count()).group_by(jobs.c.state)
    if task_id is not None:  # a scoring job's task is its metric's, a run's its model's
        query = query.outerjoin(metrics, metrics.c.id == jobs.c.metric_id).outerjoin(
            models, models.c.id == jobs.c.model_id).where(
            or_(metrics.c.task_id == task_id, models.c.task_id == task_id))
    counts = {state: 0 for state in (QUEUED, RUNNING, DONE, FAILED)}
    counts.update({state: int(count) for state, count in connection.execute(query)})
    return counts


def model_runs(connection: Connection, model_id: int) -> List[Row]:
    """A model's runs, one a dataset: their state and message, and what they measured
    (from the submission a run made)."""
    return list(connection.execute(
        select(jobs.c.id, jobs.c.state, jobs.c.message, jobs.c.started, jobs.c.finished,
               jobs.c.submission_id, datasets.c.name.label("dataset"),
               submissions.c.throughput, submissions.c.memory)
        .join(datasets, datasets.c.id == jobs.c.dataset_id)
        .outerjoin(submissions, submissions.c.id == jobs.c.submission_id)
        .where(jobs.c.kind == RUN, jobs.c.model_id == model_id).order_by(jobs.c.id)))


def dataset_runs(connection: Connection, dataset_id: int) -> Dict[str, Row]:
    """The runs of models on a dataset, by model."""
    found = connection.execute(
        select(jobs.c.id, jobs.c.state, jobs.c.message, jobs.c.submission_id,
               models.c.name.label("model"), teams.c.name.label("team"))
        .join(models, models.c.id == jobs.c.model_id)
        .join(teams, teams.c.id == models.c.team_id)
        .where(jobs.c.kind == RUN, jobs.c.dataset_id == dataset_id))
    return {row.model: row for row in found}
