"""reason_phrase, refusal_phrase: a harvest's state reason and a job's deduplication refusal as phrases

Revision ID: 0030_reason_phrases
Revises: 0029_scheduler_hearing
Create Date: 2026-12-11 00:00:00.000000

The scheduler stores why a harvest is in its state, and why a job's deduplication is held back, in English
(what the API answers) and now also as the JSON of its phrase (harvestdef/harvestreasons.py), from which a
page says it in its own language by code. Rows written before keep their English and no phrase; a page
shows those as they are.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0030_reason_phrases'
down_revision = '0029_scheduler_hearing'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("harvest_state", sa.Column("reason_phrase", sa.Text()))
    op.add_column("job_dedup_sources", sa.Column("refusal_phrase", sa.Text()))


def downgrade() -> None:
    op.drop_column("job_dedup_sources", "refusal_phrase")
    op.drop_column("harvest_state", "reason_phrase")
