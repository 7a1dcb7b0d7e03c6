"""running_domain_counts and runningjobsmonitor's crawl.log figures: a running job's counts so far

Revision ID: 0019_crawl_tally
Revises: 0018_min_space_left
Create Date: 2026-12-03 02:00:00.000000

Message schema 1.4's CrawlTally carries what a running crawl's crawl.log says so far, read by its
controller as it grows: lines per fetch status (runningjobsmonitor.statuscounts, with the lines read) and
objects and bytes per domain (running_domain_counts), by the final domain report's rules. Like the
monitor's rows, they go when the job ends.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0019_crawl_tally'
down_revision = '0018_min_space_left'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('runningjobsmonitor', sa.Column('crawlloglines', sa.BigInteger(), nullable=True))
    op.add_column('runningjobsmonitor', sa.Column('statuscounts', sa.Text(), nullable=True))
    op.create_table('running_domain_counts',
                    sa.Column('jobid', sa.BigInteger(), nullable=False),
                    sa.Column('domain', sa.String(length=300), nullable=False),
                    sa.Column('objects', sa.BigInteger(), nullable=False),
                    sa.Column('bytes', sa.BigInteger(), nullable=False),
                    sa.Column('tstamp', harvestdef.db.types.UTCDateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('jobid', 'domain'))


def downgrade() -> None:
    op.drop_table('running_domain_counts')
    with op.batch_alter_table('runningjobsmonitor') as batch:
        batch.drop_column('statuscounts')
        batch.drop_column('crawlloglines')
