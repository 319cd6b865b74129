"""Models as processes: a task's I/O (the input keys a model receives, the output keys
its reply carries), models the server runs (a command and its timeout), the runs
(jobs of kind "run", of a model on a dataset), and what a run measured, kept with the
submission it made (throughput, memory).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the columns, and make a job's submission and metric optional (a run has its
    model and dataset instead)."""
    for column in ("input_keys", "output_keys"):
        op.add_column("tasks", sa.Column(column, sa.Text(), nullable=True))
    op.add_column("models", sa.Column("command", sa.Text(), nullable=True))
    op.add_column("models", sa.Column("timeout", sa.Float(), nullable=True))
    for column in ("throughput", "memory"):
        op.add_column("submissions", sa.Column(column, sa.Float(), nullable=True))
    with op.batch_alter_table("jobs") as jobs:
        jobs.add_column(sa.Column("kind", sa.String(16), nullable=False,
                                  server_default="score"))
        jobs.add_column(sa.Column("model_id", sa.Integer(), nullable=True))
        jobs.add_column(sa.Column("dataset_id", sa.Integer(), nullable=True))
        jobs.alter_column("submission_id", existing_type=sa.Integer(), nullable=True)
        jobs.alter_column("metric_id", existing_type=sa.Integer(), nullable=True)
        jobs.create_foreign_key("fk_jobs_model_id_models", "models", ["model_id"], ["id"])
        jobs.create_foreign_key("fk_jobs_dataset_id_datasets", "datasets", ["dataset_id"],
                                ["id"])
        jobs.create_unique_constraint("uq_jobs_model_id_dataset_id", ["model_id", "dataset_id"])


def downgrade() -> None:
    """Runs go with their columns."""
    op.execute("DELETE FROM jobs WHERE kind = 'run'")
    with op.batch_alter_table("jobs") as jobs:
        jobs.drop_constraint("uq_jobs_model_id_dataset_id", type_="unique")
        jobs.drop_constraint("fk_jobs_dataset_id_datasets", type_="foreignkey")
        jobs.drop_constraint("fk_jobs_model_id_models", type_="foreignkey")
        jobs.alter_column("metric_id", existing_type=sa.Integer(), nullable=False)
        jobs.alter_column("submission_id", existing_type=sa.Integer(), nullable=False)
        for column in ("dataset_id", "model_id", "kind"):
            jobs.drop_column(column)
    with op.batch_alter_table("submissions") as submissions:
        for column in ("memory", "throughput"):
            submissions.drop_column(column)
    with op.batch_alter_table("models") as models:
        for column in ("timeout", "command"):
            models.drop_column(column)
    with op.batch_alter_table("tasks") as tasks:
        for column in ("output_keys", "input_keys"):
            tasks.drop_column(column)
