"""The first schema: tasks and their metrics, datasets, teams, models, predictions,
submissions, evaluations (stats rows) and jobs.

Revision ID: 0001
Revises:
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _id(table: str) -> list:
    return [sa.Column("id", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("id", name=f"pk_{table}")]


def _reference(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint([column], [f"{target}.id"],
                                   name=f"fk_{table}_{column}_{target}")


def upgrade() -> None:
    op.create_table(
        "settings",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_settings"))
    op.create_table(
        "tasks", *_id("tasks"),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("perf", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.UniqueConstraint("name", name="uq_tasks_name"))
    op.create_table(
        "metrics", *_id("metrics"),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("signature", sa.Text(), nullable=False),
        sa.Column("higher_is_better", sa.Boolean(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        _reference("metrics", "task_id", "tasks"),
        sa.UniqueConstraint("task_id", "spec", name="uq_metrics_task_id_spec"))
    op.create_table(
        "datasets", *_id("datasets"),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("round", sa.Integer(), nullable=True),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("examples", sa.Integer(), nullable=False),
        sa.Column("nrefs", sa.String(16), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        _reference("datasets", "task_id", "tasks"),
        sa.UniqueConstraint("task_id", "name", name="uq_datasets_task_id_name"))
    op.create_table(
        "teams", *_id("teams"),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.UniqueConstraint("name", name="uq_teams_name"),
        sa.UniqueConstraint("token_hash", name="uq_teams_token_hash"))
    op.create_table(
        "models", *_id("models"),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("team_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        _reference("models", "task_id", "tasks"),
        _reference("models", "team_id", "teams"),
        sa.UniqueConstraint("task_id", "name", name="uq_models_task_id_name"))
    op.create_table(
        "predictions", *_id("predictions"),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.UniqueConstraint("content_hash", name="uq_predictions_content_hash"))
    op.create_table(
        "submissions", *_id("submissions"),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("predictions_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        _reference("submissions", "model_id", "models"),
        _reference("submissions", "dataset_id", "datasets"),
        _reference("submissions", "predictions_id", "predictions"))
    op.create_index("ix_submissions_model_id_dataset_id", "submissions",
                    ["model_id", "dataset_id"])
    op.create_table(
        "evaluations", *_id("evaluations"),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("predictions_id", sa.Integer(), nullable=False),
        sa.Column("signature", sa.Text(), nullable=False),
        sa.Column("segments", sa.Integer(), nullable=False),
        sa.Column("rows", sa.LargeBinary(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("created", sa.Float(), nullable=False),
        _reference("evaluations", "dataset_id", "datasets"),
        _reference("evaluations", "predictions_id", "predictions"),
        sa.UniqueConstraint("dataset_id", "predictions_id", "signature",
                            name="uq_evaluations_dataset_id_predictions_id_signature"))
    op.create_table(
        "jobs", *_id("jobs"),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("metric_id", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("started", sa.Float(), nullable=True),
        sa.Column("finished", sa.Float(), nullable=True),
        _reference("jobs", "submission_id", "submissions"),
        _reference("jobs", "metric_id", "metrics"),
        sa.UniqueConstraint("submission_id", "metric_id",
                            name="uq_jobs_submission_id_metric_id"))
    op.create_index("ix_jobs_state", "jobs", ["state"])


def downgrade() -> None:
    for table in ("jobs", "evaluations", "submissions", "predictions", "models", "teams",
                  "datasets", "metrics", "tasks", "settings"):
        op.drop_table(table)
