"""Execution groups say whether flows with code nodes (PythonCompute) may run in them.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("execution_groups") as batch_op:
        batch_op.add_column(sa.Column("code_nodes", sa.Boolean(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("execution_groups") as batch_op:
        batch_op.drop_column("code_nodes")
