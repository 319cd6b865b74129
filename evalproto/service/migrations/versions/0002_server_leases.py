"""Servers and the jobs they run: several servers may share a database, and the jobs
of one that died are queued again by the others (or at its next start).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "servers",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started", sa.Float(), nullable=False),
        sa.Column("heartbeat", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_servers"))
    # A job left running by the first schema's server has none: it is an orphan.
    op.add_column("jobs", sa.Column("server", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as jobs:
        jobs.drop_column("server")
    op.drop_table("servers")
