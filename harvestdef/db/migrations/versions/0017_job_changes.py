"""job_changes: control actions and live changes to running jobs, versioned per job

Revision ID: 0017_job_changes
Revises: 0016_crawl_log_tail
Create Date: 2026-12-03 00:00:00.000000

Operators pause, resume, checkpoint, stop or fail a running job and change it live (reject rules, budgets,
queued URIs, added URIs, politeness). Each request is one row, numbered per job in the order it was made;
the scheduler sends it to the controller holding the job's claim, and the controller's answer marks it
applied or refused with the reason.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0017_job_changes'
down_revision = '0016_crawl_log_tail'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_changes',
                    sa.Column('job_id', sa.BigInteger(), nullable=False),
                    sa.Column('version', sa.Integer(), nullable=False),
                    sa.Column('kind', sa.String(length=30), nullable=False),
                    sa.Column('payload', sa.Text(), nullable=False),
                    sa.Column('author', sa.String(length=100), nullable=False),
                    sa.Column('created', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.Column('state', sa.String(length=10), nullable=False),
                    sa.Column('reason', sa.String(length=2000), server_default='', nullable=False),
                    sa.Column('applied', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.Column('attempt_id', sa.String(length=64), server_default='', nullable=False),
                    sa.Column('sent_at', harvestdef.db.types.UTCDateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('job_id', 'version'))
    op.create_index('job_changes_state', 'job_changes', ['state', 'job_id', 'version'], unique=False)


def downgrade() -> None:
    op.drop_index('job_changes_state', table_name='job_changes')
    op.drop_table('job_changes')
