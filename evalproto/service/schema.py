"""The service's database schema: one for SQLite and PostgreSQL (SQLAlchemy Core),
versioned by the migrations (evalproto/service/migrations, run at start; a test checks
that the newest builds exactly this).

What is kept: tasks and their metric specs, datasets (the uploaded bytes and their
hash), teams (a hash of their token), models, the raw predictions of every submission
(so that a later metric can score them), evaluations (one metric's rows of one
prediction file on one dataset, as one binary array, with the corpus score), jobs, and
the servers that run them.
"""

from __future__ import annotations

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
)

from evalproto.service.names import NAME_LENGTH

metadata = MetaData(naming_convention={
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})


def _key() -> Column:
    """A table's own id."""
    return Column("id", Integer, primary_key=True)


def _reference(name: str, table: str) -> Column:
    """A column that holds the id of a row of `table`, and must."""
    return Column(name, ForeignKey(f"{table}.id"), nullable=False)


def _created() -> Column:
    """The time a row was made (seconds since the epoch)."""
    return Column("created", Float, nullable=False)


settings = Table(
    "settings", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False))

tasks = Table(
    "tasks", metadata,
    _key(),
    Column("name", String(NAME_LENGTH), nullable=False, unique=True),
    Column("perf", Text, nullable=False),  # the spec of the metric that ranks
    # a model's I/O, as JSON lists: the keys of a dataset's rows it receives, and the keys
    # its reply carries besides "id" and "pred" (Dynabench's verify_response)
    Column("input_keys", Text),
    Column("output_keys", Text),
    Column("weights", Text),  # the Dynaboard's default weights, JSON {metric: weight}
    _created())

metrics = Table(
    "metrics", metadata,
    _key(),
    _reference("task_id", "tasks"),
    Column("spec", Text, nullable=False),
    Column("kind", String(16), nullable=False),  # "in-process" or "command"
    Column("name", Text, nullable=False),  # the score's name: BLEU, chrF2++
    Column("signature", Text, nullable=False),
    Column("higher_is_better", Boolean, nullable=False),
    _created(),
    UniqueConstraint("task_id", "spec"))

datasets = Table(
    "datasets", metadata,
    _key(),
    _reference("task_id", "tasks"),
    Column("name", String(NAME_LENGTH), nullable=False),
    Column("round", Integer),
    Column("content_hash", String(64), nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("examples", Integer, nullable=False),
    Column("nrefs", String(16), nullable=False),  # a number, or "var"
    # a perturbed copy of another dataset of the task: its rows' input_id name the
    # original's, and its kind says which delta metric it gives the original's board
    Column("perturbation_of", ForeignKey("datasets.id")),
    Column("kind", String(16)),  # "fairness" or "robustness"
    _created(),
    UniqueConstraint("task_id", "name"))

teams = Table(
    "teams", metadata,
    _key(),
    Column("name", String(NAME_LENGTH), nullable=False, unique=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    _created())

models = Table(
    "models", metadata,
    _key(),
    _reference("task_id", "tasks"),
    _reference("team_id", "teams"),
    Column("name", String(NAME_LENGTH), nullable=False),
    Column("command", Text),  # a model the server runs (added by the admin), or none
    Column("timeout", Float),  # the longest wait for one of its replies, in seconds
    Column("description", Text),  # what its team says of it, and a link to its paper
    Column("url", Text),  # or code (http or https)
    _created(),
    UniqueConstraint("task_id", "name"))

predictions = Table(
    "predictions", metadata,
    _key(),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("data", LargeBinary, nullable=False),
    _created())

submissions = Table(
    "submissions", metadata,
    _key(),
    _reference("model_id", "models"),
    _reference("dataset_id", "datasets"),
    _reference("predictions_id", "predictions"),
    # what the server measured, when its run of the model made the predictions
    Column("throughput", Float),  # examples per second
    Column("memory", Float),  # the peak resident memory of the model's processes, GiB
    _created(),
    Index(None, "model_id", "dataset_id"))

evaluations = Table(
    "evaluations", metadata,
    _key(),
    _reference("dataset_id", "datasets"),
    _reference("predictions_id", "predictions"),
    Column("signature", Text, nullable=False),
    Column("segments", Integer, nullable=False),
    Column("rows", LargeBinary, nullable=False),  # float64 little-endian, row after row
    Column("score", Float),  # None when not finite
    _created(),
    UniqueConstraint("dataset_id", "predictions_id", "signature"))

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
SCORE, RUN = "score", "run"
"""The kinds of job: scoring a submission with a metric, and running a model on a
dataset (whose predictions become a submission, scored by the scoring jobs it queues)."""

jobs = Table(
    "jobs", metadata,
    _key(),
    Column("kind", String(16), nullable=False, server_default=SCORE),
    # a scoring job: the submission and the metric; a run: the submission it made
    Column("submission_id", ForeignKey("submissions.id")),
    Column("metric_id", ForeignKey("metrics.id")),
    # a run: the model, on the dataset
    Column("model_id", ForeignKey("models.id")),
    Column("dataset_id", ForeignKey("datasets.id")),
    Column("state", String(16), nullable=False),
    Column("message", Text),  # why it failed, or what the metric warned of
    Column("attempts", Integer, nullable=False),  # failures charged to it (see charge)
    _created(),
    Column("started", Float),
    Column("finished", Float),
    Column("server", String(32)),  # the server running it (see servers)
    UniqueConstraint("submission_id", "metric_id"),
    UniqueConstraint("model_id", "dataset_id"),
    Index(None, "state"))

snapshots = Table(
    "snapshots", metadata,
    _key(),
    _reference("task_id", "tasks"),
    Column("data", LargeBinary, nullable=False),  # the task's boards then, as JSON
    _created())
"""Frozen copies of a task's boards: what they showed when each was taken, unchanged
by later submissions."""

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
