"""job_dedup_sources: each job's own deduplication sources, and an index of the jobs by configuration

Revision ID: 0028_job_dedup_sources
Revises: 0027_job_ends
Create Date: 2026-12-09 00:00:00.000000

A job deduplicates against the earlier captures of its own domains, read by its harvest controller from
the partitions of the jobs that harvested them (docs/scheduler.md, Deduplication). The scheduler writes here,
per NEW job, which earlier jobs those are and whether enough of their entries are stored; the dispatcher
sends a job once its row is ready. Finding the earlier jobs of a domain goes from its configurations to
their jobs, so job_configs gains an index by configuration. Runs made ready before this revision keep their
harvest_run_dedup_index rows, and their jobs still go with the run's index.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0028_job_dedup_sources'
down_revision = '0027_job_ends'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_dedup_sources",
        sa.Column("job_id", sa.BigInteger(), sa.ForeignKey("jobs.job_id"), primary_key=True),
        sa.Column("ready", sa.Boolean(), nullable=False, server_default=sa.text("false")),
        sa.Column("sources", sa.Text(), nullable=False),
        sa.Column("domains", sa.Integer(), nullable=False),
        sa.Column("with_history", sa.Integer(), nullable=False),
        sa.Column("covered", sa.Integer(), nullable=False),
        sa.Column("missing_job_ids", sa.Text()),
        sa.Column("refusal", sa.String(2000)),
        sa.Column("changed_at", harvestdef.db.types.UTCDateTime(), nullable=False),
    )
    op.create_index("jobconfigconfig", "job_configs", ["config_id", "job_id"])


def downgrade() -> None:
    op.drop_index("jobconfigconfig", table_name="job_configs")
    op.drop_table("job_dedup_sources")
