"""harvesters.min_space_left: the disk space a controller keeps free, as its heartbeat states it

Revision ID: 0018_min_space_left
Revises: 0017_job_changes
Create Date: 2026-12-03 01:00:00.000000

Message schema 1.4 lets a controller's heartbeat state its minSpaceLeft beside its free disk, so the page of
a running job can say that the crawl's disk is short, from the controller's own figures.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0018_min_space_left'
down_revision = '0017_job_changes'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('harvesters', sa.Column('min_space_left', sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('harvesters') as batch:
        batch.drop_column('min_space_left')
