"""harvest_findings: historyinfo's companion for configurations that got nothing, and its count per run

Revision ID: 0013_harvest_findings
Revises: 0012_job_events
Create Date: 2026-11-25 00:00:00.000000

A configuration whose seeds all failed, or that harvested no object, is flagged with the reason from
crawl.log (harvester/postprocess/domainreport.py). History written before this revision has no reasons:
its rows with no object are flagged "no object harvested" without one, and each run's count is filled in,
so old and new runs read alike.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013_harvest_findings'
down_revision = '0012_job_events'
branch_labels = None
depends_on = None

EARLIER_REASON = "no object harvested (recorded before reasons were kept)"


def upgrade() -> None:
    op.create_table('harvest_findings',
                    sa.Column('historyinfo_id', sa.BigInteger(), autoincrement=False, nullable=False),
                    sa.Column('job_id', sa.BigInteger(), nullable=True),
                    sa.Column('config_id', sa.BigInteger(), nullable=False),
                    sa.Column('harvest_id', sa.BigInteger(), nullable=False),
                    sa.Column('harvest_num', sa.Integer(), nullable=True),
                    sa.Column('reason', sa.String(length=2000), nullable=False),
                    sa.Column('fetch_status', sa.Integer(), nullable=True),
                    sa.Column('seed', sa.Text(), nullable=True),
                    sa.PrimaryKeyConstraint('historyinfo_id'))
    op.create_index('harvest_findings_run', 'harvest_findings', ['harvest_id', 'harvest_num'], unique=False)
    op.create_index('harvest_findings_job', 'harvest_findings', ['job_id'], unique=False)
    op.add_column('harvest_run_summary', sa.Column('nothing_harvested', sa.BigInteger(),
                                                   server_default=sa.text('0'), nullable=False))
    op.execute(sa.text(
        "INSERT INTO harvest_findings (historyinfo_id, job_id, config_id, harvest_id, harvest_num, reason) "
        "SELECT h.historyinfo_id, h.job_id, h.config_id, h.harvest_id, j.harvest_num, :reason "
        "FROM historyinfo h LEFT JOIN jobs j ON j.job_id = h.job_id WHERE h.objectcount = 0"
    ).bindparams(reason=EARLIER_REASON))
    op.execute(
        "UPDATE harvest_run_summary SET nothing_harvested = (SELECT count(*) FROM harvest_findings f "
        "WHERE f.harvest_id = harvest_run_summary.harvest_id AND f.harvest_num = harvest_run_summary.harvest_num)")


def downgrade() -> None:
    with op.batch_alter_table('harvest_run_summary') as batch:
        batch.drop_column('nothing_harvested')
    op.drop_index('harvest_findings_job', table_name='harvest_findings')
    op.drop_index('harvest_findings_run', table_name='harvest_findings')
    op.drop_table('harvest_findings')
