"""index of jobs by controller and id, for the job list of one harvester

Revision ID: 0025_job_controller_index
Revises: 0023_harvest_hub
Create Date: 2026-12-06 00:00:00.000000

The job list can show the jobs one harvest controller (or every controller of one host) crawled, newest
first. Without an index that reads the jobs table backwards until it has found a page of them, which for a
controller that crawled little means every job; with it, one range per controller, already in id order.
"""

from __future__ import annotations

from alembic import op

revision = '0025_job_controller_index'
down_revision = '0023_harvest_hub'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('jobcontroller', 'jobs', ['controller', 'job_id'], unique=False)


def downgrade() -> None:
    op.drop_index('jobcontroller', table_name='jobs')
