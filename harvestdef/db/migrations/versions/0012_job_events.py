"""job_events (checkpoints and resumes of a job's crawl) and jobs.store_failed

Revision ID: 0012_job_events
Revises: 0011_user_sessions
Create Date: 2026-11-25 00:00:00.000000

job_events keeps what the controllers report of a crawl beside its status: each checkpoint and each
resume, when and on which controller, for the job page and the job's API answer. jobs.store_failed
marks a job reported FAILED only because the archive store could not take its files: the one kind of
FAILED job that its controller's later report may turn DONE (JobTransitionReason.STORED_AFTER_STORE_OUTAGE).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0012_job_events'
down_revision = '0011_user_sessions'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_events',
                    sa.Column('event_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True,
                              nullable=False),
                    sa.Column('job_id', sa.BigInteger(), nullable=False),
                    sa.Column('attempt_id', sa.String(length=64), nullable=False),
                    sa.Column('controller_id', sa.String(length=100), nullable=False),
                    sa.Column('kind', sa.String(length=30), nullable=False),
                    sa.Column('checkpoint', sa.String(length=300), nullable=False),
                    sa.Column('happened_at', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('received_at', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('event_id'),
                    sa.UniqueConstraint('job_id', 'kind', 'checkpoint', 'happened_at', name='job_events_once'))
    op.create_index('job_events_job', 'job_events', ['job_id', 'happened_at'], unique=False)
    with op.batch_alter_table('jobs') as batch:
        batch.add_column(sa.Column('store_failed', sa.Boolean(), server_default=sa.text('false'), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('jobs') as batch:
        batch.drop_column('store_failed')
    op.drop_index('job_events_job', table_name='job_events')
    op.drop_table('job_events')
