"""domains.isactive: inactive domains are left out of snapshot harvests

Revision ID: 0005_domain_active
Revises: 0004_api_tokens
Create Date: 2026-11-23 04:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005_domain_active'
down_revision = '0004_api_tokens'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('domains') as batch:
        batch.add_column(sa.Column('isactive', sa.Boolean(), server_default=sa.text('true'), nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('domains') as batch:
        batch.drop_column('isactive')
