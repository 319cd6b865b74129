"""The service's database: one schema for SQLite and PostgreSQL (SQLAlchemy Core), its
migrations (Alembic, run at start), and the queries the service makes. Every statement
is built by SQLAlchemy with bound parameters; nothing from a request is pasted into SQL.

What is kept: tasks and their metric specs, datasets (the uploaded bytes and their
hash), teams (a hash of their token), models, the raw predictions of every submission
(so that a later metric can score them), evaluations (one metric's rows of one
prediction file on one dataset, as one binary array, with the corpus score) and jobs.
"""

from __future__ import annotations

import hashlib
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import URL, Connection, Engine, Row, make_url
from sqlalchemy.exc import ArgumentError

from evalproto.service.errors import Conflict, Forbidden, Invalid, NotFound
from evalproto.service.names import NAME_LENGTH

metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})


def _created() -> Column:
    return Column("created", Float, nullable=False)


settings = Table(
    "settings", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False))

tasks = Table(
    "tasks", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(NAME_LENGTH), nullable=False, unique=True),
    Column("perf", Text, nullable=False),  # the spec of the metric that ranks
    _created())

metrics = Table(
    "metrics", metadata,
    Column("id", Integer, primary_key=True),
    Column("task_id", ForeignKey("tasks.id"), nullable=False),
    Column("spec", Text, nullable=False),
    Column("kind", String(16), nullable=False),  # "in-process" or "command"
    Column("name", Text, nullable=False),  # the score's name: BLEU, chrF2++
    Column("signature", Text, nullable=False),
    Column("higher_is_better", Boolean, nullable=False),
    _created(),
    UniqueConstraint("task_id", "spec"))

datasets = Table(
    "datasets", metadata,
    Column("id", Integer, primary_key=True),
    Column("task_id", ForeignKey("tasks.id"), nullable=False),
    Column("name", String(NAME_LENGTH), nullable=False),
    Column("round", Integer),
    Column("content_hash", String(64), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("examples", Integer, nullable=False),
    Column("nrefs", String(16), nullable=False),  # a number, or "var"
    _created(),
    UniqueConstraint("task_id", "name"))

teams = Table(
    "teams", metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(NAME_LENGTH), nullable=False, unique=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    _created())

models = Table(
    "models", metadata,
    Column("id", Integer, primary_key=True),
    Column("task_id", ForeignKey("tasks.id"), nullable=False),
    Column("team_id", ForeignKey("teams.id"), nullable=False),
    Column("name", String(NAME_LENGTH), nullable=False),
    _created(),
    UniqueConstraint("task_id", "name"))

predictions = Table(
    "predictions", metadata,
    Column("id", Integer, primary_key=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("data", LargeBinary, nullable=False),
    _created())

submissions = Table(
    "submissions", metadata,
    Column("id", Integer, primary_key=True),
    Column("model_id", ForeignKey("models.id"), nullable=False),
    Column("dataset_id", ForeignKey("datasets.id"), nullable=False),
    Column("predictions_id", ForeignKey("predictions.id"), nullable=False),
    _created(),
    Index(None, "model_id", "dataset_id"))

evaluations = Table(
    "evaluations", metadata,
    Column("id", Integer, primary_key=True),
    Column("dataset_id", ForeignKey("datasets.id"), nullable=False),
    Column("predictions_id", ForeignKey("predictions.id"), nullable=False),
    Column("signature", Text, nullable=False),
    Column("segments", Integer, nullable=False),
    Column("rows", LargeBinary, nullable=False),  # float64 little-endian, row after row
    Column("score", Float),  # None when not finite
    _created(),
    UniqueConstraint("dataset_id", "predictions_id", "signature"))

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"

jobs = Table(
    "jobs", metadata,
    Column("id", Integer, primary_key=True),
    Column("submission_id", ForeignKey("submissions.id"), nullable=False),
    Column("metric_id", ForeignKey("metrics.id"), nullable=False),
    Column("state", String(16), nullable=False),
    Column("message", Text),  # why it failed, or what the metric warned of
    Column("attempts", Integer, nullable=False),  # failures charged to it (see charge)
    _created(),
    Column("started", Float),
    Column("finished", Float),
    Column("server", String(32)),  # the server running it (see servers)
    UniqueConstraint("submission_id", "metric_id"),
    Index(None, "state"))

servers = Table(
    "servers", metadata,
    Column("id", String(32), primary_key=True),
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started", Float, nullable=False),
    Column("heartbeat", Float, nullable=False))
"""The servers running jobs on this database, each beating its heart while it lives:
a job whose server is gone is queued again (several servers may share a PostgreSQL
database)."""


# -- the database --------------------------------------------------------------------------

def database_url(database: str) -> URL:
    """A SQLAlchemy URL from --db: a URL (postgresql://, sqlite:///...), or a path of a
    SQLite file. PostgreSQL is spoken through psycopg 3."""
    if "://" not in database:
        return URL.create("sqlite", database=str(Path(database)))
    try:
        url = make_url(database)
    except ArgumentError:
        raise Invalid(f"--db {database!r} is neither a file nor a database URL") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise Invalid(f"--db {url.render_as_string()!r}: evalproto stores its data in "
                      f"SQLite or PostgreSQL")
    if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
        raise Invalid("--db: an in-memory SQLite database lasts one connection; give a "
                      "file")
    return url


def shown(url: URL) -> str:
    """A URL to print: its password hidden."""
    return url.render_as_string(hide_password=True)


def sqlite_file(url: URL) -> Optional[Path]:
    """The file of a SQLite database, or None for another database."""
    return Path(url.database) if url.get_backend_name() == "sqlite" and url.database else None


def open_engine(url: URL) -> Engine:
    """An engine for the service's threads. SQLite gets write-ahead logging (readers
    never wait for the writer), waits for a lock instead of failing, and takes the
    write lock when a writing transaction begins (`writing`), so that two writers never
    deadlock upgrading their read locks. An error's message never shows the statement's
    parameters (a token's hash, a team's predictions), which errors are logged with."""
    if url.get_backend_name() != "sqlite":
        return create_engine(url, pool_size=10, max_overflow=30, pool_pre_ping=True,
                             hide_parameters=True)
    _create_private(Path(str(url.database)))
    # as many connections as PostgreSQL's: the server's threads read at once, and a
    # connection opened beyond the pool is set up (its pragmas) and closed each time
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 60},
                           pool_size=10, max_overflow=30, hide_parameters=True)

    @event.listens_for(engine, "connect")
    def connected(connection: Any, record: Any) -> None:
        connection.isolation_level = None  # transactions begin where `began` says
        cursor = connection.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON",
                       "busy_timeout=60000"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def began(connection: Connection) -> None:
        immediate = connection.get_execution_options().get("evalproto_writes")
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _create_private(path: Path) -> None:
    """Create a SQLite database's file, if it is not there, readable by its owner only
    (it holds every upload; its -wal and -shm files take its mode)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:  # a directory that is not there: SQLite's error says so
        pass


@contextmanager
def writing(engine: Engine) -> Iterator[Connection]:
    """A transaction that writes: committed whole at the end, or rolled back whole."""
    with engine.connect() as connection:
        connection.execution_options(evalproto_writes=True)
        with connection.begin():
            yield connection


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """A transaction that only reads (one consistent view)."""
    with engine.connect() as connection, connection.begin():
        yield connection


MIGRATIONS = Path(__file__).parent / "migrations"


def migrate(engine: Engine) -> str:
    """Bring the database to the newest schema (creating it if empty) in one
    transaction; the revision it is at. Servers starting together on one PostgreSQL
    database take turns."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with writing(engine) as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(2028)")
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        return str(MigrationContext.configure(connection).get_current_revision())


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def now() -> float:
    return time.time()


def iso_time(seconds: float) -> str:
    """A stored time (seconds since the epoch) as ISO 8601, in UTC."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds"
                                                                  ).replace("+00:00", "Z")


def insert_new(connection: Connection, table: Table, values: Dict[str, Any],
               unique: Sequence[str]) -> bool:
    """Insert a row unless one with the same `unique` columns is there (another
    request's, a moment ago); whether this one was inserted."""
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(table).values(**values).on_conflict_do_nothing(
        index_elements=list(unique))
    key = next(iter(table.primary_key.columns))  # returned only by a row inserted
    return connection.execute(statement.returning(key)).first() is not None


# -- settings ------------------------------------------------------------------------------

def setting(connection: Connection, key: str) -> Optional[str]:
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
             perf: str) -> None:
    if not insert_new(connection, tasks, {"name": name, "perf": perf, "created": now()},
                      ["name"]):
        raise Conflict(f"there is a task {name!r} already")
    task_id = task(connection, name).id
    for entry in entries:
        _insert_metric(connection, task_id, entry)


def _insert_metric(connection: Connection, task_id: int, entry: MetricEntry) -> int:
    same = connection.execute(select(metrics.c.spec).where(
        metrics.c.task_id == task_id, metrics.c.signature == entry.signature)).scalar()
    if same is not None:
        raise Conflict(f"the task has the metric {same!r} already, with the same signature "
                       f"as {entry.spec!r} ({entry.signature})")
    if not insert_new(connection, metrics, {"task_id": task_id, **asdict(entry),
                                            "created": now()}, ["task_id", "spec"]):
        raise Conflict(f"the task has the metric {entry.spec!r} already")
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
    found = connection.execute(select(tasks).where(tasks.c.name == name)).first()
    if found is None:
        raise NotFound(f"no task {name!r}")
    return found


def task_name(connection: Connection, task_id: int) -> str:
    return str(connection.execute(select(tasks.c.name).where(tasks.c.id == task_id)).scalar_one())


def all_tasks(connection: Connection) -> List[Row]:
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
                data: bytes, examples: int, nrefs: int | str) -> None:
    values = {"task_id": task_id, "name": name, "round": round_,
              "content_hash": content_hash(data), "data": data, "examples": examples,
              "nrefs": str(nrefs), "created": now()}
    if not insert_new(connection, datasets, values, ["task_id", "name"]):
        raise Conflict(f"the task has a dataset {name!r} already")


_DATASET_INFO = [datasets.c.id, datasets.c.task_id, datasets.c.name, datasets.c.round,
                 datasets.c.content_hash, datasets.c.examples, datasets.c.nrefs,
                 datasets.c.created]


def dataset(connection: Connection, task_id: int, name: str) -> Row:
    """A dataset of the task, without its bytes (see dataset_data)."""
    found = connection.execute(select(*_DATASET_INFO).where(
        datasets.c.task_id == task_id, datasets.c.name == name)).first()
    if found is None:
        raise NotFound(f"the task has no dataset {name!r}")
    return found


def task_datasets(connection: Connection, task_id: int) -> List[Row]:
    return list(connection.execute(select(*_DATASET_INFO).where(
        datasets.c.task_id == task_id).order_by(datasets.c.id)))


def dataset_data(connection: Connection, dataset_id: int) -> bytes:
    return bytes(connection.execute(select(datasets.c.data).where(
        datasets.c.id == dataset_id)).scalar_one())


# -- teams, models, submissions ------------------------------------------------------------

def add_team(connection: Connection, name: str, token_hash: str) -> None:
    if not insert_new(connection, teams, {"name": name, "token_hash": token_hash,
                                          "created": now()}, ["name"]):
        raise Conflict(f"there is a team {name!r} already")


def team_by_token(connection: Connection, token_hash: str) -> Optional[Row]:
    return connection.execute(select(teams).where(teams.c.token_hash == token_hash)).first()


def submit(connection: Connection, task_id: int, team: Row, model: str, dataset_id: int,
           data: bytes) -> Tuple[int, int]:
    """Record a submission of a team's model (made on its first submission) and queue
    its scoring under every metric of the task; (the submission's id, jobs queued).
    Predictions are kept once however often they are submitted."""
    lock_task(connection, task_id)
    insert_new(connection, models, {"task_id": task_id, "team_id": team.id, "name": model,
                                    "created": now()}, ["task_id", "name"])
    owner = connection.execute(
        select(models.c.id, teams.c.name).join(teams, teams.c.id == models.c.team_id)
        .where(models.c.task_id == task_id, models.c.name == model)).one()
    if owner.name != team.name:
        raise Forbidden(f"the model {model!r} belongs to team {owner.name!r}; team "
                        f"{team.name!r} submits only its own models")
    digest = content_hash(data)
    insert_new(connection, predictions, {"content_hash": digest, "data": data,
                                         "created": now()}, ["content_hash"])
    predictions_id = connection.execute(select(predictions.c.id).where(
        predictions.c.content_hash == digest)).scalar_one()
    submission_id = connection.execute(insert(submissions).values(
        model_id=owner.id, dataset_id=dataset_id, predictions_id=predictions_id,
        created=now()).returning(submissions.c.id)).scalar_one()
    metric_ids = [metric.id for metric in task_metrics(connection, task_id)]
    _queue(connection, [(submission_id, metric_id) for metric_id in metric_ids])
    return int(submission_id), len(metric_ids)


def _queue(connection: Connection, pairs: Sequence[Tuple[int, int]]) -> None:
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
    ).tuples().all())
    return {int(task_id): (int(count), last.get(task_id)) for task_id, count in counted}


def task_version(connection: Connection, task_id: int) -> Tuple[Any, ...]:
    """What changes whenever what a task's pages show may change: its metrics and
    datasets, its newest submission, and its jobs by state (a job's end adds its
    evaluation). Cheap to read, so that a page made at the same version is reused."""
    metric_ids = select(func.max(metrics.c.id)).where(metrics.c.task_id == task_id)
    dataset_ids = select(func.max(datasets.c.id)).where(datasets.c.task_id == task_id)
    newest = select(func.max(submissions.c.id)).join(
        models, models.c.id == submissions.c.model_id).where(models.c.task_id == task_id)
    found = connection.execute(select(metric_ids.scalar_subquery(),
                                      dataset_ids.scalar_subquery(),
                                      newest.scalar_subquery())).one()
    return (*found, *sorted(job_counts(connection, task_id).items()))


def model(connection: Connection, task_id: int, name: str) -> Row:
    found = connection.execute(
        select(models.c.id, models.c.name, teams.c.name.label("team"))
        .join(teams, teams.c.id == models.c.team_id)
        .where(models.c.task_id == task_id, models.c.name == name)).first()
    if found is None:
        raise NotFound(f"the task has no model {name!r}")
    return found


_SUBMISSION = select(
    submissions.c.id, submissions.c.created, submissions.c.predictions_id,
    submissions.c.dataset_id, models.c.name.label("model"), teams.c.name.label("team"),
    datasets.c.name.label("dataset"), models.c.task_id,
).join(models, models.c.id == submissions.c.model_id).join(
    teams, teams.c.id == models.c.team_id).join(
    datasets, datasets.c.id == submissions.c.dataset_id)


def submission(connection: Connection, submission_id: int) -> Row:
    found = connection.execute(_SUBMISSION.where(submissions.c.id == submission_id)).first()
    if found is None:
        raise NotFound(f"no submission {submission_id}")
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


# -- evaluations and jobs ------------------------------------------------------------------

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


def evaluation_scores(connection: Connection, evaluation_ids: Sequence[int]
                      ) -> Dict[int, Optional[float]]:
    """The corpus scores stored with evaluations, by id."""
    found = connection.execute(select(evaluations.c.id, evaluations.c.score).where(
        evaluations.c.id.in_(list(evaluation_ids))))
    return {row.id: row.score for row in found}


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
    if task_id is not None:
        query = query.join(metrics, metrics.c.id == jobs.c.metric_id).where(
            metrics.c.task_id == task_id)
    counts = {state: 0 for state in (QUEUED, RUNNING, DONE, FAILED)}
    counts.update({state: int(count) for state, count in connection.execute(query)})
    return counts


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


def claim(connection: Connection, server: str) -> Optional[Job]:
    """Take the oldest queued job, if any, for `server` (another server may take it
    first: then the next). The job is marked running; `finish` or `fail` ends it."""
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
    found = connection.execute(
        select(jobs.c.id, metrics.c.spec, metrics.c.kind, metrics.c.signature,
               submissions.c.dataset_id, datasets.c.name.label("dataset"),
               submissions.c.predictions_id, models.c.name.label("model"),
               tasks.c.name.label("task"), jobs.c.attempts, jobs.c.server)
        .join(metrics, metrics.c.id == jobs.c.metric_id)
        .join(submissions, submissions.c.id == jobs.c.submission_id)
        .join(datasets, datasets.c.id == submissions.c.dataset_id)
        .join(models, models.c.id == submissions.c.model_id)
        .join(tasks, tasks.c.id == metrics.c.task_id)
        .where(jobs.c.id == job_id)).one()
    return Job(**found._mapping)


def predictions_data(connection: Connection, predictions_id: int) -> bytes:
    return bytes(connection.execute(select(predictions.c.data).where(
        predictions.c.id == predictions_id)).scalar_one())


def finish(connection: Connection, job: Job, rows: Optional[bytes] = None, segments: int = 0,
           score: Optional[float] = None, message: Optional[str] = None) -> None:
    """End a job: with its evaluation (written with the job's end, in this transaction,
    unless the same predictions, dataset and signature were scored before), or with
    none when they had been."""
    if rows is not None:
        insert_new(connection, evaluations, {
            "dataset_id": job.dataset_id, "predictions_id": job.predictions_id,
            "signature": job.signature, "segments": segments, "rows": rows,
            "score": score, "created": now()},
            ["dataset_id", "predictions_id", "signature"])
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=DONE, finished=now(), message=message))


def fail(connection: Connection, job: Job, message: str, charged: bool = False) -> None:
    """End a job as failed; `charged`: by a failure of its own doing (see charge)."""
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=FAILED, finished=now(), message=message,
        attempts=jobs.c.attempts + int(charged)))


def _claimed(job: Job) -> Tuple[Any, ...]:
    """The job's row while it is still running under its claim: a server taken for
    dead, whose jobs another server has queued again and taken, ends none of them."""
    return jobs.c.id == job.id, jobs.c.state == RUNNING, jobs.c.server == job.server


# -- servers ------------------------------------------------------------------------------

STALE_SECONDS = 60.0
"""A server whose heartbeat is older than this is taken for dead."""


def register_server(connection: Connection, server: str, host: str, pid: int) -> None:
    connection.execute(insert(servers).values(id=server, host=host, pid=pid, started=now(),
                                              heartbeat=now()))


def beat(connection: Connection, server: str) -> None:
    connection.execute(update(servers).where(servers.c.id == server).values(heartbeat=now()))


def unregister_server(connection: Connection, server: str) -> None:
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


def charge(connection: Connection, job: Job) -> None:
    """Count a failure that the running job itself caused (its worker died of it, or it
    could not be sent), and queue it again. A job is charged only for its own doing:
    not for a server's restart, nor for a death of a worker that another job caused."""
    connection.execute(update(jobs).where(*_claimed(job)).values(
        state=QUEUED, started=None, server=None, attempts=jobs.c.attempts + 1))
