"""harvesters.heartbeat_interval: the seconds between a controller's heartbeats, as it states them

Revision ID: 0015_heartbeat_interval
Revises: 0014_dedup_coverage
Create Date: 2026-11-26 00:00:00.000000

The scheduler counts a controller lost after harvestsuite.scheduler.lostAfterHeartbeats of its heartbeat
intervals. Controllers run on hosts of their own with settings files of their own, so each heartbeat
(message schema 1.2) states its controller's interval and this column keeps the latest; NULL (a controller
that states none) is judged by the scheduler's own harvestsuite.harvester.heartbeatInterval.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0015_heartbeat_interval'
down_revision = '0014_dedup_coverage'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('harvesters', sa.Column('heartbeat_interval', sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('harvesters') as batch:
        batch.drop_column('heartbeat_interval')
