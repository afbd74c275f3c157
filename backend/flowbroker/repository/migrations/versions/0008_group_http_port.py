"""Execution groups may name the port of their HTTP listener, so that groups of one host each have their own.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("execution_groups") as batch_op:
        batch_op.add_column(sa.Column("http_port", sa.Integer(), nullable=True))
        batch_op.create_unique_constraint("uq_execution_groups_broker_http_port", ["broker_id", "http_port"])


def downgrade() -> None:
    with op.batch_alter_table("execution_groups") as batch_op:
        batch_op.drop_constraint("uq_execution_groups_broker_http_port", type_="unique")
        batch_op.drop_column("http_port")
