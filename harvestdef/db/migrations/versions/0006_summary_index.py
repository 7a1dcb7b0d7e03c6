"""index of config_history_summary by harvest and bytes, for a harvest's largest domains

Revision ID: 0006_summary_index
Revises: 0005_domain_active
Create Date: 2026-11-23 00:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006_summary_index'
down_revision = '0005_domain_active'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('config_history_summary_harvest_bytes', 'config_history_summary',
                    ['latest_harvest_id', sa.text('latest_bytecount DESC')], unique=False)


def downgrade() -> None:
    op.drop_index('config_history_summary_harvest_bytes', table_name='config_history_summary')
