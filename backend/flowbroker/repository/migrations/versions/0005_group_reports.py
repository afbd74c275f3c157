"""Execution groups report their host, process and statistics through the repository.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'group_reports',
        sa.Column('group_id', sa.Integer(), nullable=False),
        sa.Column('host', sa.String(length=255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('alive_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('statistics', sa.JSON().with_variant(postgresql.JSONB(), 'postgresql'), nullable=True),
        sa.ForeignKeyConstraint(
            ['group_id'],
            ['execution_groups.id'],
            name=op.f('fk_group_reports_group_id_execution_groups'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('group_id', name=op.f('pk_group_reports')),
    )


def downgrade() -> None:
    op.drop_table('group_reports')
