"""scheduler_hearing: whether the leading scheduler hears the controllers' heartbeats

Revision ID: 0029_scheduler_hearing
Revises: 0028_job_dedup_sources
Create Date: 2026-12-10 00:00:00.000000

While the leading scheduler's broker connection is down no heartbeat reaches it, so it counts no controller
lost; once the connection is back it counts silence from then at the earliest. It writes that state here as
it changes, and the web UI's System and job pages judge a controller's silence by it as the scheduler does
(docs/architecture.md, a controller lost).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import harvestdef.db.types

revision = '0029_scheduler_hearing'
down_revision = '0028_job_dedup_sources'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scheduler_hearing",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("holder", sa.String(300), nullable=False),
        sa.Column("deaf_since", harvestdef.db.types.UTCDateTime()),
        sa.Column("hearing_since", harvestdef.db.types.UTCDateTime()),
        sa.Column("changed_at", harvestdef.db.types.UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("scheduler_hearing")
