"""Development groups, deployments' breakpoints and the paused flow threads of the step debugger.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('execution_groups') as batch_op:
        batch_op.add_column(sa.Column('development', sa.Boolean(), server_default='0', nullable=False))
    with op.batch_alter_table('deployments') as batch_op:
        batch_op.add_column(sa.Column('breakpoints', JSON, server_default='{}', nullable=False))
    op.create_table(
        'debug_pauses',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('deployment_id', sa.Integer(), nullable=False),
        sa.Column('flow', sa.String(length=255), nullable=False),
        sa.Column('thread', sa.String(length=255), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('connection', sa.String(length=512), nullable=False),
        sa.Column('node', sa.String(length=255), nullable=False),
        sa.Column('line', sa.Integer(), nullable=False),
        sa.Column('message', JSON, nullable=False),
        sa.Column('variables', JSON, nullable=False),
        sa.Column('revision', sa.Integer(), nullable=False),
        sa.Column('paused_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('resumes_at', sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ['deployment_id'],
            ['deployments.id'],
            name=op.f('fk_debug_pauses_deployment_id_deployments'),
            ondelete='CASCADE',
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_debug_pauses')),
    )
    op.create_index(op.f('ix_debug_pauses_deployment_id'), 'debug_pauses', ['deployment_id'])


def downgrade() -> None:
    op.drop_index(op.f('ix_debug_pauses_deployment_id'), table_name='debug_pauses')
    op.drop_table('debug_pauses')
    with op.batch_alter_table('deployments') as batch_op:
        batch_op.drop_column('breakpoints')
    with op.batch_alter_table('execution_groups') as batch_op:
        batch_op.drop_column('development')
