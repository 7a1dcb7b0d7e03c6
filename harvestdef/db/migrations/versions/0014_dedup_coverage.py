"""harvest_run_dedup_index.refusal: why a run's deduplication index was refused

Revision ID: 0014_dedup_coverage
Revises: 0013_harvest_findings
Create Date: 2026-11-25 00:00:00.000000

An index is used only when the entries of at least satisfactorythresholdpercentage of the jobs it is built
from could be read (70 % by default, as in NetarchiveSuite); below, it is refused and the run's jobs wait.
A refusal is not a failed build (nothing went wrong, and it is not retried as one), so it has its own
column.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0014_dedup_coverage'
down_revision = '0013_harvest_findings'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('harvest_run_dedup_index', sa.Column('refusal', sa.String(length=2000), nullable=True))


def downgrade() -> None:
    op.drop_column('harvest_run_dedup_index', 'refusal')
