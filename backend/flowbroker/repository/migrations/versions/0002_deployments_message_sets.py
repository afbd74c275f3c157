"""Deployments, message sets, data sources, subscriptions and topic ACLs; token last use.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('message_sets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('current_version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message_sets')),
    sa.UniqueConstraint('name', name=op.f('uq_message_sets_name'))
    )
    op.create_table('message_set_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('message_set_id', sa.Integer(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('document', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('author', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['message_set_id'], ['message_sets.id'], name=op.f('fk_message_set_versions_message_set_id_message_sets'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_message_set_versions')),
    sa.UniqueConstraint('message_set_id', 'version', name='uq_message_set_versions_set_version')
    )
    op.create_table('data_sources',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('url', sa.String(length=1000), nullable=False),
    sa.Column('description', sa.Text(), nullable=False),
    sa.Column('broker_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['broker_id'], ['brokers.id'], name=op.f('fk_data_sources_broker_id_brokers'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_data_sources')),
    sa.UniqueConstraint('name', name=op.f('uq_data_sources_name'))
    )
    op.create_table('subscriptions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('broker_id', sa.Integer(), nullable=True),
    sa.Column('topic', sa.String(length=1000), nullable=False),
    sa.Column('queue', sa.String(length=48), nullable=False),
    sa.Column('filter', sa.Text(), nullable=False),
    sa.Column('owner', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['broker_id'], ['brokers.id'], name=op.f('fk_subscriptions_broker_id_brokers'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_subscriptions'))
    )
    op.create_table('topic_acls',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('topic', sa.String(length=1000), nullable=False),
    sa.Column('principal', sa.String(length=64), nullable=False),
    sa.Column('allow_publish', sa.Boolean(), nullable=True),
    sa.Column('allow_subscribe', sa.Boolean(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_topic_acls'))
    )
    op.create_table('deployments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('flow_version_id', sa.Integer(), nullable=False),
    sa.Column('broker_id', sa.Integer(), nullable=False),
    sa.Column('group_id', sa.Integer(), nullable=False),
    sa.Column('additional_instances', sa.Integer(), nullable=False),
    sa.Column('overrides', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('diagnostics', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['broker_id'], ['brokers.id'], name=op.f('fk_deployments_broker_id_brokers'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['flow_version_id'], ['flow_versions.id'], name=op.f('fk_deployments_flow_version_id_flow_versions')),
    sa.ForeignKeyConstraint(['group_id'], ['execution_groups.id'], name=op.f('fk_deployments_group_id_execution_groups'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_deployments'))
    )
    with op.batch_alter_table('api_tokens') as batch_op:
        batch_op.add_column(sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('api_tokens') as batch_op:
        batch_op.drop_column('last_used_at')
    op.drop_table('deployments')
    op.drop_table('topic_acls')
    op.drop_table('subscriptions')
    op.drop_table('data_sources')
    op.drop_table('message_set_versions')
    op.drop_table('message_sets')
