"""the deduplication index of each harvest run

Revision ID: 0003_dedup_index
Revises: 0002_scheduler
Create Date: 2026-11-30 00:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0003_dedup_index'
down_revision = '0002_scheduler'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('harvest_run_dedup_index',
    sa.Column('harvest_id', sa.BigInteger(), nullable=False),
    sa.Column('harvest_num', sa.Integer(), nullable=False),
    sa.Column('job_ids', sa.Text(), nullable=False),
    sa.Column('ready', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('index_path', sa.String(length=300), nullable=True),
    sa.Column('missing_job_ids', sa.Text(), nullable=True),
    sa.Column('entries', sa.BigInteger(), nullable=True),
    sa.Column('failures', sa.Integer(), server_default=sa.text('0'), nullable=False),
    sa.Column('error', sa.String(length=2000), nullable=True),
    sa.Column('changed_at', harvestdef.db.types.UTCDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('harvest_id', 'harvest_num')
    )


def downgrade() -> None:
    op.drop_table('harvest_run_dedup_index')
