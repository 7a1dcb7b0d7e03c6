"""index of jobs by channel, status and id, for the dispatcher's oldest NEW job of a channel

Revision ID: 0008_job_dispatch_index
Revises: 0007_netarchivesuite_compat
Create Date: 2026-11-23 00:00:00.000000

Every ready message asks for the NEW job of a channel with the lowest id. With only NetarchiveSuite's
index on status, that reads every NEW job of every channel and sorts them; this index answers it with the
first entry of one range, however many jobs a snapshot step has queued.
"""

from __future__ import annotations

from alembic import op

revision = '0008_job_dispatch_index'
down_revision = '0007_netarchivesuite_compat'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('jobchannelstatus', 'jobs', ['channel', 'status', 'job_id'], unique=False)


def downgrade() -> None:
    op.drop_index('jobchannelstatus', table_name='jobs')
