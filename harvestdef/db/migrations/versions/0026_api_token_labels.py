"""api_tokens.label: the name its user gave an API token

Revision ID: 0026_api_token_labels
Revises: 0025_job_controller_index
Create Date: 2026-12-07 00:00:00.000000

Users make their own API tokens in the web UI and the API now, one per script or machine, and tell them
apart by the label they gave each when they see when it was used last or revoke it. Tokens made before have
the empty label.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0026_api_token_labels'
down_revision = '0025_job_controller_index'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('api_tokens', sa.Column('label', sa.String(length=100), server_default=sa.text("''"),
                                          nullable=False))


def downgrade() -> None:
    with op.batch_alter_table('api_tokens') as batch:
        batch.drop_column('label')
