"""The Dynaboard: perturbed datasets (the original they copy, their kind), a task's
Dynascore weights, a model's description and link, and snapshots of a task's boards.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add the columns and the snapshots' table."""
    # not in batch: SQLite's batch copies the table, which others' keys refer to (and its
    # key checks cannot be turned off inside the migrations' transaction)
    if op.get_bind().dialect.name == "sqlite":  # its ALTER TABLE adds a key with the column
        op.execute("ALTER TABLE datasets ADD COLUMN perturbation_of INTEGER "
                   "REFERENCES datasets (id)")
    else:
        op.add_column("datasets", sa.Column("perturbation_of", sa.Integer(), nullable=True))
        op.create_foreign_key("fk_datasets_perturbation_of_datasets", "datasets", "datasets",
                              ["perturbation_of"], ["id"])
    op.add_column("datasets", sa.Column("kind", sa.String(16), nullable=True))
    op.add_column("tasks", sa.Column("weights", sa.Text(), nullable=True))
    for column in ("description", "url"):
        op.add_column("models", sa.Column(column, sa.Text(), nullable=True))
    op.create_table(
        "snapshots",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["tasks.id"], name="fk_snapshots_task_id_tasks"),
        sa.PrimaryKeyConstraint("id", name="pk_snapshots"))


def downgrade() -> None:
    """Drop them (on SQLite, the datasets keep their two columns: a key to their own
    table cannot be dropped in place, and the table cannot be copied under the keys of
    the others)."""
    op.drop_table("snapshots")
    with op.batch_alter_table("models") as models:
        for column in ("url", "description"):
            models.drop_column(column)
    with op.batch_alter_table("tasks") as tasks:
        tasks.drop_column("weights")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_constraint("fk_datasets_perturbation_of_datasets", "datasets",
                           type_="foreignkey")
        op.drop_column("datasets", "kind")
        op.drop_column("datasets", "perturbation_of")
