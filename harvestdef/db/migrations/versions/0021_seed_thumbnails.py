"""job_thumbnails and seed_thumbnails: the QA worker's thumbnails of each seed as replayed

Revision ID: 0021_seed_thumbnails
Revises: 0020_job_qa_summaries
Create Date: 2026-12-05 02:00:00.000000

After a job is DONE, the QA worker (`harvestsuite qa thumbnails run`) makes a thumbnail of each seed as the
replay service replays it and stores it beside the job's files in the archive store. job_thumbnails says
per job whether its pass is over (made, or skipped with the note why); seed_thumbnails names each seed's
stored image, or the note why it has none. The images themselves stay in the archive store.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0021_seed_thumbnails'
down_revision = '0020_job_qa_summaries'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_thumbnails',
                    sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('harvest_id', sa.BigInteger(), nullable=False),
                    sa.Column('harvest_num', sa.Integer(), nullable=False),
                    sa.Column('state', sa.String(length=16), nullable=False),
                    sa.Column('note', sa.Text(), nullable=True),
                    sa.Column('tstamp', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('job_id'))
    op.create_table('seed_thumbnails',
                    sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('seed_key', sa.String(length=40), nullable=False),
                    sa.Column('seed', sa.Text(), nullable=False),
                    sa.Column('harvest_id', sa.BigInteger(), nullable=False),
                    sa.Column('harvest_num', sa.Integer(), nullable=False),
                    sa.Column('name', sa.String(length=200), nullable=True),
                    sa.Column('capture_time', sa.String(length=14), nullable=True),
                    sa.Column('note', sa.Text(), nullable=True),
                    sa.Column('tstamp', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('job_id', 'seed_key'))
    op.create_index('seed_thumbnails_run', 'seed_thumbnails', ['harvest_id', 'harvest_num', 'seed_key'],
                    unique=False)


def downgrade() -> None:
    op.drop_index('seed_thumbnails_run', table_name='seed_thumbnails')
    op.drop_table('seed_thumbnails')
    op.drop_table('job_thumbnails')
