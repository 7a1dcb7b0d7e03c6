"""job_qa_summaries: a job's QA report in numbers

Revision ID: 0020_job_qa_summaries
Revises: 0019_crawl_tally
Create Date: 2026-12-04 02:00:00.000000

A job's final CrawlStatus carries its QA report in four numbers (seeds, seeds not captured, pages with
missing embedded resources, missing resources); the scheduler keeps them per job, so the harvest page sums
a run's without reading every job's metadata WARC. The report itself stays in the metadata WARC.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0020_job_qa_summaries'
down_revision = '0019_crawl_tally'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('job_qa_summaries',
                    sa.Column('job_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('harvest_id', sa.BigInteger(), nullable=False),
                    sa.Column('harvest_num', sa.Integer(), nullable=False),
                    sa.Column('seeds_total', sa.BigInteger(), nullable=False),
                    sa.Column('seeds_not_captured', sa.BigInteger(), nullable=False),
                    sa.Column('pages_with_missing_resources', sa.BigInteger(), nullable=False),
                    sa.Column('missing_resources', sa.BigInteger(), nullable=False),
                    sa.Column('tstamp', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('job_id'))
    op.create_index('job_qa_summaries_run', 'job_qa_summaries', ['harvest_id', 'harvest_num'], unique=False)


def downgrade() -> None:
    op.drop_index('job_qa_summaries_run', table_name='job_qa_summaries')
    op.drop_table('job_qa_summaries')
