"""Execution groups remember whether an operator stopped them.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('execution_groups') as batch_op:
        batch_op.add_column(
            sa.Column('desired_state', sa.String(length=16), server_default='running', nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table('execution_groups') as batch_op:
        batch_op.drop_column('desired_state')
