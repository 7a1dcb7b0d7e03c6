"""runningjobsmonitor.crawllogtail and isheritrixconsole: the running job's newest crawl.log lines

Revision ID: 0016_crawl_log_tail
Revises: 0015_heartbeat_interval
Create Date: 2026-12-02 00:00:00.000000

Message schema 1.3 lets CrawlProgress carry the crawler's newest crawl.log lines and say whether its
host_url is a real Heritrix 3 console. runningjobsmonitor keeps the newest of both per running job, so the
job page and the live API show them while the job runs; the rows go when the job ends, as before.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0016_crawl_log_tail'
down_revision = '0015_heartbeat_interval'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('runningjobsmonitor', sa.Column('crawllogtail', sa.Text(), nullable=True))
    op.add_column('runningjobsmonitor', sa.Column('isheritrixconsole', sa.Boolean(), nullable=False,
                                                  server_default=sa.text('false')))


def downgrade() -> None:
    with op.batch_alter_table('runningjobsmonitor') as batch:
        batch.drop_column('isheritrixconsole')
        batch.drop_column('crawllogtail')
