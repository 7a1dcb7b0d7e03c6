"""webhooks and webhook_deliveries: notifications beyond e-mail

Revision ID: 0022_webhooks
Revises: 0021_seed_thumbnails
Create Date: 2026-12-06 02:00:00.000000

An admin defines webhooks (a URL, the events it wants, a shared secret, active or not); an event (a job
failed, a harvest run done, a harvest deactivated, a controller lost) writes one delivery per active webhook
that wants it, in the transaction of what it announces, and the leading scheduler sends them signed,
retrying with backoff (harvestdef/model/webhooks.py, scheduler/webhooks.py).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0022_webhooks'
down_revision = '0021_seed_thumbnails'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('webhooks',
                    sa.Column('webhook_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                              nullable=False),
                    sa.Column('name', sa.String(length=100), nullable=False),
                    sa.Column('url', sa.String(length=2000), nullable=False),
                    sa.Column('events', sa.String(length=300), nullable=False),
                    sa.Column('secret', sa.String(length=200), nullable=False),
                    sa.Column('isactive', sa.Boolean(), server_default=sa.text('true'), nullable=False),
                    sa.Column('created', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('edition', sa.BigInteger(), server_default=sa.text('1'), nullable=False),
                    sa.PrimaryKeyConstraint('webhook_id'),
                    sa.UniqueConstraint('name'))
    op.create_table('webhook_deliveries',
                    sa.Column('delivery_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                              nullable=False),
                    sa.Column('webhook_id', sa.BigInteger(), nullable=False),
                    sa.Column('event', sa.String(length=30), nullable=False),
                    sa.Column('event_key', sa.String(length=300), nullable=False),
                    sa.Column('url', sa.String(length=2000), nullable=False),
                    sa.Column('document', sa.Text(), nullable=False),
                    sa.Column('created', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('state', sa.String(length=10), nullable=False),
                    sa.Column('attempts', sa.Integer(), server_default=sa.text('0'), nullable=False),
                    sa.Column('next_attempt_at', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.Column('last_attempt_at', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.Column('last_status', sa.Integer(), nullable=True),
                    sa.Column('last_error', sa.String(length=2000), nullable=True),
                    sa.PrimaryKeyConstraint('delivery_id'),
                    sa.UniqueConstraint('webhook_id', 'event_key', name='webhook_deliveries_once'))
    op.create_index('webhook_deliveries_due', 'webhook_deliveries', ['state', 'next_attempt_at'], unique=False)
    op.create_index('webhook_deliveries_webhook', 'webhook_deliveries', ['webhook_id', 'delivery_id'], unique=False)


def downgrade() -> None:
    op.drop_index('webhook_deliveries_webhook', table_name='webhook_deliveries')
    op.drop_index('webhook_deliveries_due', table_name='webhook_deliveries')
    op.drop_table('webhook_deliveries')
    op.drop_table('webhooks')
